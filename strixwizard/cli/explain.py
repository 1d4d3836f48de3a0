"""`strixwizard explain ID`: the page of a check or a fix, generated from its declaration.

A check's page joins what its code declares (scope, what it runs over, when it
skips, its docstring) with its entry in `checks/catalog.yaml` (what it reads, why
it matters, how to fix it by hand, sources) and the page of the fix it names. A
fix's page comes from its `@fix` declaration (summary, docstring, the files it
writes, how it persists, whether it can be undone or needs a reboot).
The same pages, as JSON, are what `--json` and `doctor --list-checks --json` print.
"""

from __future__ import annotations

import difflib
import textwrap
from typing import Any

from strixwizard.checking.declare import Check
from strixwizard.errors import UsageError
from strixwizard.fixing.context import Fix
from strixwizard.model import aliases_of, current_id

WIDTH = 92
SCOPES = {"node": "once per node", "link": "once per link between two nodes (both ends at once)",
          "site": "once per run, over all nodes and links"}


def command(item_id: str) -> str:
    """The command that shows an id's page (doctor prints it under each finding)."""
    return f"strixwizard explain {item_id}"


def _registries() -> tuple[dict[str, Check], dict[str, Fix]]:
    import checks
    import fixes

    return dict(checks.BY_ID), dict(fixes.PLANS)


def _skips(check: Check) -> list[str]:
    reasons = [need.described for need in check.requires if need.described]
    if check.per is not None:
        reasons.append(check.per.none)
    return reasons


def _undo(fix: Fix) -> str:
    if not fix.automated:
        return "nothing to undo: strixwizard changes nothing for this fix"
    if not fix.ref.reversible:
        return "not reversible: strixwizard cannot put the old state back"
    return ("`strixwizard fix --rollback` (the last run; or `--rollback RUN`) restores every value "
            "the run changed, in reverse order, from the journal's before values: files it created "
            "are removed, files it changed get their old content back, units it enabled are "
            "disabled")


def fix_page(fix: Fix, cures: list[str]) -> dict[str, Any]:
    """A fix's page: its declaration, and the checks that name it."""
    from fixes.declare import DeclaredFix

    declared = fix if isinstance(fix, DeclaredFix) else None
    return {
        "kind": "fix", "id": fix.id, "summary": fix.ref.summary, "automated": fix.automated,
        "reversible": fix.ref.reversible, "reboot": fix.ref.reboot,
        "changes": " ".join((fix.plan.__doc__ or "").split()),
        "writes": list(declared.writes) if declared else [],
        "persistence": declared.persists if declared else "",
        "undo": _undo(fix), "cures": cures, "explain": command(fix.id), "aliases": aliases_of(fix.id),
    }


def check_page(check: Check, fixes: dict[str, Fix] | None = None) -> dict[str, Any]:
    """A check's page: its declaration and catalog entry (and its fix's page when known)."""
    fix = (fixes or {}).get(check.fix) if check.fix else None
    return {
        "kind": "check", "id": check.id, "title": check.title, "severity": check.severity.value,
        "scope": check.scope, "fix": check.fix, "why": check.why, "checks": check.doc,
        "runs": SCOPES.get(check.scope, check.scope) + (", for each item it judges there"
                                                        if check.per is not None else ""),
        "skips": _skips(check), "reads": check.reads, "matters": check.matters,
        "manual": check.manual, "sources": list(check.sources),
        "fix_page": None if fix is None else fix_page(fix, _cures(fix.id)),
        "explain": command(check.id), "aliases": aliases_of(check.id),
        "stacks": _stacks(check),
    }


def _stacks(check: Check) -> str:
    """The stacks that depend on the check, as `doctor --stack` uses them."""
    from strixwizard.site import STACKS

    if not check.stacks:
        return "every stack (" + ", ".join(STACKS) + ")"
    used = [name for name in STACKS if name in check.stacks]
    unused = [f"{name} ({STACKS[name]})" for name in STACKS if name not in check.stacks]
    return ", ".join(used) + "; not used by " + ", ".join(unused) + \
        " (`doctor --stack` leaves it out there)"


def list_fields(check: Check) -> dict[str, Any]:
    """What `doctor --list-checks --json` adds to each check's row: its page's text."""
    page = check_page(check)
    return {key: page[key] for key in ("checks", "runs", "skips", "reads", "matters", "manual",
                                       "sources", "explain", "aliases", "stacks")}


def _cures(fix_id: str) -> list[str]:
    checks, _ = _registries()
    return [c.id for c in checks.values() if c.fix == fix_id]


