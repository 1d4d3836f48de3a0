"""`advise --site` over SSH against the lab (real namespaces, real sshd, real paramiko): a node
whose host key is not yet known is not read, and the advice says so; `--trust-new-hosts` reads it,
as for every other site command, and its memory for weights then decides what fits."""

from __future__ import annotations

import re
from pathlib import Path

from tests.support.cli import run_cli
from tests.support.lab import Lab, lab_fixture

lab1 = lab_fixture(1)
MODEL = ("--model", "Llama-3.1-8B", "--quant", "Q4_K_M", "--nodes", "1", "--json")


def test_advise_reads_a_new_node_only_with_trust_new_hosts(lab1: Lab, tmp_path: Path) -> None:
    known = tmp_path / "known_hosts"
    site = lab1.write_site_yaml(tmp_path / "lab.yaml", hosts=lab1.hosts[:1], known_hosts=known)
    refused = run_cli("advise", "--site", str(site), *MODEL)
    assert refused.rc == 0, refused.stderr
    (node,) = refused.json()["site_nodes"]
    assert node["memory_gib"] is None and "unknown host key" in node["memory_source"], (
        node, refused.stderr)
    assert any("memory not known" in note and "124 GiB GPU pool per node assumed" in note
               for note in refused.json()["notes"])
    assert not known.exists()
    trusted = run_cli("advise", "--site", str(site), *MODEL, "--trust-new-hosts")
    assert trusted.rc == 0, trusted.stderr
    body = trusted.json()
    (node,) = body["site_nodes"]
    assert node["memory_gib"] is not None, (node, trusted.stderr)
    (memory,) = body["memory_for_weights"]["site_nodes"]
    assert memory["gib"] == node["memory_gib"] and memory["source"] == node["memory_source"]
    single = body["predictions"][0]
    # the text gives the figure to 0.1 GiB, the JSON to 0.01: both round the same read (this
    # machine's MemAvailable, which moves), so they agree within 0.05, not always in the digit
    said = [float(m[1]) for a in single["assumptions"]
            for m in re.finditer(rf"{re.escape(node['name'])} (\d+\.\d) GiB", a)]
    assert said and all(abs(gib - node["memory_gib"]) <= 0.05 + 1e-9 for gib in said), (
        said, node, single["assumptions"])
    assert lab1.hosts[0].host_key_pub.split()[1] in known.read_text()
