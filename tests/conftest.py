"""Shared helpers for the test suite."""
from __future__ import annotations

import pytest

from nandrig.cli import main


class CliResult:
    def __init__(self, code: int, out: str, err: str) -> None:
        self.code, self.out, self.err = code, out, err

    def assert_one_line_error(self, *words: str) -> None:
        """Non-zero exit, no traceback, one line on stderr that mentions every word."""
        assert self.code != 0
        assert "Traceback" not in self.err
        lines = [line for line in self.err.splitlines() if line.strip()]
        assert len(lines) == 1, self.err
        for w in words:
            assert w.lower() in lines[0].lower(), lines[0]


@pytest.fixture
def run_cli(capsys):
    """Run ``nandrig ARGS`` in-process; returns exit code, stdout and stderr."""

    def run(*args: str) -> CliResult:
        code = main([str(a) for a in args])
        cap = capsys.readouterr()
        return CliResult(code, cap.out, cap.err)

    return run

