"""Readers: turn what a step reads (a file, a command's output) into its canonical value,
and, for dry runs on snapshots, write a canonical value back into a recorded output.

Canonical values are short strings a person can read and, for commands, often
the very arguments that set them (`all:off 3:on` for `dcb pfc set ... prio-pfc`),
so the undo of a step is its command with `before` in place of `after`.
Parser keys may carry a parameter after a colon: `ethtool.flag:fw-lldp-agent`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from strixwizard.facts.dcb import _load as load_dcb_json
from strixwizard.facts.ethtool import parse_pause, parse_priv_flags


class ReadError(ValueError):
    """The value could not be read or understood; the message says why."""


def pfc_value(enabled: tuple[int, ...] | list[int]) -> str:
    return "all:off" + "".join(f" {p}:on" for p in sorted(enabled))


def prio_tc_value(prio_tc: tuple[int, ...] | list[int]) -> str:
    return " ".join(f"{p}:{tc}" for p, tc in enumerate(prio_tc))


def _pfc(text: str, param: str) -> str | None:
    prio = load_dcb_json(text).get("prio_pfc")
    if not isinstance(prio, list):
        raise ReadError("no prio_pfc in `dcb pfc show` output")
    return pfc_value([i for i, on in enumerate(prio) if on is True])


def _prio_tc(text: str, param: str) -> str | None:
    prio_tc = load_dcb_json(text).get("prio_tc")
    if not isinstance(prio_tc, list):
        raise ReadError("no prio_tc in `dcb ets show` output")
    return prio_tc_value([int(v) for v in prio_tc])


def _app_dscp(text: str, param: str) -> str | None:
    table = load_dcb_json(text).get("dscp_prio", [])
    for entry in table if isinstance(table, list) else []:
        if isinstance(entry, list) and len(entry) == 2 and int(entry[0]) == int(param):
            return str(int(entry[1]))
    return None


def _apptrust(text: str, param: str) -> str | None:
    order = load_dcb_json(text).get("order")
    if not isinstance(order, list):
        raise ReadError("no order in `dcb apptrust show` output")
    return " ".join(str(o) for o in order)


def _pause(text: str, param: str) -> str | None:
    pause = parse_pause(text)
    if pause.rx is None or pause.tx is None:
        raise ReadError("no RX/TX lines in `ethtool -a` output")
    return f"rx {'on' if pause.rx else 'off'} tx {'on' if pause.tx else 'off'}"


def _flag(text: str, param: str) -> str | None:
    flags = parse_priv_flags(text)
    if param not in flags:
        raise ReadError(f"the driver offers no {param} flag")
    return "on" if flags[param] else "off"


def _devlink(text: str, param: str) -> str | None:
    """param: `pci/0000:c2:00.0/enable_roce`."""
    handle, _, name = param.rpartition("/")
    start = text.find("{")
    if start < 0:
        raise ReadError("no JSON in devlink output")
    data = json.JSONDecoder().raw_decode(text[start:])[0]
    for entry in data.get("param", {}).get(handle, []):
        if entry.get("name") == name:
            values = sorted(entry.get("values", []), key=lambda v: v.get("cmode") != "runtime")
            return str(values[0].get("value")).lower() if values else None
    return None


def _nm_mtu(text: str, param: str) -> str | None:
    value = text.strip()
    return "auto" if value in ("", "0", "auto") else value


def _text(text: str, param: str) -> str | None:
    return text.strip()


def _raw(text: str, param: str) -> str | None:
    return text


def _grubby_arg(text: str, param: str) -> str | None:
    """`grubby --info=DEFAULT`: the `args="..."` line; param is the kernel parameter name."""
    match = re.search(r'^args="?([^"\n]*)"?$', text, re.MULTILINE)
    if match is None:
        raise ReadError("no args= line in `grubby --info` output")
    return _cmdline_param(match.group(1), param)


def _cmdline_param(cmdline: str, name: str) -> str | None:
    value = None
    for word in cmdline.split():
        key, sep, val = word.partition("=")
        if key == name:
            value = val if sep else ""
    return value


def _cmdline(text: str, param: str) -> str | None:
    return _cmdline_param(text, param)


PARSERS: dict[str, Callable[[str, str], str | None]] = {
    "text": _text,
    "raw": _raw,
    "dcb.pfc": _pfc,
    "dcb.prio_tc": _prio_tc,
    "dcb.app": _app_dscp,
    "dcb.apptrust": _apptrust,
    "ethtool.pause": _pause,
    "ethtool.flag": _flag,
    "devlink": _devlink,
    "nm.mtu": _nm_mtu,
    "grubby.arg": _grubby_arg,
    "cmdline": _cmdline,
}


def parse(key: str, text: str) -> str | None:
    name, _, param = key.partition(":")
    parser = PARSERS.get(name)
    if parser is None:
        raise ReadError(f"unknown reader {name!r}")
    try:
        return parser(text, param)
    except ReadError:
        raise
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise ReadError(f"output not understood ({error})") from None


# -- dry runs: write a value back into a recorded output --------------------------

def _render_pfc(old: str, value: str, param: str) -> str:
    data = load_dcb_json(old)
    on = {int(w.split(":")[0]) for w in value.split() if w.endswith(":on") and w[0].isdigit()}
    data["prio_pfc"] = [p in on for p in range(8)]
    return json.dumps(data, separators=(",", ":")) + "\n"


def _render_prio_tc(old: str, value: str, param: str) -> str:
    data = load_dcb_json(old)
    data["prio_tc"] = [int(w.split(":")[1]) for w in value.split()]
    return json.dumps(data, separators=(",", ":")) + "\n"


def _render_app(old: str, value: str | None, param: str) -> str:
    data = load_dcb_json(old) if old.strip() else {}
    entries = data.get("dscp_prio", [])
    table = [e for e in (entries if isinstance(entries, list) else []) if int(e[0]) != int(param)]
    if value is not None:
        table.append([int(param), int(value)])
    data["dscp_prio"] = sorted(table)
    return json.dumps(data, separators=(",", ":")) + "\n"


def _render_apptrust(old: str, value: str, param: str) -> str:
    return json.dumps({"order": value.split()}) + "\n"


def _render_pause(old: str, value: str, param: str) -> str:
    words = value.split()
    rx, tx = words[1], words[3]
    lines = []
    for line in old.splitlines():
        key = line.split(":")[0].strip()
        if key == "RX":
            line = f"RX:\t\t{rx}"
        elif key == "TX":
            line = f"TX:\t\t{tx}"
        lines.append(line)
    return "\n".join(lines) + "\n"


def _render_flag(old: str, value: str, param: str) -> str:
    lines = []
    for line in old.splitlines():
        key, sep, _ = line.rpartition(":")
        if sep and key.strip() == param:
            line = f"{key}: {value}"
        lines.append(line)
    return "\n".join(lines) + "\n"


def _render_devlink(old: str, value: str, param: str) -> str:
    handle, _, name = param.rpartition("/")
    data = json.loads(old[old.find("{"):])
    for entry in data.get("param", {}).get(handle, []):
        if entry.get("name") == name:
            for v in entry.get("values", []):
                if v.get("cmode") == "runtime":
                    v["value"] = value == "true"
    return json.dumps(data) + "\n"


RENDERERS: dict[str, Callable[..., str]] = {
    "dcb.pfc": _render_pfc,
    "dcb.prio_tc": _render_prio_tc,
    "dcb.app": _render_app,
    "dcb.apptrust": _render_apptrust,
    "ethtool.pause": _render_pause,
    "ethtool.flag": _render_flag,
    "devlink": _render_devlink,
}


def render(key: str, old: str, value: str | None) -> str | None:
    """A recorded output changed to show `value`, or None when this reader cannot render."""
    name, _, param = key.partition(":")
    renderer = RENDERERS.get(name)
    if renderer is None:
        return None
    return renderer(old, value, param)
