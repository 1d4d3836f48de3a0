"""`nmcli -t` (terse) output, read the same way by the facts and by the scrub."""

from __future__ import annotations


def split_terse(line: str) -> list[str]:
    """One `nmcli -t` line split on unescaped colons, `\\:` and `\\\\` unescaped (nmcli(1),
    "--terse")."""
    fields, current, escaped = [], "", False
    for char in line:
        if escaped:
            current, escaped = current + char, False
        elif char == "\\":
            escaped = True
        elif char == ":":
            fields.append(current)
            current = ""
        else:
            current += char
    return [*fields, current]
