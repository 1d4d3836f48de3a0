"""The decode table of `strixwizard test decode` in text: the collective times at the decode
sizes, then single node vs TP = N per transport, each figure with its source. Pure."""

from __future__ import annotations

from typing import Any, TextIO


def _size(n: int) -> str:
    return f"{n // 1024} KiB" if n >= 1024 and n % 1024 == 0 else f"{n} B"


def ways_lines(advice: dict[str, Any]) -> list[str]:
    """The one prediction table: every way to run the model on this site (the rows the
    advice's "fastest" is chosen from), one sequence."""
    lines = ["  predicted decode, one sequence, every way to run it on this site (tok/s):",
             f"    {'way':<8} {'nodes':>5}  {'over':<10} {'tok/s':>8} {'t_comp ms':>10} "
             f"{'t_comm ms':>10}  fits"]
    for way in advice["predictions"]:
        lines.append(f"    {way['split']:<8} {way['nodes']:>5}  {way['interconnect'] or '-':<10} "
                     f"{way['tok_s']:8.2f} {way['t_comp_ms']:10.1f} {way['t_comm_ms']:10.1f}  "
                     f"{'yes' if way['fits'] else 'no'}")
    return lines


def decode_lines(decode: dict[str, Any]) -> list[str]:
    model = decode["model"]
    moe = model.get("moe")
    kind = (f"MoE {moe['experts_per_token']} of {moe['experts']} experts" if moe else "dense")
    lines = [f"\nDecode: {model['name']} ({model['layers']} layers, hidden {model['hidden']}, "
             f"{model['dtype_bytes']} B per element, {kind}, {model['active_params_b']:.1f} B active "
             f"of {model['total_params_b']:.1f} B; "
             f"{model['weight_bytes_per_token'] / 1e9:.2f} GB read per token)",
             f"  model source: {model['source']}",
             f"  memory bandwidth {decode['mem_bandwidth_gbps']:g} GB/s per node: "
             f"{decode['mem_bandwidth_source']}",
             "  messages per all-reduce: " + ", ".join(
                 f"batch {b}: {_size(m)}" for b, m in zip(decode["batches"], decode["message_bytes"],
                                                           strict=False))]
    if decode["collectives"]:
        lines.append("  all-reduce, 2 ranks (µs):")
        for p in decode["collectives"]:
            note = f" — {p['note']}" if p.get("note") else ""
            lines.append(f"    {p['transport']:<12} {_size(p['size_bytes']):>9}  {p['allreduce_us']:9.1f}"
                         f"  [{p['source']}, {p['tool']}]{note}")
    else:
        lines.append("  no all-reduce time was measured: no prediction beyond one node")
    advice = decode.get("advice")
    if advice:
        lines.extend(ways_lines(advice))
    # the advice is one sequence's; larger batches keep the TP model's rows (no host dispatch)
    predictions = [p for p in decode["predictions"] if not advice or p["batch"] > 1]
    if predictions:
        lines.append("  larger batches, the TP model (tokens/s per step of `batch` sequences; host "
                     "dispatch left out: an upper bound):")
        lines.append(f"    {'transport':<12} {'batch':>5} {'TP':>3} {'tok/s':>9} {'t_comm ms':>10} "
                     f"{'t_comp ms':>10} {'comm':>6}  source")
        for p in predictions:
            fit = "" if p["fits"] else "  (does not fit)"
            lines.append(f"    {p['transport']:<12} {p['batch']:>5} {p['tp']:>3} {p['tokens_per_s']:9.1f} "
                         f"{p['t_comm_ms']:10.3f} {p['t_comp_ms']:10.3f} {p['comm_share']:6.0%}  "
                         f"{p['source']}{fit}")
    if decode.get("calibration"):
        c = decode["calibration"]
        lines.append(f"  calibration: {c['tok_s']:.2f} tok/s measured on one node (the bandwidth bound: "
                     f"{c['bandwidth_bound_tok_s']:.2f} tok/s); the advice uses the measured figure")
    if advice:
        from strixwizard.decode.advise import advice_lines

        lines.extend(f"  {line}" for line in advice_lines(advice))
    for note in decode.get("notes", []):
        lines.append(f"  note: {note}")
    lines.append("  the model leaves out: KV-cache reads, kernel efficiency, launch overheads "
                 "(real decode is slower); see \"assumptions\" in --json")
    return lines


def print_decode(decode: dict[str, Any], out: TextIO) -> None:
    for line in decode_lines(decode):
        print(line, file=out)
