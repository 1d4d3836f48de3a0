"""DCB state of an interface from iproute2 `dcb -j ... show dev IF`: PFC, ETS, APP, trust.

JSON shapes (iproute2 dcb/dcb_pfc.c, dcb_ets.c, dcb_app.c, dcb_apptrust.c):
- pfc:      {"pfc_cap":8,"macsec_bypass":false,"delay":4096,"prio_pfc":[false,...,true,...]}
- ets:      {"willing":false,"ets_cap":8,"cbs":false,"tc_bw":[...],"tc_tsa":[...],"prio_tc":[0,..]}
- app:      {"dscp_prio":[[24,3],[26,3]], "default_prio":[...], ...}
- apptrust: {"order":["dscp","pcp"]}
Older iproute2 has no `apptrust` ("Object "apptrust" is unknown"); drivers
without DCB answer "Operation not supported". Either leaves that part unknown,
with the reason kept for the report.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from strixwizard.facts.outputs import Output, command_output, run_output
from strixwizard.probe import Probe


@dataclass(frozen=True)
class DcbInfo:
    """An interface's DCB settings as `dcb` reports them: PFC, ETS, the APP table, trust."""

    netdev: str
    pfc_enabled: tuple[int, ...] | None  # priorities with PFC on; None = unknown
    pfc_note: str  # why pfc_enabled is unknown
    prio_tc: tuple[int, ...] | None  # ETS priority → traffic class
    dscp_prio: tuple[tuple[int, int], ...] | None  # APP table DSCP → priority
    trust: tuple[str, ...] | None  # apptrust order, e.g. ("dscp", "pcp")
    trust_note: str

    def pfc_tcs(self) -> set[int] | None:
        """Traffic classes that carry a PFC-enabled priority (E810 allows one)."""
        if self.pfc_enabled is None:
            return None
        if self.prio_tc is None:
            return set(self.pfc_enabled)  # without ETS data, assume one TC per priority
        return {self.prio_tc[p] if p < len(self.prio_tc) else p for p in self.pfc_enabled}


def _load(text: str) -> dict[str, object]:
    start = text.find("{")
    if start < 0:
        raise ValueError("no JSON object in dcb output")
    value = json.JSONDecoder().raw_decode(text[start:])[0]
    if not isinstance(value, dict):
        raise ValueError("dcb output is not a JSON object")
    return value


def parse_pfc(text: str) -> tuple[int, ...]:
    prio = _load(text).get("prio_pfc")
    if isinstance(prio, dict):  # tolerate a {"0": false, ...} form
        return tuple(sorted(int(k) for k, v in prio.items() if v))
    if not isinstance(prio, list):
        raise ValueError("no prio_pfc in dcb pfc output")
    return tuple(i for i, on in enumerate(prio) if on is True or on == "on")


def parse_ets_prio_tc(text: str) -> tuple[int, ...] | None:
    prio_tc = _load(text).get("prio_tc")
    return tuple(int(v) for v in prio_tc) if isinstance(prio_tc, list) else None


def parse_app_dscp(text: str) -> tuple[tuple[int, int], ...]:
    table = _load(text).get("dscp_prio", [])
    pairs = []
    for entry in table if isinstance(table, list) else []:
        if isinstance(entry, list) and len(entry) == 2:
            pairs.append((int(entry[0]), int(entry[1])))
    return tuple(pairs)


def parse_apptrust(text: str) -> tuple[str, ...]:
    order = _load(text).get("order")
    if not isinstance(order, list):
        raise ValueError("no order in dcb apptrust output")
    return tuple(str(s) for s in order)


def _dump(data: dict[str, object], compact: bool = True) -> str:
    return json.dumps(data, separators=(",", ":") if compact else None, allow_nan=False) + "\n"


def render_pfc(old: str, enabled: tuple[int, ...]) -> str:
    data = _load(old)
    data["prio_pfc"] = [p in enabled for p in range(8)]
    return _dump(data)


def render_ets_prio_tc(old: str, prio_tc: tuple[int, ...] | None) -> str:
    data = _load(old)
    if prio_tc is None:
        data.pop("prio_tc", None)
    else:
        data["prio_tc"] = list(prio_tc)
    return _dump(data)


def render_app_dscp(old: str, table: tuple[tuple[int, int], ...]) -> str:
    data = _load(old)
    data["dscp_prio"] = [list(pair) for pair in sorted(table)]
    return _dump(data)


def render_apptrust(old: str, order: tuple[str, ...]) -> str:
    return _dump({"order": list(order)}, compact=False)


PFC: Output[tuple[int, ...]] = command_output(
    "dcb.pfc", ("dcb", "-j", "pfc", "show", "dev", "{netdev}"), parse_pfc, render=render_pfc)
ETS: Output[tuple[int, ...] | None] = command_output(
    "dcb.ets", ("dcb", "-j", "ets", "show", "dev", "{netdev}"), parse_ets_prio_tc,
    render=render_ets_prio_tc)
APP: Output[tuple[tuple[int, int], ...]] = command_output(
    "dcb.app", ("dcb", "-j", "app", "show", "dev", "{netdev}"), parse_app_dscp,
    render=render_app_dscp)
APPTRUST: Output[tuple[str, ...]] = command_output(
    "dcb.apptrust", ("dcb", "-j", "apptrust", "show", "dev", "{netdev}"), parse_apptrust,
    render=render_apptrust)
BY_OBJECT: dict[str, Output[Any]] = {"pfc": PFC, "ets": ETS, "app": APP, "apptrust": APPTRUST}


def dcb_argv(obj: str, netdev: str) -> tuple[str, ...]:
    """`dcb -j OBJ show dev NETDEV` (obj: pfc, ets, app, apptrust)."""
    return BY_OBJECT[obj].command(netdev=netdev)


def dcb_info(probe: Probe, netdev: str) -> DcbInfo:
    pfc = run_output(probe, PFC, netdev=netdev)
    trust = run_output(probe, APPTRUST, netdev=netdev)
    return DcbInfo(netdev, pfc.value, pfc.note, run_output(probe, ETS, netdev=netdev).value,
                   run_output(probe, APP, netdev=netdev).value, trust.value, trust.note)
