"""Dead ends a new user met on a plain-Ethernet site, now with a way out: the RDMA refusal as a
sentence with the next step, `--nodes a,b` for a subset of the site, TCP over the management
network when the fabric does not join every pair (said plainly), and a TCP plan on non-Strix
machines that says what is true of them."""

from __future__ import annotations

from pathlib import Path

from tests.support.cli import invoke
from tests.support.scenarios import plain_site


def deploy(site: Path, *args: str) -> tuple[int, dict[str, object], str]:
    done = invoke("deploy", "--site", str(site), "--json", *args)
    return done.rc, done.json(), done.stderr


def test_the_rdma_refusal_is_a_sentence_with_the_next_step(tmp_path: Path) -> None:
    rc, doc, stderr = deploy(plain_site(tmp_path), "--nodes", "n0,n1")
    assert rc == 2 and doc["status"] == "refused"
    assert doc["reason"] == (
        "no RDMA profile: n0 and n1 share only an Ethernet link (n0:fab0 ↔ n1:fab0), no RDMA: "
        "deploy over TCP with --transport tcp, or fix the RDMA NIC first (`strixwizard doctor` "
        "with the same site file says why it has no RDMA). Over TCP RCCL uses NET/Socket: "
        "expect 50-130 µs per hop instead of ~5 µs")
    assert "<->" not in stderr and " is ethernet" not in stderr


def test_nodes_selects_a_subset_for_a_tcp_deploy_over_the_fabric(tmp_path: Path) -> None:
    rc, doc, _ = deploy(plain_site(tmp_path), "--transport", "tcp", "--nodes", "n1,n0")
    assert rc == 0, doc
    plan = doc["plan"]
    env = plan["env"]
    assert [n["node"] for n in env["nodes"]] == ["n0", "n1"]  # the site's order; head n0
    assert env["links"] == ["n0:fab0 <-> n1:fab0"] and env["profile"] == "tcp"
    assert {p["node"] for p in plan["plans"]} == {"n0", "n1"}
    assert "--tensor-parallel-size" in plan["vllm_argv"]
    assert plan["vllm_argv"][plan["vllm_argv"].index("--tensor-parallel-size") + 1] == "2"


def test_tcp_goes_over_the_management_network_when_the_fabric_misses_a_pair(
        tmp_path: Path) -> None:
    rc, doc, _ = deploy(plain_site(tmp_path), "--transport", "tcp")
    assert rc == 0, doc
    env = doc["plan"]["env"]
    assert env["links"] == ["n0:enp192s0 <-> n1:enp192s0", "n0:enp192s0 <-> n2:enp192s0",
                            "n1:enp192s0 <-> n2:enp192s0"]
    assert [n["ip"] for n in env["nodes"]] == ["10.99.1.10", "10.99.1.11", "10.99.1.12"]
    said = env["warnings"][0]
    assert said.startswith("TCP over the management network: no RDMA, expect 50-130 µs per hop")
    assert "n0 and n2 share no link at all" in said
    text = invoke("deploy", "--site", str(tmp_path / "site.yaml"), "--transport", "tcp")
    assert "! TCP over the management network: no RDMA, expect 50-130 µs per hop" in text.stdout


def test_the_rdma_profile_never_goes_over_the_management_network(tmp_path: Path) -> None:
    rc, doc, _ = deploy(plain_site(tmp_path))
    assert rc == 2
    assert doc["reason"].startswith("no RDMA profile: n0 and n1 share only an Ethernet link")


def test_an_unknown_node_name_lists_the_site_nodes(tmp_path: Path) -> None:
    done = invoke("deploy", "--site", str(plain_site(tmp_path)), "--nodes", "n0,nx")
    assert done.rc == 2
    assert "--nodes: nx not in the site (its nodes: n0, n1, n2)" in done.stderr


def test_a_tcp_plan_on_non_strix_nodes_says_there_is_no_strix_halo_igpu(tmp_path: Path) -> None:
    rc, doc, _ = deploy(plain_site(tmp_path), "--transport", "tcp", "--nodes", "n0,n1")
    assert rc == 0
    sources = [v["source"] for n in doc["plan"]["env"]["nodes"] for v in n["variables"]]
    text = "\n".join(sources)
    assert "GTT size not readable" not in text and "Strix Halo APU" not in text
    assert "iGPU ?" not in text and "is the only GPU" not in text
    assert "n0: no Strix Halo iGPU found (0 KFD GPU node(s))" in text


def test_no_user_facing_text_cites_a_project_note() -> None:
    root = Path(__file__).resolve().parents[1] / "strixwizard"
    cited = [str(p.relative_to(root)) for p in root.rglob("*.py")
             if "research/" in p.read_text() or "domain.md" in p.read_text()]
    assert cited == []
