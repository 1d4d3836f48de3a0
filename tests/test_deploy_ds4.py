"""The ds4 stack: the transport asked from the site's link, both ranks' launch lines, the
plan (its steps, text, JSON and wizard panel), the settings builder, and the verdict read from
both ranks' logs and the completion probe.

ds4 cannot run here (no GPU, no RDMA device): the verdict is tested on the lines its authors
published (tests/data/deploy/ds4, SOURCE names each) and, where none was published, on lines
rendered from ds4's format strings (the `_rendered` files).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from strixwizard.deploy.base import DeploySettings
from strixwizard.deploy.declare import option_values
from strixwizard.deploy.engine import make_plan
from strixwizard.deploy.env import ClusterEnv, DeployRefused, NodeEnv
from strixwizard.deploy.plan import STACKS
from strixwizard.deploy.process import START, STATE, STOP
from strixwizard.deploy.smoke import ERROR, FAIL, PASS
from strixwizard.deploy.stacks.ds4.plan import (
    Ds4Plan,
    Ds4Settings,
    api_url,
    coordinator_argv,
    environment,
    pair,
    transport_for,
    worker_argv,
)
from strixwizard.deploy.stacks.ds4.render import ds4_panel
from strixwizard.deploy.stacks.ds4.smoke import (
    FALLBACK,
    PROVED,
    REFUSED,
    TCP,
    UNKNOWN,
    EndEvidence,
    judge,
    judge_completion,
    transport_check,
)
from strixwizard.discovery import Discovery
from strixwizard.errors import UsageError
from strixwizard.fixing.model import Kind
from strixwizard.services.nodes import RunRequest, resolve_run
from tests.support.cli import invoke

LOGS = Path(__file__).parent / "data" / "deploy" / "ds4"
MODEL = "/models/DeepSeek-V4-Flash-Q4_K.gguf"


def log(*names: str) -> str:
    return "".join((LOGS / name).read_text() for name in names)


def env_of(link: str = "roce-v2", nodes: int = 2, rdma: bool = True) -> ClusterEnv:
    ends = tuple(
        NodeEnv(f"node-{chr(97 + i)}", f"192.168.100.{i + 1}", "enp194s0",
                "rocep194s0" if rdma else None, 1 if rdma else None, 1 if rdma else None, ())
        for i in range(nodes))
    return ClusterEnv("lab", "rdma" if rdma else "tcp", link, "node-a", ends, ("l1",))


# -- the transport asked for ----------------------------------------------------------------

@pytest.mark.parametrize(("link", "odinlink", "asked", "fallback"), [
    ("roce-v2", False, "rdma", False),
    ("infiniband", False, "rdma", False),
    ("roce-v2", True, "rdma", False),  # a verbs link wins over OdinLink
    ("thunderbolt-net", True, "odl", False),
    ("thunderbolt-net", False, "tcp", True),
    ("ethernet", True, "tcp", True),  # OdinLink rides USB4 only
    ("iwarp", False, "tcp", True),  # no IPv4-mapped GID for ds4 to address the peer by
    ("roce-v1", False, "tcp", True),
])
def test_the_link_decides_the_transport_and_tcp_says_it_is_a_fallback(
        link: str, odinlink: bool, asked: str, fallback: bool) -> None:
    choice = transport_for(link, odinlink)
    assert (choice.transport, choice.fallback, choice.rdma) == (asked, fallback, asked != "tcp")
    assert ("TCP is a fallback" in choice.why) is fallback
    if fallback:
        assert "8.29" in choice.why and "8.57" in choice.why  # the published A/B, cited


def test_usb4_without_odinlink_says_how_to_get_odl() -> None:
    assert "OdinLink provider on both nodes" in transport_for("thunderbolt-net").why
    assert "#1018" in transport_for("thunderbolt-net", odinlink=True).why


def test_the_tcp_profile_keeps_a_verbs_link_on_tcp_as_asked_but_not_odinlink_on_usb4() -> None:
    asked = transport_for("roce-v2", profile="tcp")
    assert (asked.transport, asked.fallback) == ("tcp", False)
    assert "as asked" in asked.why
    assert transport_for("thunderbolt-net", odinlink=True, profile="tcp").transport == "odl"
    assert transport_for("ethernet", profile="tcp").fallback


def test_a_transport_asked_for_is_taken_and_auto_is_never_offered() -> None:
    assert transport_for("ethernet", asked="rdma").transport == "rdma"
    assert not transport_for("ethernet", asked="tcp").fallback
    with pytest.raises(DeployRefused, match="no ds4 transport 'auto'"):
        transport_for("roce-v2", asked="auto")
    with pytest.raises(ValueError, match="ds4 transport 'auto'"):
        Ds4Settings(transport="auto")


# -- the launch lines -----------------------------------------------------------------------

def test_rank_0_listens_on_the_head_fabric_address_and_rank_1_dials_it() -> None:
    env = env_of()
    choice = transport_for(env.transport)
    ds4 = Ds4Settings(model=MODEL, ctx_size=65536)
    assert pair(env) == ("node-a", "node-b")
    assert coordinator_argv(env, choice, ds4) == (
        "--role", "coordinator", "--tensor-parallel", "--listen", "192.168.100.1", "9000",
        "--transport", "rdma", "--rocm", "-m", MODEL, "-c", "65536",
        "--rdma-device", "rocep194s0", "--rdma-gid-index", "1",
        "--host", "192.168.100.1", "--port", "8000")
    assert worker_argv(env, "node-b", choice, ds4) == (
        "--role", "worker", "--tensor-parallel", "--coordinator", "192.168.100.1", "9000",
        "--transport", "rdma", "--rocm", "-m", MODEL, "-c", "65536",
        "--rdma-device", "rocep194s0", "--rdma-gid-index", "1")
    assert environment(choice, ds4) == ()
    assert api_url(env, ds4) == "http://192.168.100.1:8000"
    lines = coordinator_argv(env, choice, ds4) + worker_argv(env, "node-b", choice, ds4)
    assert "0.0.0.0" not in lines and "auto" not in lines


def test_odl_and_tcp_carry_no_verbs_device_and_odl_names_its_device_index() -> None:
    env = env_of("thunderbolt-net", rdma=False)
    ds4 = Ds4Settings(model=MODEL, odl_device=1, api_host="127.0.0.1", api_port=8090)
    odl = transport_for(env.transport, odinlink=True)
    head = coordinator_argv(env, odl, ds4)
    assert "--rdma-device" not in head and head[-4:] == ("--host", "127.0.0.1", "--port", "8090")
    assert environment(odl, ds4) == ("DS4_TP_ODL_DEV=1",)
    tcp = transport_for(env.transport)
    assert worker_argv(env, "node-b", tcp, ds4)[6:8] == ("--transport", "tcp")
    assert environment(tcp, ds4) == ()


def test_tensor_parallelism_takes_exactly_two_nodes() -> None:
    with pytest.raises(DeployRefused, match=r"exactly two nodes.*has 3: pick two with --nodes"):
        pair(env_of(nodes=3))
    with pytest.raises(DeployRefused, match="has 1"):
        pair(env_of(nodes=1))


def test_settings_refuse_what_cannot_be_a_port_or_a_device() -> None:
    with pytest.raises(ValueError, match="not a TCP port"):
        Ds4Settings(tp_port=70000)
    with pytest.raises(ValueError, match="negative"):
        Ds4Settings(odl_device=-1)


# -- the verdict, on published lines ----------------------------------------------------------

def test_published_rdma_on_both_ranks_is_proved() -> None:
    verdict = judge("rdma", log("coordinator_rdma_odinlink_verbs.txt"), log("worker_rdma_roce.txt"))
    assert verdict.kind == PROVED and verdict.reasons == () and verdict.errors == ()
    assert (verdict.head.transport, verdict.head.device) == ("rdma", "odl_tb5_0")
    assert (verdict.worker.transport, verdict.worker.device) == ("rdma", "rocep3s0f0")
    assert verdict.worker.lines == (
        "ds4-tp: rdma device rocep3s0f0 (port state 4)",
        "ds4-tp: leader connected, transport=rdma gate-timeout=750ms")


def test_published_tcp_where_rdma_was_asked_is_a_fallback() -> None:
    verdict = judge("rdma", log("coordinator_tcp.txt"), log("worker_rdma_roce.txt"))
    assert verdict.kind == FALLBACK
    assert verdict.reasons == ("head (rank 0): `transport=tcp` where --transport rdma was asked",)
    assert "tensor parallelism bound: rank 0, 50/50 expert split, tcp transport" in verdict.head.lines


def test_tcp_on_both_ranks_where_tcp_was_asked_is_tcp() -> None:
    verdict = judge("tcp", log("coordinator_tcp.txt"), log("worker_tcp_rendered.txt"))
    assert verdict.kind == TCP and verdict.reasons == ()
    assert judge("tcp", log("coordinator_tcp.txt"), log("worker_rdma_roce.txt")).kind == UNKNOWN


def test_odl_on_both_ranks_is_proved_and_rdma_where_odl_was_asked_is_not() -> None:
    verdict = judge("odl", log("coordinator_odl_rendered.txt"), log("worker_odl_rendered.txt"))
    assert verdict.kind == PROVED
    assert (verdict.head.device, verdict.worker.device) == ("odl_tb5_0", "odl_tb5_0")
    other = judge("odl", log("coordinator_odl_rendered.txt"), log("worker_rdma_roce.txt"))
    assert other.kind == UNKNOWN
    assert other.reasons == ("worker (rank 1): transport=rdma, not odl",)


def test_a_silent_rank_leaves_the_verdict_unknown_and_its_gate_failures_are_kept() -> None:
    verdict = judge("rdma", log("coordinator_gate_failed.txt"), log("worker_rdma_roce.txt"))
    assert verdict.kind == UNKNOWN
    assert verdict.reasons[0].startswith("head (rank 0): no `ds4-tp: ... connected, transport=`")
    assert verdict.head.errors == ("ds4-tp: big gate window barrier failed",
                                   "ds4: GLM TP batch gate failed (layer 3)")
    assert judge("rdma", "", "").reasons[1].startswith("worker (rank 1): no ")


def test_an_explicit_transport_a_side_lacks_is_refused() -> None:
    # the prefix a caller puts before the message is not published: found anywhere in a line
    verdict = judge("rdma", "ds4-server: " + log("coordinator_refused_rendered.txt"), "")
    assert verdict.kind == REFUSED
    assert verdict.reasons[0] == (
        "head (rank 0): `ds4-server: tp: --transport rdma but the peer side has no active device`")
    assert "fails closed" in verdict.reasons[1]


def test_the_odinlink_shim_socket_fallback_fails_rdma_even_when_both_ranks_say_rdma() -> None:
    shim = log("coordinator_rdma_odinlink_verbs.txt") + '{"odl_stats":{"fallback_calls":3}}\n'
    verdict = judge("rdma", shim, log("worker_rdma_roce.txt"))
    assert verdict.kind == FALLBACK
    assert "3 call(s) over its socket fallback" in verdict.reasons[0]
    clean = log("coordinator_rdma_odinlink_verbs.txt") + '{"fallback_calls":0}\n'
    assert judge("rdma", clean, log("worker_rdma_roce.txt")).kind == PROVED


def test_log_lines_stay_data() -> None:
    evidence = EndEvidence.of("ds4-tp: worker connected, transport=rdma\x1b[2J\r\n")
    assert evidence.lines == ("ds4-tp: worker connected, transport=rdma?[2J",)


# -- the smoke check ------------------------------------------------------------------------

def test_the_smoke_check_passes_rdma_proved_and_fails_a_fallback() -> None:
    proved = transport_check(judge("rdma", log("coordinator_rdma_odinlink_verbs.txt"),
                                   log("worker_rdma_roce.txt")))
    assert (proved.status, proved.observed) == (PASS, "rdma on both ranks (odl_tb5_0, rocep3s0f0)")
    assert "worker (rank 1): ds4-tp: leader connected, transport=rdma gate-timeout=750ms" in (
        proved.evidence)
    fallback = transport_check(judge("rdma", log("coordinator_tcp.txt"), log("worker_rdma_roce.txt")))
    assert (fallback.status, fallback.observed) == (FAIL, "TCP FALLBACK")
    assert fallback.detail.startswith("ds4 fell back to TCP: head (rank 0): `transport=tcp`")
    unknown = transport_check(judge("rdma", "", log("worker_rdma_roce.txt")))
    assert (unknown.status, unknown.observed) == (FAIL, "unknown")


def test_tcp_asked_passes_and_says_why_and_a_gate_failure_fails_a_proved_pair() -> None:
    why = transport_for("ethernet").why
    tcp = transport_check(judge("tcp", log("coordinator_tcp.txt"), log("worker_tcp_rendered.txt")), why)
    assert (tcp.status, tcp.observed, tcp.detail) == (PASS, "TCP", why)
    failed = transport_check(judge(
        "rdma", log("coordinator_rdma_odinlink_verbs.txt", "coordinator_gate_failed.txt"),
        log("worker_rdma_roce.txt")))
    assert (failed.status, failed.observed) == (FAIL, "rdma on both ranks (odl_tb5_0, rocep3s0f0), "
                                                      "then a gate failure")
    assert "`ds4-tp: big gate window barrier failed`" in failed.detail


# -- the plan, its text, JSON and panel, on the demo site -------------------------------------

def demo_plan(**ds4: Any) -> Ds4Plan:
    site, nodes = resolve_run(RunRequest(demo=True))
    plan = make_plan(Discovery.of(site, nodes), DeploySettings(stack="ds4", options=(Ds4Settings(**ds4),)))
    assert isinstance(plan, Ds4Plan)
    return plan


def test_the_worker_starts_first_and_each_rank_is_a_journalled_command_undone_by_pid() -> None:
    plan = demo_plan(model=MODEL)
    assert [(p.node, p.fix) for p in plan.site_plan.plans] == [
        ("node-b", "deploy.ds4"), ("node-a", "deploy.ds4-server")]
    assert len({p.group for p in plan.site_plan.plans} - {None}) == 1
    launcher, worker = plan.site_plan.plans[0].steps[1:]
    assert (launcher.kind, launcher.target, launcher.after) == (
        Kind.FILE, "/etc/strixwizard/ds4-start.sh", START)
    pidfile = "/var/lib/strixwizard/ds4/ds4.pid"
    assert worker.argv == ("sh", "/etc/strixwizard/ds4-start.sh", pidfile,
                           "/var/lib/strixwizard/ds4/ds4.log", "9000", "dials", "ds4", "--", "--",
                           *plan.worker_argv)
    assert (worker.undo_argv, worker.read.argv) == (("sh", "-c", STOP, pidfile),
                                                    ("sh", "-c", STATE, pidfile))
    server = plan.site_plan.plans[1].steps[2]
    assert server.argv[4:8] == ("8000", "http", "ds4-server", "--")
    assert server.argv[-len(plan.coordinator_argv):] == plan.coordinator_argv
    # rolled back worker first: rank 1 by its PID, then rank 0
    assert STACKS["ds4"].stops_last == frozenset({"ds4-server"})


def test_without_a_model_nothing_starts_and_the_plan_says_how() -> None:
    plan = demo_plan()
    assert not any(step.argv for p in plan.site_plan.plans for step in p.steps)
    assert any("pass --model PATH" in note for note in plan.site_plan.plans[1].notes)


def test_cli_plan_text_json_and_help() -> None:
    done = invoke("deploy", "--demo", "--stack", "ds4", "--model", MODEL)
    assert done.rc == 0, done.stderr
    assert "Transport: --transport rdma: roce-v2 link: ds4's verbs transport" in done.stdout
    assert (f"node-b: env ds4 --role worker --tensor-parallel --coordinator 192.168.100.1 9000 "
            f"--transport rdma --rocm -m {MODEL} --rdma-device rocep194s0 --rdma-gid-index 1"
            in done.stdout)
    assert "HTTP: http://192.168.100.1:8000" in done.stdout
    plan = invoke("deploy", "--demo", "--stack", "ds4", "--model", MODEL, "--ds4-transport", "tcp",
                  "--ds4-api-port", "8090", "--json").json()["plan"]
    assert (plan["stack"], plan["model"], plan["api_url"]) == ("ds4", MODEL, "http://192.168.100.1:8090")
    assert plan["transport"] == {"asked": "tcp", "link": "roce-v2", "fallback": False,
                                 "why": "--transport tcp, as asked"}
    assert plan["worker"]["argv"][6:8] == ["--transport", "tcp"]
    assert plan["coordinator"]["line"].startswith("env ds4-server --role coordinator")
    assert "vllm_argv" not in plan
    helped = invoke("deploy", "--stack", "ds4", "--help")
    assert "--ds4-transport" in helped.stdout and "--ds4-odinlink" in helped.stdout
    refused = invoke("deploy", "--demo", "--stack", "ds4", "--ds4-transport", "auto")
    assert refused.rc == 2 and "invalid choice: 'auto'" in refused.stderr


def test_the_settings_builder_refuses_what_cannot_reach_a_node() -> None:
    stack = STACKS["ds4"]
    values = option_values(stack.options, {"model": "/m\n.gguf"})
    with pytest.raises(UsageError, match="--model"):
        stack.settings(DeploySettings(), values)
    with pytest.raises(UsageError, match="not a TCP port"):
        stack.settings(DeploySettings(), option_values(stack.options, {"ds4_tp_port": 0}))
    settings = stack.settings(DeploySettings(), option_values(stack.options, {
        "model": MODEL, "ds4_transport": "", "ds4_odinlink": True}))
    assert (settings.stack, settings.model) == ("ds4", MODEL)
    assert settings.own(Ds4Settings) == Ds4Settings(model=MODEL, odinlink=True)


def test_the_wizard_panel_shows_each_rank_and_the_transport() -> None:
    panel = ds4_panel(demo_plan(model=MODEL))
    assert [(v.node, v.role) for v in panel.nodes] == [("node-a", "rank 0, ds4-server"),
                                                       ("node-b", "rank 1, ds4")]
    assert panel.nodes[0].lines[1].text.startswith("env ds4-server --role coordinator")
    assert panel.after[0].title == "Transport: --transport rdma"


def test_the_completion_probe_verdict() -> None:
    plan = demo_plan(model=MODEL)
    ok = judge_completion(plan, 0, '{"health": 200, "seconds": 0.25, "tokens": 8}\n', "")
    assert (ok.status, ok.observed) == (PASS, "8 tokens in 250 ms")
    loading = judge_completion(plan, 0, '{"health": "[Errno 111] Connection refused"}\n', "")
    assert (loading.status, loading.observed) == (FAIL, "/health: [Errno 111] Connection refused")
    assert judge_completion(plan, 1, "", "Traceback\nOSError: boom").status == ERROR
