"""The fix usb4.tcp_reordering applied for real: over SSH into a lab node, whose network
namespace has its own net.ipv4.tcp_reordering, then rolled back.

The lab has no bonding driver nor thunderbolt-net (a bond of veths would load the bonding
module into this machine's kernel), so the plan is the fix's own steps built for a node that
needs them (`fixes.usb4.runtime_step`); planning from a bond is tested on snapshots in
test_usb4_bond.py. Runtime only: lab nodes share this machine's /etc, so the sysctl.d file
is not written here.
"""

from __future__ import annotations

from pathlib import Path

from fixes.usb4 import runtime_step
from strixwizard.facts.bond import TCP_REORDERING_PATH
from strixwizard.fixing.engine import apply_plan
from strixwizard.fixing.journal import JournalStore
from strixwizard.fixing.lock import site_lock
from strixwizard.fixing.model import Plan, SitePlan
from strixwizard.fixing.ssh import SshRunner
from strixwizard.node.target import SshTarget
from strixwizard.site import Site
from tests.support.lab import Lab, LabHost, lab_fixture

bondlab1 = lab_fixture(1, name="bondlab1")
NODE_JOURNAL = "/root/strixwizard-journal"


def reordering(host: LabHost) -> int:
    out = host.run_in_ns(["cat", TCP_REORDERING_PATH], check=True)
    return int(out.stdout)


def test_tcp_reordering_set_in_the_node_namespace_and_rolled_back(bondlab1: Lab,
                                                                  tmp_path: Path) -> None:
    host = bondlab1.hosts[0]
    own = Path(TCP_REORDERING_PATH).read_text()
    host.run_in_ns(["sh", "-c", f"echo 3 > {TCP_REORDERING_PATH}"], check=True)
    target = SshTarget(name=host.name, host=host.mgmt_addr, key_file=str(bondlab1.client_key),
                       known_hosts=bondlab1.known_hosts)
    steps = (runtime_step(3),)
    plan = SitePlan("lab", [Plan("usb4.tcp_reordering", host.name, f"{host.name}:bond0", steps)])
    runner = SshRunner(target, NODE_JOURNAL)
    try:
        store = JournalStore(tmp_path / "journal")
        with site_lock(store.root, "lab", "fix --apply") as holder:
            report = apply_plan(plan, {host.name: runner}, store, Site("lab"), {}, dry_run=False,
                                holder=holder)
        assert report.status == "applied", report.to_json()
        assert reordering(host) == 127
        assert Path(TCP_REORDERING_PATH).read_text() == own  # this machine's namespace untouched
        step = report.nodes[0].steps[0]
        assert step.observed_before == "3"
        runner.undo(step.step, step.observed_before)
    finally:
        runner.close()
    assert reordering(host) == 3
