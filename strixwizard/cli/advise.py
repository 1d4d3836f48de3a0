"""`strixwizard advise`: offline (a site's nodes are read only with --site/--demo/--snapshot):
predicted decode tok/s for one node, a llama.cpp RPC layer split, `-sm tensor` and vLLM TP
over each interconnect, the fastest that fits, and whether RDMA helps. Exit status: 0 advice
given, 2 bad input. Registering the options is argparse only; the model is imported when the
command runs."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any, TextIO

MAX_NODES = 64


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    advise = commands.add_parser(
        "advise",
        help="one box or two, layer or tensor split, does RDMA help? (offline, or on a site's nodes)",
        description="Predict decode tokens/s of a model for one node, a llama.cpp RPC layer split, "
        "llama.cpp -sm tensor and vLLM TP over Ray, on each interconnect (named kinds with "
        "published figures, or your own latency and bandwidth); say which is fastest and whether "
        "RDMA helps, with the reason and the assumptions. Exit status: 0 advice, 2 bad input.")
    model = advise.add_argument_group("the model (a name, a file, or its shape)")
    model.add_argument("--model", metavar="config.json|file.gguf|NAME",
                       help="a Hugging Face config.json, a GGUF file, or a catalog name "
                       "(Llama-3.1-8B, Llama-3.1-70B, Qwen3-30B-A3B, Qwen3-235B-A22B, gpt-oss-120b, "
                       "GLM-4.5-Air); or give --layers, --hidden and --weight-gib instead")
    model.add_argument("--quant", metavar="Q",
                       help="with a catalog --model: its llama.cpp GGUF quantization (Q4_K_M, Q3_K_M, "
                       "Q8_0, MXFP4 or MXFP4_F16 for gpt-oss …): the bytes a token reads follow that "
                       "file's tensor types; without it a catalog model is taken at its checkpoint's "
                       "precision (said)")
    model.add_argument("--layers", type=int, metavar="N", help="transformer layers (block count)")
    model.add_argument("--hidden", type=int, metavar="N", help="hidden size (embedding length)")
    model.add_argument("--weight-gib", type=float, metavar="GIB",
                       help="the weights' size in GiB (the GGUF file); with --model: that model at "
                       "this quantization")
    model.add_argument("--active-fraction", type=float, default=1.0, metavar="F",
                       help="the share of the weights a token reads: 1 for dense, active / total "
                       "parameters for MoE (default 1)")
    model.add_argument("--linear-layers", type=int, default=0, metavar="N",
                       help="a hybrid model's Gated-DeltaNet (linear-attention) layers, e.g. 36 of "
                       "Qwen3-Coder-Next's 48 (a config.json or GGUF gives them; default 0)")
    model.add_argument("--name", default=None, help="a label for a model given by its shape")
    fabric = advise.add_argument_group("nodes and interconnects")
    fabric.add_argument("--nodes", default="1,2", metavar="COUNTS",
                        help="node counts to compare, e.g. 1,2,4 (default 1,2)")
    fabric.add_argument("--link", action="append", default=[], metavar="NAME",
                        help="a named interconnect (repeatable; default: every one, see --list-links)")
    fabric.add_argument("--rtt-us", type=float, metavar="US",
                        help="your own link: small-message round trip in µs (with --gbps, --transport)")
    fabric.add_argument("--gbps", type=float, metavar="GBPS", help="your own link: bandwidth in Gb/s")
    fabric.add_argument("--transport", choices=("tcp", "rdma"), help="your own link: tcp or rdma")
    fabric.add_argument("--allreduce-us", type=float, metavar="US",
                        help="your own link: 2-rank RCCL all-reduce in µs (default: estimated)")
    fabric.add_argument("--busy-poll", action="store_true",
                        help="your own link's transport spins a CPU core while it waits")
    fabric.add_argument("--history", nargs="?", const="", default=None, metavar="FILE",
                        help="your own links, from the latest figures of `strixwizard test` in the "
                        "test history (default file ~/.local/state/strixwizard/history.sqlite)")
    site = fabric.add_mutually_exclusive_group()
    site.add_argument("--site", type=Path, metavar="FILE",
                      help="a site file: its nodes are read (over SSH, or their snapshots) for each "
                      "node's llama.cpp backend and memory for weights; with --history, only this "
                      "site's runs")
    site.add_argument("--demo", action="store_true",
                      help="as --site, on the bundled demo site's recorded nodes")
    site.add_argument("--snapshot", type=Path, action="append", default=[], metavar="FILE",
                      help="as --site, from node snapshots (`strixwizard capture`; repeatable, one per node)")
    fabric.add_argument("--trust-new-hosts", action="store_true",
                        help="with --site: accept and remember SSH host keys not yet in known_hosts")
    fabric.add_argument("--nodes-spec", metavar="GIB[:GBPS],...",
                        help="unequal nodes, in llama.cpp's device order: each node's memory free for "
                        "weights in GiB and its memory bandwidth in GB/s (default --mem-bandwidth), e.g. "
                        "100:212,60:212 or 110:212,120:540 (a Mac or GB10 is a node with other numbers); "
                        "advises the -ts of a layer split that fits, and its speed")
    fabric.add_argument("--tensor-split", metavar="A/B/...",
                        help="with --nodes-spec: your own -ts, checked to fit and predicted")
    fabric.add_argument("--list-links", action="store_true", help="list the named interconnects and exit")
    advise.add_argument("--mem-bandwidth", type=float, metavar="GBPS",
                        help="memory bandwidth per node in GB/s (default 212, measured on Strix Halo)")
    advise.add_argument("--backend", default=None, metavar="vulkan|rocm",
                        help="the llama.cpp backend the nodes run (default: the one a site's nodes "
                        "carry with --site/--demo/--snapshot, else vulkan, the constants' reference); "
                        "the advice also names the faster one for this model")
    advise.add_argument("--delta-net", default="fused", choices=("fused", "graph"),
                        help="how the llama.cpp build runs a hybrid model's Gated DeltaNet: the fused "
                        "GATED_DELTA_NET op (default; Vulkan since PR #20334, March 2026) or, in older "
                        "builds, a graph of small ops (slower)")
    advise.add_argument("--measured-tok-s", type=float, metavar="TOK_S",
                        help="your measured single-node decode speed of this model (llama-bench tg): "
                        "used as the compute term instead of the bandwidth estimate")
    advise.add_argument("--mtp", type=int, default=0, metavar="K",
                        help="vLLM with multi-token prediction: K draft tokens per step (default 0: off)")
    advise.add_argument("--mtp-acceptance", type=float, default=None, metavar="A",
                        help="with --mtp: the share of draft tokens accepted, 0 to 1 (vLLM's spec-decode "
                        "metrics print it)")
    advise.add_argument("--llama-bench", type=Path, metavar="FILE",
                        help="your llama-bench run of this model on one node (its markdown table, "
                        "-o json or -o jsonl): its tg row is the compute term; a failed run is refused "
                        "with its cause")
    advise.add_argument("--rpc-build", default=None, metavar="KEY",
                        help="the llama.cpp RPC protocol the waits per token are taken for: proto-7 "
                        "(default, measured: 1), proto-3.5 (3.5.0-5.1.0: 1), proto-2 (2.0.0-3.0.0: 2), "
                        "proto-1 (before 2.0.0: 6); ggml-rpc-server prints its protocol when it starts")
    advise.add_argument("--rpc-round-trips", type=int, metavar="N",
                        help="llama.cpp RPC waits per token and remote node, overriding --rpc-build")
    advise.add_argument("--json", action="store_true", help="one JSON document on stdout")
    return advise


def node_counts(text: str) -> list[int]:
    from strixwizard.errors import UsageError

    try:
        counts = sorted({int(part) for part in text.split(",") if part.strip()})
    except ValueError as error:
        raise UsageError(f"--nodes wants node counts such as 1,2,4 (got {text!r})") from error
    if not counts or not all(1 <= n <= MAX_NODES for n in counts):
        raise UsageError(f"--nodes counts must be between 1 and {MAX_NODES} (got {text!r})")
    return counts


def _shape(args: argparse.Namespace) -> Any:
    from strixwizard.decode.advise import explicit_shape, with_weight_bytes
    from strixwizard.errors import UsageError

    weight = args.weight_gib * 2**30 if args.weight_gib is not None else None
    if args.model is not None:
        from strixwizard.services.advise import model_shape

        if args.layers is not None or args.hidden is not None or args.linear_layers:
            raise UsageError("give either --model or --layers/--hidden/--linear-layers, not both")
        shape = model_shape(args.model, args.quant)
        if weight is not None:
            if not 1e6 <= weight <= 1e14:
                raise UsageError("--weight-gib: give the weights' size, 0.001 to 90000 GiB")
            shape = with_weight_bytes(shape, weight)
        return shape
    if args.quant is not None:
        raise UsageError("--quant names a quantization of a catalog --model")
    if args.layers is None or args.hidden is None or weight is None:
        raise UsageError("give --model NAME|config.json|file.gguf, or the shape: --layers, --hidden "
                         "and --weight-gib (and --active-fraction for MoE)")
    name = args.name or f"{args.layers} layers, hidden {args.hidden}, {args.weight_gib:g} GiB"
    return explicit_shape(name, args.layers, args.hidden, weight, args.active_fraction,
                          linear_layers=args.linear_layers)


def _history_links(args: argparse.Namespace, shape: Any
                   ) -> tuple[list[Any], tuple[str, ...], float | None]:
    """Links from the latest measured figures of each series in the test history, turned into
    all-reduce times the way the wizard's Test step does (decode.fabric); and the latest
    `test decode --calibrate` speed of this same model file, if one is stored."""
    import sqlite3

    from strixwizard.decode.advise import links_from_points
    from strixwizard.decode.fabric import fabric_points
    from strixwizard.errors import UsageError
    from strixwizard.live.history import History, default_history_path, read_back

    site = None
    if args.site is not None:
        from strixwizard.site import load_site

        site = load_site(args.site).name
    path = Path(args.history) if args.history else default_history_path()
    if not path.is_file():
        raise UsageError(f"--history {path}: no test history there (`strixwizard test` on a real "
                         "site writes it)")
    try:
        history = History(path, read_only=True)
    except sqlite3.Error as error:
        raise UsageError(f"--history {path}: not a strixwizard test history ({error})") from None
    try:
        readable = read_back(history.stored(site))  # a row that breaks the rule is skipped, said
        latest: dict[tuple[str, str, str, str, str], Any] = {}
        for row, m in readable.rows:
            latest[row.series_key] = (row, m)
        results = [m for _row, m in latest.values()]
    except (sqlite3.Error, ValueError, KeyError, TypeError) as error:
        raise UsageError(f"--history {path}: cannot read it ({error})") from None
    finally:
        history.close()
    links = links_from_points(fabric_points(results, shape))
    if not links:
        raise UsageError(f"--history {path}: no latency, RCCL or decode figure stored"
                         + (f" for site {site}" if site else ""))
    runs = sorted({row.started_at for row, _m in latest.values()})
    from strixwizard.decode.calibrate import measured_tok_s

    same_model = [m for m in results if m.detail.get("model") == args.model]
    return (links, (f"links from the test history {path} (latest runs {runs[0]} … {runs[-1]})",
                    *readable.skipped), measured_tok_s(same_model) if args.model else None)


def _links(args: argparse.Namespace) -> list[Any]:
    from strixwizard.decode.advise import custom_link, resolve_links
    from strixwizard.errors import UsageError

    given = [args.rtt_us, args.gbps, args.transport]
    if any(v is not None for v in given):
        if not all(v is not None for v in given):
            raise UsageError("your own link needs --rtt-us, --gbps and --transport together")
        mine = custom_link(args.rtt_us, args.gbps, args.transport, args.allreduce_us, args.busy_poll)
        return [*(resolve_links(args.link) if args.link else []), mine]
    return resolve_links(args.link)


def _llama_bench(args: argparse.Namespace, shape: Any) -> tuple[str, ...]:
    """--llama-bench FILE: its decode row becomes --measured-tok-s; what the advice says of it."""
    if args.llama_bench is None:
        return ()
    from strixwizard.decode.llama_bench import read
    from strixwizard.errors import UsageError

    if args.measured_tok_s is not None:
        raise UsageError("give either --llama-bench or --measured-tok-s")
    run, row = read(args.llama_bench)
    args.measured_tok_s = row.tok_s
    spread = f" ± {row.stddev:g}" if row.stddev is not None else ""
    built = f", build {run.build}" if run.build else ""
    notes = [f"compute from llama-bench {args.llama_bench} ({run.layout}): {row.test} {row.tok_s:g}{spread} "
             f"t/s, {row.model}, backend {row.backend}{built}"]
    file_gib = shape.weight_bytes_total / 2**30
    if row.size_gib is not None and abs(row.size_gib / file_gib - 1) > 0.03:
        notes.append(f"the llama-bench run's file is {row.size_gib:.2f} GiB, the model advised "
                     f"{file_gib:.2f} GiB: another quantization?")
    return tuple(notes)


def _mtp(args: argparse.Namespace) -> tuple[int, float]:
    from strixwizard.errors import UsageError

    if not 0 <= args.mtp <= 16:
        raise UsageError("--mtp: give 0 to 16 draft tokens per step")
    if args.mtp and args.mtp_acceptance is None:
        raise UsageError("--mtp needs --mtp-acceptance (the share of draft tokens accepted, 0 to 1)")
    if args.mtp_acceptance is not None and not (args.mtp and 0 <= args.mtp_acceptance <= 1):
        raise UsageError("--mtp-acceptance: give 0 to 1, with --mtp K")
    return args.mtp, args.mtp_acceptance or 0.0


def _ratios(text: str) -> list[float]:
    from strixwizard.errors import UsageError

    if "," in text:
        raise UsageError(f"--tensor-split {text}: separate the shares with '/' (with a comma llama-bench "
                         "runs each number as a separate test instead of one split)")
    try:
        return [float(part) for part in text.split("/")]
    except ValueError as error:
        raise UsageError(f"--tensor-split {text}: give shares such as 3/1") from error


def _hetero(args: argparse.Namespace, inputs: Any, links: list[Any], bandwidth: float) -> Any:
    from strixwizard.decode.advise import hetero_advice
    from strixwizard.errors import UsageError

    if args.nodes_spec is None:
        if args.tensor_split is not None:
            raise UsageError("--tensor-split needs --nodes-spec (each node's memory and bandwidth), or a "
                             "site (--site/--demo/--snapshot) whose nodes' memory is read")
        return None
    from strixwizard.decode.hetero import parse_spec

    nodes = parse_spec(args.nodes_spec, bandwidth)
    ratios = _ratios(args.tensor_split) if args.tensor_split is not None else None
    return hetero_advice(inputs, nodes, links, ratios)


def _read_site(args: argparse.Namespace) -> list[Any] | None:
    """--site/--demo/--snapshot: each node's backend and memory (None: no site given)."""
    if not (args.site is not None or args.demo or args.snapshot):
        return None
    from strixwizard.services.advise import site_nodes
    from strixwizard.services.nodes import RunRequest

    request = RunRequest(site_file=args.site, demo=args.demo, snapshots=tuple(args.snapshot),
                         trust_new_hosts=args.trust_new_hosts)
    return site_nodes(request)


