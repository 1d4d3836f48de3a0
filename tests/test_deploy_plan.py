"""The demo site's deploy plan, exactly, and `strixwizard deploy` as users run it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from strixwizard.deploy.engine import make_plan
from strixwizard.deploy.plan import DeployPlan, DeploySettings, with_observed
from strixwizard.discovery import Discovery
from strixwizard.model import link_text
from strixwizard.services.nodes import RunRequest, resolve_run
from tests.support.cli import invoke
from tests.support.demo import demo_site_copy, printed_lines, state_env
from tests.support.hostile.bundles import hostile_bundle
from tests.support.hostile.strings import FIRMWARE, KERNEL, assert_no_control
from tests.support.scenarios import capture, thunderbolt_only_pair

DEMO_ENV_NODE_A = (
    "# RCCL/NCCL, Gloo, Ray and vLLM environment of cluster demo: rdma profile (roce-v2) "
    "over node-a:enp194s0np0 <-> node-b:enp194s0np0\n"
    """\
# Written by `strixwizard deploy`; `strixwizard deploy --rollback` removes it.
# Ray workers inherit the Ray daemon's environment: export this before `ray start`.

# Same on every node of the cluster
# RCCL bootstrap/OOB on the fabric interface
NCCL_SOCKET_IFNAME==enp194s0np0
# torch.distributed (Gloo) on the fabric interface
GLOO_SOCKET_IFNAME=enp194s0np0
# use RCCL's NET/IB (verbs) transport
NCCL_IB_DISABLE=0
# exact RDMA device:port ('=' = exact name match, never a prefix)
NCCL_IB_HCA==rocep194s0:1
# the RoCE v2 GID mapping the fabric IPv4 address (read from sysfs)
NCCL_IB_GID_INDEX=1
# verbs retry window 4.096 µs * 2^23
NCCL_IB_TIMEOUT=23
# verbs retries before an error
NCCL_IB_RETRY_CNT=7
# no GPUDirect RDMA on the Strix Halo iGPU: stage through host memory
NCCL_NET_GDR_LEVEL=0
# Ray must not hide the iGPU by setting ROCR_VISIBLE_DEVICES
RAY_EXPERIMENTAL_NOSET_ROCR_VISIBLE_DEVICES=1
# GPU memory is system RAM (GTT): Ray's host-memory monitor would kill model workers
RAY_memory_monitor_refresh_ms=0

