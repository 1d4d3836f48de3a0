"""Declarations of the tool outputs and files the facts read: each is defined once, here.

An `Output` is one command (its argv) or one file (its path), the parser that
turns its text into a typed value and, where a dry run must change it, the
renderer that writes a new value back into a recorded text. `{name}` parts are
placeholders: `{netdev}` and `{rdmadev}` stand for every entry of
/sys/class/net and /sys/class/infiniband (the collector fills them in), names
listed in `over` take each of the listed values, and in a path any `{name}`
matches any entry.

Everything else derives from these declarations:
- `facts/spec.py` collects every declared output (unless `collect=False`);
- fact functions read one with `run_output` / `read_output`;
- the fix engine's read-back and the dry run (`fixing/readers.py`) parse and
  render through it;
- tests/data/fact_cases/<name>.json lists real texts and what they parse to.

A parser raises `ValueError` when the text is not what the tool prints.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import product
from typing import Any, Generic, TypeVar

from strixwizard.facts.source import run, why_unknown
from strixwizard.probe import Probe

T = TypeVar("T")

#: Placeholders the collector expands itself, with the directory whose entries they take.
PER_ENTRY = {"netdev": "/sys/class/net", "rdmadev": "/sys/class/infiniband"}
_PLACEHOLDER = re.compile(r"\{(\w+)\}")


def placeholders(text: str) -> list[str]:
    return _PLACEHOLDER.findall(text)


def _fill(template: str, names: Mapping[str, str], partial: bool = False) -> str:
    """`template` with `{name}` parts replaced; unknown names are an error unless `partial`."""
    def value(match: re.Match[str]) -> str:
        if match.group(1) in names:
            return names[match.group(1)]
        if partial:
            return match.group(0)
        raise KeyError(f"no value for {{{match.group(1)}}} in {template!r}")

    return _PLACEHOLDER.sub(value, template)


@dataclass(frozen=True, eq=False)
class Output(Generic[T]):
    """One tool output or file: where it comes from, how to read it, how to write it back."""

    name: str  # "dcb.pfc": also the name of its case file
    parse: Callable[[str], T]  # text -> typed value; ValueError when not understood
    argv: tuple[str, ...] = ()  # a command; `{placeholders}` filled by `command()`
    path: str = ""  # a file; `{placeholders}` filled by `file_path()`
    render: Callable[[str, T], str] | None = None  # dry runs: old text + new value -> new text
    collect: bool = True  # False: read by a fix only (its argv names a thing, not an entry)
    over: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # collected for each value
    #: The read needs root: on a `become: sudo` node it alone goes through sudo; the others
    #: run as the login user (see `command_output`).
    root: bool = False

    def __post_init__(self) -> None:
        if bool(self.argv) == bool(self.path):
            raise ValueError(f"output {self.name}: give argv or path, not both or neither")
        if self.collect and self.argv:
            free = [p for p in placeholders(" ".join(self.argv)) if p not in self.over]
            if len(free) > 1 or any(p not in PER_ENTRY for p in free):
                raise ValueError(f"output {self.name}: the collector cannot fill {free}")

    @property
    def is_command(self) -> bool:
        return bool(self.argv)

    @property
    def each(self) -> str | None:
        """The per-entry placeholder of a collected command (`netdev`, `rdmadev`), if any."""
        free = [p for p in placeholders(" ".join(self.argv)) if p in PER_ENTRY and p not in self.over]
        return free[0] if free else None

    def command(self, **names: str) -> tuple[str, ...]:
        """The argv with its placeholders filled: `PFC.command(netdev="eth0")`."""
        return tuple(_fill(arg, names) for arg in self.argv)

    def file_path(self, **names: str) -> str:
        return _fill(self.path, names)

    def spec_commands(self) -> Iterator[dict[str, Any]]:
        """Entries of the collector's `commands` list (see facts/spec.py)."""
        keys = list(self.over)
        for values in product(*(self.over[k] for k in keys)):
            fixed = dict(zip(keys, values, strict=True))
            entry: dict[str, Any] = {"argv": [_fill(a, fixed, partial=True) for a in self.argv]}
            if self.each:
                entry["each"] = self.each
            if self.root:
                entry["root"] = True
            yield entry

    def spec_pattern(self) -> str:
        """The collector's glob pattern for a file: every placeholder matches any entry."""
        return _PLACEHOLDER.sub("*", self.path)


_DECLARED: dict[str, Output[Any]] = {}


def _declare(output: Output[T]) -> Output[T]:
    if output.name in _DECLARED:
        raise ValueError(f"output {output.name} is declared twice")
    _DECLARED[output.name] = output
    return output


def command_output(name: str, argv: tuple[str, ...], parse: Callable[[str], T], *,
                   render: Callable[[str, T], str] | None = None, collect: bool = True,
                   over: Mapping[str, tuple[str, ...]] | None = None, root: bool = False
                   ) -> Output[T]:
    """Declare a command's output (module level, in the fact module that reads it).

    `root=True`: the read needs root (or must see what root sees: root's PATH and HOME). On a
    node whose login user is not root (`become: sudo`) only these reads go through sudo; the
    rest run as the login user. A read is left root-free only where the kernel or the tool
    lets any user make it (docs/safety.md lists which and why)."""
    return _declare(Output(name, parse, argv=argv, render=render, collect=collect,
                           over=dict(over or {}), root=root))


def file_output(name: str, path: str, parse: Callable[[str], T], *,
                render: Callable[[str, T], str] | None = None, collect: bool = True
                ) -> Output[T]:
    """Declare a file (module level, in the fact module that reads it)."""
    return _declare(Output(name, parse, path=path, render=render, collect=collect))


def declared_so_far() -> tuple[Output[Any], ...]:
    """The outputs declared by the fact modules imported so far, in declaration order; every
    one of them: `strixwizard.facts.declared()` (the package imports every fact module)."""
    return tuple(_DECLARED.values())


@dataclass(frozen=True)
class Reading(Generic[T]):
    """A command's parsed output, or None with the reason (not captured, failed, not understood)."""

    value: T | None
    note: str = ""


def run_output(probe: Probe, out: Output[T], **names: str) -> Reading[T]:
    argv = out.command(**names)
    result = run(probe, argv)
    if result is None or not result.ok:
        return Reading(None, why_unknown(argv, result))
    try:
        return Reading(out.parse(result.stdout))
    except ValueError as error:
        return Reading(None, f"`{' '.join(argv)}` output not understood: {error}")


def run_survey(probe: Probe, out: Output[T], what: str,
               argv: Sequence[str] | None = None) -> Reading[T]:
    """A fixed script's parsed output (`argv`: its own, or with values after it), or why not,
    named `what` ("the llama.cpp survey"): the reason names the survey, not the whole script
    `run_output` would quote."""
    result = run(probe, argv or out.argv)
    if result is None:
        return Reading(None, f"{what} was not captured (a snapshot older than it)")
    if not result.ok:
        return Reading(None, f"{what} failed (exit {result.rc})")
    try:
        return Reading(out.parse(result.stdout))
    except ValueError as error:
        return Reading(None, f"{what}'s output was not understood: {error}")


def read_output(probe: Probe, out: Output[T], **names: str) -> T | None:
    """A file's parsed text; None when it is absent, unreadable or not understood."""
    text = probe.read(out.file_path(**names))
    if text is None:
        return None
    try:
        return out.parse(text)
    except ValueError:
        return None


def stripped(text: str) -> str | None:
    """Parser of a one-value file (`/proc/1/comm`, a version file): the text, stripped."""
    return text.strip() or None
