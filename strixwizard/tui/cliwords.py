"""The services' advice in the wizard's words.

The services and engines speak to both front ends, and their next steps name the command
line (`strixwizard fix`, `--transport tcp`, `deploy --rollback`): right in a terminal, a
dead end in the wizard, whose user has a step or a field for each. `in_wizard_terms`
rewrites the phrases the engines use into the step, key or field that does the same.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from strixwizard.tui.steps import keys, refer


def _rules() -> list[tuple[re.Pattern[str], str | Callable[[re.Match[str]], str]]]:
    fix, discover, site = refer("fix"), refer("discover"), refer("site")
    return [
        (re.compile(r"\(create one with `strixwizard init`\)"),
         f"(create one with the form on {site}, or press d there for the demo)"),
        (re.compile(r"`strixwizard fix --only (?P<what>[\w.,-]+)`"),
         lambda m: f"{fix} ({m['what']})"),
        (re.compile(r"`strixwizard fix`"), fix),
        (re.compile(r"`strixwizard doctor`( with the same site file)?"), discover),
        (re.compile(r"`strixwizard deploy --transport tcp`"), "the Transport choice above"),
        (re.compile(r"with --nodes [\w,.-]+"), "by ticking only those nodes above"),
        (re.compile(r"with --transport tcp"), "by picking the tcp transport above"),
        (re.compile(r"\(deploy --rollback\)"), f"(to roll back: {keys('deploy', 'u')})"),
        (re.compile(r"\(fix --rollback\)"), f"(to roll back: {keys('fix', 'u')})"),
        (re.compile(r"`strixwizard advise` for every way"), "every way is in the table above"),
        (re.compile(r"pass --model NAME to write it"), "type the model in the Model field above to "
                                                       "write it"),
    ]


def in_wizard_terms(text: str) -> str:
    """`text` with every command-line next step the wizard has a step, key or field for
    replaced by that step, key or field."""
    for pattern, replacement in _rules():
        text = pattern.sub(replacement, text)
    return text
