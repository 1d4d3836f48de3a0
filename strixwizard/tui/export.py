"""The report as files: JSON (the `doctor --json` schema), Markdown and HTML.

Pure formatting of `Report.to_json()`; no verdict is computed here. Kept free
of Textual so the CLI could offer the same files (`doctor --markdown`) later.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

from strixwizard.charts import run_pictures
from strixwizard.checking.engine import Report
from strixwizard.present.terminal import terminal_text
from strixwizard.tui.extras import comparison_label, markdown_sections, soak_lines
from strixwizard.tui.saved import private_folder, write_private

FORMATS = ("json", "md", "html")
_ORDER = {"fail": 0, "error": 1, "warn": 2, "skip": 3, "pass": 4}


def report_stem(site: str) -> str:
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "-", site).strip("-") or "site"
    return f"strixwizard-report-{safe}"


def _sorted_checks(document: dict[str, Any]) -> list[dict[str, Any]]:
    return sorted(document["checks"], key=lambda c: (_ORDER.get(c["status"], 9), c["id"], c["host"] or ""))


def _host_line(host: dict[str, Any]) -> str:
    if not host["reachable"]:
        return f"unreachable: {host['error']}"
    facts = host["facts"]
    parts = [facts.get("sku") or facts.get("cpu") or "unknown CPU", facts.get("gfx_target") or "no ROCm GPU",
             f"kernel {facts.get('kernel') or '?'}",
             f"{facts['memory_gib']} GiB" if facts.get("memory_gib") is not None else "memory ?",
             f"ROCm {facts['rocm']}" if facts.get("rocm") else "no ROCm version"]
    return " · ".join(str(p) for p in parts)


def _md_cell(text: object) -> str:
    return str(text if text is not None else "").replace("|", "\\|").replace("\n", " ")


def to_markdown(report: Report, extra: dict[str, str] | None = None,
                sections: dict[str, Any] | None = None) -> str:
    doc = report.to_json()
    counts = doc["summary"]
    lines = [
        f"# strixwizard report: site {doc['site']}",
        "",
        f"- status: **{doc['status'].upper()}**",
        f"- generated: {doc['generated_at']} by strixwizard {doc['tool']['version']}",
        "- checks: " + ", ".join(f"{counts[k]} {k}" for k in ("fail", "error", "warn", "pass", "skip")),
    ]
    lines += [f"- {key}: {value}" for key, value in (extra or {}).items()]
    lines += ["", "## Nodes", "", "| node | source | summary |", "|---|---|---|"]
    lines += [f"| {_md_cell(h['name'])} | {h['source']} | {_md_cell(_host_line(h))} |" for h in doc["hosts"]]
    lines += ["", "## Links", ""]
    if doc["links"]:
        lines += ["| link | transport | RDMA | status | evidence |", "|---|---|---|---|---|"]
        lines += [
            f"| {_md_cell(link['id'])} | {link['transport']} | {'yes' if link['rdma'] else 'no'} | "
            f"{link['status']} | {_md_cell(link['evidence'])} |"
            for link in doc["links"]
        ]
    else:
        lines.append("No fabric link found between the nodes.")
    lines += ["", "## Checks", "", "| status | check | where | observed | expected | fix |",
              "|---|---|---|---|---|---|"]
    for check in _sorted_checks(doc):
        fix = check["fix"]["id"] if check["fix"] else ""
        where = check["host"] or check["entity"]
        observed = check["observed"] or check["detail"]
        lines.append(
            f"| {check['status'].upper()} | {check['id']} | {_md_cell(where)} | {_md_cell(observed)} | "
            f"{_md_cell(check['expected'])} | {fix} |"
        )
    if sections:
        lines += markdown_sections(sections)
    return terminal_text("\n".join(lines) + "\n", colour=False)  # `cat` of it obeys nothing


_CSS = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #1d1d1f; background: #fff; }
@media (prefers-color-scheme: dark) { body { color: #e6e6e6; background: #1b1b1d; } }
table { border-collapse: collapse; margin: 1em 0; }
th, td { border: 1px solid #8888; padding: .3em .6em; text-align: left; vertical-align: top; }
.fail, .error { color: #d03a3a; font-weight: bold; } .warn { color: #c98a00; font-weight: bold; }
.pass { color: #2e9d4f; } .skip { color: #888; }
.charts { display: flex; flex-wrap: wrap; gap: 1.5em; align-items: flex-start; }
figure { margin: 0; } figcaption { font-size: .85em; color: #888; max-width: 36em; }
svg.chart { max-width: 100%; height: auto; overflow: visible; }
"""


def _td(text: object, cls: str | None = None) -> str:
    attr = f' class="{cls}"' if cls else ""
    return f"<td{attr}>{html.escape(str(text if text is not None else ''))}</td>"


