"""Ray on the nodes (the default stack of `deploy`): how strixwizard starts its own Ray,
recognises it, stops exactly it, and what its smoke test asks Ray itself. Pure: argv,
fixed scripts and verdicts; the engine runs them through the nodes' executors.

- Start: `sh DIR/ray-start.sh ENV_FILE TEMP_DIR ray start ...` on each node, the head first
  (`--head --port P --node-ip-address FABRIC_IP`), then the workers (`--address
  HEAD_FABRIC_IP:P --node-ip-address FABRIC_IP`). The launcher exports every variable of
  the env file, and `STRIXWIZARD_RAY=TEMP_DIR`, before it execs `ray start`: Ray's
  daemons (raylet, gcs_server, agents) and the worker processes they fork inherit that
  environment, which is what the tasks and vLLM's workers then see. `--temp-dir` is
  strixwizard's own (sessions and logs apart from any other Ray's), the dashboard is off.
- Recognise: a raylet in this network namespace whose environment holds the marker is
  strixwizard's (`running`); any other raylet is another Ray (`another Ray runs here ...`):
  the deploy then refuses to start a second one and leaves that one alone.
- Stop (the rollback): TERM, then KILL after 10 s, every process whose environment holds
  the marker (the value recorded in the journal's undo argv): exactly the Ray strixwizard
  started, never another Ray (`ray stop` would end every Ray of the node).
- Smoke: a driver on the head, run by the Python of the node's `ray` command, connects to
  the head, counts the live nodes, and runs one task pinned to each node
  (`NodeAffinitySchedulingStrategy`, hard) that returns the variables its worker process
  really sees; each is compared with the plan. A raylet started without a variable makes
  its tasks lack it: the smoke then fails naming the node and the variable.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from strixwizard.deploy.smoke import ERROR, FAIL, PASS, SmokeCheck
from strixwizard.fixing.model import Kind, Read, Step

if TYPE_CHECKING:
    from strixwizard.deploy.base import DeployPlan, DeploySettings
    from strixwizard.deploy.env import ClusterEnv
    from strixwizard.fixing.runner import Runner

RAY_TEMP_DIR = "/var/lib/strixwizard/ray"
RAY_PORT = 6379  # the head's GCS port (`ray start --head --port`)
MARKER = "STRIXWIZARD_RAY"
LAUNCHER = "ray-start.sh"
#: What vLLM over Ray needs to see in every worker process (the smoke compares these).
WATCHED = ("NCCL_IB_HCA", "NCCL_IB_GID_INDEX", "NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME",
           "RAY_EXPERIMENTAL_NOSET_ROCR_VISIBLE_DEVICES", "VLLM_HOST_IP")
#: The driver's own time budget: under the executor's 30 s limit for one command.
SMOKE_BUDGET_S = 24.0
NO_RAY_MODULE = 3  # the driver's exit status when the `ray` command's Python has no `ray`

#: Shell functions shared by the scripts below. `marked TEMP`: PIDs whose environment holds
#: the marker; `raylets`: PIDs of the raylets in this shell's network namespace.
_SCAN = r"""marked() { grep -lzxF -e "STRIXWIZARD_RAY=$1" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3; }
raylets() {
  me=$(readlink /proc/$$/ns/net)
  for f in $(grep -lx raylet /proc/[0-9]*/comm 2>/dev/null); do
    d=${f%/comm}
    [ "$(readlink "$d/ns/net" 2>/dev/null)" = "$me" ] && echo "${d#/proc/}"
  done
}
others() {  # raylets that are not marked with $1
  mine=" $(marked "$1" | tr '\n' ' ') " theirs=
  for pid in $(raylets); do
    case $mine in *" $pid "*) ;; *) theirs="$theirs $pid" ;; esac
  done
  echo "${theirs# }"
}
"""
#: `sh -c STATE TEMP`: `running` (strixwizard's Ray), `another Ray runs here (...)`, or
#: `stopped`. Always exits 0 (the fix engine treats a failing read as "cannot read").
STATE = _SCAN + r"""ours=$(marked "$0")
theirs=$(others "$0")
mine=" $(echo $ours) "
for pid in $(raylets); do
  case $mine in *" $pid "*) echo running; exit 0 ;; esac
