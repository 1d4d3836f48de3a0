"""Strings a hostile node, NIC firmware, bundle or forum download can report, by what they attack.

Each is fed through the fields a node reports (hostname, kernel release, firmware and driver
versions, interface names, addresses, a bundle's site name) by the tests of issue 22: the wizard
must show it, never run it; the plain CLI must spell its control characters out; files written
from it must quote it.
"""

from __future__ import annotations

#: Textual/Rich console markup: a crash (`[/]` closes nothing), a button running an app action,
#: a link, unbalanced brackets.
MARKUP = (
    "4.91 [/] 1.3909.0",
    "[@click=app.screenshot('owned.conf','DIR')]4.91[/]",
    "[@click=app.quit]quit[/]",
    "[link=file:///etc/passwd]passwd[/link]",
    "[b]unbalanced [",
    "[red",
)

#: Terminal escapes: clipboard (OSC 52), window title (OSC 0), clear screen (CSI 2J), bell,
#: the one-byte C1 CSI (0x9b), a right-to-left override.
ESCAPES = (
    "e\x1b]52;c;cHduZWQ=\x07",
    "\x1b]0;PWNED\x07",
    "6.1.0\x1b[2J",
    "bell\x07",
    "c1\x9b2J",
    "rtl\u202eevil",
)

#: What YAML reads as structure when written unquoted.
YAML = (
    "x\n  - name: ghost\n    host: 10.99.10.99",
    "key: value",
    "value # comment",
    "&a",
    "*a",
    "!!python/object/apply:os.system ['id']",
    "line\u2028separator",
    "next\u0085line",
    "nul\x00byte",
    "'",
    '"',
)

#: IPv6 addresses with a scope id: Python's `ipaddress` takes anything after `%`.
IPV6_SCOPES = (
    "fe80::1%x\n  - name: ghost\n    host: 10.99.10.99",
    "fe80::1%eth0: x",
    "fe80::1%a b",
    "fe80::1%\x1b]0;PWNED\x07",
)
GOOD_IPV6_SCOPES = ("fe80::1%eth0", "fe80::1%enp194s0np0", "fe80::1%br-lan.10")

#: Everything above.
ALL = (*MARKUP, *ESCAPES, *YAML, *IPV6_SCOPES)


def large(size: int = 10 * 1024 * 1024) -> str:
    """A string of `size` characters mixing markup and escapes (default 10 MiB)."""
    unit = "[/]\x1b[2J[@click=app.quit]x"
    return (unit * (size // len(unit) + 1))[:size]


def contains_control(text: str) -> bool:
    """Whether `text` holds a character a terminal acts on (C0 but newline, DEL, C1)."""
    return any((ord(c) < 0x20 and c != "\n") or 0x7f <= ord(c) <= 0x9f for c in text)


#: A kernel release and a NIC firmware version as a hostile bundle reports them: markup that closes
#: nothing or clicks a screenshot, a clear screen, the clipboard and the window title.
KERNEL = "6.1.0[/]\x1b[2J"
FIRMWARE = "[@click=app.screenshot('owned.conf','/tmp')]4.91[/]\x1b]52;c;cHduZWQ=\x07\x1b]0;PWNED\x07"


def assert_no_control(text: str) -> None:
    """Fail, naming the first lines that hold one, when `text` holds a character a terminal acts on."""
    assert not contains_control(text), [line for line in text.splitlines() if contains_control(line)][:3]
