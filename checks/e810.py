"""Intel E810 rules: RoCE (not iWARP) enabled, firmware LLDP off, at most one PFC traffic class."""

from __future__ import annotations

from collections.abc import Iterator

from checks.lossless import roce_fabric
from strixwizard.checking import failed, node_check, passed, skipped, warned
from strixwizard.facts import NodeFacts
from strixwizard.model import Finding, Severity
from strixwizard.site import Site
from strixwizard.topology import FabricPort, fabric_ports


def _e810(node: NodeFacts, fabric: list[FabricPort]) -> list[FabricPort]:
    return [f for f in fabric if (nic := node.nic_of(f.netdev)) is not None and nic.family == "e810"]


@node_check(
    "e810.roce_enabled",
    title="E810 irdma runs RoCE v2, not iWARP",
    why="Out-of-tree irdma defaults to iWARP; RCCL, perftest -x and the RoCE checks need RoCE v2.",
    severity=Severity.CRITICAL,
    fix="e810.enable_roce",
)
def roce_enabled(node: NodeFacts, site: Site) -> Iterator[Finding]:
    """Uses devlink enable_roce when captured, else the irdma node type (CA = RoCE, RNIC = iWARP)."""
    e810 = [n for n in node.nics if n.family == "e810"]
    if not e810:
        yield skipped(node.name, "no Intel E810 on this node")
        return
    params = node.devlink
    for nic in e810:
        entity = f"{node.name}/{nic.address}"
        device = next((d for d in node.rdma if d.pci_address == nic.address), None)
        value = (params or {}).get(nic.address, {}).get("enable_roce")
        if device is None:
            yield skipped(entity, "no irdma device for this E810 (see nic.rdma_capable)")
        elif device.is_iwarp or value is False:
            observed = f"{device.name}: node type {device.node_type}" + (
                f", devlink enable_roce {str(value).lower()}" if value is not None else "")
            yield failed(entity, observed=observed, expected="RoCE (enable_roce true, node type CA)",
                         detail=f"`devlink dev param set pci/{nic.address} name enable_roce value true "
                         "cmode runtime` (in-tree irdma) or `options irdma roce_ena=1` (Intel's).")
        else:
            source = (f"devlink enable_roce {str(value).lower()}" if value is not None
                      else f"node type {device.node_type}")
            yield passed(entity, observed=f"{device.name}: RoCE ({source})", expected="RoCE")


@node_check(
    "e810.fw_lldp",
    title="E810 firmware LLDP agent is off (software DCB)",
    why="With fw-lldp-agent on, the firmware's willing DCBX overrides any PFC/ETS set from Linux.",
    severity=Severity.HIGH,
    fix="e810.fw_lldp_off",
)
def fw_lldp_off(node: NodeFacts, site: Site) -> Iterator[Finding]:
    """Reads the fw-lldp-agent flag from `ethtool --show-priv-flags` on E810 RoCE interfaces."""
    ports = _e810(node, roce_fabric(node, site))
    if not ports:
        yield skipped(node.name, "no E810 RoCE interface in use on this node")
        return
    for fabric in ports:
        name = fabric.netdev.name
        flags = node.priv_flags(name)
        if flags is None:
            yield skipped(fabric.label, node.why_unknown(("ethtool", "--show-priv-flags", name)))
        elif "fw-lldp-agent" not in flags:
            yield skipped(fabric.label, "the driver offers no fw-lldp-agent flag")
        elif flags["fw-lldp-agent"]:
            yield warned(fabric.label, observed="fw-lldp-agent on", expected="fw-lldp-agent off",
                         detail=f"`ethtool --set-priv-flags {name} fw-lldp-agent off` (persistent, "
                         "per port), then set PFC from Linux on both ends.")
        else:
            yield passed(fabric.label, observed="fw-lldp-agent off", expected="fw-lldp-agent off")


@node_check(
    "e810.one_pfc_tc",
    title="At most one PFC-enabled traffic class on E810",
    why="E810 supports a single lossless traffic class; more PFC TCs are rejected or misbehave.",
    severity=Severity.HIGH,
    fix="dcb.pfc",
)
def one_pfc_tc(node: NodeFacts, site: Site) -> Iterator[Finding]:
    """Maps PFC-enabled priorities to TCs through the ETS prio-tc table and counts them."""
    ports = _e810(node, [f for f in fabric_ports(node, site) if f.port is not None])
    if not ports:
        yield skipped(node.name, "no E810 RDMA interface on this node")
        return
    for fabric in ports:
        dcb = node.dcb(fabric.netdev.name)
        tcs = dcb.pfc_tcs()
        if tcs is None:
            yield skipped(fabric.label, f"PFC state unknown: {dcb.pfc_note}")
            continue
        observed = f"{len(tcs)} PFC traffic class(es)" + (f": TC {','.join(map(str, sorted(tcs)))}"
                                                          if tcs else "")
        if len(tcs) <= 1:
            yield passed(fabric.label, observed=observed, expected="<= 1")
        else:
            yield failed(fabric.label, observed=observed, expected="<= 1",
                         detail="Enable PFC on one priority only (the RoCE one), or map the PFC "
                         "priorities to one TC.")
