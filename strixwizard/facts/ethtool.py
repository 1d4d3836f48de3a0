"""Parsers for `ethtool -i`, `ethtool -a` and `ethtool --show-priv-flags` output.

All three print `key: value` lines; keys are padded with spaces or tabs, and
newer ethtool adds lines (`RX negotiated:`) that older ones lack, so parsing
is by key, never by line number. Per-interface lookups return None when the
command was not captured or failed; the reason is available from `why_unknown`.
"""

from __future__ import annotations

from dataclasses import dataclass

from strixwizard.facts.outputs import Output, command_output, run_output
from strixwizard.probe import Probe


@dataclass(frozen=True)
class DriverInfo:
    """`ethtool -i`: the driver, its version, the firmware, the bus address."""

    driver: str | None
    version: str | None
    firmware: str | None  # "4.91 0x800214b5 1.3909.0"
    bus_info: str | None


@dataclass(frozen=True)
class Pause:
    """`ethtool -a`: link-level pause frames (None: not reported)."""

    autoneg: bool | None
    rx: bool | None
    tx: bool | None

    @property
    def any_on(self) -> bool:
        return bool(self.rx or self.tx)


def _pairs(text: str) -> dict[str, str]:
    values: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip():
            values.setdefault(key.strip().lower(), value.strip())
    return values


def _on_off(value: str | None) -> bool | None:
    if value is None:
        return None
    word = value.split()[0].lower() if value.split() else ""
    return {"on": True, "off": False}.get(word)


def parse_driver_info(text: str) -> DriverInfo:
    values = _pairs(text)
    return DriverInfo(
        driver=values.get("driver") or None,
        version=values.get("version") or None,
        firmware=values.get("firmware-version") or None,
        bus_info=values.get("bus-info") or None,
    )


def parse_pause(text: str) -> Pause:
    """`ethtool -a`: "Autonegotiate: off / RX: on / TX: on" (newer: also "RX negotiated")."""
    values = _pairs(text)
    return Pause(
        autoneg=_on_off(values.get("autonegotiate")),
        rx=_on_off(values.get("rx")),
        tx=_on_off(values.get("tx")),
    )


def parse_priv_flags(text: str) -> dict[str, bool]:
    """`ethtool --show-priv-flags`: flag name → on/off; the header line is skipped."""
    flags: dict[str, bool] = {}
    for line in text.splitlines():
        key, sep, value = line.rpartition(":")
        state = _on_off(value)
        if sep and key.strip() and state is not None and not key.startswith("Private flags"):
            flags[key.strip()] = state
    return flags


def render_pause(old: str, pause: Pause) -> str:
    """The RX and TX lines set to `pause` (what `ethtool -A IF rx .. tx ..` changes)."""
    lines = []
    for line in old.splitlines():
        key = line.split(":")[0].strip()
        if key == "RX":
            line = f"RX:\t\t{'on' if pause.rx else 'off'}"
        elif key == "TX":
            line = f"TX:\t\t{'on' if pause.tx else 'off'}"
        lines.append(line)
    return "\n".join(lines) + "\n"


def render_priv_flags(old: str, flags: dict[str, bool]) -> str:
    """The lines of flags whose state changes, set to `flags` (layout of the others kept)."""
    lines = []
    for line in old.splitlines():
        key, sep, value = line.rpartition(":")
        name = key.strip()
        if sep and name in flags and _on_off(value) is not None and _on_off(value) != flags[name]:
            line = f"{key}: {'on' if flags[name] else 'off'}"
        lines.append(line)
    return "\n".join(lines) + "\n"


DRIVER_INFO: Output[DriverInfo] = command_output(
    "ethtool.driver_info", ("ethtool", "-i", "{netdev}"), parse_driver_info)
PAUSE: Output[Pause] = command_output(
    "ethtool.pause", ("ethtool", "-a", "{netdev}"), parse_pause, render=render_pause)
PRIV_FLAGS: Output[dict[str, bool]] = command_output(
    "ethtool.priv_flags", ("ethtool", "--show-priv-flags", "{netdev}"), parse_priv_flags,
    render=render_priv_flags)


def driver_info_argv(netdev: str) -> tuple[str, ...]:
    return DRIVER_INFO.command(netdev=netdev)


def pause_argv(netdev: str) -> tuple[str, ...]:
    return PAUSE.command(netdev=netdev)


def priv_flags_argv(netdev: str) -> tuple[str, ...]:
    return PRIV_FLAGS.command(netdev=netdev)


def driver_info(probe: Probe, netdev: str) -> DriverInfo | None:
    return run_output(probe, DRIVER_INFO, netdev=netdev).value


def pause(probe: Probe, netdev: str) -> Pause | None:
    parsed = run_output(probe, PAUSE, netdev=netdev).value
    return parsed if parsed is not None and (parsed.rx is not None or parsed.tx is not None) else None


def priv_flags(probe: Probe, netdev: str) -> dict[str, bool] | None:
    return run_output(probe, PRIV_FLAGS, netdev=netdev).value
