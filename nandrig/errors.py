"""Errors meant for the user: the CLI prints them as one line, never a traceback."""


class NandrigError(Exception):
    """A user-facing failure (bad input, impossible request, unreachable rig)."""


class Interrupted(NandrigError):
    """Ctrl-C during work that can be continued; the message says how."""