done
if [ -n "$theirs" ]; then
  echo "another Ray runs here (raylet PID $theirs, not started by strixwizard)"
else
  echo stopped
fi
"""
#: DIR/ray-start.sh: $1 env file, $2 Ray's temp dir (also the marker's value), then the
#: `ray start` argv. Refuses when another Ray already runs on the node.
START = "# Written by `strixwizard deploy`; `deploy --rollback` removes it.\n" + _SCAN + r"""
envfile=$1 temp=$2; shift 2
command -v -- "$1" >/dev/null 2>&1 || { echo "not installed: $1" >&2; exit 127; }
theirs=$(others "$temp")
if [ -n "$theirs" ]; then
  echo "another Ray runs here (raylet PID $theirs, not started by strixwizard):" \
    "left alone, not starting a second one" >&2
  exit 1
fi
set -a
. "$envfile"
set +a
export STRIXWIZARD_RAY="$temp"
mkdir -p -- "$temp"
exec "$@" </dev/null
"""
#: `sh -c STOP TEMP`: ends every process marked with TEMP (TERM, KILL after 10 s), and only
#: those (the rollback then reads the node's state again and names another Ray left running).
STOP = r"""m() { grep -lzxF -e "STRIXWIZARD_RAY=$0" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3; }
p=$(m) i=0; [ -z "$p" ] || kill $p 2>/dev/null
while [ -n "$p" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); p=$(m); done
[ -z "$p" ] || { kill -9 $p 2>/dev/null; sleep 0.5; p=$(m); }
[ -z "$p" ] || { echo "Ray processes still running:" $p >&2; exit 1; }
"""
#: `sh -c WITH_RAY_PYTHON DRIVER ARGS...`: runs the driver with the Python of the node's
#: `ray` command (its shebang), so it imports the same Ray the daemons run.
WITH_RAY_PYTHON = r"""ray=$(command -v ray) || { echo "not installed: ray" >&2; exit 127; }
ray=$(readlink -f -- "$ray")
IFS= read -r first < "$ray" || first=
set -f
case $first in
  '#!'*) exec ${first#??} -c "$0" "$@" ;;
  *) exec python3 -c "$0" "$@" ;;
esac
"""
#: The smoke driver. argv: address, this node's IP, expected node count, the variable
#: names (JSON), time budget (s). Prints one JSON line: nodes, env per node IP, error.
DRIVER = r"""
import json, os, sys, time
address, node_ip, expected = sys.argv[1], sys.argv[2], int(sys.argv[3])
names, budget = json.loads(sys.argv[4]), float(sys.argv[5])
deadline = time.monotonic() + budget
try:
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
except ImportError as error:
    print(json.dumps({"error": "no-ray-module", "detail": str(error)}, allow_nan=False))
    sys.exit(3)
out = {"ray": getattr(ray, "__version__", "?"), "nodes": [], "env": {}, "error": None}
try:
    ray.init(address=address, _node_ip_address=node_ip, logging_level="ERROR",
             log_to_driver=False)
    while True:
        nodes = [n for n in ray.nodes() if n.get("Alive")]
        if len(nodes) >= expected or time.monotonic() > deadline - budget / 2:
            break
        time.sleep(0.5)
    out["nodes"] = [n["NodeManagerAddress"] for n in nodes]

    @ray.remote(num_cpus=0)
    def seen(wanted):
        return {name: os.environ.get(name) for name in wanted}

    refs = {seen.options(scheduling_strategy=NodeAffinitySchedulingStrategy(
        n["NodeID"], soft=False)).remote(names): n["NodeManagerAddress"] for n in nodes}
    ready, _ = ray.wait(list(refs), num_returns=len(refs),
                        timeout=max(1.0, deadline - time.monotonic()))
    for ref in ready:
        out["env"][refs[ref]] = ray.get(ref)
except Exception as error:
    out["error"] = f"{type(error).__name__}: {error}"
