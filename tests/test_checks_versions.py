"""The known-bad versions table (strixwizard/data/known_bad.json) as doctor applies it: each
entry has a snapshot that fails (or warns) and one that passes, and every finding names the
entry's source URL."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from strixwizard.demo.builder import FakeNode
from strixwizard.demo.hardware import e810
from strixwizard.demo.scenarios import strix_halo_node
from strixwizard.facts.packages import PACKAGES
from strixwizard.known_bad import Entry, parse_table, table, version_tuple
from strixwizard.model import CheckResult, Status
from tests.support import scenarios

DATA = Path(__file__).resolve().parent.parent / "strixwizard" / "data" / "known_bad.json"
MANIFEST = ("https://github.com/kyuz0/amd-strix-halo-vllm-toolboxes/blob/main/docs/"
            "VLLM_PATCH_MANIFEST.md")
FIRMWARE_DOC = ("https://github.com/kyuz0/amd-strix-halo-toolboxes/blob/main/docs/"
                "troubleshooting-firmware.md")
SETUP_GUIDE = ("https://github.com/kyuz0/amd-strix-halo-vllm-toolboxes/blob/main/rdma_cluster/"
               "setup_guide.md")


def rpm_node(installed: dict[str, str], kernel: str = "6.18.5-200.fc43.x86_64",
             nvm: str = "4.91 0x800214b5 1.3909.0") -> dict[str, FakeNode]:
    """A Fedora Strix Halo with an E810 (irdma); rpm knows `installed` (package -> NEVRA)."""
    node = strix_halo_node("strix-v")
    node.kernel(release=kernel)
    e810(node, "192.168.100.1/30", "b4:96:91:9c:3a:10", firmware=nvm)
    for package in PACKAGES:
        argv = ["rpm", "-q", package]
        if package in installed:
            node.command(argv, installed[package] + "\n")
        else:
            node.command(argv, f"package {package} is not installed\n", rc=1)
    return {"strix-v": node}


def dpkg_node(installed: dict[str, str]) -> dict[str, FakeNode]:
    """An Ubuntu Strix Halo with an E810 (irdma); dpkg-query knows `installed`."""
    node = strix_halo_node("strix-u")
    node.kernel(release="6.18.6-061806-generic", os_pretty="Ubuntu 24.04.3 LTS")
    e810(node, "192.168.100.1/30", "b4:96:91:9c:3a:10")
    for package in PACKAGES:
        argv = ["dpkg-query", "-W", package]
        if package in installed:
            node.command(argv, f"{package}\t{installed[package]}\n")
        else:
            node.command(argv, "", rc=1, stderr=f"dpkg-query: no packages found matching {package}\n")
    return {"strix-u": node}


GOOD_RPM = {"rdma-core": "rdma-core-62.0-1.fc43.x86_64",
            "linux-firmware": "linux-firmware-20251111-1.fc43.noarch",
            "amd-gpu-firmware": "amd-gpu-firmware-20251111-1.fc43.noarch"}


def one(tmp_path: Path, nodes: dict[str, FakeNode], check_id: str) -> CheckResult:
    (result,) = scenarios.results(scenarios.run_site(tmp_path, nodes), check_id)
    return result


def text(result: CheckResult) -> str:
    return " ".join(str(part) for part in (result.observed, result.expected, result.detail))


def test_the_shipped_table_parses_and_every_entry_has_a_source() -> None:
    entries = table()
    assert [e.id for e in entries] == [e["id"] for e in json.loads(DATA.read_text())["entries"]]
    assert all(e.source.url.startswith("https://github.com/") and e.source.says for e in entries)
    with pytest.raises(ValueError, match="source URL"):
        parse_table(DATA.read_text().replace('"url": "https://', '"url": "http://'))


@pytest.mark.parametrize(("text_", "parsed"), [
    ("50.0-2build2", (50, 0)), ("6.18.5-200.fc43.x86_64", (6, 18, 5)),
    ("4.91 0x800214b5 1.3909.0", (4, 91)), ("20251125-1.fc43", (20251125,)),
    ("20240318.git3b128b60-0ubuntu2.1", (20240318,)), ("", None), ("v62", None)])
def test_version_numbers(text_: str, parsed: tuple[int, ...] | None) -> None:
    assert version_tuple(text_) == parsed


# -- rdma-core-50-irdma / rdma-core-below-62-irdma -------------------------------------------

def test_rdma_core_50_with_irdma_fails_naming_the_manifest(tmp_path: Path) -> None:
    result = one(tmp_path, dpkg_node({"rdma-core": "50.0-2build2",
                                      "ibverbs-providers": "50.0-2build2",
                                      "linux-firmware": "20240318.git3b128b60-0ubuntu2.1"}),
                 "node.rdma_core_version")
    assert result.status is Status.FAIL, result
    assert "rdma-core 50.0-2build2 (dpkg), RDMA driver irdma" in result.observed
    assert "Unknown completion" in result.detail and MANIFEST in text(result)


def test_rdma_core_between_50_and_62_warns(tmp_path: Path) -> None:
    result = one(tmp_path, rpm_node({**GOOD_RPM, "rdma-core": "rdma-core-57.0-1.fc43.x86_64"}),
                 "node.rdma_core_version")
    assert result.status is Status.WARN and "older than 62" in result.expected
    assert MANIFEST in text(result)


def test_rdma_core_62_passes_naming_the_manifest(tmp_path: Path) -> None:
    result = one(tmp_path, rpm_node(GOOD_RPM), "node.rdma_core_version")
    assert result.status is Status.PASS, result
    assert result.observed == "rdma-core 62.0-1.fc43 (rpm), RDMA driver irdma"
    assert MANIFEST in text(result)


def test_rdma_core_is_not_judged_without_an_irdma_device(tmp_path: Path) -> None:
    node = strix_halo_node("strix-n")
    node.command(["rpm", "-q", "rdma-core"], "rdma-core-50.0-1.fc40.x86_64\n")
    result = one(tmp_path, {"strix-n": node}, "node.rdma_core_version")
    assert result.status is Status.SKIP and "irdma" in result.detail


def test_rdma_core_unknown_without_a_package_manager_answer(tmp_path: Path) -> None:
    node = strix_halo_node("strix-m")
    e810(node, "192.168.100.1/30", "b4:96:91:9c:3a:10")
    result = one(tmp_path, {"strix-m": node}, "node.rdma_core_version")
    assert result.status is Status.SKIP and "rdma-core version unknown" in result.detail


# -- linux-firmware-20251125 --------------------------------------------------------------

def test_linux_firmware_20251125_fails_naming_the_troubleshooting_page(tmp_path: Path) -> None:
    result = one(tmp_path, rpm_node({**GOOD_RPM, "amd-gpu-firmware":
                                     "amd-gpu-firmware-20251125-1.fc43.noarch"}),
                 "node.linux_firmware")
    assert result.status is Status.FAIL, result
    assert result.observed == "amd-gpu-firmware 20251125-1.fc43 (rpm)"
    assert "20251111" in result.detail and FIRMWARE_DOC in text(result)


def test_linux_firmware_20251111_passes(tmp_path: Path) -> None:
    result = one(tmp_path, rpm_node(GOOD_RPM), "node.linux_firmware")
    assert result.status is Status.PASS and FIRMWARE_DOC in text(result)


def test_ubuntu_linux_firmware_is_read_from_dpkg(tmp_path: Path) -> None:
    result = one(tmp_path, dpkg_node({"rdma-core": "62.0-1",
                                      "linux-firmware": "20251125.git1a2b3c4d-0ubuntu1"}),
                 "node.linux_firmware")
    assert result.status is Status.FAIL and "linux-firmware 20251125" in result.observed


# -- kernel-below-6.18.4 ------------------------------------------------------------------

def test_kernel_older_than_6_18_4_warns_naming_the_validated_kernel(tmp_path: Path) -> None:
    result = one(tmp_path, rpm_node(GOOD_RPM, kernel="6.15.6-200.fc42.x86_64"),
                 "node.kernel_known_good")
    assert result.status is Status.WARN, result
    assert result.observed == "kernel 6.15.6-200.fc42.x86_64"
    assert "6.18.4" in result.expected and FIRMWARE_DOC in text(result)


@pytest.mark.parametrize("release", ["6.18.4-200.fc43.x86_64", "6.18.5-200.fc43.x86_64",
                                     "6.19.0-0.rc1.fc44.x86_64"])
def test_kernel_6_18_4_or_newer_passes(tmp_path: Path, release: str) -> None:
    result = one(tmp_path, rpm_node(GOOD_RPM, kernel=release), "node.kernel_known_good")
    assert result.status is Status.PASS and FIRMWARE_DOC in text(result)


# -- ice-nvm-below-4.91 -------------------------------------------------------------------

def test_e810_nvm_older_than_4_91_warns_naming_the_setup_guide(tmp_path: Path) -> None:
    result = one(tmp_path, rpm_node(GOOD_RPM, nvm="4.40 0x8001c967 1.3534.0"),
                 "nic.firmware_known_good")
    assert result.status is Status.WARN, result
    assert result.entity == "strix-v/0000:c2:00.0" and "firmware 4.40" in result.observed
    assert "nvmupdate64e" in result.detail and SETUP_GUIDE in text(result)


@pytest.mark.parametrize("nvm", ["4.91 0x800214b5 1.3909.0", "5.00 0x80021234 1.3909.0"])
def test_e810_nvm_4_91_or_newer_passes(tmp_path: Path, nvm: str) -> None:
    result = one(tmp_path, rpm_node(GOOD_RPM, nvm=nvm), "nic.firmware_known_good")
    assert result.status is Status.PASS and SETUP_GUIDE in text(result)


def test_nics_without_entries_are_not_judged(tmp_path: Path) -> None:
    node = strix_halo_node("strix-c")
    node.finish()
    result = one(tmp_path, {"strix-c": node}, "nic.firmware_known_good")
    assert result.status is Status.SKIP


# -- every entry of the table: a snapshot it fails (or warns) and one that passes -------------

GOOD_DPKG = {"rdma-core": "62.0-1", "ibverbs-providers": "62.0-1",
             "linux-firmware": "20251111.git1a2b3c4d-0ubuntu1"}
ENTRY_CASES = {
    # entry id: (check, snapshot the entry matches, snapshot it passes)
    "rdma-core-50-irdma": ("node.rdma_core_version",
                           lambda: dpkg_node({**GOOD_DPKG, "rdma-core": "50.0-2build2",
                                              "ibverbs-providers": "50.0-2build2"}),
                           lambda: dpkg_node(GOOD_DPKG)),
    "rdma-core-below-62-irdma": ("node.rdma_core_version",
                                 lambda: rpm_node({**GOOD_RPM, "rdma-core": "rdma-core-57.0-1.fc43.x86_64"}),
                                 lambda: rpm_node({**GOOD_RPM, "rdma-core": "rdma-core-63.0-1.fc44.x86_64"})),
    "linux-firmware-20251125": ("node.linux_firmware",
                                lambda: rpm_node({**GOOD_RPM, "linux-firmware":
                                                  "linux-firmware-20251125-1.fc43.noarch",
                                                  "amd-gpu-firmware":
                                                  "amd-gpu-firmware-20251125-1.fc43.noarch"}),
                                lambda: rpm_node(GOOD_RPM)),
    "kernel-below-6.18.4": ("node.kernel_known_good",
                            lambda: rpm_node(GOOD_RPM, kernel="6.17.9-300.fc43.x86_64"),
                            lambda: rpm_node(GOOD_RPM, kernel="6.18.4-200.fc43.x86_64")),
    "ice-nvm-below-4.91": ("nic.firmware_known_good",
                           lambda: rpm_node(GOOD_RPM, nvm="4.80 0x80020543 1.3805.0"),
                           lambda: rpm_node(GOOD_RPM, nvm="4.91 0x800214b5 1.3909.0")),
}


def test_every_entry_of_the_table_has_a_failing_and_a_passing_snapshot() -> None:
    assert set(ENTRY_CASES) == {e.id for e in table()}


@pytest.mark.parametrize("entry", table(), ids=lambda e: e.id)
def test_entry_matches_its_failing_snapshot_and_not_its_passing_one(tmp_path: Path, entry: Entry
                                                                    ) -> None:
    check_id, failing, passing = ENTRY_CASES[entry.id]
    bad = one(tmp_path / "bad", failing(), check_id)
    assert bad.status is Status(entry.status), bad
    assert entry.what in bad.detail and entry.source.url in text(bad)
    good = one(tmp_path / "good", passing(), check_id)
    assert good.status is Status.PASS, good
    assert entry.source.url in text(good)
