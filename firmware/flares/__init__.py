"""The FLARES firmware module, built natively and driven through ctypes (tests, validation)."""
from __future__ import annotations

import ctypes
import hashlib
import shutil
import subprocess
from pathlib import Path

from nandrig.errors import NandrigError

SRC = Path(__file__).resolve().parent
SOURCES = ("flares.c", "flares_tables.c", "pprof.c")


class Types(ctypes.Structure):
    _fields_ = [("errors", ctypes.c_uint32 * 2), ("expected_q16", ctypes.c_uint64 * 2), ("pe_ref", ctypes.c_uint32 * 2)]


class Config(ctypes.Structure):
    _fields_ = [("wsize", ctypes.c_uint16), ("mix_pm", ctypes.c_uint16), ("saferange_pm", ctypes.c_uint16),
                ("maxfail", ctypes.c_uint8), ("maxcritical", ctypes.c_uint8), ("maxover", ctypes.c_uint8),
                ("req_ret_s", ctypes.c_uint32), ("t_cap", ctypes.c_uint8),
                ("evaluate_on_alarm", ctypes.c_uint8), ("guarded", ctypes.c_uint8), ("guard_z10", ctypes.c_uint8),
                ("alarm_use_pm", ctypes.c_uint16), ("tables", ctypes.c_void_p), ("types", ctypes.POINTER(Types))]


class Pprof(ctypes.Structure):
    _fields_ = [("p_cur", ctypes.c_uint8, 7), ("counted", ctypes.c_uint8, 1), ("p_next", ctypes.c_uint8),
                ("reads", ctypes.c_uint16),
                ("pecycles", ctypes.c_uint32),
                ("writestamp", ctypes.c_uint32), ("errc", ctypes.c_uint16), ("failc", ctypes.c_uint8),
                ("p_flares", ctypes.c_uint8), ("overc", ctypes.c_uint8), ("criticalc", ctypes.c_uint8),
                ("ops", ctypes.c_uint16), ("pe_win", ctypes.c_uint32)]


class Decision(ctypes.Structure):
    _fields_ = [("zone", ctypes.c_uint8), ("p", ctypes.c_uint8), ("alarm", ctypes.c_uint8),
                ("invalidate", ctypes.c_uint8), ("beyond", ctypes.c_uint8), ("proj", ctypes.c_uint64)]


