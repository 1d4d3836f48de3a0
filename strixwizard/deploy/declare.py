"""What a deploy stack declares besides its functions: its command-line options and its wizard
panel, as data. The CLI builds its parser from the `Option`s, the wizard its pickers from the
options that carry a `Field`, and renders the `Panel` a stack makes of its plan; neither knows
a stack by name. Pure: types only, no import of the deploy engine.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from strixwizard.errors import UsageError


class OptionValueError(argparse.ArgumentTypeError, ValueError):
    """A value outside its option's range: argparse names the option and exits 2, the wizard
    keeps the plan it has (a ValueError, as a value not yet typed whole)."""


def whole(low: int, high: int, what: str = "a whole number") -> Callable[[str], int]:
    """An option type: a whole number from `low` to `high`, as the site file's values are."""
    def convert(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise OptionValueError(f"give {what} from {low} to {high} (got {text!r})") from None
        if not low <= value <= high:
            raise OptionValueError(f"give {what} from {low} to {high} (got {value})")
        return value

    convert.__name__ = what  # argparse names the type in its own messages
    return convert


def seconds(low: float, high: float) -> Callable[[str], float]:
    """An option type: a finite number of seconds from `low` to `high` (`nan` is no timeout)."""
    def convert(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise OptionValueError(f"give seconds from {low:g} to {high:g} (got {text!r})") from None
        if not (math.isfinite(value) and low <= value <= high):
            raise OptionValueError(f"give seconds from {low:g} to {high:g} (got {text})")
        return value

    convert.__name__ = "seconds"
    return convert


#: A TCP port, as the site file's ports are checked (1-65535).
PORT = whole(1, 65535, "a port")
#: A timeout: at least a second, at most a day.
TIMEOUT = seconds(1, 86400)


@dataclass(frozen=True)
class Field:
    """How the wizard's Deploy step shows an option: a checkbox for an on/off option
    (`action="store_true"`), a text input for any other (its text goes through the option's
    `type`)."""

    label: str  # "start vLLM", "systemd units"
    placeholder: str = ""


@dataclass(frozen=True)
class Option:
    """One command-line option of a stack. The CLI adds it (`flag`, `dest`, `type`, `default`,
    `choices`, `metavar`, `action`, `help`) to the stack's argument group, or to `group` when
    set; its value reaches `Stack.settings` under `dest`, from the CLI and the wizard alike."""

    flag: str  # "--gguf"
    dest: str  # "gguf": the key of its value in what `Stack.settings` reads
    help: str = ""
    type: Callable[[str], Any] | None = None  # int, float, ...; None: the text as given
    default: Any = None
    choices: tuple[str, ...] = ()
    metavar: str | None = None
    action: str | None = None  # "store_true", "append"; None: takes a value
    group: str = ""  # a --help section of its own (e.g. "vLLM (--serve, with the ray stack)")
    wizard: Field | None = None  # shown in the wizard's Deploy step; None: the CLI only
    #: given (not its default) with another stack: refused, naming the stacks that read it;
    #: False: another stack leaves it unread
    refused_elsewhere: bool = False
    #: the site file's key (a `Site` field) whose value is this option's default when the option
    #: is not given (`llama_bin_dir`); "": none
    site_key: str = ""

    @property
    def switch(self) -> bool:
        return self.action == "store_true"

    def given(self, value: object) -> bool:
        """The value differs from the option's default (the user gave it)."""
        return value not in (None, False, (), []) and value != self.default


@dataclass(frozen=True)
class Line:
    """One line of a wizard panel box. `style`: "" plain, "bold", "muted", or "heading" (a
    section's title); `label`: an accented word before the text (a step's fix id);
    `cli_words`: the text names CLI flags the wizard says in its own words."""

    text: str
    style: str = ""
    label: str = ""
    indent: bool = False
    cli_words: bool = False


@dataclass(frozen=True)
class Box:
    """A bordered box of the wizard's Deploy step: its title, its lines, and the key that names
    it there (the widget `deploy-KEY`)."""

    key: str
    title: str
    lines: tuple[Line, ...]


@dataclass(frozen=True)
class NodeView:
    """A node's box: the wizard writes its name, `role` and address, its changes (with
    `persistence`, how long they last, when the stack says), each step, then `lines`."""

    node: str
    role: str  # "Ray head", "RPC worker", ...
    lines: tuple[Line, ...] = ()
    persistence: str = ""


@dataclass(frozen=True)
class Panel:
    """How the wizard shows a stack's plan: the environment with its provenance (stacks that
    write the RCCL/Ray env file), one box per node, then any boxes after them."""

    nodes: tuple[NodeView, ...]
    after: tuple[Box, ...] = ()
    environment: bool = False


def option_values(options: tuple[Option, ...], given: Mapping[str, Any]) -> dict[str, Any]:
    """Each option's value: as given, else its default (False for an on/off option, a fresh
    list for `append`)."""
    values = dict(given)
    for option in options:
        if values.get(option.dest) is None:
            values[option.dest] = list(option.default or []) if option.action == "append" \
                else option.default if option.default is not None else False if option.switch \
                else None
    return values


def refuse_control_characters(values: Iterable[tuple[str, object]]) -> None:
    """A line break (or another control character) in a value that becomes a line of a file
    on a node (a unit's `ExecStart=`) is refused, naming its flag, before anything is planned."""
    from strixwizard.present.terminal import visible

    for flag, value in values:
        if isinstance(value, str) and visible(value) != value:
            raise UsageError(f"{flag} `{visible(value)}`: holds a line break or another control "
                             "character; give the path as it is on the nodes")
