"""Rules of RDMA NIC families (today Intel E810): RoCE (not iWARP) enabled, firmware LLDP off,
at most the family's number of PFC traffic classes.

Which NICs a rule applies to comes from the vendor modules (`strixwizard.vendors`):
`roce_switch`, `Qos.fw_lldp_flag` and `Qos.max_pfc_tcs`.
"""

from __future__ import annotations

from collections.abc import Iterator

from checks.scope import FW_LLDP_INTERFACES, PFC_TC_LIMITED_PORTS, ROCE_SWITCH_NICS, vendor_of
from strixwizard.checking.declare import failed, node_check, passed, skipped, verdict
from strixwizard.facts import NodeFacts
from strixwizard.facts.ethtool import priv_flags_argv
from strixwizard.facts.nic import Nic
from strixwizard.model import Finding, Status
from strixwizard.site import Site
from strixwizard.topology import FabricPort


@node_check("roce.enabled", per=ROCE_SWITCH_NICS)
def roce_enabled(node: NodeFacts, site: Site, nic: Nic) -> Iterator[Finding]:
    """Uses devlink enable_roce when captured, else the irdma node type (CA = RoCE, RNIC = iWARP)."""
    switch = nic.vendor.roce_switch
    assert switch is not None
    entity = f"{node.name}/{nic.address}"
    device = next((d for d in node.rdma if d.pci_address == nic.address), None)
    param = switch.devlink_param
    value = (node.devlink or {}).get(nic.address, {}).get(param)
    if device is None:
        yield skipped(entity, f"no {nic.vendor.rdma_driver} device for this {nic.vendor.short} "
                      "(see nic.rdma_capable)")
    elif device.is_iwarp or value is False:
        observed = f"{device.name}: node type {device.node_type}" + (
            f", devlink {param} {str(value).lower()}" if value is not None else "")
        yield failed(entity, observed=observed, expected=f"RoCE ({param} true, node type CA)",
                     detail=f"`devlink dev param set pci/{nic.address} name {switch.other_param} "
                     f"value false cmode runtime`, then `devlink dev param set pci/{nic.address} "
                     f"name {param} value true cmode runtime` (in-tree {switch.module}, "
                     f"{switch.doc}) or `options {switch.module} {switch.module_option}` "
                     "(Intel's out-of-tree driver). RCCL/NCCL and llama.cpp RDMA cannot use "
                     "iWARP (see link.transport).")
    else:
        source = (f"devlink {param} {str(value).lower()}" if value is not None
                  else f"node type {device.node_type}")
        yield passed(entity, observed=f"{device.name}: RoCE ({source})", expected="RoCE")


@node_check("dcb.fw_lldp", per=FW_LLDP_INTERFACES)
def fw_lldp_off(node: NodeFacts, site: Site, fabric: FabricPort) -> Iterator[Finding]:
    """Reads the fw-lldp-agent flag from `ethtool --show-priv-flags` on E810 RoCE interfaces."""
    flag = vendor_of(fabric).qos.fw_lldp_flag
    name = fabric.netdev.name
    flags = node.priv_flags(name)
    if flags is None:
        yield skipped(fabric.label, node.why_unknown(priv_flags_argv(name)))
    elif flag not in flags:
        yield skipped(fabric.label, f"the driver offers no {flag} flag")
    else:
        yield verdict(not flags[flag], fabric.label, f"{flag} {'on' if flags[flag] else 'off'}",
                      f"{flag} off", f"`ethtool --set-priv-flags {name} {flag} off` (persistent, "
                      "per port), then set PFC from Linux on both ends.")


@node_check("dcb.pfc_tc_limit", per=PFC_TC_LIMITED_PORTS)
def one_pfc_tc(node: NodeFacts, site: Site, fabric: FabricPort) -> Iterator[Finding]:
    """Maps PFC-enabled priorities to TCs through the ETS prio-tc table and counts them."""
    limit = vendor_of(fabric).qos.max_pfc_tcs
    dcb = node.dcb(fabric.netdev.name)
    tcs = dcb.pfc_tcs()
    if tcs is None:
        yield skipped(fabric.label, f"PFC state unknown: {dcb.pfc_note}")
        return
    observed = f"{len(tcs)} PFC traffic class(es)" + (f": TC {','.join(map(str, sorted(tcs)))}"
                                                      if tcs else "")
    yield verdict(limit is None or len(tcs) <= limit, fabric.label, observed, f"<= {limit}",
                  "Enable PFC on one priority only (the RoCE one), or map the PFC priorities to "
                  "one TC.", Status.FAIL)
