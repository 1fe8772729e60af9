"""``nandrig board load ulx3s``: the bitstream into the board through openFPGALoader."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from nandrig.errors import NandrigError

TIMEOUT_S = 120  # a 85F bitstream over JTAG takes seconds; this only catches a hung cable


def load(bit: Path, flash: bool = False, timeout_s: float = TIMEOUT_S) -> str:
    if not bit.exists():
        raise NandrigError(f"no bitstream at {bit}; run `nandrig board build ulx3s` first")
    exe = shutil.which("openFPGALoader")
    if exe is None:
        raise NandrigError("openFPGALoader is missing (apt install openfpgaloader)")
    cmd = [exe, "--board", "ulx3s", *(["--write-flash"] if flash else []), str(bit)]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise NandrigError(f"openFPGALoader did not finish within {timeout_s:.0f} s; is the board's USB link stuck?") from None
    out = (done.stdout + done.stderr).strip()
    if done.returncode:
        if "ftdi" in out.lower() or "device not found" in out.lower() or "no device" in out.lower():
            raise NandrigError("no ULX3S found: openFPGALoader could not open the board's USB (FTDI) port; "
                               "is it plugged in, and may this user access it?")
        last = out.splitlines()[-1] if out else f"exit {done.returncode}"
        raise NandrigError(f"openFPGALoader failed: {last}")
    return out
