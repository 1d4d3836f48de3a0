"""The report as Markdown and HTML: what the wizard's Report step saves and `doctor --format
md|html` prints, from one function each, so the two can never differ.

Pure formatting of `Report.to_json()` and of the optional sections the wizard adds
(`live_tests`, `soak`, `deploy`: plain JSON documents, so no type of the services or
deploy layers above is needed here); no verdict is computed here, and no Textual.
Everything from outside is escaped for its format and then spelled out as `terminal_text`
does, so `cat` of a file obeys nothing it says.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from strixwizard.charts import run_pictures
from strixwizard.checking.engine import Report
from strixwizard.files import display_path
from strixwizard.model import pair_text
from strixwizard.present.terminal import terminal_text

#: What the bundled demo is, in a report's `source` line.
DEMO_SOURCE = "the bundled demo (two Strix Halo nodes replayed from snapshots; nothing is probed)"


def source_line(demo: bool, site_file: Path | str | None) -> str:
    """Where a report's nodes came from, as its `source` line says it (wizard and CLI alike)."""
    return DEMO_SOURCE if demo else display_path(site_file or "")


_ORDER = {"fail": 0, "error": 1, "warn": 2, "skip": 3, "pass": 4}


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
            parts.append(f"<tr>{_td(status.upper(), status)}{_td(_pair(r['pair']))}"
                         f"{_td(r['transport'].upper() + ' ' + r['kind'])}{_td(r['tool'])}{_td(figure)}"
                         f"{_td(r['threshold'])}{_td(r['source'])}</tr>")
        parts.append("</table>")
        parts += [f"<p>{html.escape(comparison_label(tests, c))} {html.escape(_pair(c['pair']))}: "
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


def soak_lines(document: dict[str, Any]) -> list[tuple[str | None, str]]:
    """The soak document as lines (a status, or None for a line under the one before): per
    pair its verdict and rate, per direction the bytes checked and what arrived wrong, the
    first fault located; the counters read around it. Read from the JSON, so a document an
    earlier session saved reads the same."""
    out: list[tuple[str | None, str]] = []
    for r in document.get("results", []):
        pair = _pair(r.get("pair", []))
        status = r.get("status") or "ref"
        if r.get("kind") != "soak":
            out.append((status, f"{pair} {r.get('transport')} {r.get('kind')}: {r.get('summary')}"))
            continue
        rate = (f"{r['figure']:.2f} {r.get('unit', '')} both ways"
                if isinstance(r.get("figure"), (int, float)) else str(r.get("summary", "")))
        over = f" over {r['path']}" if r.get("path") else ""
        out.append((status, f"{pair} {str(r.get('transport', '')).upper()} soak: {rate}{over}"))
        detail = r.get("detail") if isinstance(r.get("detail"), dict) else {}
        for d in detail.get("directions", []):
            out.append((None, f"{d['from']} -> {d['to']}: {int(d['bytes']) / 2**20:,.0f} MiB "
                              f"checked ({d['bytes']} bytes, {d['blocks']} blocks), "
                              f"{d['corrupted']} corrupted, {d['dropped']} dropped, "
                              f"{d['duplicated']} duplicated"))
            if d.get("faults"):
                out.append((None, f"first fault {d['from']} -> {d['to']}: {d['faults'][0]}"))
    return out


def _pair(pair: Any) -> str:
    """A result's pair as every screen names it (`model.pair_text`)."""
    names = [str(n) for n in pair] if isinstance(pair, list) else []
    return pair_text(names[0], names[1]) if len(names) == 2 else "-".join(names)


def comparison_label(tests: dict[str, Any], comparison: dict[str, Any]) -> str:
    """How a TCP/RDMA comparison is introduced: like for like only when both crossed the same
    kind of path (a TCP figure on this machine's loopback does not, as a report of an earlier
    version's demo holds); the demo's figures are both the recording's."""
    tcp = comparison.get("tcp")
    if "loopback" in str(comparison.get("summary", "")) or (
            isinstance(tcp, dict) and "loopback" in str(tcp.get("path", ""))):
        return ("extra, TCP on this machine's loopback beside RDMA between nodes (not a network: the "
                "two do not compare)")
    return "like for like, as recorded" if tests.get("demo") else "like for like"


def markdown_sections(extras: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    tests = extras.get("live_tests")
    if tests:
        lines += ["", "## Live tests", "",
                  f"- status: **{str(tests['status']).upper()}** ({tests['outcome']})",
                  "", "| status | pair | test | tool | figure | threshold | source |",
                  "|---|---|---|---|---|---|---|"]
        for r in tests["results"]:
            figure = f"{r['figure']:.2f} {r['unit']}" if r["figure"] is not None else ""
            status = (r["status"] or "ref").upper()
            lines.append(f"| {status} | {_pair(r['pair'])} | {r['transport'].upper()} {r['kind']} | "
                         f"{r['tool']} | {figure} | {r['threshold']} | {r['source']} |")
        lines += [f"- {comparison_label(tests, c)} {_pair(c['pair'])}: {c['summary']}"
                  for c in tests["like_for_like"]]
    soak = extras.get("soak")
    if soak:
        lines += ["", "## Soak", "",
                  f"- status: **{str(soak['status']).upper()}** ({soak['outcome']}), "
                  f"{len(soak['pairs'])} pair(s), {soak['seconds']:g} s each at most", ""]
        lines += [f"- {status.upper()} {text}" if status else f"  - {text}"
                  for status, text in soak_lines(soak)]
        if soak.get("history"):
            lines.append(f"- stored in the test history {soak['history']['path']}")
    deploy = extras.get("deploy")
    if deploy:
        lines += ["", "## Deploy", "", f"- status: **{deploy['status']}**"]
        if deploy.get("reason"):
            lines.append(f"- reason: {deploy['reason']}")
        if deploy.get("head"):
            lines.append(f"- {deploy['profile']} profile ({deploy['transport']}), head {deploy['head']}, "
                         f"{deploy['changes']} change(s) planned")
        if deploy.get("smoke"):
            lines.append(f"- smoke test: {deploy['smoke']['status']}")
    return lines
