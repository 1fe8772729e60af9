"""C sources for the rig soft-core, with native builds for tests."""

import shutil
import subprocess
from pathlib import Path

# what the deepest call chain was seen to run in (every RTL test passes with 1,128-1,136 bytes; with 104 the stack grew
# into the FLARES profile slots at the end of .bss and the rig read wrong t from them): below it a build fails
STACK_MIN_BYTES = 1024


def stack_headroom(elf: Path) -> int:
    """Bytes between the end of the firmware's static data (.bss) and the top of SRAM, where the stack grows down."""
    nm = shutil.which("riscv64-unknown-elf-nm") or "nm"
    symbols = {}
    for line in subprocess.run([nm, str(elf)], capture_output=True, text=True, check=True).stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[2] in ("_ebss", "_fstack"):
            symbols[parts[2]] = int(parts[0], 16)
    return symbols["_fstack"] - symbols["_ebss"]


def check_stack(elf: Path) -> None:
    from nandrig.errors import NandrigError

    if (left := stack_headroom(elf)) < STACK_MIN_BYTES:
        raise NandrigError(f"the firmware's static data leaves {left} bytes of SRAM for its stack (needs "
                           f"{STACK_MIN_BYTES}): shrink a buffer or give the SoC more SRAM ({elf})")