def pages(item_id: str) -> list[dict[str, Any]]:
    """The pages an id names: a check (with its fix), a fix, or both when they share the id.
    An unknown id is a usage error naming the ids closest to it."""
    checks, fixes = _registries()
    found: list[dict[str, Any]] = []
    item_id = current_id(item_id)  # an older id shows the page of the check or fix it became
    check = checks.get(item_id)
    if check is not None:
        found.append(check_page(check, fixes))
    fix = fixes.get(item_id)
    if fix is not None and (check is None or check.fix != item_id):
        found.append(fix_page(fix, _cures(item_id)))
    if found:
        return found
    known = sorted(set(checks) | set(fixes))
    close = difflib.get_close_matches(item_id, known, n=4, cutoff=0.5)
    close += [k for k in known if item_id and item_id in k and k not in close][:4 - len(close)]
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    raise UsageError(f"no check or fix has the id {item_id!r}{hint} (`strixwizard explain --list` "
                     "lists them)")


def listing() -> dict[str, list[dict[str, str]]]:
    checks, fixes = _registries()
    return {
        "checks": [{"id": c.id, "severity": c.severity.value, "title": c.title}
                   for c in checks.values()],
        "fixes": [{"id": f.id, "automated": "yes" if f.automated else "no", "title": f.ref.summary}
                  for f in fixes.values()],
    }


def _para(text: str, indent: str = "  ") -> list[str]:
    return textwrap.wrap(text, WIDTH, initial_indent=indent, subsequent_indent=indent,
                         break_long_words=False, break_on_hyphens=False) or [indent]


def _section(title: str, *texts: str) -> list[str]:
    lines = ["", title]
    for text in texts:
        if text:
            lines += _para(text)
    return lines


def _fix_lines(page: dict[str, Any], heading: str) -> list[str]:
    facts = [("automated" if page["automated"] else "not automated: an instruction only"),
             ("reversible" if page["reversible"] else "not reversible"),
             ("needs a reboot" if page["reboot"] else "no reboot")]
    lines = _section(heading, page["summary"] + ".", page["changes"], " · ".join(facts) + ".")
    if page["writes"]:
        lines += ["  Files it may write (`*`: a device or interface name):"]
        lines += [f"    {path}" for path in page["writes"]]
    if page["persistence"]:
        lines += _para("Survives a reboot: " + page["persistence"] + ".")
    lines += _para("Undo: " + page["undo"] + ".")
    plan = f"`strixwizard fix --only {page['id']}`"
    lines += _para(f"Plan it: {plan}; apply it: add `--apply`." if page["automated"] else
                   f"{plan} lists the nodes that need it.")
    return lines


def _formerly(page: dict[str, Any]) -> list[str]:
    old = page.get("aliases") or []
    return [f"formerly {', '.join(old)} (still accepted until release 0.3)"] if old else []


def render(page: dict[str, Any]) -> str:
    """A page as text for a terminal (ruff's and ShellCheck's rule pages are the model)."""
    if page["kind"] == "fix":
        cures = f" for {', '.join(page['cures'])}" if page["cures"] else ""
        lines = [f"{page['id']}: fix{cures}", *_formerly(page), *_fix_lines(page, "What it does")]
        if page["cures"]:
            lines += _section("Cures", ", ".join(page["cures"]) + " (`strixwizard explain "
                              "CHECK` for the why and the sources).")
        return "\n".join(lines) + "\n"
    head = f"{page['id']}: {page['title']}"
    fix = f"fix {page['fix']}" if page["fix"] else "no automated fix"
    lines = [head, f"check · severity {page['severity']} · {page['scope']} · {fix}", *_formerly(page)]
    runs = f"Runs {page['runs']}."
    skips = ("Skips when: " + "; ".join(page["skips"]) + ".") if page["skips"] else ""
    lines += _section("What it checks", page["checks"], runs, skips,
                      f"Stacks that depend on it: {page['stacks']}.")
    lines += _section("What it reads", page["reads"])
    lines += _section("Why it matters", page["why"], page["matters"])
    lines += _section("How to fix it by hand", page["manual"])
    if page["fix_page"] is not None:
        lines += _fix_lines(page["fix_page"], f"What `strixwizard fix` does ({page['fix']})")
    lines += ["", "Sources", *(f"  {url}" for url in page["sources"])]
    return "\n".join(lines) + "\n"


def render_listing(listing_: dict[str, list[dict[str, str]]]) -> str:
    lines: list[str] = []
    for kind, rows in listing_.items():
        width = max((len(row["id"]) for row in rows), default=0)
        lines += [f"{kind}:"]
        for row in rows:
            tag = row.get("severity") or ("auto" if row.get("automated") == "yes" else "manual")
            lines += [f"  {row['id'].ljust(width)}  {tag.ljust(8)}  {row['title']}"]
    lines += ["", "strixwizard explain ID shows one of them."]
    return "\n".join(lines) + "\n"
