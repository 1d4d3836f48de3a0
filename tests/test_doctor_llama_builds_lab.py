"""`doctor --stack llama-rpc` on REAL llama.cpp builds in the namespace lab: one node with the
RDMA transport compiled in, the other with a plain (TCP-only) build of the same commit.

Both builds come from the llama.cpp tree in the llama-cpp-python sdist (scripts/build_llama.sh,
cached in ~/.cache/strixwizard-llama): the RDMA one whole (`rdma`), the plain one as a worker
carries it, the RPC server alone (`tcp rpc`: a few objects once the ggml libraries are built,
where llama-server is most of an hour on a shared 2-core machine). doctor reads them over SSH as
it reads any node (facts/llama_cpp.py: the programs on PATH, the "RDMA activated" string,
`llama-server --version`, the RPC server's sha256), fails the site with the exact cure, and
passes once the second node carries the RDMA build as the cure says.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import run_cli
from tests.support.lab import Lab, LabHost, lab_fixture
from tests.support.llama_parts import build, vendored_tree

llamabuilds2 = lab_fixture(2, name="llamabuilds2")
PROGRAMS = ("ggml-rpc-server", "llama-server")


@pytest.fixture(scope="module")
def builds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Both builds, copied out of /root (a lab host's SSH sessions see their own /root)."""
    out = {}
    for transport, programs in (("rdma", "all"), ("tcp", "rpc")):
        built = build(transport, programs)
        folder = tmp_path_factory.mktemp(f"llama-{transport}")
        for name in PROGRAMS if programs == "all" else PROGRAMS[:1]:
            shutil.copy2(built / name, folder / name)
        out[transport] = folder
    return out


def place(host: LabHost, folder: Path) -> None:
    """Put a build's programs on the node's PATH (the lab's per-node bin folder)."""
    for path in host.bin_dir.glob("*"):
        path.unlink()
    for program in folder.iterdir():
        shutil.copy2(program, host.bin_dir / program.name)


def doctor(site: Path, *args: str) -> tuple[int, dict[str, dict[str, Any]]]:
    done = run_cli("doctor", "--site", str(site), "--stack", "llama-rpc", "--only", "llama",
                   "--json", *args, timeout=180)
    document = done.json()
    assert document["stack"] == {"name": "llama-rpc", "label": "llama.cpp RPC",
                                 "left_out": []}, document["stack"]
    return done.rc, {f"{c['id']}@{c['entity']}": c for c in document["checks"]}


def test_an_rdma_build_beside_a_plain_one_fails_with_the_cure_and_passes_after_it(
        llamabuilds2: Lab, builds: dict[str, Path], tmp_path: Path) -> None:
    first, second = llamabuilds2.hosts
    try:
        place(first, builds["rdma"])
        place(second, builds["tcp"])
        site = llamabuilds2.write_site_yaml(tmp_path / "lab.yaml")

        rc, found = doctor(site)
        assert rc == 1, found
        mixed = found["llama.same_build@lab"]
        assert mixed["status"] == "fail", mixed
        assert f"{first.name}: " in mixed["observed"] and ", RDMA" in mixed["observed"]
        assert f"{second.name}: " in mixed["observed"] and ", TCP only" in mixed["observed"]
        programs = ", ".join(str((first.bin_dir / name).resolve()) for name in PROGRAMS)
        assert "commit " in mixed["observed"] and "sha256 " in mixed["observed"]
        assert (f"Cure: on {second.name}, build the same commit with libibverbs-dev installed and "
                "-DGGML_RPC=ON -DGGML_RPC_RDMA=ON (docs/llama-cpp.md, step 1: `strixwizard "
                "deploy --stack llama-rpc --build SOURCE --apply` builds one commit and installs "
                "it on every node), or copy "
                f"{first.name}'s programs ({programs}, with any libggml*.so beside them) to the same "
                "paths there") in mixed["detail"]
        assert found[f"llama.rpc_rdma@{first.name}"]["status"] == "pass"
        assert found[f"llama.rpc_rdma@{second.name}"]["status"] == "warn"

        # the cure: the second node gets the RDMA build (built by the same script, same commit)
        place(second, build("rdma"))
        rc, found = doctor(site)
        assert rc == 0, found
        assert found["llama.same_build@lab"]["status"] == "pass", found["llama.same_build@lab"]
        assert {found[f"llama.rpc_rdma@{h.name}"]["status"] for h in (first, second)} == {"pass"}
    finally:
        for host in (first, second):
            for path in host.bin_dir.glob("*"):
                path.unlink()


