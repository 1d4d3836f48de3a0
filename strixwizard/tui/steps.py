"""The wizard's steps, in order: the one list that numbers them and names their screens.

Everything else follows from `STEPS`: the app's modes (one per step, its screen
class named by import path, `<Title>Screen` in `screens/<id>.py` unless the step
names another, loaded by the app only, so this module imports no screen), the
number keys 1…n, the step bar, the "step n/N" titles and every text that refers to
another step (`key_of`, `refer`). Adding a step is one entry here plus its screen
module (screen and its state).
"""

from __future__ import annotations

from dataclasses import dataclass

from strixwizard.site import STACKS

_SCREENS = "strixwizard.tui.screens"


@dataclass(frozen=True)
class Step:
    id: str
    title: str
    purpose: str
    #: "module:Class" of its StepScreen; by default `<Title>Screen` in `tui/screens/<id>.py`.
    screen: str = ""

    def __post_init__(self) -> None:
        if not self.screen:
            object.__setattr__(self, "screen", f"{_SCREENS}.{self.id}:{self.title}Screen")

    @property
    def number(self) -> int:
        return [s.id for s in STEPS].index(self.id) + 1

    @property
    def key(self) -> str:
        """The key that opens the step: its number."""
        return str(self.number)

    @property
    def label(self) -> str:
        """"step 2/7 Discover"."""
        return f"step {self.number}/{len(STEPS)} {self.title}"


STEPS: tuple[Step, ...] = (
    Step("site", "Site", "open or create site.yaml, test SSH, or pick the demo"),
    Step("discover", "Discover", "probe every node: platform, NICs and RDMA ports"),
    Step("links", "Links", "which interface of which node meets which, and over what"),
    Step("fix", "Fix", "failing checks grouped by node and link, with their fix"),
    Step("deploy", "Deploy", "a stack from the nodes' facts, then its smoke test: "
         + ", ".join(list(STACKS.values())[:-1]) + " or " + list(STACKS.values())[-1]),
    Step("test", "Test", "RDMA latency and bandwidth, TCP baseline, RCCL all-reduce",
         f"{_SCREENS}.measure:MeasurementScreen"),
    Step("report", "Report", "the summary, saved as JSON, Markdown and HTML"),
)
BY_ID: dict[str, Step] = {step.id: step for step in STEPS}


def step_after(step_id: str, offset: int) -> Step:
    """The step `offset` places away from `step_id`, clamped to the first and last."""
    index = [s.id for s in STEPS].index(step_id) + offset
    return STEPS[max(0, min(len(STEPS) - 1, index))]


def later_steps(step_id: str) -> tuple[Step, ...]:
    """The steps after `step_id`: what a new result of that step makes stale."""
    index = [s.id for s in STEPS].index(step_id)
    return STEPS[index + 1:]


def key_of(step_id: str) -> str:
    """The key that opens a step, by its id (tests and texts never hard-code the number)."""
    return BY_ID[step_id].key


def refer(step_id: str) -> str:
    """How a text names another step: "step 2, Discover"."""
    step = BY_ID[step_id]
    return f"step {step.number}, {step.title}"


def keys(step_id: str, *then: str) -> str:
    """The keys that reach a step's action, as texts write them: "press 2, then r"."""
    return f"press {BY_ID[step_id].key}" + "".join(f", then {key}" for key in then)
