"""Errors the CLI turns into a clear message and exit status 2 (no verdict)."""

import errno as errnos


class UsageError(Exception):
    """Bad input from the user: a file, a flag or an id. The message is shown as is."""


def os_error_line(error: OSError, path: object = None) -> str:
    """`PATH: No space left on device (errno 28 ENOSPC)`: an OSError as one line."""
    where = error.filename if error.filename is not None else path
    code = f" (errno {error.errno} {errnos.errorcode.get(error.errno, '')})".replace(" )", ")") \
        if error.errno else ""
    return f"{where}: {error.strerror or error}{code}" if where is not None else \
        f"{error.strerror or error}{code}"
