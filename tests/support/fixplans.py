"""Fix plans on snapshot scenarios, for the tests: a pair of Strix Halo nodes with a fabric NIC
set up as told, and the plan the fix engine makes for it against the site's fabric settings.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import checks
import fixes
from strixwizard.checking.engine import Report, run_doctor
from strixwizard.demo.builder import FakeNode
from strixwizard.demo.hardware import RoceSetup, connectx, e810
from strixwizard.demo.scenarios import strix_halo_node
from strixwizard.discovery import Discovery
from strixwizard.facts import NodeFacts
from strixwizard.fixing.model import Plan, SitePlan
from strixwizard.fixing.planning import plan_site
from strixwizard.site import Fabric, NodeSpec, Site
from tests.support import scenarios

SITE_FABRIC = Fabric(mtu=9000, pfc_priority=3, trust="dscp", roce_version=2)


def systemd(node: FakeNode) -> FakeNode:
    node.file("/proc/1/comm", "systemd\n")
    return node


def pair(setup_b: RoceSetup, setup_a: RoceSetup | None = None, nic=e810, tos: int | None = 104,
         init: bool = True) -> dict[str, FakeNode]:
    nodes = {}
    for name, host, ip, mac, setup in (
        ("node-a", "strix-a", "192.168.100.1/30", "b4:96:91:9c:3a:10",
         setup_a or RoceSetup(roce_mode="RoCE v2", trust=("dscp",) if nic is connectx else None)),
        ("node-b", "strix-b", "192.168.100.2/30", "b4:96:91:9c:41:d8", setup_b),
    ):
        node = strix_halo_node(host)
        nic(node, ip, mac, setup=setup)
        dev = "rocep194s0" if nic is e810 else "mlx5_0"
        if setup.roce_mode and tos is not None:
            node.file(f"/sys/kernel/config/rdma_cm/{dev}/ports/1/default_roce_tos", f"{tos}\n")
        if init:
            systemd(node)
        node.finish()
        nodes[name] = node
    return nodes


def plan_of(tmp_path: Path, nodes: dict[str, FakeNode], only: tuple[str, ...] = (),
            persist: bool = True) -> SitePlan:
    facts = scenarios.facts_of(tmp_path, nodes)
    site = Site(name="t", nodes=tuple(NodeSpec(name=n, snapshot=n) for n in facts),
                fabric=SITE_FABRIC)
    return plan_site(Discovery.of_facts(site, list(facts.values())), only, persist=persist,
                     fixes=fixes.FIXES)


def steps_of(plan: SitePlan, fix: str, node: str | None = None) -> list[Plan]:
    return [p for p in plan.plans if p.fix == fix and (node is None or p.node == node) and p.steps]


def checked(site: Site, facts: Mapping[str, NodeFacts]) -> tuple[Discovery, Report]:
    """A discovery of these facts and doctor's report of it: what `verify` is handed as the
    state before a run."""
    found = Discovery.of_facts(site, facts.values())
    return found, run_doctor(found, checks.ALL, fixes.BY_ID)
