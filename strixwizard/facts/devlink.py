"""devlink parameters (`devlink -j dev param show`): E810's enable_roce / enable_iwarp.

Shape: {"param": {"pci/0000:c2:00.0": [{"name": "enable_roce", "type": "generic",
"values": [{"cmode": "runtime", "value": true}]}, ...]}}. A parameter may list
several configuration modes; the one in effect is read: runtime, else
driverinit, else permanent. A dry run's `devlink dev param set ... cmode runtime`
writes the runtime value (adding it when only driverinit/permanent were listed).
"""

from __future__ import annotations

import json
from typing import Any

from strixwizard.facts.outputs import Output, command_output, run_output
from strixwizard.probe import Probe

_CMODE_ORDER = {"runtime": 0, "driverinit": 1, "permanent": 2}

#: PCI address (or the whole handle, for other buses) -> parameter name -> value in effect.
DevlinkParams = dict[str, dict[str, object]]


def handle_key(handle: str) -> str:
    """`pci/0000:c2:00.0` -> `0000:c2:00.0`; handles on other buses stay whole."""
    bus, _, address = handle.partition("/")
    return address if bus == "pci" else handle


def _load(text: str) -> dict[str, Any]:
    start = text.find("{")
    if start < 0:
        raise ValueError("no JSON object in devlink output")
    data = json.JSONDecoder().raw_decode(text[start:])[0]
    return data if isinstance(data, dict) else {}


def _in_effect(entry: dict[str, Any]) -> list[dict[str, Any]]:
    values = [v for v in entry.get("values", []) if isinstance(v, dict)]
    return sorted(values, key=lambda v: _CMODE_ORDER.get(str(v.get("cmode")), 9))


def parse_devlink_params(text: str) -> DevlinkParams:
    """PCI address -> parameter name -> value (runtime, else driverinit, else permanent)."""
    params = _load(text).get("param", {})
    out: DevlinkParams = {}
    for handle, entries in (params.items() if isinstance(params, dict) else ()):
        values = out.setdefault(handle_key(str(handle)), {})
        for entry in entries if isinstance(entries, list) else []:
            cmodes = _in_effect(entry) if isinstance(entry, dict) else []
            if cmodes and "name" in entry:
                values[str(entry["name"])] = cmodes[0].get("value")
    return out


def render_devlink_params(old: str, params: DevlinkParams) -> str:
    """Set the runtime value of every parameter whose value in effect `params` changes."""
    data = _load(old)
    current = parse_devlink_params(old)
    for handle, entries in data.get("param", {}).items():
        key = handle_key(str(handle))
        for entry in entries:
            name = str(entry.get("name"))
            if name not in params.get(key, {}) or params[key][name] == current.get(key, {}).get(name):
                continue
            runtime = [v for v in entry.setdefault("values", []) if v.get("cmode") == "runtime"]
            if not runtime:
                runtime = [{"cmode": "runtime"}]
                entry["values"].insert(0, runtime[0])
            for value in runtime:
                value["value"] = params[key][name]
    return json.dumps(data, allow_nan=False) + "\n"


PARAMS: Output[DevlinkParams] = command_output(
    "devlink.params", ("devlink", "-j", "dev", "param", "show"), parse_devlink_params,
    render=render_devlink_params)
DEVLINK_PARAMS = PARAMS.argv


def devlink_params(probe: Probe) -> DevlinkParams | None:
    return run_output(probe, PARAMS).value
