"""NICs behind a USB4/Thunderbolt PCIe tunnel (a card in a Thunderbolt enclosure): the NIC's own
PCIe link looks fine while the tunnel caps it; `nic.pcie_link` finds the tunnel from the
device's sysfs path and the kernel's `removable` marks, judges its ceiling and names it.
The scenario (tests/support/scenarios.py `tunnelled_connectx_pair`) is captured through the real
collector; its STAND-IN parts are named there."""

from __future__ import annotations

from pathlib import Path

from strixwizard.facts.nic import pcie_tunnel
from strixwizard.model import Status
from tests.support.scenarios import (
    TUNNEL_CHAIN,
    TUNNEL_HOST_PORT,
    capture,
    results,
    run_site,
    tunnelled_connectx_pair,
)

NIC = "0000:64:00.0"


def test_the_collector_keeps_the_path_and_the_marks_that_find_the_tunnel(tmp_path: Path) -> None:
    probe = capture(tmp_path, tunnelled_connectx_pair())["node-a"]
    tunnel = pcie_tunnel(probe, NIC)
    assert tunnel is not None
    assert tunnel.host_port == TUNNEL_HOST_PORT and tunnel.enclosure_port == TUNNEL_CHAIN[0]
    assert tunnel.path == (TUNNEL_HOST_PORT, *TUNNEL_CHAIN, NIC)


def test_a_25gbe_card_behind_a_40g_usb4_tunnel_passes_and_names_the_tunnel(tmp_path: Path
                                                                             ) -> None:
    report = run_site(tmp_path, tunnelled_connectx_pair(usb4_gbps=40))
    found = results(report, "nic.pcie_link")
    assert [r.status for r in found] == [Status.PASS, Status.PASS]
    observed = found[0].observed
    assert "PCIe 8 GT/s x8 = 63 Gb/s" in observed
    assert (f"behind a USB4/Thunderbolt PCIe tunnel (host port {TUNNEL_HOST_PORT} -> enclosure "
            f"port {TUNNEL_CHAIN[0]}; Example Vendor Thunderbolt PCIe enclosure [0-1], USB4 link "
            "2 x 20 Gb/s = 40 Gb/s): at most 32 Gb/s of PCIe") in observed


def test_the_same_card_behind_a_usb4_link_trained_at_20g_is_capped_by_the_tunnel(
        tmp_path: Path) -> None:
    report = run_site(tmp_path, tunnelled_connectx_pair(usb4_gbps=20))
    found = results(report, "nic.pcie_link")
    assert [r.status for r in found] == [Status.WARN, Status.WARN]
    assert "USB4 link 2 x 10 Gb/s = 20 Gb/s): at most 20 Gb/s of PCIe" in found[0].observed
    assert found[0].expected == ">= 25 Gb/s (link speed)"
    assert "capped near 16 Gb/s" in found[0].detail
    assert "The tunnel, not the card's slot, is the limit" in found[0].detail


def test_a_100gbe_card_in_the_enclosure_is_capped_by_the_pcie_the_tunnel_carries(
        tmp_path: Path) -> None:
    report = run_site(tmp_path, tunnelled_connectx_pair(usb4_gbps=40, device_id=0x101D,
                                                        speed=100000))
    found = results(report, "nic.pcie_link")
    assert [r.status for r in found] == [Status.WARN, Status.WARN]
    assert "at most 32 Gb/s of PCIe" in found[0].observed
    assert "capped near 25 Gb/s" in found[0].detail


def test_the_same_chain_without_the_removable_marks_is_no_tunnel(tmp_path: Path) -> None:
    """A card behind a PCIe switch inside the node: the path alone does not make a tunnel."""
    probe = capture(tmp_path, tunnelled_connectx_pair(tunnelled=False))["node-a"]
    assert pcie_tunnel(probe, NIC) is None
    report = run_site(tmp_path / "run", tunnelled_connectx_pair(tunnelled=False))
    found = results(report, "nic.pcie_link")
    assert [r.status for r in found] == [Status.PASS, Status.PASS]
    assert "tunnel" not in found[0].observed
