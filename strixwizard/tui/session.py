"""What the wizard knows right now: the site, the last discovery, saved files.

Screens read it; only the app changes it (then bumps `version`, and each
screen re-renders when it is next shown).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from strixwizard.site import Site
from strixwizard.tui.jobs import Applied, Discovery, SiteSource
from strixwizard.tui.state import WizardState, display_path, output_dir


@dataclass
class NodeStatus:
    event: str  # "waiting", "start", "done", "failed"
    text: str


@dataclass
class Session:
    source: SiteSource | None = None
    site: Site | None = None
    site_error: str | None = None
    state: WizardState = field(default_factory=WizardState)
    state_file: Path | None = None
    discovery: Discovery | None = None
    discovering: bool = False
    discovery_error: tuple[str, str] | None = None  # reason, next step
    run: int = 0  # the discovery run whose messages count; older ones are ignored
    progress: dict[str, NodeStatus] = field(default_factory=dict)
    ssh: dict[str, NodeStatus] = field(default_factory=dict)
    ssh_testing: bool = False
    saved: dict[str, Path] = field(default_factory=dict)
    fixing: bool = False  # an apply or rollback is running
    fix_log: list[str] = field(default_factory=list)
    applied: Applied | None = None
    fix_error: str | None = None
    rolled_back: str | None = None  # the outcome of the last rollback, in words
    save_error: str | None = None
    version: int = 0

    def changed(self) -> None:
        self.version += 1

    @property
    def is_demo(self) -> bool:
        return self.source is not None and self.source.demo

    @property
    def out_dir(self) -> Path:
        source = self.source or SiteSource()
        return output_dir(source.site_file, source.demo)

    def describe_source(self) -> str:
        if self.source is None:
            return "no site yet"
        if self.source.demo:
            return "the bundled demo (two Strix Halo nodes replayed from snapshots; nothing is probed)"
        return display_path(self.source.site_file or "")
