"""The USB4 verbs provider check (`usb4.rdma_provider`) on fake nodes captured through the real
collector: a usb4_rdma device (its sysfs layout is synthesized: no published listing of one
exists) on the Strix Halo's USB4 host router, judged on `ibv_devinfo -v` in the layout rdma-core
prints (real: tests/data/real/ibv_devinfo_vv_*) and on libibverbs' own warnings (real:
tests/data/real/libibverbs_warning*), and the NHI's generation from its PCI id."""

from __future__ import annotations

from pathlib import Path

from strixwizard.demo.builder import FakeNode
from strixwizard.demo.hardware import usb4_routers
from strixwizard.demo.scenarios import strix_halo_node
from strixwizard.facts.pci import PciDevice
from strixwizard.facts.rdma import IBV_DEVINFO
from strixwizard.facts.verbs_providers import DEVINFO_VERBOSE, nhi_generation
from strixwizard.model import Status
from tests.support.scenarios import run_site

PEER = "/sys/devices/pci0000:00/0000:00:08.3/0000:c7:00.5/domain0/0-0/0-1"
#: rdma-core's own words for a provider built for another ABI (the one thunderbolt-ibverbs#74
#: reports, in the layout of libibverbs/dynamic_driver.c load_driver).
NOT_LOADED = ("libibverbs: Warning: couldn't load driver 'libusb4_rdma-rdmav59.so': "
              "libusb4_rdma-rdmav59.so: cannot open shared object file: No such file or directory\n")


def _block(name: str, max_qp: int) -> str:
    """The head of an `ibv_devinfo -v` block, in the layout of the real sample."""
    return (f"hca_id:\t{name}\n\ttransport:\t\t\tInfiniBand (0)\n\tfw_ver:\t\t\t\t0.0.0\n"
            f"\tphys_port_cnt:\t\t\t1\n\tmax_qp:\t\t\t\t{max_qp}\n\tmax_qp_wr:\t\t\t32768\n")


def _node(name: str = "usb4_rdma0", verbose: str | None = None, stderr: str = "") -> FakeNode:
    node = strix_halo_node("strix-a")
    usb4_routers(node, "strix-b", ipv4="10.0.0.1/30")
    directory = node.rdma_device(name, f"{PEER}/0-1.1", fw_ver="0.0.0")
    node.rdma_port(directory, 1, [], rate="40 Gb/sec (2X)")
    node.command(list(IBV_DEVINFO.argv), "", stderr=stderr)
    if verbose is not None:
        node.command(list(DEVINFO_VERBOSE.argv), verbose, stderr=stderr)
    return node


def _found(tmp: Path, node: FakeNode) -> list[dict[str, object]]:
    report = run_site(tmp, {"node-a": node})
    return [vars(r) for r in report.checks if r.id == "usb4.rdma_provider"]


def test_a_provider_with_qps_passes_with_its_verdict_line(tmp_path: Path) -> None:
    (found,) = _found(tmp_path, _node(verbose=_block("usb4_rdma0", 256)))
    assert found["status"] == Status.PASS
    assert found["observed"] == ("usb4_rdma0 on NHI 0000:c7:00.5 (1022:158d, USB4 v1, 40 Gb/s), "
                                 "max_qp 256")
    assert "llama.cpp RPC: yes; one RC QP per connection" in found["detail"]
    assert "sockets beat usb4_rdma0 at every message size" in found["detail"]


def test_max_qp_1_says_llama_cpp_stays_on_tcp(tmp_path: Path) -> None:
    (found,) = _found(tmp_path, _node(verbose=_block("usb4_rdma0", 1)))
    assert found["status"] == Status.WARN
    assert "llama.cpp RPC: no (max_qp 1: no RC QP)" in found["detail"]
    assert "nix-strix-halo/pull/67" in found["detail"]


def test_a_provider_libibverbs_did_not_load_is_named_with_its_warning(tmp_path: Path) -> None:
    (found,) = _found(tmp_path, _node(verbose="No IB devices found\n", stderr=NOT_LOADED))
    assert found["status"] == Status.WARN
    assert "couldn't load driver 'libusb4_rdma-rdmav59.so'" in found["detail"]
    assert "llama.cpp RPC: no (the device is not opened: TCP)" in found["detail"]
    assert found["observed"].endswith("not opened by libibverbs")


def test_a_tb5_name_on_a_usb4_v1_nhi_is_a_finding(tmp_path: Path) -> None:
    (found,) = _found(tmp_path, _node("usb4_rdma_tb5_0", verbose=_block("usb4_rdma_tb5_0", 256)))
    assert found["status"] == Status.WARN
    assert "named TB5 but on NHI 0000:c7:00.5" in found["detail"]
    assert "OdinLink-Five/issues/31" in found["detail"]


def test_no_usb4_device_skips_and_an_old_snapshot_says_max_qp_unknown(tmp_path: Path) -> None:
    (plain,) = _found(tmp_path / "none", strix_halo_node("strix-a"))
    assert plain["status"] == Status.SKIP
    (old,) = _found(tmp_path / "old", _node())
    assert old["status"] == Status.PASS and "max_qp not known" in old["observed"]


def test_the_nhi_table_follows_nhi_h() -> None:
    def pci(vendor: int, device: int) -> PciDevice:
        return PciDevice("0000:00:00.0", vendor, device, 0x0C0340, "thunderbolt")

    v2 = nhi_generation(pci(0x8086, 0x5781))
    assert v2 is not None and (v2.usb4_version, v2.gbps) == (2, 80)
    v1 = nhi_generation(pci(0x1022, 0x158E))
    assert v1 is not None and (v1.usb4_version, v1.gbps) == (1, 40)
    assert nhi_generation(pci(0x8086, 0x9A1B)) is None  # Tiger Lake: not in the table, not judged
