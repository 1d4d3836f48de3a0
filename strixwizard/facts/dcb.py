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

from strixwizard.facts.source import run, why_unknown
from strixwizard.probe import Probe


def dcb_argv(obj: str, netdev: str) -> tuple[str, ...]:
    return ("dcb", "-j", obj, "show", "dev", netdev)


@dataclass(frozen=True)
class DcbInfo:
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


def dcb_info(probe: Probe, netdev: str) -> DcbInfo:
    pfc_argv = dcb_argv("pfc", netdev)
    pfc_result = run(probe, pfc_argv)
    pfc: tuple[int, ...] | None = None
    pfc_note = why_unknown(pfc_argv, pfc_result)
    if pfc_result is not None and pfc_result.ok:
        try:
            pfc, pfc_note = parse_pfc(pfc_result.stdout), ""
        except ValueError as error:
            pfc_note = f"`dcb pfc` output not understood: {error}"
    ets = run(probe, dcb_argv("ets", netdev))
    app = run(probe, dcb_argv("app", netdev))
    trust_argv = dcb_argv("apptrust", netdev)
    trust_result = run(probe, trust_argv)
    trust: tuple[str, ...] | None = None
    trust_note = why_unknown(trust_argv, trust_result)
    if trust_result is not None and trust_result.ok:
        try:
            trust, trust_note = parse_apptrust(trust_result.stdout), ""
        except ValueError as error:
            trust_note = f"`dcb apptrust` output not understood: {error}"
    prio_tc = dscp = None
    try:
        prio_tc = parse_ets_prio_tc(ets.stdout) if ets is not None and ets.ok else None
    except ValueError:
        prio_tc = None
    try:
        dscp = parse_app_dscp(app.stdout) if app is not None and app.ok else None
    except ValueError:
        dscp = None
    return DcbInfo(netdev, pfc, pfc_note, prio_tc, dscp, trust, trust_note)
