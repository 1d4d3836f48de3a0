"""What a fix plans, as data: steps with their before/after values and undo, grouped in plans.

A `Step` is one change on one node. It carries:
- `read`: how to read the value it changes again (the drift check before
  applying, the verification after, and rollback all use it);
- `before`: that value as the facts showed it at plan time (None = absent or
  not set), and `after`: the value the step sets;
- for commands, the argv that applies it and the argv that undoes it, both
  computed at plan time from the facts.

A `Plan` is what one fix wants on one node. Plans that share a `group` (a
link) are applied and rolled back together, so a link never keeps one end
changed when the other end failed. Everything here is pure data, JSON-able,
and never performs I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class Kind(StrEnum):
    MTU = "mtu"  # netdev MTU over netlink (pyroute2 locally, `ip link set` over SSH)
    WRITE = "write"  # a sysfs or configfs attribute
    MKDIR = "mkdir"  # a configfs directory (undo: rmdir)
    COMMAND = "command"  # argv, undone by undo_argv
    FILE = "file"  # a configuration file that makes a change survive a reboot
    CMDLINE = "cmdline"  # kernel command line: takes effect at the next boot only


#: Placeholder in an undo argv for the value read right before the step ran
#: (used only where the facts cannot know `before` at plan time).
BEFORE = "{before}"


@dataclass(frozen=True)
class Read:
    """How to read a step's value: `source` is "file", "exists", "mtu" or "command";
    `parse` names a reader in `strixwizard.fixing.readers`."""

    source: str
    path: str = ""  # file / exists: absolute path; mtu: the netdev name
    argv: tuple[str, ...] = ()  # command
    parse: str = "text"

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "path": self.path, "argv": list(self.argv), "parse": self.parse}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Read:
        return cls(data["source"], data.get("path", ""), tuple(data.get("argv", ())),
                   data.get("parse", "text"))


@dataclass(frozen=True)
class Step:
    """One change to a node: what it changes, how it reads it back, before and after."""

    kind: Kind
    target: str  # what is changed: a netdev, a path, a device
    summary: str  # one line for people
    read: Read
    before: str | None
    after: str | None
    argv: tuple[str, ...] = ()  # COMMAND / CMDLINE: what applies it
    undo_argv: tuple[str, ...] = ()  # COMMAND / CMDLINE: what restores `before`
    reversible: bool = True
    reboot: bool = False  # takes effect at the next boot only
    persistence: str | None = None  # set on steps that make a change survive reboots
    before_known: bool = True  # False: `before` is read at apply time (see BEFORE)
    mode: int = 0o644  # FILE

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind.value,
            "target": self.target,
            "summary": self.summary,
            "read": self.read.to_json(),
            "before": self.before,
            "after": self.after,
            "argv": list(self.argv),
            "undo_argv": list(self.undo_argv),
            "reversible": self.reversible,
            "reboot": self.reboot,
            "persistence": self.persistence,
            "before_known": self.before_known,
            "mode": self.mode,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Step:
        return cls(
            kind=Kind(data["kind"]), target=data["target"], summary=data["summary"],
            read=Read.from_json(data["read"]), before=data.get("before"), after=data.get("after"),
            argv=tuple(data.get("argv", ())), undo_argv=tuple(data.get("undo_argv", ())),
            reversible=bool(data.get("reversible", True)), reboot=bool(data.get("reboot", False)),
            persistence=data.get("persistence"), before_known=bool(data.get("before_known", True)),
            mode=int(data.get("mode", 0o644)),
        )


@dataclass(frozen=True)
class Plan:
    """What one fix does on one node (entity: the interface or device it is about)."""

    fix: str
    node: str
    entity: str
    steps: tuple[Step, ...] = ()
    notes: tuple[str, ...] = ()  # what we do not automate, and why; what to do by hand
    persistence: str = ""  # how the change survives a reboot, in words
    group: str | None = None  # a link id: plans sharing it succeed or roll back together

    @property
    def empty(self) -> bool:
        return not self.steps

    @property
    def reboot(self) -> bool:
        return any(s.reboot for s in self.steps)

    @property
    def reversible(self) -> bool:
        return all(s.reversible for s in self.steps)

    def to_json(self) -> dict[str, Any]:
        return {
            "fix": self.fix,
            "node": self.node,
            "entity": self.entity,
            "group": self.group,
            "reversible": self.reversible,
            "reboot": self.reboot,
            "persistence": self.persistence,
            "notes": list(self.notes),
            "steps": [s.to_json() for s in self.steps],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Plan:
        return cls(
            fix=data["fix"], node=data["node"], entity=data["entity"],
            steps=tuple(Step.from_json(s) for s in data.get("steps", ())),
            notes=tuple(data.get("notes", ())), persistence=data.get("persistence", ""),
            group=data.get("group"),
        )


@dataclass
class SitePlan:
    """The plans of every node of a site, and the nodes that could not be planned."""

    site: str
    plans: list[Plan] = field(default_factory=list)
    unreachable: dict[str, str] = field(default_factory=dict)  # node → why it was not planned

    @property
    def nodes(self) -> list[str]:
        seen: list[str] = []
        for plan in self.plans:
            if plan.node not in seen:
                seen.append(plan.node)
        return seen

    def for_node(self, node: str) -> list[Plan]:
        return [p for p in self.plans if p.node == node]

    @property
    def changes(self) -> int:
        return sum(len(p.steps) for p in self.plans)
