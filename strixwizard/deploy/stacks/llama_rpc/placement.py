"""Where the layers go: llama-server's `-ts` (tensor split) from each device's free memory, by
the placement rule `strixwizard advise --nodes-spec` uses (`strixwizard.decode.hetero`
`best_split`: called here, not copied). Pure.

llama.cpp lists the RPC servers first, in `--rpc` order, then the head's own GPU
(src/llama.cpp: "add RPC servers at the front of the list to minimize network transfers", as
vendored in the llama-cpp-python 0.3.36 sdist), so `-ts` gives the RPC devices' shares first;
a head built without a GPU backend adds no device of its own.

A device's free memory is what advise reads of the node's facts (`decode.site_nodes`
`node_memory`): the iGPU's GTT pool, bounded by MemAvailable. The split
is written with slashes: `-ts 15,85` with a comma is two llama-bench runs, not one ratio, and
in the published case put a 200 GB file on a 122 GB box (a two-hour hang;
https://github.com/ThinkOffApp/mac-amd-cuda-llm-cluster). A split that cannot fit is refused
with the numbers, before anything starts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from strixwizard.decode.hetero import GIB, NodeSpec, best_split, ts_text
from strixwizard.decode.site_nodes import node_memory
from strixwizard.deploy.env import DeployRefused
from strixwizard.facts import NodeFacts

#: The published case behind the slash and behind refusing a split that cannot fit.
SOURCE = "https://github.com/ThinkOffApp/mac-amd-cuda-llm-cluster"
#: Every device gets the same bandwidth: the deploy does not measure it, so the rule shares by
#: memory (a faster GB10 or Mac beside a Strix Halo: `strixwizard advise --nodes-spec`).
SAME_BANDWIDTH_GBPS = 212.0


@dataclass(frozen=True)
class Device:
    """One llama.cpp device of the split: an RPC server, or the head's own GPU."""

    node: str
    kind: str  # "RPC server" or "head GPU"
    free_bytes: int
    source: str  # where the figure comes from, for the arithmetic shown


@dataclass(frozen=True)
class Placement:
    """The split (`ts` None: not computed, `why` says why) and its arithmetic."""

    ts: str | None
    why: str
    devices: tuple[Device, ...] = ()
    held_bytes: tuple[float, ...] = ()

    @property
    def arithmetic(self) -> str:
        """"node-b RPC server 60.0 of 100.0 GiB free, ..." for the plan's notes."""
        return "; ".join(f"{d.node} {d.kind}: {h / GIB:.1f} of {d.free_bytes / GIB:.1f} GiB free "
                         f"({d.source})" for d, h in zip(self.devices, self.held_bytes, strict=True))


def free_memory(node: NodeFacts) -> tuple[int, str] | None:
    """What a device on this node may hold now, and where the figure comes from: advise's own
    reading of the facts (`strixwizard.decode.site_nodes.node_memory`)."""
    held, source = node_memory(node.memory)
    return None if held is None else (int(held), source)


def devices(facts: Mapping[str, NodeFacts], workers: Sequence[str], head: str
            ) -> tuple[list[Device] | None, str]:
    """llama.cpp's devices in `-ts` order, or None and why they cannot be known."""
    head_build = facts[head].llama.build if head in facts else None
    if head_build is None or not head_build.programs:
        return None, f"the head {head}'s llama.cpp build is not known (doctor --stack llama-rpc)"
    kinds = [(w, "RPC server") for w in workers]
    if head_build.backends:
        if head in workers:
            return None, (f"{head} holds an RPC server and its own GPU: one memory, two devices "
                          "(give -ts yourself)")
        kinds.append((head, "head GPU"))
    found = []
    for node, kind in kinds:
        free = free_memory(facts[node]) if node in facts else None
        if free is None:
            return None, f"{node}'s free memory is not known (/proc/meminfo not read)"
        found.append(Device(node, kind, *free))
    return found, ""


def place(model_bytes: int | None, facts: Mapping[str, NodeFacts], workers: Sequence[str],
          head: str, split_mode: str) -> Placement:
    """The `-ts` that fits, by `best_split`; DeployRefused when the devices together hold less
    than the model."""
    if split_mode not in ("layer", "row"):
        return Placement(None, f"-sm {split_mode} takes no -ts")
    if model_bytes is None:
        return Placement(None, "the model's size is not known (--gguf PATH of a file on the head)")
    found, why = devices(facts, workers, head)
    if found is None:
        return Placement(None, why)
    if len(found) < 2:
        return Placement(None, "one device: nothing to split")
    specs = [NodeSpec(float(d.free_bytes), SAME_BANDWIDTH_GBPS) for d in found]
    held = best_split(float(model_bytes), specs)
    if held is None:
        room = "; ".join(f"{d.node} {d.kind} {d.free_bytes / GIB:.1f} GiB ({d.source})" for d in found)
        raise DeployRefused(
            f"the model ({model_bytes / GIB:.1f} GiB) does not fit the devices' free memory "
            f"together ({sum(d.free_bytes for d in found) / GIB:.1f} GiB: {room}); free memory, "
            f"add a node or take a smaller quantisation (a split that does not fit hangs instead of "
            f"failing: {SOURCE})")
    return Placement(ts_text(held), "by each device's free memory (the placement rule of "
                     "`strixwizard advise --nodes-spec`, equal bandwidths)", tuple(found),
                     tuple(held))
