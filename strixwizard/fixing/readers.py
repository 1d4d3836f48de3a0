"""Readers: what a step reads (a file, a command's output) as its canonical value, and, for
dry runs on snapshots, a canonical value written back into a recorded output.

Parsing and rendering belong to the declared outputs (`strixwizard/facts/outputs.py`):
a reader is only a view of one, turning the fact's parsed value into a canonical string
and back. Canonical values are short strings a person can read and, for commands,
often the very arguments that set them (`all:off 3:on` for `dcb pfc set ... prio-pfc`),
so the undo of a step is its command with `before` in place of `after`.

Reader keys are stored in journals, so they never change. A key may carry a parameter
after a colon: `ethtool.flag:fw-lldp-agent`, `devlink:pci/0000:c2:00.0/enable_roce`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from strixwizard.facts import dcb, devlink, ethtool, kernel
from strixwizard.facts.outputs import Output
from strixwizard.facts.persistence import GRUBBY, NM_CONNECTION_MTU


class ReadError(ValueError):
    """The value could not be read or understood; the message says why."""


# -- canonical forms ------------------------------------------------------------------

def pfc_value(enabled: Sequence[int]) -> str:
    """PFC priorities as `dcb pfc set ... prio-pfc` takes them: `all:off 3:on`."""
    return "all:off" + "".join(f" {p}:on" for p in sorted(enabled))


def prio_tc_value(prio_tc: Sequence[int]) -> str:
    """ETS priority -> traffic class as `dcb ets set ... prio-tc` takes it: `0:0 1:0 ...`."""
    return " ".join(f"{p}:{tc}" for p, tc in enumerate(prio_tc))


def _pfc_priorities(value: str) -> tuple[int, ...]:
    return tuple(sorted(int(w.split(":")[0]) for w in value.split()
                        if w.endswith(":on") and w[0].isdigit()))


def _on(value: str) -> bool:
    return value == "on"


def _devlink_value(value: str | None) -> object:
    if value in ("true", "false"):
        return value == "true"
    try:
        return int(value or "")
    except ValueError:
        return value


def _required(value: Any, message: str) -> Any:
    if value is None:
        raise ReadError(message)
    return value


# -- views ----------------------------------------------------------------------------

@dataclass(frozen=True)
class View:
    """A reader: the canonical string of a declared output's parsed value (`show`), and the
    parsed value changed to a canonical string (`change`, for dry runs). `output` None: the
    text itself is the value (`text`, `raw`)."""

    output: Output[Any] | None
    show: Callable[[Any, str], str | None]  # parsed value, key parameter -> canonical value
    change: Callable[[Any, str | None, str], Any] | None = None  # value, new canonical, param


def _pause(value: ethtool.Pause, param: str) -> str:
    if value.rx is None or value.tx is None:
        raise ReadError("no RX/TX lines in `ethtool -a` output")
    return f"rx {'on' if value.rx else 'off'} tx {'on' if value.tx else 'off'}"


def _set_pause(value: ethtool.Pause, new: str | None, param: str) -> ethtool.Pause:
    words = (new or "").split()
    return replace(value, rx=_on(words[1]), tx=_on(words[3]))


def _flag(value: dict[str, bool], param: str) -> str:
    if param not in value:
        raise ReadError(f"the driver offers no {param} flag")
    return "on" if value[param] else "off"


def _devlink(value: devlink.DevlinkParams, param: str) -> str | None:
    """param: `pci/0000:c2:00.0/enable_roce`."""
    handle, _, name = param.rpartition("/")
    values = value.get(devlink.handle_key(handle), {})
    return str(values[name]).lower() if name in values else None


def _set_devlink(value: devlink.DevlinkParams, new: str | None, param: str
                 ) -> devlink.DevlinkParams:
    handle, _, name = param.rpartition("/")
    key = devlink.handle_key(handle)
    return {**value, key: {**value.get(key, {}), name: _devlink_value(new)}}


def _app(value: tuple[tuple[int, int], ...], param: str) -> str | None:
    return next((str(prio) for dscp, prio in value if dscp == int(param)), None)


def _set_app(value: tuple[tuple[int, int], ...], new: str | None, param: str
             ) -> tuple[tuple[int, int], ...]:
    table = [pair for pair in value if pair[0] != int(param)]
    if new is not None:
        table.append((int(param), int(new)))
    return tuple(sorted(table))


VIEWS: dict[str, View] = {
    "text": View(None, lambda text, _: text.strip()),
    "raw": View(None, lambda text, _: text),
    "dcb.pfc": View(dcb.PFC, lambda v, _: pfc_value(v), lambda v, new, _: _pfc_priorities(new or "")),
    "dcb.prio_tc": View(
        dcb.ETS, lambda v, _: prio_tc_value(_required(v, "no prio_tc in `dcb ets show` output")),
        lambda v, new, _: tuple(int(w.split(":")[1]) for w in (new or "").split())),
    "dcb.app": View(dcb.APP, _app, _set_app),
    "dcb.apptrust": View(dcb.APPTRUST, lambda v, _: " ".join(v),
                         lambda v, new, _: tuple((new or "").split())),
    "ethtool.pause": View(ethtool.PAUSE, _pause, _set_pause),
    "ethtool.flag": View(ethtool.PRIV_FLAGS, _flag, lambda v, new, p: {**v, p: _on(new or "")}),
    "devlink": View(devlink.PARAMS, _devlink, _set_devlink),
    "nm.mtu": View(NM_CONNECTION_MTU, lambda v, _: "auto" if v is None else str(v)),
    "grubby.arg": View(GRUBBY, lambda v, p: kernel.cmdline_param(v.split(), p)),
    "cmdline": View(kernel.CMDLINE, lambda v, p: kernel.cmdline_param(v, p)),
}


def _view(key: str) -> tuple[View, str]:
    name, _, param = key.partition(":")
    view = VIEWS.get(name)
    if view is None:
        raise ReadError(f"unknown reader {name!r}")
    return view, param


def parse(key: str, text: str) -> str | None:
    """The canonical value of `text` (a file's content, a command's stdout) for reader `key`."""
    view, param = _view(key)
    try:
        value = view.output.parse(text) if view.output is not None else text
        return view.show(value, param)
    except ReadError:
        raise
    except (ValueError, KeyError, TypeError, AttributeError, IndexError) as error:
        raise ReadError(f"output not understood ({error})") from None


def render(key: str, old: str, value: str | None) -> str | None:
    """A recorded output changed to show `value`, or None when this reader cannot render."""
    view, param = _view(key)
    output = view.output
    if output is None or output.render is None or view.change is None:
        return None
    try:
        return output.render(old, view.change(output.parse(old), value, param))
    except (ValueError, KeyError, TypeError, AttributeError, IndexError) as error:
        raise ReadError(f"cannot write {value!r} into the recorded output ({error})") from None