print(json.dumps(out, allow_nan=False), flush=True)
os._exit(0)
"""


@dataclass(frozen=True)
class RaySettings:
    """How Ray is started (CLI flags; the defaults suit a real node)."""

    temp_dir: str = RAY_TEMP_DIR
    port: int = RAY_PORT
    num_cpus: int | None = None  # None: Ray counts the node's CPUs
    object_store_bytes: int | None = None  # None: Ray's default (30% of memory)


def ray_settings(settings: DeploySettings) -> RaySettings:
    return settings.own(RaySettings) or RaySettings()


def ray_port(settings: DeploySettings) -> int:
    """The head's port, where the workers, the smoke test's driver and vLLM find Ray."""
    return ray_settings(settings).port


def start_argv(env: ClusterEnv, node: str, settings: DeploySettings) -> tuple[str, ...]:
    """`ray start` for this node: on its fabric address, the head first."""
    ray = ray_settings(settings)
    common = [f"--node-ip-address={env.node(node).ip}", "--num-gpus=1", "--disable-usage-stats",
              f"--temp-dir={ray.temp_dir}"]
    if ray.num_cpus is not None:
        common.append(f"--num-cpus={ray.num_cpus}")
    if ray.object_store_bytes is not None:
        common.append(f"--object-store-memory={ray.object_store_bytes}")
    if node == env.head:
        return ("ray", "start", "--head", f"--port={ray_port(settings)}", *common,
                "--include-dashboard=false")
    return ("ray", "start", f"--address={env.head_ip}:{ray_port(settings)}", *common)


def launch_argv(env: ClusterEnv, node: str, settings: DeploySettings) -> tuple[str, ...]:
    """What the deploy runs on the node: the launcher, the env file, Ray's temp dir (the
    marker), then `ray start`."""
    return ("sh", settings.path(LAUNCHER), settings.env_file, ray_settings(settings).temp_dir,
            *start_argv(env, node, settings))


def ray_steps(env: ClusterEnv, node: str, settings: DeploySettings) -> tuple[Step, ...]:
    """The launcher file, then starting Ray through it (undo: stop exactly that Ray)."""
    from strixwizard.deploy.base import file_step

    temp = ray_settings(settings).temp_dir
    launcher = settings.path(LAUNCHER)
    role = "head" if node == env.head else f"worker of {env.head_ip}:{ray_port(settings)}"
    start = Step(
        kind=Kind.COMMAND, target=f"ray ({role})",
        summary=f"start Ray {role} on {env.node(node).ip} with {settings.env_file} exported",
        read=Read("command", argv=("sh", "-c", STATE, temp), parse="text"),
        before="stopped", after="running",
        argv=launch_argv(env, node, settings),
        undo_argv=("sh", "-c", STOP, temp), before_known=False,
    )
    return (file_step(launcher, "write the Ray launcher (marks every process of this Ray)",
                      START, mode=0o755), start)


def is_ray_start(step: Step) -> bool:
    return step.kind is Kind.COMMAND and step.target.startswith("ray (")


def another_ray(state: str | None) -> bool:
    """The node's state read says a Ray that strixwizard did not start runs there."""
    return bool(state) and str(state).startswith("another Ray")


def driver_argv(env: ClusterEnv, settings: DeploySettings,
                budget_s: float = SMOKE_BUDGET_S) -> tuple[str, ...]:
    return ("sh", "-c", WITH_RAY_PYTHON, DRIVER, f"{env.head_ip}:{ray_port(settings)}",
            env.head_ip, str(len(env.nodes)), json.dumps(list(WATCHED), allow_nan=False), f"{budget_s:g}")


def _driver_answer(stdout: str) -> dict[str, Any] | None:
    for line in reversed(stdout.splitlines()):
        if line.startswith("{"):
            try:
                doc = json.loads(line)
            except ValueError:
                return None
            return doc if isinstance(doc, dict) else None
    return None


def judge_cluster(env: ClusterEnv, rc: int, stdout: str, stderr: str) -> list[SmokeCheck] | None:
    """`ray.nodes` and `ray.env` from the driver's answer; None when the node's `ray` has no
    Python module to drive (not Ray itself: the caller falls back to `ray status`)."""
    doc = _driver_answer(stdout)
    expected = f"{len(env.nodes)} nodes"
    if doc is not None and doc.get("error") == "no-ray-module" and rc == NO_RAY_MODULE:
        return None
    if doc is None:
        reason = (stderr or stdout).strip().splitlines()
        return [SmokeCheck("ray.nodes", ERROR, "the Ray driver gave no answer", expected,
                           f"exit {rc}: {reason[-1] if reason else '(no output)'}")]
    raw_nodes = doc.get("nodes")
    seen_ips = [str(ip) for ip in raw_nodes] if isinstance(raw_nodes, list) else []
    error = doc.get("error")
    missing = [f"{n.node} ({n.ip})" for n in env.nodes if n.ip not in seen_ips]
    if missing:
        nodes = SmokeCheck("ray.nodes", FAIL, f"{len(seen_ips)} nodes", expected,
                           "not in the cluster on its fabric address: " + ", ".join(missing)
                           + (f"; {error}" if error else ""), tuple(seen_ips))
    else:
        nodes = SmokeCheck("ray.nodes", PASS, f"{len(seen_ips)} nodes", expected,
                           f"Ray {doc.get('ray', '?')}, every node on its fabric address",
                           tuple(seen_ips))
    return [nodes, _judge_env(env, doc, error)]


