"""Shared fixtures, and the tiers every test is sorted into by what it uses.

A test's tier is derived, never kept by hand, so a new test lands in the right one by itself:
- ``lab``: its module uses the namespace lab (tests/support/lab.py: namespaces, sshd, root);
- ``vm``: it uses a VM lab fixture (tests/support/vmlab.py: qemu VMs with soft-RoCE);
- ``reboot``: that fixture boots systemd VMs with persistent disks, which the test reboots;
- ``pythons``: its module starts other Python interpreters (tests/support/pythons.py);
- ``llama``: its module runs the real llama.cpp build (tests/support/llama_parts.py ``build``).
``interpreter`` is the one hand-set marker: the tests that exercise what a newer Python changes
(scripts/test_pythons.sh runs them on 3.12 and up). The unit tier is everything else; what
scripts/test.sh runs in each tier is said in docs/contributing/test-lab.md.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from strixwizard.demo.builder import FakeNode
from tests.support.cli import SCHEMA_PATH, CliResult, invoke
from tests.support.llama_parts import build
from tests.support.llama_vm import stage_llama
from tests.support.vmlab import VmLab, vm_lab_fixture

#: fixtures shared by modules of several subjects (`small_state`: a head whose disk fills)
pytest_plugins = ["tests.support.disk"]


@pytest.fixture
def cli() -> Callable[..., CliResult]:
    """The CLI in this process (tests/support/cli.py `invoke`): where the process is the point,
    a test calls `run_cli`."""
    return invoke


@pytest.fixture
def snapshot_of(tmp_path: Path) -> Callable[[FakeNode], Path]:
    """Capture a fake node into a snapshot directory under tmp_path."""
    counter = iter(range(1000))

    def make(node: FakeNode, as_tar: bool = False) -> Path:
        out = tmp_path / f"{node.hostname}-{next(counter)}{'.tar.gz' if as_tar else ''}"
        if not as_tar:
            out.mkdir()
        return node.capture(out, as_tar=as_tar)

    return make


@pytest.fixture(scope="session")
def report_schema() -> dict[str, Any]:
    import json

    return dict(json.loads(SCHEMA_PATH.read_text()))


#: module-level names a test module takes from these support modules -> its tier
_TIER_OF_MODULE = {
    "tests.support.lab": "lab",
    "tests.support.pythons": "pythons",
}


def _module_tiers(module: ModuleType) -> set[str]:
    tiers: set[str] = set()
    for value in vars(module).values():
        owner = value.__name__ if isinstance(value, ModuleType) else getattr(value, "__module__", None)
        if owner in _TIER_OF_MODULE:
            tiers.add(_TIER_OF_MODULE[owner])
        if owner == "tests.support.llama_parts" and getattr(value, "__name__", "") == "build":
            tiers.add("llama")
    return tiers


def _fixture_tiers(item: pytest.Item) -> set[str]:
    """``vm`` (and ``reboot``) from the VM lab fixtures the test uses, however indirectly."""
    info = getattr(item, "_fixtureinfo", None)
    tiers: set[str] = set()
    for definitions in (info.name2fixturedefs.values() if info is not None else ()):
        for definition in definitions:
            init = getattr(definition.func, "vmlab_init", None)
            if init is not None:
                tiers.add("vm")
                if init == "systemd":
                    tiers.add("reboot")
    return tiers


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test with the tiers it belongs to (docs/contributing/test-lab.md)."""
    for item in items:
        module = getattr(item, "module", None)
        tiers = _fixture_tiers(item) | (_module_tiers(module) if module is not None else set())
        if "vm" in tiers:
            tiers.discard("lab")  # the VM lab borrows helpers of the namespace lab, not its hosts
        for tier in sorted(tiers):
            item.add_marker(getattr(pytest.mark, tier))


# -- the VM lab: one boot of each pair per test session ---------------------------------------
#: the soft-RoCE pair every VM module shares (qemu, rxe0 over the fabric; sh as init)
rdma_vms = vm_lab_fixture(2, scope="session", name="rdma_vms")
#: the systemd pair with persistent disks, for the tests that reboot
systemd_vms = vm_lab_fixture(2, scope="session", name="systemd_vms", init="systemd")


@pytest.fixture(scope="module")
def soft_roce_pair(rdma_vms: VmLab) -> Iterator[VmLab]:
    """The shared soft-RoCE pair as ``up()`` made it, for one module; reset after it (what a
    module left running or changed is undone, a killed VM booted again) and checked before."""
    rdma_vms.reset()
    yield rdma_vms
    rdma_vms.reset()


@pytest.fixture(scope="session")
def llama_rdma_bin() -> Path:
    """The llama.cpp build with the RDMA transport (scripts/build_llama.sh, cached)."""
    return build("rdma")


@pytest.fixture(scope="session")
def llama_staged(rdma_vms: VmLab, llama_rdma_bin: Path) -> VmLab:
    """The build and the tiny model staged once into the shared pair's shares (host folders a
    VM reads as /vmlab: they outlive a VM booted again)."""
    stage_llama(rdma_vms, llama_rdma_bin)
    return rdma_vms


@pytest.fixture(scope="module")
def llama_pair(soft_roce_pair: VmLab, llama_staged: VmLab) -> VmLab:
    """The shared pair with the llama.cpp build in each VM's share and the tiny model on vm0."""
    return soft_roce_pair