def build(header_text: str, workdir: Path, extra_sources: tuple[Path, ...] = ()) -> Path:
    """Compile the module against a generated tables header; cached by content."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        raise NandrigError("no C compiler found (tools/setup.sh installs gcc)")
    digest = hashlib.sha256(header_text.encode() + b"".join((SRC / s).read_bytes() for s in SOURCES)
                            + b"".join(p.read_bytes() for p in extra_sources)).hexdigest()[:16]
    out = workdir / f"libflares-{digest}.so"
    if out.exists():
        return out
    inc = workdir / f"tables-{digest}"
    inc.mkdir(parents=True, exist_ok=True)
    (inc / "flares_tables.h").write_text(header_text)
    cmd = [cc, "-std=c99", "-Wall", "-Wextra", "-Werror", "-O2", "-fPIC", "-shared", f"-I{inc}", f"-I{SRC}",
           "-o", str(out), *(str(SRC / s) for s in SOURCES), *map(str, extra_sources)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        raise NandrigError(f"building the FLARES module failed: {r.stderr.strip().splitlines()[-1]}")
    return out


class Native:
    """ctypes access to a built module."""

    def __init__(self, lib_path: Path) -> None:
        lib = ctypes.CDLL(str(lib_path))
        lib.flares_up_page.argtypes = [ctypes.POINTER(Config), ctypes.POINTER(Pprof), ctypes.c_uint8, ctypes.c_uint8,
                                       ctypes.c_uint16, ctypes.c_uint8, ctypes.c_uint32, ctypes.c_uint32,
                                       ctypes.c_uint8, ctypes.POINTER(Decision)]
        lib.flares_new_page.argtypes = [ctypes.POINTER(Pprof), ctypes.c_uint8, ctypes.c_uint32]
        lib.flares_rber_wr.argtypes = [ctypes.c_void_p, ctypes.c_uint8, ctypes.c_uint32]
        lib.flares_rber_wr.restype = ctypes.c_uint64
        lib.flares_rber_rd.argtypes = [ctypes.c_void_p, ctypes.c_uint8, ctypes.c_uint32, ctypes.c_uint32]
        lib.flares_rber_rd.restype = ctypes.c_uint64
        lib.flares_t_for.argtypes = [ctypes.c_void_p, ctypes.c_uint64]
        lib.flares_t_for.restype = ctypes.c_uint8
        lib.flares_pprof_pack.argtypes = [ctypes.POINTER(Pprof), ctypes.c_char_p]
        lib.flares_pprof_unpack.argtypes = [ctypes.c_char_p, ctypes.POINTER(Pprof)]
        lib.flares_pprof_unpack.restype = ctypes.c_int
        lib.flares_cold_start.argtypes = [ctypes.POINTER(Config), ctypes.c_uint8, ctypes.c_uint32]
        lib.flares_cold_start.restype = ctypes.c_uint8
        lib.flares_cold_start_beyond.argtypes = [ctypes.POINTER(Config), ctypes.c_uint8, ctypes.c_uint32]
        lib.flares_cold_start_beyond.restype = ctypes.c_uint8
        lib.flares_tables_builtin.argtypes = [ctypes.c_void_p]
        lib.flares_tables_decode.argtypes = [ctypes.c_char_p, ctypes.c_uint32, ctypes.c_void_p]
        lib.flares_tables_decode.restype = ctypes.c_int
        lib.flares_tables_bytes.restype = ctypes.c_uint32
        self.lib = lib
        self.builtin = self.new_tables()
        lib.flares_tables_builtin(self.builtin)

    def new_tables(self) -> ctypes.Array:
        """Room for one table set (filled by flares_tables_builtin or decode_tables)."""
        return ctypes.create_string_buffer(self.lib.flares_tables_bytes())

    def decode_tables(self, blob: bytes) -> ctypes.Array | None:
        """The module's reading of a FLARES_TABLES blob; None when it refuses it."""
        tab = self.new_tables()
        return tab if self.lib.flares_tables_decode(blob, len(blob), tab) == 0 else None

    def config(self, cfg, tables: ctypes.Array | None = None) -> Config:
        """A C configuration deciding with ``tables`` (default: the compiled-in ones), with page-type counts of its
        own (``.types``, kept alive by the configuration)."""
        c = Config(cfg.wsize, cfg.mix_pm, cfg.saferange_pm, cfg.maxfail, cfg.maxcritical, cfg.maxover, cfg.req_ret_s,
                   cfg.t_cap, cfg.evaluate_on_alarm, cfg.guarded, cfg.guard_z10, cfg.alarm_use_pm,
                   ctypes.cast(self.builtin if tables is None else tables, ctypes.c_void_p))
        c.counts = Types()
        c.types = ctypes.pointer(c.counts)
        return c

    def new_page(self, t: int, pe: int = 0) -> Pprof:
        pp = Pprof()
        self.lib.flares_new_page(ctypes.byref(pp), t, pe)
        return pp

    def up_page(self, cfg: Config, pp: Pprof, access: int, deterr: int, fail: bool, now: int,
                page_type: int = 0, errors: int | None = None, codewords: int = 1) -> Decision:
        d = Decision()
        self.lib.flares_up_page(ctypes.byref(cfg), ctypes.byref(pp), page_type, access, deterr, int(fail), now,
                                deterr if errors is None else errors, codewords, ctypes.byref(d))
        return d

    def pack(self, pp: Pprof) -> bytes:
        buf = ctypes.create_string_buffer(12)
        self.lib.flares_pprof_pack(ctypes.byref(pp), buf)
        return buf.raw

    def unpack(self, rec: bytes) -> tuple[int, Pprof]:
        pp = Pprof()
        n = self.lib.flares_pprof_unpack(bytes(rec), ctypes.byref(pp))
        return n, pp