#: Where the build command installs in the lab: under the node's own /root (a lab node shares
#: this machine's /usr/local), a folder doctor looks in only when told (--llama-bin-dir).
INSTALLED = "/root/llama-bin"
BUILD_DIR = "/root/llama-build"
NODE_JOURNAL = "/root/strixwizard-journal"  # each node's own (/var/lib is this machine's)


def place_installed(host: LabHost, folder: Path) -> None:
    """A build's programs in the node's install folder (its /root is `host.home` here)."""
    target = host.home / INSTALLED.removeprefix("/root/")
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    for program in folder.iterdir():
        shutil.copy2(program, target / program.name)


def test_the_build_command_puts_one_rdma_build_on_every_node_and_doctor_passes(
        llamabuilds2: Lab, builds: dict[str, Path], tmp_path: Path) -> None:
    first, second = llamabuilds2.hosts
    for host in (first, second):
        for path in host.bin_dir.glob("*"):
            path.unlink()
    place_installed(first, builds["rdma"])
    place_installed(second, builds["tcp"])
    site = llamabuilds2.write_site_yaml(tmp_path / "lab.yaml")
    rc, found = doctor(site)  # not in a folder doctor looks in unasked
    assert found["llama.same_build@lab"]["status"] == "skip", found["llama.same_build@lab"]
    rc, found = doctor(site, "--llama-bin-dir", INSTALLED)
    assert rc == 1 and found["llama.same_build@lab"]["status"] == "fail", found

    state = tmp_path / "state"

    def build_command() -> Any:
        return run_cli("deploy", "--site", str(site), "--stack", "llama-rpc",
                       "--build", str(vendored_tree()), "--build-backend", "cpu",
                       "--build-dir", BUILD_DIR, "--llama-bin-dir", INSTALLED, "--apply", "--yes",
                       "--journal-dir", str(tmp_path / "journal"), "--node-journal-dir",
                       NODE_JOURNAL, env={"XDG_STATE_HOME": str(state)}, timeout=3000)

    done = build_command()
    assert done.rc == 0, (done.stdout, done.stderr[-4000:])
    progress = [line for line in done.stderr.splitlines() if "%]" in line]
    assert len(progress) > 10 and all(f"{first.name}: [" in line for line in progress), progress
    assert "sending the source" in done.stderr
    assert f"{second.name}: copying llama-server" in done.stderr
    logs = list((state / "strixwizard" / "llama-builds").rglob("*.log"))
    assert len(logs) == 1 and str(logs[0]) in done.stdout, (logs, done.stdout)
    on_node = first.home / "llama-build" / "build.log"
    assert on_node.read_bytes() == logs[0].read_bytes() and b"Built target llama-server" in \
        on_node.read_bytes()
    for host in (first, second):
        installed = host.home / INSTALLED.removeprefix("/root/")
        assert (installed / "ggml-rpc-server").read_bytes() == \
            (first.home / "llama-build" / "bin" / "ggml-rpc-server").read_bytes()

    assert (f"Next: strixwizard doctor --site {site} --stack llama-rpc --llama-bin-dir {INSTALLED}"
            in done.stdout), done.stdout
    rc, found = doctor(site, "--llama-bin-dir", INSTALLED)
    assert rc == 0, found
    assert found["llama.same_build@lab"]["status"] == "pass", found["llama.same_build@lab"]
    assert {found[f"llama.rpc_rdma@{h.name}"]["status"] for h in (first, second)} == {"pass"}

    # a second run finds every node converged: nothing is installed again
    again = build_command()
    assert again.rc == 0, (again.stdout, again.stderr[-4000:])
    assert "sending the source" not in again.stderr
