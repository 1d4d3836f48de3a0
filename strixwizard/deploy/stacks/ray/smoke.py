"""The smoke test after a deploy: does RCCL really use NET/IB on the planned device, and did
every node join the Ray cluster?

- RCCL: a 2-rank `all_reduce_perf` across the head and the first worker, launched by
  `mpirun` on the head. Each rank sources *its own node's* env file (so per-node values
  stay per node) and runs with `NCCL_DEBUG=INFO`: at WARN level RCCL says nothing about
  its transport. The log is parsed with the live tests' parser
  (`strixwizard.live.rccl_output`): any `NET/Socket` channel is a TCP fallback and fails
  the RDMA profile; `NET/IB` on another device than planned fails too. Where the head's
  `all_reduce_perf --help` offers `-J` (nccl-tests/rccl-tests' JSON document), the results
  are read from that document, else from the text table.
- Ray: a driver on the head asks Ray for its live nodes and runs a task pinned to each
  that reports the environment it sees (`deploy/stacks/ray/ray.py`: `ray.nodes`, `ray.env`); where the
  node's `ray` has no Python module to drive, `ray status --address HEAD:PORT` on the head,
  whose active (or idle) node count must equal the number of deployed nodes.
"""

from __future__ import annotations

import re
import shlex

from strixwizard.deploy.base import WITH_ENV, DeployPlan, DeploySettings, Progress
from strixwizard.deploy.env import ClusterEnv
from strixwizard.deploy.remote import run
from strixwizard.deploy.smoke import ERROR, FAIL, PASS, SmokeCheck, SmokeReport
from strixwizard.deploy.stacks.ray.ray import ray_port
from strixwizard.deploy.stacks.ray.serve import ServeSettings
from strixwizard.fixing.runner import Runner, Unreachable
from strixwizard.live.rccl_output import (
    JSON_FILE_OPTION,
    CollectiveTable,
    RcclOutputError,
    json_files_written,
    parse_all_reduce,
    parse_collective_json,
    parse_transport,
    supports_json_file,
)

SMOKE_SIZES = ("-b", "8", "-e", "128M", "-f", "2", "-g", "1")


def all_reduce_argv(env: ClusterEnv, settings: DeploySettings, json_path: str | None = None
                    ) -> tuple[str, ...]:
    """mpirun on the head: 2 ranks, one per node, each under its node's env file; `json_path`
    asks for the `-J` document (written by rank 0, on the head)."""
    ranks = [env.node(env.head), *[n for n in env.nodes if n.node != env.head][:1]]
    netdev = ranks[0].netdev
    return ("mpirun", "--allow-run-as-root", "-np", "2",
            "-H", ",".join(f"{n.ip}:1" for n in ranks),
            "--mca", "btl_tcp_if_include", netdev, "--mca", "oob_tcp_if_include", netdev,
            "-x", "NCCL_DEBUG=INFO", "-x", "NCCL_DEBUG_SUBSYS=INIT,NET",
            "sh", "-ac", WITH_ENV, settings.env_file, "all_reduce_perf",
            *((JSON_FILE_OPTION, json_path) if json_path else ()), *SMOKE_SIZES)


def mpirun_refusal(env: ClusterEnv) -> str | None:
    """Why the RCCL smoke test is not run: mpirun hands the interface name (its MCA
    `*_if_include` values) to a remote shell on the other node, so only a name that no shell
    would interpret goes there."""
    names = sorted({n.netdev for n in env.nodes if shlex.quote(n.netdev) != n.netdev})
    if not names:
        return None
    return (f"the fabric interface name {', '.join(map(repr, names))} would pass through "
            "mpirun's remote shell: the RCCL smoke test is not run; rename the interface to "
            "letters, digits, '.', '_' and '-' (`ip link set dev IF name NEW`)")


def ray_status_argv(env: ClusterEnv, settings: DeploySettings) -> tuple[str, ...]:
    return ("ray", "status", f"--address={env.head_ip}:{ray_port(settings)}")


_COUNT = re.compile(r"^\s*(\d+)\s+\S+")


