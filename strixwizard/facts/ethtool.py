"""Parsers for `ethtool -i`, `ethtool -a` and `ethtool --show-priv-flags` output.

All three print `key: value` lines; keys are padded with spaces or tabs, and
newer ethtool adds lines (`RX negotiated:`) that older ones lack, so parsing
is by key, never by line number. Per-interface lookups return None when the
command was not captured or failed; the reason is available from `why_unknown`.
"""

from __future__ import annotations

from dataclasses import dataclass

from strixwizard.facts.source import run
from strixwizard.probe import Probe


def driver_info_argv(netdev: str) -> tuple[str, ...]:
    return ("ethtool", "-i", netdev)


def pause_argv(netdev: str) -> tuple[str, ...]:
    return ("ethtool", "-a", netdev)


def priv_flags_argv(netdev: str) -> tuple[str, ...]:
    return ("ethtool", "--show-priv-flags", netdev)


@dataclass(frozen=True)
class DriverInfo:
    driver: str | None
    version: str | None
    firmware: str | None  # "4.91 0x800214b5 1.3909.0"
    bus_info: str | None


@dataclass(frozen=True)
class Pause:
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


def driver_info(probe: Probe, netdev: str) -> DriverInfo | None:
    result = run(probe, driver_info_argv(netdev))
    return parse_driver_info(result.stdout) if result is not None and result.ok else None


def pause(probe: Probe, netdev: str) -> Pause | None:
    result = run(probe, pause_argv(netdev))
    if result is None or not result.ok:
        return None
    parsed = parse_pause(result.stdout)
    return parsed if parsed.rx is not None or parsed.tx is not None else None


def priv_flags(probe: Probe, netdev: str) -> dict[str, bool] | None:
    result = run(probe, priv_flags_argv(netdev))
    return parse_priv_flags(result.stdout) if result is not None and result.ok else None
