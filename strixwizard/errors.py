"""Errors the CLI turns into a clear message and exit status 2 (no verdict)."""


class UsageError(Exception):
    """Bad input from the user: a file, a flag or an id. The message is shown as is."""