def parse_ray_status(text: str) -> int | None:
    """Nodes in the cluster from `ray status`: the counts under `Active:` (Ray >= 2.10),
    `Healthy:` (older autoscaler) and `Idle:`; None when the output has no node section."""
    section = None
    total, seen = 0, False
    for line in text.splitlines():
        word = line.strip()
        if word in ("Active:", "Healthy:", "Idle:"):
            section, seen = word, True
            continue
        if word.endswith(":") or word.startswith("Resources"):
            section = None
            continue
        if section and (match := _COUNT.match(line)):
            total += int(match.group(1))
    return total if seen else None


def judge_ray(env: ClusterEnv, rc: int, stdout: str, stderr: str) -> SmokeCheck:
    expected = f"{len(env.nodes)} nodes"
    if rc != 0:
        reason = (stderr or stdout).strip().splitlines()
        return SmokeCheck("ray.nodes", FAIL, "no Ray cluster answers", expected,
                          f"`ray status` exited {rc}: {reason[-1] if reason else ''}")
    count = parse_ray_status(stdout)
    if count is None:
        return SmokeCheck("ray.nodes", ERROR, "output not understood", expected,
                          "no Active:/Healthy: section in `ray status` output")
    status = PASS if count == len(env.nodes) else FAIL
    return SmokeCheck("ray.nodes", status, f"{count} nodes", expected,
                      "" if status == PASS else "a node did not join: check its `ray start` "
                      "and that it reaches the head's fabric address")


def judge_rccl(env: ClusterEnv, rc: int, log: str, from_json: CollectiveTable | None = None
               ) -> list[SmokeCheck]:
    """The transport and results checks of an all_reduce_perf log; `from_json` is the table
    read from the `-J` document, which stands for the log's text table when given."""
    evidence = parse_transport(log)
    transport = evidence.transport
    planned = sorted({n.hca for n in env.nodes if n.hca})
    if env.profile == "rdma":
        expected = "NET/IB on " + ", ".join(planned)
        if transport is None:
            check = SmokeCheck("rccl.transport", ERROR, "no transport lines", expected,
                               "the log has no `NET/IB`/`NET/Socket` lines: was NCCL_DEBUG=INFO set, "
                               "did RCCL start?", evidence.lines)
        elif transport == "NET/Socket":
            check = SmokeCheck("rccl.transport", FAIL, "NET/Socket", expected,
                               "RCCL fell back to TCP sockets: the RDMA path is not used ("
                               + (evidence.why_not_ib or "check NCCL_IB_HCA, the GID index and "
                                  "that rdma-core sees the device") + ")",
                               evidence.lines)
        else:
            other = [d for d in evidence.ib_devices if d not in planned]
            if other:
                check = SmokeCheck("rccl.transport", FAIL, "NET/IB on " + ", ".join(
                    evidence.ib_devices), expected, "RCCL used another RDMA device than planned",
                    evidence.lines)
            else:
                check = SmokeCheck("rccl.transport", PASS, "NET/IB on " + ", ".join(
                    evidence.ib_devices or ("(device not logged)",)), expected, "",
                    evidence.lines)
    else:
        expected = "NET/Socket (tcp profile)"
        status = PASS if transport == "NET/Socket" else ERROR if transport is None else FAIL
        check = SmokeCheck("rccl.transport", status, transport or "no transport lines", expected,
                           "TCP profile: expect 50-130 µs per hop", evidence.lines)
    return [check, _judge_results(rc, log, from_json)]


def _judge_results(rc: int, log: str, from_json: CollectiveTable | None = None) -> SmokeCheck:
    expected = "a complete table, no wrong results, exit 0"
    table = from_json
    if table is None:
        try:
            table = parse_all_reduce(log)
        except RcclOutputError as error:
            return SmokeCheck("rccl.results", FAIL, "no result table", expected,
                              f"{error}; exit status {rc}")
    if (broken := table.non_finite) is not None:  # inf/nan: no figure to report or keep
        return SmokeCheck("rccl.results", ERROR, f"{broken}: not a finite figure", expected,
                          "all_reduce_perf printed a figure that is no number; run it again")
    if table.wrong_rows:
        return SmokeCheck("rccl.results", FAIL, f"{len(table.wrong_rows)} rows with wrong "
                          "results", expected, "the all-reduce computed wrong sums")
    if not table.complete or rc != 0:
        return SmokeCheck("rccl.results", FAIL, f"cut short (exit {rc})", expected,
                          "; ".join(table.errors[-2:]))
    peak = table.max_busbw_gbs
    return SmokeCheck("rccl.results", PASS,
                      f"{len(table.rows)} sizes, avg busbw {table.avg_busbw_gbs:g} GB/s"
                      + (f", peak {peak:g} GB/s" if peak is not None else ""), expected,
                      f"RCCL {table.version or 'version not printed'}"
                      + (f" (figures from all_reduce_perf {JSON_FILE_OPTION})" if from_json else ""))