def _site_memory(nodes: list[Any] | None) -> tuple[tuple[Any, ...], tuple[str, ...]]:
    """The site's nodes' memory for weights that decides what fits, and what the advice says of
    it: every node's figure as read, or the 124 GiB default and why."""
    if nodes is None:
        return (), ()
    from strixwizard.decode.advise import DEFAULT_POOL, NodeMemory

    unknown = [n for n in nodes if n.memory_bytes is None]
    if unknown:
        missing = "; ".join(f"{n.name}: memory not known ({n.memory_note})" for n in unknown)
        return (), (f"does it fit: {missing}; the {DEFAULT_POOL} assumed",)
    memory = tuple(NodeMemory(n.name, float(n.memory_bytes), n.memory_note) for n in nodes)
    return memory, ("does it fit: each node's memory for weights as read from the site, not the "
                    f"{DEFAULT_POOL}: " + "; ".join(m.text() for m in memory),)


def _site_backend(args: argparse.Namespace, nodes: list[Any] | None) -> tuple[str, tuple[str, ...]]:
    """The backend to predict for, and what the advice says of where it came from."""
    from strixwizard.decode.backends import VULKAN, check
    from strixwizard.decode.site_nodes import site_backend

    given = check(args.backend) if args.backend is not None else None
    if nodes is None:
        return given or VULKAN, ()
    found, why = site_backend(nodes)
    if given is not None:
        differs = f" (the site's nodes carry {found})" if found and found != given else ""
        return given, (f"backend {given} as given (--backend){differs}",)
    if found is None:
        return VULKAN, (f"backend: not read from the site ({why}); vulkan assumed",)
    return found, (f"backend {found}, read from the site's nodes: {why}",)


