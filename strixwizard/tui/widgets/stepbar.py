"""The row of steps under the header: where you are, where you have been; click to go."""

from __future__ import annotations

from collections.abc import Iterable

from textual.content import Content
from textual.widgets import Static

from strixwizard.tui.steps import STEPS


def step_bar_content(current: str, visited: Iterable[str]) -> Content:
    seen = set(visited)
    parts: list[Content] = []
    for step in STEPS:
        label = f" {step.number} {step.title} "
        if step.id == current:
            style = "bold reverse"
        elif step.id in seen:
            style = "underline"
        else:
            style = "dim"
        parts.append(Content.from_markup(
            f"[{style} @click=app.goto('{step.id}')]$label[/]", label=label
        ))
    return Content(" ").join(parts)


class StepBar(Static):
    """Rendered from the app's state; `show(current, visited)` updates it."""

    def __init__(self, current: str, visited: Iterable[str] = (), id: str | None = None) -> None:
        super().__init__(step_bar_content(current, visited), id=id)
        self.current = current

    def show(self, visited: Iterable[str]) -> None:
        self.update(step_bar_content(self.current, visited))