def smoke_test(plan: DeployPlan, head_runner: Runner, say: Progress | None = None,
               rccl: bool = True) -> SmokeReport:
    """Ray's nodes and the environment a task sees on each, then a 2-rank all-reduce; all
    run on the head."""
    from strixwizard.deploy.stacks.ray.ray import driver_argv, judge_cluster

    env, settings = plan.env, plan.settings
    report = SmokeReport()
    tell = say or (lambda node, message: None)
    try:
        tell(env.head, "Ray: one task pinned to each node reports the environment it sees")
        rc, out, err = run(head_runner, driver_argv(env, settings))
        cluster = judge_cluster(env, rc, out, err)
        if cluster is None:  # the head's `ray` has no Python module to drive: its node count
            tell(env.head, "ray status")
            rc, out, err = run(head_runner, ray_status_argv(env, settings))
            cluster = [judge_ray(env, rc, out, err)]
        report.checks += cluster
        if rccl and (refusal := mpirun_refusal(env)):
            report.checks.append(SmokeCheck("rccl.transport", ERROR, "not run", "NET/IB", refusal))
        elif rccl:
            tell(env.head, "2-rank RCCL all-reduce (NCCL_DEBUG=INFO)")
            json_path = _json_report_path(head_runner)
            rc, out, err = run(head_runner, all_reduce_argv(env, settings, json_path))
            if rc == 127:
                report.checks.append(SmokeCheck(
                    "rccl.transport", ERROR, "mpirun not installed", "NET/IB",
                    "install OpenMPI and rccl-tests on every node (see the deploy.rccl notes)"))
            else:
                from_json = (_json_document(head_runner, json_path, out) if json_path
                             else None)
                report.checks += judge_rccl(env, rc, out + "\n" + err, from_json)
    except Unreachable as error:
        report.checks.append(SmokeCheck("smoke", ERROR, "head unreachable", "", str(error)))
    return report


def _json_report_path(head_runner: Runner) -> str | None:
    """A fresh path for all_reduce_perf's `-J` document when the head's binary offers it (its
    `--help` says so); None for older builds, read from the text table."""
    import secrets

    rc, out, err = run(head_runner, ("all_reduce_perf", "--help"))
    offered = rc != 127 and supports_json_file(out + "\n" + err)
    return f"/tmp/strixwizard-smoke-{secrets.token_hex(6)}.json" if offered else None


def _json_document(head_runner: Runner, path: str, output: str) -> CollectiveTable | None:
    """The `-J` document read back from the head, then every file the run wrote removed;
    None when it was not written or is not a finished document (the text table stands)."""
    written = json_files_written(output, path) or (path,)
    rc, body, _ = run(head_runner, ("cat", written[0]))
    run(head_runner, ("rm", "-f", "--", path, *written))
    try:
        return parse_collective_json(body) if rc == 0 else None
    except RcclOutputError:
        return None


def smoke_ray(plan: DeployPlan, runners: dict[str, Runner], say: Progress | None = None
              ) -> SmokeReport:
    """Ray's nodes, RCCL on NET/IB, and with --serve, vLLM's /health and one completion."""
    report = smoke_test(plan, runners[plan.env.head], say)
    serve, model = plan.settings.own(ServeSettings), plan.settings.model
    if serve is not None and model:
        from strixwizard.deploy.stacks.ray.serve_run import smoke_serve

        report.checks += smoke_serve(plan.env, model, serve, runners[plan.env.head], say)
    return report