def _site_hetero(args: argparse.Namespace, nodes: list[Any] | None, inputs: Any, links: list[Any],
                 bandwidth: float) -> tuple[Any, tuple[str, ...]]:
    """A site of 2+ nodes whose memory is known: the layer split's -ts over each node's memory
    (in the site's order, llama.cpp's device order when the first node runs llama-server)."""
    if nodes is None or args.nodes_spec is not None or len(nodes) < 2:
        return None, ()
    from strixwizard.decode.advise import hetero_advice
    from strixwizard.decode.hetero import GIB, NodeSpec

    unknown = [n for n in nodes if n.memory_bytes is None]
    if unknown:
        return None, tuple(f"{n.name}: memory not known ({n.memory_note}); no -ts advised" for n in unknown)
    specs = [NodeSpec(float(n.memory_bytes), bandwidth) for n in nodes]
    ratios = _ratios(args.tensor_split) if args.tensor_split is not None else None
    names = [n.name for n in nodes]
    advice = hetero_advice(inputs, specs, links, ratios, order="the site's node order: " + ", ".join(names),
                           names=names)
    for entry, node in zip(advice["nodes"], nodes, strict=True):
        entry["name"] = node.name
        entry["memory_source"] = node.memory_note
    memories = ", ".join(f"{n.name} {n.memory_bytes / GIB:.1f} GiB" for n in nodes)
    if advice["tensor_split"] is not None:
        advice["reason"] += f"; memory for weights read from the site's nodes ({memories})"
    return advice, ()