# This node only (node-a)
# this node's fabric address for vLLM and Ray
VLLM_HOST_IP=192.168.100.1
""")


def demo_plan(model: str | None = "amd/Llama-3.3-70B-Instruct-FP8-KV") -> DeployPlan:
    site, nodes = resolve_run(RunRequest(demo=True))
    return make_plan(Discovery.of(site, nodes), DeploySettings(model=model))


def test_demo_plan_is_what_a_rocm_engineer_writes_for_two_e810_nodes() -> None:
    plan = demo_plan()
    steps = {(p.node, p.fix): p.steps for p in plan.site_plan.plans}
    assert [(p.node, p.fix) for p in plan.site_plan.plans] == [
        ("node-a", "deploy.env"), ("node-a", "deploy.container"), ("node-a", "deploy.rccl"),
        ("node-a", "deploy.ray"), ("node-a", "deploy.vllm"), ("node-b", "deploy.env"),
        ("node-b", "deploy.container"), ("node-b", "deploy.rccl"), ("node-b", "deploy.ray")]
    env_step = steps[("node-a", "deploy.env")][1]
    assert env_step.target == "/etc/strixwizard/rccl.env" and env_step.after == DEMO_ENV_NODE_A
    assert plan.ray_argv == {
        "node-a": ("ray", "start", "--head", "--port=6379", "--node-ip-address=192.168.100.1",
                   "--num-gpus=1", "--disable-usage-stats", "--temp-dir=/var/lib/strixwizard/ray",
                   "--include-dashboard=false"),
        "node-b": ("ray", "start", "--address=192.168.100.1:6379",
                   "--node-ip-address=192.168.100.2", "--num-gpus=1", "--disable-usage-stats",
                   "--temp-dir=/var/lib/strixwizard/ray")}
    launcher, ray_b = steps[("node-b", "deploy.ray")]
    assert launcher.target == "/etc/strixwizard/ray-start.sh" and launcher.mode == 0o755
    assert ray_b.argv[:4] == ("sh", "/etc/strixwizard/ray-start.sh", "/etc/strixwizard/rccl.env",
                              "/var/lib/strixwizard/ray")
    assert ray_b.argv[4:] == plan.ray_argv["node-b"]
    # undo: exactly the processes marked with strixwizard's Ray temp dir, never `ray stop`
    assert ray_b.undo_argv[:2] == ("sh", "-c") and ray_b.undo_argv[3:] == ("/var/lib/strixwizard/ray",)
    assert plan.vllm_argv == ("vllm", "serve", "amd/Llama-3.3-70B-Instruct-FP8-KV",
                              "--tensor-parallel-size", "2", "--distributed-executor-backend",
                              "ray", "--host", "192.168.100.1", "--port", "8000",
                              "--enforce-eager")
    vllm = steps[("node-a", "deploy.vllm")][0]
    assert vllm.after is not None and vllm.after.endswith(
        "exec vllm serve amd/Llama-3.3-70B-Instruct-FP8-KV --tensor-parallel-size 2 "
        "--distributed-executor-backend ray --host 192.168.100.1 --port 8000 --enforce-eager\n")
    podman = steps[("node-b", "deploy.container")][0].after or ""
    for option in ("--device=/dev/infiniband", "--device=/dev/kfd", "--device=/dev/dri",
                   "--ulimit=memlock=-1:-1", "--group-add=keep-groups",
                   "--env=NCCL_IB_HCA", "--env=VLLM_HOST_IP", "--env=NCCL_SOCKET_IFNAME"):
        assert f"  {option} \\\n" in podman
    assert "set -a\n. /etc/strixwizard/rccl.env\nset +a\n" in podman
    assert plan.notes == ["MTU differs between nodes (node-a 9000, node-b 1500): cure "
                          "it first (fix plans it), or RDMA transfers may fail after the QPs "
                          "connect"]
    assert all(p.group == "deploy demo: node-a, node-b" for p in plan.site_plan.plans if p.steps)


def test_observed_state_fills_before_and_drops_converged_steps() -> None:
    plan = demo_plan(model=None)
    env_file = plan.site_plan.for_node("node-a")[0].steps[1]
    observed: dict[tuple[str, str], str | None] = {
        ("node-a", "/etc/strixwizard"): "present", ("node-a", env_file.target): env_file.after,
        ("node-a", "ray (head)"): "running", ("node-b", "/etc/strixwizard"): None}
    launcher = next(s for p in plan.site_plan.for_node("node-a") if p.fix == "deploy.ray" for s in p.steps)
    observed[("node-a", launcher.target)] = launcher.after
    site = with_observed(plan.site_plan, observed)
    a = [s.target for p in site.for_node("node-a") for s in p.steps]
    assert a == ["/etc/strixwizard/podman-run.sh"]
    b = site.for_node("node-b")[0].steps[0]
    assert (b.target, b.before, b.before_known) == ("/etc/strixwizard", None, True)


def test_cli_demo_plan_text_shows_provenance_and_exits_0() -> None:
    done = invoke("deploy", "--demo")
    assert done.rc == 0, done.stderr
    assert "Deploy plan for site demo: rdma profile (roce-v2), head node-a, 2 nodes" in done.stdout
    assert ("  NCCL_IB_GID_INDEX=1\n      ← node-a: /sys/class/infiniband/rocep194s0/ports/1/"
            "gid_attrs/types/1 = RoCE v2") in done.stdout
    assert ("  VLLM_HOST_IP  per node: node-a 192.168.100.1, node-b 192.168.100.2"
            in done.stdout)
    assert ("run:  sh /etc/strixwizard/ray-start.sh /etc/strixwizard/rccl.env /var/lib/strixwizard/ray "
            "ray start --address=192.168.100.1:6379 --node-ip-address=192.168.100.2") in done.stdout
    assert "\n10 change(s) planned.\n" in done.stdout
    assert done.stdout.endswith("\nThe nodes are snapshots: this plan is shown, it cannot be applied.\n")
    assert "--apply" not in done.stdout.rsplit("10 change(s) planned.", 1)[1]  # no apply command that
    # would be refused


def test_cli_demo_json_shape() -> None:
    done = invoke("deploy", "--demo", "--json", "--target-dir", "/opt/sw", "--model", "m")
    assert done.rc == 0, done.stderr
    doc = done.json()
    assert (doc["mode"], doc["status"], doc["site"]) == ("plan", "planned", "demo")
    plan = doc["plan"]
    assert plan["target_dir"] == "/opt/sw" and plan["summary"] == {"changes": 11, "nodes": 2}
    assert plan["vllm_line"].startswith("vllm serve m --tensor-parallel-size 2")
    node_a = plan["env"]["nodes"][0]
    assert (node_a["node"], node_a["rdma_device"], node_a["port"], node_a["gid_index"]) == (
        "node-a", "rocep194s0", 1, 1)
    hca = next(v for v in node_a["variables"] if v["name"] == "NCCL_IB_HCA")
    assert hca["value"] == "=rocep194s0:1" and hca["source"].startswith("node-a: /sys/class/")
    assert "VLLM_HOST_IP" not in plan["env"]["shared"]
    assert plan["plans"][0]["steps"][1]["target"] == "/opt/sw/rccl.env"


def test_cli_demo_apply_is_refused_clearly() -> None:
    done = invoke("deploy", "--demo", "--apply", "--yes")
    assert done.rc == 2
    assert "replayed from snapshots: nothing to deploy on" in done.stderr


def test_cli_thunderbolt_only_site_is_refused_with_exit_2(tmp_path: Path) -> None:
    capture(tmp_path, thunderbolt_only_pair())
    site = tmp_path / "site.yaml"
    site.write_text("site: tb\nnodes:\n  - name: tb-a\n    snapshot: tb-a\n"
                    "  - name: tb-b\n    snapshot: tb-b\n")
    done = invoke("deploy", "--site", str(site), "--json")
    assert done.rc == 2
    doc = done.json()
    assert doc["status"] == "refused" and "plan" not in doc
    assert doc["reason"].startswith("no RDMA profile: tb-a and tb-b share only")
    assert "deploy refused: no RDMA profile" in done.stderr
    tcp = invoke("deploy", "--site", str(site), "--json", "--transport", "tcp")
    assert tcp.rc == 0 and tcp.json()["plan"]["env"]["profile"] == "tcp"


def test_doctor_does_not_import_the_deploy_engine() -> None:
    import subprocess

    code = ("import sys, io, contextlib\nfrom strixwizard.cli.main import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n    main(['doctor', '--demo', '--json'])\n"
            "print(sorted(m for m in sys.modules if m.startswith('strixwizard.deploy')))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"  # `deploy`'s parser (cli/deploy.py) loads none of it


def test_deploy_warns_with_the_checks_doctor_fails_on_the_same_nodes(tmp_path: Path) -> None:
    import json

    env = {"XDG_STATE_HOME": str(tmp_path)}
    doctor = json.loads(invoke("doctor", "--demo", "--json", env=env).stdout)
    failing = {(c["id"], c["host"] or c["entity"]) for c in doctor["checks"] if c["status"] == "fail"}
    assert ("node.rdma_core_version", "node-b") in failing
    out = invoke("deploy", "--demo", env=env).stdout
    warnings = out.split("Warnings:", 1)[1].split("\n\n", 1)[0]
    for check, where in failing:  # a link named as every screen names it, its id in the JSON
        assert f"doctor FAILs {check} on {link_text(where)}" in warnings, (check, where)
    assert "RCCL ready" not in out  # built for gfx1151 is not ready on a node doctor fails
    assert "cure what fix can first: strixwizard fix --demo;" in out
    assert "`strixwizard fix` first" not in out  # no hint that drops the site
    plan = json.loads(invoke("deploy", "--demo", "--json", env=env).stdout)["plan"]
    assert any(note.startswith("doctor FAILs node.rdma_core_version on node-b") for note in plan["notes"])


@pytest.fixture
def site_copy(tmp_path: Path) -> Path:
    """The demo site as a user's own site file in another directory (snapshot nodes)."""
    return demo_site_copy(tmp_path)


