"""devlink parameters (`devlink -j dev param show`): E810's enable_roce / enable_iwarp.

Shape: {"param": {"pci/0000:c2:00.0": [{"name": "enable_roce", "type": "generic",
"values": [{"cmode": "runtime", "value": true}]}, ...]}}. The runtime value is
preferred over driverinit/permanent when several are listed.
"""

from __future__ import annotations

import json

from strixwizard.facts.source import run
from strixwizard.probe import Probe

DEVLINK_PARAMS = ("devlink", "-j", "dev", "param", "show")
_CMODE_ORDER = {"runtime": 0, "driverinit": 1, "permanent": 2}


def parse_devlink_params(text: str) -> dict[str, dict[str, object]]:
    """PCI address → parameter name → value (runtime cmode first)."""
    start = text.find("{")
    if start < 0:
        raise ValueError("no JSON object in devlink output")
    data = json.JSONDecoder().raw_decode(text[start:])[0]
    params = data.get("param", {}) if isinstance(data, dict) else {}
    out: dict[str, dict[str, object]] = {}
    for handle, entries in params.items():
        bus, _, address = str(handle).partition("/")
        values = out.setdefault(address if bus == "pci" else str(handle), {})
        for entry in entries if isinstance(entries, list) else []:
            cmodes = sorted(entry.get("values", []),
                            key=lambda v: _CMODE_ORDER.get(str(v.get("cmode")), 9))
            if cmodes and "name" in entry:
                values[str(entry["name"])] = cmodes[0].get("value")
    return out


def devlink_params(probe: Probe) -> dict[str, dict[str, object]] | None:
    result = run(probe, DEVLINK_PARAMS)
    if result is None or not result.ok:
        return None
    try:
        return parse_devlink_params(result.stdout)
    except ValueError:
        return None