def _html_sections(sections: dict[str, Any]) -> list[str]:
    parts: list[str] = []
    tests = sections.get("live_tests")
    if tests:
        status, outcome = html.escape(str(tests["status"])), html.escape(str(tests["outcome"]))
        parts.append(f"<h2>Live tests</h2><p>Status: <span class=\"{status}\">{status.upper()}</span> "
                     f"({outcome})</p>")
        parts.append("<table><tr><th>status</th><th>pair</th><th>test</th><th>tool</th><th>figure</th>"
                     "<th>threshold</th><th>source</th></tr>")
        for r in tests["results"]:
            figure = f"{r['figure']:.2f} {r['unit']}" if r["figure"] is not None else ""
            status = r["status"] or "ref"
            parts.append(f"<tr>{_td(status.upper(), status)}{_td('-'.join(r['pair']))}"
                         f"{_td(r['transport'].upper() + ' ' + r['kind'])}{_td(r['tool'])}{_td(figure)}"
                         f"{_td(r['threshold'])}{_td(r['source'])}</tr>")
        parts.append("</table>")
        parts += [f"<p>{html.escape(comparison_label(tests, c))} {html.escape('-'.join(c['pair']))}: "
                  f"{html.escape(c['summary'])}</p>" for c in tests["like_for_like"]]
        parts += run_pictures(tests)
    soak = sections.get("soak")
    if soak:
        status = html.escape(str(soak["status"]))
        parts.append(f"<h2>Soak</h2><p>Status: <span class=\"{status}\">{status.upper()}</span> "
                     f"({html.escape(str(soak['outcome']))}), {len(soak['pairs'])} pair(s), "
                     f"{soak['seconds']:g} s each at most</p><ul>")
        for line_status, text in soak_lines(soak):
            if line_status:
                parts.append(f"<li><span class=\"{html.escape(line_status)}\">"
                             f"{html.escape(line_status.upper())}</span> {html.escape(text)}</li>")
            else:
                parts.append(f"<li>&nbsp;&nbsp;{html.escape(text)}</li>")
        parts.append("</ul>")
        if soak.get("history"):
            parts.append(f"<p>Stored in the test history {html.escape(str(soak['history']['path']))}"
                         "</p>")
    deploy = sections.get("deploy")
    if deploy:
        parts.append(f"<h2>Deploy</h2><p>Status: {html.escape(str(deploy['status']))}</p>")
        if deploy.get("reason"):
            parts.append(f"<p>{html.escape(str(deploy['reason']))}</p>")
    return parts


def to_html(report: Report, extra: dict[str, str] | None = None,
            sections: dict[str, Any] | None = None) -> str:
    doc = report.to_json()
    site = html.escape(str(doc["site"]))
    status = doc["status"]
    parts = [
        "<!doctype html>", '<html lang="en"><head><meta charset="utf-8">',
        f"<title>strixwizard report: {site}</title><style>{_CSS}</style></head><body>",
        f"<h1>strixwizard report: site {site}</h1>",
        f'<p>Status: <span class="{status}">{status.upper()}</span> · generated '
        f"{html.escape(doc['generated_at'])} by strixwizard {html.escape(doc['tool']['version'])}</p>",
        "<p>" + ", ".join(f"{doc['summary'][k]} {k}" for k in ("fail", "error", "warn", "pass", "skip"))
        + "</p>",
    ]
    parts += [f"<p>{html.escape(k)}: {html.escape(v)}</p>" for k, v in (extra or {}).items()]
    parts += ["<h2>Nodes</h2><table><tr><th>node</th><th>source</th><th>summary</th></tr>"]
    parts += [f"<tr>{_td(h['name'])}{_td(h['source'])}{_td(_host_line(h))}</tr>" for h in doc["hosts"]]
    parts += ["</table><h2>Links</h2>"]
    if doc["links"]:
        parts.append("<table><tr><th>link</th><th>transport</th><th>RDMA</th><th>status</th>"
                     "<th>evidence</th></tr>")
        parts += [
            f"<tr>{_td(link['id'])}{_td(link['transport'])}{_td('yes' if link['rdma'] else 'no')}"
            f"{_td(link['status'], link['status'])}{_td(link['evidence'])}</tr>"
            for link in doc["links"]
        ]
        parts.append("</table>")
    else:
        parts.append("<p>No fabric link found between the nodes.</p>")
    parts.append("<h2>Checks</h2><table><tr><th>status</th><th>check</th><th>where</th><th>observed</th>"
                 "<th>expected</th><th>fix</th></tr>")
    for check in _sorted_checks(doc):
        fix = f"{check['fix']['id']}: {check['fix']['summary']}" if check["fix"] else ""
        parts.append(
            f"<tr>{_td(check['status'].upper(), check['status'])}{_td(check['id'])}"
            f"{_td(check['host'] or check['entity'])}{_td(check['observed'] or check['detail'])}"
            f"{_td(check['expected'])}{_td(fix)}</tr>"
        )
    parts.append("</table>")
    parts += _html_sections(sections or {})
    parts.append("</body></html>")
    return terminal_text("\n".join(parts) + "\n", colour=False)  # a node's ESC spelled out


def save_report(report: Report, directory: Path, extra: dict[str, str] | None = None,
                sections: dict[str, Any] | None = None) -> dict[str, Path]:
    """Write the three files into `directory` (created if missing); returns format -> path.
    `sections` (`live_tests`, `soak`, `deploy`) become optional top-level JSON fields and sections of
    the Markdown and HTML. Each file is written 0600 and atomically (a folder created for them
    0700). Raises OSError with the reason when the folder cannot be written."""
    private_folder(directory)
    stem = report_stem(report.site)
    present = {k: v for k, v in (sections or {}).items() if v is not None}
    texts = {
        "json": json.dumps({**report.to_json(), **present}, indent=2) + "\n",
        "md": to_markdown(report, extra, present),
        "html": to_html(report, extra, present),
    }
    written = {}
    for fmt, text in texts.items():
        path = directory / f"{stem}.{fmt}"
        write_private(path, text)
        written[fmt] = path
    return written