def run(args: argparse.Namespace) -> int:
    from strixwizard.decode.advise import Inputs, advice_document, named_links
    from strixwizard.decode.bandwidth import mem_bandwidth
    from strixwizard.decode.rpc_builds import CURRENT, rpc_build
    from strixwizard.errors import UsageError
    from strixwizard.live.results import TOK_S
    from strixwizard.services.output import emit, envelope

    if args.list_links:
        links = named_links()
        if args.json:
            emit(envelope(None, command="advise", interconnects=[link.to_json() for link in links]))
        else:
            for link in links:
                print(f"{link.name:<14} {link.transport:<5} {link.rtt_us:>7g} µs RTT {link.gbps:>6g} Gb/s  "
                      f"{link.label}")
        return 0
    if args.measured_tok_s is not None and not TOK_S.low <= args.measured_tok_s <= TOK_S.high:
        raise UsageError("--measured-tok-s: give tokens/s between 0.01 and 100000")
    counts = node_counts(args.nodes)
    shape = _shape(args)
    bench_note = _llama_bench(args, shape)
    notes: tuple[str, ...] = ()
    if args.model is not None and args.weight_gib is None and args.quant is None \
            and not str(args.model).lower().endswith(".gguf"):
        notes = (f"precision assumed: {shape.precision or 'the checkpoint'}, "
                 f"{shape.weight_bytes_total / 2**30:.0f} GiB; for a llama.cpp file pass --quant "
                 "(a catalog model) or the .gguf itself as --model",)
    if args.history is not None:
        links, said, calibrated = _history_links(args, shape)
        links += _links(args) if (args.link or args.rtt_us is not None) else []
        notes = (*notes, *said)
        if calibrated is not None and args.measured_tok_s is None:
            args.measured_tok_s = calibrated
            notes = (*notes, f"compute from the stored `test decode --calibrate` of {args.model}: "
                     f"{calibrated:.2f} tok/s")
    else:
        links = _links(args)
    bandwidth, _source = mem_bandwidth(args.mem_bandwidth)
    build = rpc_build(args.rpc_build or CURRENT).key
    trips = args.rpc_round_trips
    if trips is not None and not 0 <= trips <= 10000:
        raise UsageError("--rpc-round-trips: give 0 to 10000")
    if args.trust_new_hosts and args.site is None:
        raise UsageError("--trust-new-hosts is for a --site whose nodes are read over SSH")
    nodes = _read_site(args)
    backend, backend_notes = _site_backend(args, nodes)
    site_memory, memory_notes = _site_memory(nodes)
    notes = (*notes, *bench_note, *backend_notes, *memory_notes)
    mtp, acceptance = _mtp(args)
    inputs = Inputs(shape, bandwidth, args.measured_tok_s, notes, rpc_build=build, rpc_round_trips=trips,
                    backend=backend, mtp_tokens=mtp, mtp_acceptance=acceptance,
                    delta_net=args.delta_net, site_memory=site_memory)
    hetero, hetero_notes = _site_hetero(args, nodes, inputs, links, bandwidth)
    if hetero_notes:
        inputs = replace(inputs, notes=(*inputs.notes, *hetero_notes))
    body = advice_document(inputs, counts, links)
    body["heterogeneous"] = hetero if hetero is not None else _hetero(args, inputs, links, bandwidth)
    if nodes is not None:
        from strixwizard.decode.site_nodes import to_json

        body["site_nodes"] = [to_json(n) for n in nodes]
    if args.json:
        emit(envelope(None, command="advise", **body))
    else:
        print_advice(body, sys.stdout)
    return 0


