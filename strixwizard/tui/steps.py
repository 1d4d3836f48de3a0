"""The wizard's steps, in order. The key of each step is its number."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Step:
    id: str
    number: int
    title: str
    purpose: str

    @property
    def key(self) -> str:
        return str(self.number)


STEPS: tuple[Step, ...] = (
    Step("site", 1, "Site", "open or create site.yaml, test SSH, or pick the demo"),
    Step("discover", 2, "Discover", "probe every node: platform, NICs and RDMA ports"),
    Step("links", 3, "Links", "which interface of which node meets which, and over what"),
    Step("fix", 4, "Fix", "failing checks grouped by node and link, with their fix"),
    Step("deploy", 5, "Deploy", "RCCL environment, Ray and the vLLM launch line"),
    Step("test", 6, "Test", "RDMA latency and bandwidth, TCP baseline, RCCL all-reduce"),
    Step("report", 7, "Report", "the summary, saved as JSON, Markdown and HTML"),
)
BY_ID: dict[str, Step] = {step.id: step for step in STEPS}


def step_after(step_id: str, offset: int) -> Step:
    """The step `offset` places away from `step_id`, clamped to the first and last."""
    index = [s.id for s in STEPS].index(step_id) + offset
    return STEPS[max(0, min(len(STEPS) - 1, index))]
