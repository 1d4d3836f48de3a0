"""What the Report step adds to the doctor report: the live tests and the deploy status.

They are optional top-level fields of the saved JSON (`live_tests`: the `strixwizard test
--json` document; `soak`: the `strixwizard test soak --json` document of the Test step's last
soak; `deploy`: what the Deploy step planned or did); the doctor schema allows additional
top-level properties, so the doctor fields stay exactly as `doctor --json`. How they read in
Markdown and HTML is `present/report.py`'s. Pure, no Textual.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from strixwizard.live.results import Measurement
from strixwizard.readback import MAX_JSON_BYTES, ReadBackError, loads
from strixwizard.services.deploy import Deployed, DeployPreview
from strixwizard.services.output import EXIT_NO_VERDICT
from strixwizard.site import Thresholds


def tests_document(site: str, thresholds: Thresholds, results: Sequence[Measurement], demo: bool,
                   nodes: Sequence[str], outcome: str | None, model: str | None = None
                   ) -> dict[str, Any] | None:
    """The live engine's own result document of the wizard's last test run (None: no run);
    its decode block is for `model` (the catalog's default when None), as the Test step
    showed it."""
    if not results:
        return None
    from strixwizard.live.report import MeasurementReport, matrix_json
    from strixwizard.live.schedule import rounds

    report = MeasurementReport(command="matrix+rccl (wizard)", site=site, thresholds=thresholds,
                        results=list(results), demo=demo)
    if len(nodes) > 2:
        report.matrix = matrix_json(list(nodes), list(results), rounds(list(nodes)), [])
    document = report.to_json()
    from strixwizard.decode.catalog import DEFAULT_MODEL, from_catalog
    from strixwizard.decode.fabric import fabric_document

    # what the Test step's panel shows ("what this fabric buys you"); the HTML report charts it
    decode = fabric_document(results, from_catalog(model or DEFAULT_MODEL), len(nodes))
    if decode["collectives"]:
        document["decode"] = decode
    document["outcome"] = outcome or "running"
    if outcome != "done":  # a run that did not finish judged nothing: no verdict
        document["status"], document["exit_code"] = "error", EXIT_NO_VERDICT
        document["error"] = (f"the run was {outcome or 'still running'} before it finished: "
                             "no verdict")
    return document


def reported_run(results: Sequence[Measurement], nodes: Sequence[str], outcome: str | None,
                 complete: tuple[list[Measurement], list[str]] | None
                 ) -> tuple[Sequence[Measurement], Sequence[str], str | None, str | None]:
    """The test run the Report shows: the latest when it finished, else the last one that did
    (with a note), else the unfinished one, which has no verdict."""
    if outcome != "done" and complete is not None and results:
        return (complete[0], complete[1], "done",
                f"the latest run was {outcome or 'still running'}; this is the last complete run")
    return results, nodes, outcome, None


def soak_document(site: str, thresholds: Thresholds, pairs: Sequence[tuple[str, str]],
                  seconds: float, results: Sequence[Measurement], outcome: str | None, demo: bool,
                  history: dict[str, Any] | None) -> dict[str, Any]:
    """The Test step's last soak as `strixwizard test soak --json` gives it (verdict, results
    with each direction's bytes checked and first faults, the history it was stored in), plus
    the pairs asked for, each pair's bound in seconds and how the run ended."""
    from strixwizard.live.report import MeasurementReport

    report = MeasurementReport(command="soak", site=site, thresholds=thresholds, results=list(results),
                        demo=demo, history=history)
    document = report.to_json()
    document["pairs"] = [list(pair) for pair in pairs]
    document["seconds"] = seconds
    document["outcome"] = outcome or "running"
    if outcome != "done":  # a soak that did not finish judged nothing: no verdict
        document["status"], document["exit_code"] = "error", EXIT_NO_VERDICT
        document["error"] = (f"the soak was {outcome or 'still running'} before it finished: "
                             "no verdict")
    return document


def deploy_document(preview: DeployPreview | None, deployed: Deployed | None,
                    rolled_back: str | None, error: tuple[str, str] | None) -> dict[str, Any] | None:
    if error is not None:
        return {"status": "error", "reason": error[0]}
    if preview is None:
        return None
    if preview.plan is None:
        return {"status": "refused", "reason": preview.refused}
    env = preview.plan.env
    document: dict[str, Any] = {
        "status": "plan-only" if preview.plan_only else "planned",
        "profile": env.profile, "transport": env.transport, "head": env.head,
        "nodes": [n.node for n in env.nodes], "changes": preview.plan.site_plan.changes,
        "variables": {n.node: {v.name: v.value for v in n.variables} for n in env.nodes},
    }
    if preview.plan_only:
        document["reason"] = ("replayed from snapshots: " + ", ".join(preview.replayed)
                              + "; applying needs real nodes")
    if deployed is not None:
        document["status"] = "deployed" if deployed.ok else "failed"
        document["apply"] = deployed.report.to_json() if deployed.report else None
        document["smoke"] = deployed.smoke.to_json() if deployed.smoke else None
        if deployed.refused:
            document["status"], document["reason"] = "refused", deployed.refused
    elif rolled_back:
        document["status"], document["rollback"] = "rolled-back", rolled_back
    return document


#: What a deploy did on the nodes (not only planned): an earlier session's such result stays the
#: Report's until this session applies or rolls back.
APPLIED = ("deployed", "failed", "rolled-back")


def saved_sections(path: Path | None, site: str) -> dict[str, dict[str, Any]]:
    """The `live_tests`, `soak` and `deploy` documents of a report an earlier session saved for this
    site (what resuming restores), or none: a missing, unreadable or foreign file is no error."""
    if path is None:
        return {}
    try:
        with path.open("rb") as handle:  # the read-back rule: bounded, no NaN, not too deep
            document = loads(handle.read(MAX_JSON_BYTES + 1), str(path))
    except (OSError, ReadBackError):
        return {}
    if not isinstance(document, dict) or document.get("site") != site:
        return {}
    return {key: document[key] for key in ("live_tests", "soak", "deploy")
            if isinstance(document.get(key), dict)}


def _timeless(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _timeless(v) for k, v in value.items() if k != "generated_at"}
    if isinstance(value, list):
        return [_timeless(v) for v in value]
    return value


def content_fingerprint(document: dict[str, Any]) -> str:
    """A digest of what a report says, leaving out when it was made (`generated_at` at any
    depth): the same verdicts, tests and deploy give the same fingerprint, so the saved files
    are not rewritten for nothing new."""
    text = json.dumps(_timeless(document), sort_keys=True, default=str, allow_nan=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