def safe(text: str) -> str:
    """Names and notes come from files (GGUF metadata, config.json): no control character
    reaches the terminal raw."""
    return "".join(c if c.isprintable() else "?" for c in str(text))


def advice_lines(body: dict[str, Any]) -> list[str]:
    """The advice as text: the table, the fastest, does RDMA help, the assumptions."""
    model = body["model"]
    lines = [f"Model: {safe(model['name'])} ({model['layers']} layers, hidden {model['hidden']}, "
             f"{model['weight_bytes_total'] / 2**30:.1f} GiB, {model['weight_bytes_per_token'] / 1e9:.2f} GB "
             f"read per token{', MoE' if model['moe'] else ''})",
             f"Precision: {safe(model['precision'])}",
             f"  {'split':<8} {'nodes':>5}  {'interconnect':<14} {'transport':<9} {'tok/s':>8} "
             f"{'t_comp ms':>10} {'t_comm ms':>10}  fits"]
    for p in body["predictions"]:
        lines.append(f"  {p['split']:<8} {p['nodes']:>5}  {safe(p['interconnect'] or '-'):<14} "
                     f"{p['transport']:<9} {p['tok_s']:8.2f} {p['t_comp_ms']:10.1f} {p['t_comm_ms']:10.1f}  "
                     f"{'yes' if p['fits'] else 'NO'}")
    rec = body["recommendation"]
    if rec["split"] is None:
        lines.append(f"Fastest: nothing fits — {rec['reason']}")
    else:
        where = f" over {safe(rec['interconnect'])}" if rec["interconnect"] else ""
        lines.append(f"Fastest: {rec['split']} on {rec['nodes']} node(s){where}, {rec['tok_s']:.2f} tok/s — "
                     f"{rec['reason']}")
    lines.append(f"Does RDMA help? {rec['rdma_reason']}")
    if rec.get("layer_vs_tensor"):
        lines.append(f"Layer or tensor? {rec['layer_vs_tensor']}")
    where = ("the site's nodes run" if body.get("site_nodes") is not None else "predicted for --backend")
    lines.append(f"Which backend? {rec['backend_reason']} ({where} {body['backend']})")
    hetero = body.get("heterogeneous")
    if hetero is not None:
        if hetero["tensor_split"] is None:
            lines.append(f"Unequal nodes: nothing fits: {hetero['reason']}")
        else:
            over = f" over {safe(hetero['interconnect'])}" if hetero["interconnect"] else ""
            where = (f"layer split on {hetero['used_nodes']} nodes" if hetero["used_nodes"] > 1 else
                     "one node (the rest are not needed)")
            lines.append(f"Unequal nodes: {where}{over}, "
                         f"{hetero['tok_s']:.2f} tok/s: {hetero['reason']}")
    for note in body["notes"]:
        lines.append(f"note: {safe(note)}")
    lines.append("Assumptions (the fastest way's; every row's are in --json):")
    best = next((p for p in body["predictions"] if p["split"] == rec["split"] and p["nodes"] == rec["nodes"]
                 and p["interconnect"] == rec["interconnect"]), None)
    for item in (best or body["predictions"][0])["assumptions"]:
        lines.append(f"  - {item}")
    return lines


def print_advice(body: dict[str, Any], out: TextIO) -> None:
    for line in advice_lines(body):
        print(line, file=out)