def _judge_env(env: ClusterEnv, doc: dict[str, Any], error: object) -> SmokeCheck:
    raw = doc.get("env")
    seen: dict[str, Any] = raw if isinstance(raw, dict) else {}
    problems: list[str] = []
    evidence: list[str] = []
    compared = 0
    for node in env.nodes:
        answer = seen.get(node.ip)
        if not isinstance(answer, dict):
            problems.append(f"{node.node}: no answer from a task pinned to it")
            continue
        for name in WATCHED:
            planned = node.get(name)
            if planned is None:
                continue
            compared += 1
            got = answer.get(name)
            if got is None:
                problems.append(f"{node.node}: {name} is missing from the environment its Ray "
                                "workers see (its raylet was started without it)")
            elif not isinstance(got, str) or got != planned.value:
                problems.append(f"{node.node}: {name}={got!r}, planned {planned.value!r}")
            else:
                evidence.append(f"{node.node}: {name}={got}")
    expected = "every planned variable, in a task on each node"
    if problems:
        detail = "; ".join(problems) + (f"; {error}" if error else "")
        return SmokeCheck("ray.env", FAIL, f"{len(problems)} problem(s)", expected, detail,
                          tuple(evidence))
    return SmokeCheck("ray.env", PASS, f"{compared} variables as planned on {len(env.nodes)} nodes",
                      expected, "", tuple(evidence))


def _ray_target(plan: DeployPlan, node: str) -> str:
    steps = [s for p in plan.site_plan.for_node(node) if p.fix == "deploy.ray" for s in p.steps
             if is_ray_start(s)]
    return steps[0].target if steps else ""


def refuse_other_ray(plan: DeployPlan, observed: Mapping[tuple[str, str], str | None]) -> None:
    """`Stack.observe`: refuses when a Ray that strixwizard did not start runs on a node (it is
    left alone; a second one is never started), and when strixwizard's Ray already runs on a
    node whose environment would change: its actors would keep the old one (they inherit the
    daemon's), which is the pitfall this avoids."""
    from strixwizard.deploy.base import with_observed
    from strixwizard.deploy.env import DeployRefused

    for node in plan.site_plan.nodes:
        state = observed.get((node, _ray_target(plan, node)))
        if another_ray(state):
            raise DeployRefused(
                f"{node}: {state}. The deploy leaves it alone and does not start a second Ray "
                f"there; stop that Ray yourself (`ray stop` on {node} ends every Ray there) or "
                "deploy on other nodes")
    converged = with_observed(plan.site_plan, dict(observed))
    for node in converged.nodes:
        plans = converged.for_node(node)
        env_changes = any(s.kind is Kind.FILE and s.target == plan.settings.env_file
                          for p in plans for s in p.steps)
        ray_running = observed.get((node, _ray_target(plan, node))) == "running"
        if env_changes and ray_running:
            raise DeployRefused(
                f"Ray already runs on {node}; its workers would keep their old environment "
                f"(Ray actors inherit the daemon's). Stop it there (`ray stop`) and deploy again")


def other_ray_left(runner: Runner, step: Step) -> str | None:
    """`Stack.after_undo`: after strixwizard's Ray was stopped, the node's Ray state read again;
    another Ray that still runs there is named (the rollback leaves it alone)."""
    from strixwizard.fixing.readers import ReadError
    from strixwizard.fixing.runner import StepFailed

    if not is_ray_start(step):
        return None
    try:
        state = runner.read(step.read)
    except (ReadError, StepFailed):
        return None
    return str(state) if another_ray(state) else None
