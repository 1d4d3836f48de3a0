"""The Textual wizard: Site → Discover → Links → Fix → Deploy → Test → Report.

It renders engine objects and calls engine functions in worker threads; it
computes no verdict of its own (DESIGN.md "UI"). Nothing in this package may
import subprocess, paramiko, pyroute2, pyverbs, socket or the local probe; a
test enforces it. Importing this package itself does not load Textual: only
`strixwizard.tui.app` does, so `doctor` stays fast.
"""