def test_deploy_plan_names_the_apply_of_the_same_command(site_copy: Path, tmp_path: Path) -> None:
    from strixwizard.cli.nextstep import same_command

    assert same_command(["deploy", "--site", "a b.yaml", "--plan", "--stack", "llama-rpc"], drop=("--plan",),
                        add=("--apply",)) == "strixwizard deploy --site 'a b.yaml' --stack llama-rpc --apply"
    demo = invoke("deploy", "--demo", env=state_env(tmp_path))
    assert "Apply with" not in demo.stdout  # snapshots: an apply would be refused
    assert printed_lines(demo)[-1] == "The nodes are snapshots: this plan is shown, it cannot be applied."


def test_deploy_plan_on_a_hostile_bundle_spells_it_out(tmp_path: Path) -> None:
    paths = hostile_bundle(tmp_path / "bundle", KERNEL, FIRMWARE)
    site = tmp_path / "site.yaml"
    site.write_text("site: hostile\nnodes:\n" + "".join(
        f"  - name: {p.name}\n    snapshot: {p}\n    fabric_address: 192.168.100.{i + 1}\n"
        for i, p in enumerate(paths)))
    result = invoke("deploy", "--site", str(site), "--plan",
                     env={"XDG_STATE_HOME": str(tmp_path / "state")})
    assert result.rc in (0, 2), result.stdout + result.stderr
    assert_no_control(result.stdout + result.stderr)
