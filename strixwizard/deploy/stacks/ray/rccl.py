"""Is RCCL built for gfx1151 on each node, and how to get it (and rccl-tests) when not.

Evidence comes from the facts (`RocmInfo.rccl`: the gfx targets named in
librccl's code-object bundles). Nothing is installed automatically: a library
build takes long and its source must be chosen by the site; the plan says how,
from where, and how long it takes. rccl-tests' `all_reduce_perf` is looked for
by the smoke test itself (the probe does not capture it).
"""

from __future__ import annotations

from strixwizard.facts import NodeFacts

RCCL_SOURCE = "https://github.com/ROCm/rocm-systems (RCCL >= 2.28.3, gfx1151 since PR #3415)"
RCCL_TESTS_SOURCE = "https://github.com/ROCm/rccl-tests"
OFFLINE = ("a node without Internet access: clone on a machine that has it, then copy the tree "
           "(`git bundle` or rsync) and build on the node; nothing here downloads anything")


def rccl_notes(node: NodeFacts) -> tuple[list[str], bool | None]:
    """Notes for the plan, and whether RCCL is built for the GPU (None: cannot tell). Built is
    not ready: what else breaks RCCL on the node (rdma-core, the driver) doctor judges, and the
    deploy plan lists its failures beside this."""
    rocm = node.rocm
    rccl = rocm.rccl
    gfx = node.gpu.gfx_target or "gfx1151"
    version = rocm.version_text or "unknown (no /opt/rocm/.info/version)"
    if rccl.has_gfx1151:
        return [f"RCCL built for {gfx}: {rccl.library} carries {gfx} code objects "
                f"(targets {', '.join(rccl.targets)}); ROCm {version}"], True
    build = (f"build RCCL for {gfx} from {RCCL_SOURCE}: `cmake -DGPU_TARGETS={gfx} ...` in "
             "projects/rccl, about 20-40 min for one GPU target on 16 Zen 5 cores (estimate), "
             f"or use a toolbox image that ships it (kyuz0/amd-strix-halo-vllm-toolboxes); {OFFLINE}")
    if rccl.has_gfx1151 is False:
        return [f"RCCL NOT built for {gfx}: {rccl.library} has only {', '.join(rccl.targets)} "
                f"(RCCL fails with hipErrorInvalidKernelFile); {build}"], False
    return [f"RCCL gfx1151 support unknown: {rccl.note or 'no evidence'}; the smoke test will "
            f"tell. If it fails with `invalid kernel file`: {build}"], None


def rccl_tests_note(gfx: str = "gfx1151") -> str:
    return (f"rccl-tests (`all_reduce_perf`, for the smoke test): `git clone {RCCL_TESTS_SOURCE}; "
            f"make MPI=1 MPI_HOME=/usr/lib64/openmpi HIP_HOME=/opt/rocm NCCL_HOME=/opt/rocm "
            f"GPU_TARGETS={gfx}` (a few minutes); needs OpenMPI on every node; {OFFLINE}")
