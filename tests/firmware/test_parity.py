"""The firmware's command files (server.c, job.c, rig.c, page_io.c, commands.c, flares_ops.c, ecc_layout.c and
what they call) built natively against a stub bus (tests/firmware/parity/stub_bus.c: the ONFI driver, the BCH
engine's registers and the link answered by a virtual chip through hooks), fed the same requests as their Python
twin, the virtual rig with exact=True, over a chip of the same profile and seed: every reply byte for byte.

The slow RTL equivalence tests (tests/boards/test_rtl_equivalence.py) hold the same twins together through the
real SoC; this one runs in seconds, so a drift in a command file shows at once."""
from __future__ import annotations

import ctypes
import struct
import subprocess
from pathlib import Path

import pytest

from nandrig import protocol as P
from nandrig.characterization.flares import FlaresConfig
from nandrig.boards.sim import ecc_layout
from nandrig.boards.sim.server import VirtualRig
from nandrig.gateware.onfi.timing import DEFAULT_CLK_HZ
from nandrig.boards.sim.wiring import Wiring
from nandrig.chip.onfi import Feature
from nandrig.gateware.bch.model import pad_bits
from nandrig.gateware.onfi.timing import mode_cycles
from nandrig.protocol import Deframer, Err, Opcode
from nandrig.virtual_chip.chip import VirtualChip

ROOT = Path(__file__).resolve().parents[2]
RIG, PARITY = ROOT / "firmware" / "rig", Path(__file__).resolve().parent / "parity"
SOURCES = ["server.c", "reply_stream.c", "job.c", "rig.c", "page_io.c", "commands.c", "flares_ops.c", "ecc_layout.c", "frame.c",
           "pattern.c", "profiles.c", "param_page.c", "unique_id.c", "capture.c", "bch.c", "bring_up.c",
           "cycle_job.c"]
CLK_HZ = DEFAULT_CLK_HZ
PROFILE, SEED = "mlc-small", 4

U8P = ctypes.POINTER(ctypes.c_uint8)


class Hooks(ctypes.Structure):
    _fields_ = [
        ("reset", ctypes.CFUNCTYPE(ctypes.c_uint8, ctypes.POINTER(ctypes.c_uint32))),
        ("read_id", ctypes.CFUNCTYPE(None, ctypes.c_uint8, U8P, ctypes.c_int)),
        ("read_param", ctypes.CFUNCTYPE(None, U8P)),
        ("set_feature", ctypes.CFUNCTYPE(ctypes.c_uint8, ctypes.c_uint8, ctypes.c_uint32)),
        ("op", ctypes.CFUNCTYPE(ctypes.c_uint8, ctypes.c_int, ctypes.c_uint32, ctypes.c_uint32, ctypes.c_uint32, U8P,
                                ctypes.POINTER(ctypes.c_uint32))),
        ("clock_ns", ctypes.CFUNCTYPE(ctypes.c_uint64)),
        ("advance", ctypes.CFUNCTYPE(None, ctypes.c_uint64, ctypes.c_int16)),
        ("capture", ctypes.CFUNCTYPE(ctypes.c_uint16, ctypes.c_uint8)),
        ("unique_id", ctypes.CFUNCTYPE(None, U8P)),
        ("bch", ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.c_uint8, U8P, U8P, ctypes.POINTER(ctypes.c_int))),
        ("capture_step_ps", ctypes.c_uint16),
    ]


@pytest.fixture(scope="module")
def library(tmp_path_factory) -> Path:
    lib = tmp_path_factory.mktemp("parity") / "librig.so"
    subprocess.run(["gcc", "-O1", "-shared", "-fPIC", "-Wall", "-Werror", "-Wno-missing-field-initializers",
                    f"-I{PARITY}", f"-I{RIG}", f"-I{RIG.parent / 'flares'}",
                    "-DFLARES_TABLES_HEADER=\"rig_flares_tables.h\"", "-o", str(lib), str(PARITY / "stub_bus.c"),
                    *(str(RIG / s) for s in SOURCES),
                    *(str(RIG.parent / "flares" / s) for s in ("flares.c", "flares_tables.c", "pprof.c"))],
                   check=True)
    return lib


class NativeRig:
    """The firmware's server over a virtual chip, in this process."""

    def __init__(self, library: Path, chip: VirtualChip, twin: VirtualRig) -> None:
        self.so = ctypes.CDLL(str(library))  # (a fresh copy per test: tmp names differ, so no state is shared)
        self.chip, self.wiring = chip, Wiring()
        self.so.stub_exchange.restype = ctypes.c_uint32
        self.so.stub_exchange.argtypes = [ctypes.c_char_p, ctypes.c_uint32, ctypes.c_char_p]
        self.hooks = Hooks(*self._callbacks(), twin.capture_step_ps)
        self.so.stub_set_hooks(ctypes.byref(self.hooks))
        self.so.stub_start(ctypes.c_uint8(int(twin.kind)), ctypes.c_uint32(int(twin._caps() & ~P.Cap.FLARES)))
        self.out = ctypes.create_string_buffer(1 << 20)

    def _callbacks(self):
        chip = self.chip

        def put(dst, data: bytes) -> None:
            ctypes.memmove(dst, data, len(data))

        def reset(busy):
            r = chip.reset()
            busy[0] = r.busy_ns
            return r.status

        def bus(n_bytes: int, write: bool) -> None:  # the bytes' transfer on the bus, metered as the rig meters it
            c = mode_cycles(chip.get_features(Feature.TIMING_MODE)[0] & 0x0F, CLK_HZ)
            ns = n_bytes * ((c.wp + c.wh) if write else (c.rp + c.reh)) * 1e9 / CLK_HZ
            chip.energy.add_transfer(round(ns), chip.profile.power.icc_io_ma, chip.profile.power.vcc_v)

        def op(kind, block, page, length, buf, busy):
            if kind == 0:
                r = chip.erase(block)
            elif kind == 1:
                r = chip.program(block, page, ctypes.string_at(buf, length))
                bus(length, write=True)
            else:
                got = chip.read(block, page)
                put(buf, got.data[:length])
                bus(length, write=False)
                busy[0] = got.busy_ns
                return chip.status
            busy[0] = r.busy_ns
            return r.status

        def bch(op_, t, data, parity, erased):
            d = ctypes.string_at(data, ecc_layout.CODEWORD_BYTES)
            n_ecc = ecc_layout.CONFIG.ecc_bytes(t)
            if op_ == 0:
                put(parity, ecc_layout._bch(t).encode(d)[:n_ecc])
                return 0
            e = ctypes.string_at(parity, n_ecc)
            out, n = ecc_layout.decode_codeword(d, e, t)
            ones = d + e[:-1] + bytes([e[-1] | ((1 << pad_bits(ecc_layout.CONFIG, t)) - 1)])
            erased[0] = int(8 * len(ones) - sum(bin(b).count("1") for b in ones) <= t)
            if n >= 0 and not erased[0]:
                put(data, out)
            return n

        return (
            Hooks._fields_[0][1](reset),
            Hooks._fields_[1][1](lambda addr, out, n: put(out, chip.read_id(addr)[:n])),
            Hooks._fields_[2][1](lambda out: put(out, chip.read_parameter_page()[:P.Limit.PARAM_PAGE_REPLY_BYTES])),
            Hooks._fields_[3][1](lambda addr, params: chip.set_features(addr, params.to_bytes(4, "little")).status),
            Hooks._fields_[4][1](op),
            Hooks._fields_[5][1](lambda: chip.clock_ns),
            Hooks._fields_[6][1](lambda ns, temp: chip.wait(ns / 3.6e12, temp_c=temp / 100.0)),
            Hooks._fields_[7][1](lambda mode: self.wiring.trim_pass(mode, CLK_HZ)),
            Hooks._fields_[8][1](lambda out: put(out, chip.read_unique_id())),
            Hooks._fields_[9][1](bch),
        )

    def handle(self, req: P.Frame) -> list[P.Frame]:
        data = req.encode()
        n = self.so.stub_exchange(data, len(data), self.out)
        return Deframer().feed(self.out.raw[:n])


def requests(geometry) -> list[tuple]:
    """One or more requests per opcode the rig serves, good and bad, in an order that leaves something to read;
    a fourth field names an earlier request this one retries (its seq again)."""
    pages = geometry.pages_per_block
    raw = geometry.page_bytes + geometry.spare_bytes
    cfg = FlaresConfig()
    return [
        ("hello", Opcode.HELLO, P.HELLO_REQ.pack(*P.VERSION, 7, 0)),
        ("hello, other major", Opcode.HELLO, struct.pack("<H", P.VERSION[0] + 1)),
        ("info", Opcode.INFO, b""),
        ("info, bad length", Opcode.INFO, b"\x00"),
        ("read id 00h", Opcode.READ_ID, P.READ_ID_REQ.pack(0x00)),
        ("read id 20h", Opcode.READ_ID, P.READ_ID_REQ.pack(0x20)),
        ("parameter page", Opcode.READ_PARAM_PAGE, b""),
        ("scan bad", Opcode.SCAN_BAD, P.SCAN_BAD_REQ.pack(0, geometry.blocks)),
        ("scan bad, out of range", Opcode.SCAN_BAD, P.SCAN_BAD_REQ.pack(geometry.blocks - 1, 2)),
        ("erase", Opcode.ERASE, P.ERASE_REQ.pack(3, 0)),
        ("erase, out of range", Opcode.ERASE, P.ERASE_REQ.pack(geometry.blocks, 0)),
        ("program pattern", Opcode.PROGRAM, P.PROGRAM_HEAD.pack(3, 0, 0, 0) + P.PATTERN_SEED.pack(11)),
        ("program pattern at t 8", Opcode.PROGRAM, P.PROGRAM_HEAD.pack(3, 1, 8, 0) + P.PATTERN_SEED.pack(11)),
        ("program bytes", Opcode.PROGRAM, P.PROGRAM_HEAD.pack(3, 2, 0, P.ProgramFlag.EXPLICIT) + bytes(range(256)) * 4),
        ("program, bad flags", Opcode.PROGRAM, P.PROGRAM_HEAD.pack(3, 3, 0, 0x80) + P.PATTERN_SEED.pack(11)),
        ("read compare", Opcode.READ, P.READ_REQ.pack(3, 0, 0, P.ReadFlag.COMPARE, 11)),
        ("read compare at t 8", Opcode.READ, P.READ_REQ.pack(3, 1, 8, P.ReadFlag.COMPARE, 11)),
        ("read raw", Opcode.READ, P.READ_REQ.pack(3, 2, 0, P.ReadFlag.RAW, 0)),
        ("read, page out of range", Opcode.READ, P.READ_REQ.pack(3, pages, 0, 0, 0)),
        ("read buffer", Opcode.READ_BUFFER, P.READ_BUFFER_REQ.pack(0, min(raw, 1024))),
        ("set read offset", Opcode.SET_READ_OFFSET, P.SET_READ_OFFSET_REQ.pack(-4)),
        ("set read refs", Opcode.SET_READ_REFS, P.SET_READ_REFS_REQ.pack(2, 0, -2)),
        ("set read offset back", Opcode.SET_READ_OFFSET, P.SET_READ_OFFSET_REQ.pack(0)),
        ("set verify levels", Opcode.SET_VERIFY_LEVELS, P.SET_VERIFY_LEVELS_REQ.pack(-3, 0, 12)),
        ("set verify levels, out of range", Opcode.SET_VERIFY_LEVELS, P.SET_VERIFY_LEVELS_REQ.pack(0, 99, 0)),
        ("set verify levels back", Opcode.SET_VERIFY_LEVELS, P.SET_VERIFY_LEVELS_REQ.pack(0, 0, 0)),
        ("cycle", Opcode.CYCLE, P.CYCLE_REQ.pack(4, 2, 3, 5, 0)),
        ("cycle, page set", Opcode.CYCLE, P.CYCLE_REQ.pack(6, 1, 2, 5, P.CycleFlag.PAGE_SET)
         + P.page_set_bytes([p for p in range(pages) if p % 2 == 0], pages)),
        ("cycle, empty page set", Opcode.CYCLE, P.CYCLE_REQ.pack(6, 1, 2, 5, P.CycleFlag.PAGE_SET) + bytes(pages // 8)),
        # a refused CYCLE stays out of the reply cache: the erase before it is still answered from there
        ("erase before a refused cycle", Opcode.ERASE, P.ERASE_REQ.pack(10, 0)),
        ("cycle, out of range", Opcode.CYCLE, P.CYCLE_REQ.pack(geometry.blocks - 1, 2, 1, 5, 0)),
        ("erase before a refused cycle, retried", Opcode.ERASE, P.ERASE_REQ.pack(10, 0), "erase before a refused cycle"),
        ("advance a year at 25 degC", Opcode.ADVANCE, P.ADVANCE_REQ.pack(365 * 24 * 3600 * 10**9, 2500)),
        ("measure", Opcode.MEASURE, P.MEASURE_REQ.pack(4, 2, 0, pages, 5, 0)),
        ("measure, timed", Opcode.MEASURE, P.MEASURE_REQ.pack(4, 2, 0, pages, 5, P.MeasureFlag.TIMED)),
        ("measure, part of a block", Opcode.MEASURE, P.MEASURE_REQ.pack(4, 1, 3, 5, 5, 0)),
        ("measure, one page", Opcode.MEASURE, P.MEASURE_REQ.pack(4, 1, pages - 1, 1, 5, 0)),
        ("measure, bad flags", Opcode.MEASURE, P.MEASURE_REQ.pack(4, 1, 0, pages, 5, 0x82)),
        ("measure, too many", Opcode.MEASURE, P.MEASURE_REQ.pack(0, geometry.blocks, 0, pages, 5, 0)),
        ("read disturb", Opcode.READ_DISTURB, P.READ_DISTURB_REQ.pack(4, 3, 1000)),
        ("measure after disturb", Opcode.MEASURE, P.MEASURE_REQ.pack(4, 1, 0, pages, 5, 0)),
        ("time", Opcode.TIME, b""),
        ("status", Opcode.STATUS, b""),
        ("abort, nothing running", Opcode.ABORT, b""),
        ("flares config", Opcode.FLARES_CONFIG, P.FLARES_CONFIG_REQ.pack(cfg.wsize, cfg.mix_pm, cfg.saferange_pm,
                                                                          cfg.maxfail, cfg.maxcritical, cfg.maxover,
                                                                          cfg.req_ret_s, 0)),
        ("flares tables, compiled-in", Opcode.FLARES_TABLES,
         P.FLARES_TABLES_REQ.pack(0, 0, 0, P.FlaresTablesFlag.BUILTIN)),
        ("erase for flares", Opcode.ERASE, P.ERASE_REQ.pack(8, 0)),
        *((f"flares program page {p}", Opcode.FLARES_PROGRAM, P.FLARES_PROGRAM_REQ.pack(8, p, 0, 21, 3000))
          for p in range(4)),
        ("flares program, bad flags", Opcode.FLARES_PROGRAM, P.FLARES_PROGRAM_REQ.pack(8, 5, 0x80, 21, 3000)),
        ("bake", Opcode.ADVANCE, P.ADVANCE_REQ.pack(16 * 3600 * 10**9, 12500)),
        # the bake's 25 degC-equivalent years, less its hours, told to FLARES (its clock now wraps past 2**32 s)
        ("flares clock credit", Opcode.FLARES_CLOCK, P.FLARES_CLOCK_REQ.pack((1 << 32) - 3600)),
        ("flares clock credit, repeated", Opcode.FLARES_CLOCK, P.FLARES_CLOCK_REQ.pack((1 << 32) - 3600)),
        ("flares clock, bad length", Opcode.FLARES_CLOCK, b"\x00" * 4),
        *((f"flares read page {p}", Opcode.FLARES_READ, P.FLARES_READ_REQ.pack(8, p, P.FlaresReadFlag.COMPARE, 21))
          for p in (*range(4), 0, 1)),
        ("flares read raw", Opcode.FLARES_READ, P.FLARES_READ_REQ.pack(8, 2, P.FlaresReadFlag.RAW, 0)),
        ("flares read, erased page", Opcode.FLARES_READ, P.FLARES_READ_REQ.pack(8, 9, 0, 0)),
        ("flares config, on alarm", Opcode.FLARES_CONFIG, P.FLARES_CONFIG_REQ.pack(
            4, cfg.mix_pm, cfg.saferange_pm, cfg.maxfail, cfg.maxcritical, cfg.maxover, cfg.req_ret_s,
            P.FlaresConfigFlag.EVALUATE_ON_ALARM)),
        ("flares read after the profiles went", Opcode.FLARES_READ, P.FLARES_READ_REQ.pack(8, 1, 0, 0)),
        # guarded FLARES: its constants after the config; a page type's counts raise t at the next program
        ("flares config, guarded without its constants", Opcode.FLARES_CONFIG, P.FLARES_CONFIG_REQ.pack(
            2, cfg.mix_pm, cfg.saferange_pm, cfg.maxfail, cfg.maxcritical, cfg.maxover, cfg.req_ret_s,
            P.FlaresConfigFlag.GUARDED)),
        ("flares config, guarded", Opcode.FLARES_CONFIG, P.FLARES_CONFIG_REQ.pack(
            2, cfg.mix_pm, cfg.saferange_pm, cfg.maxfail, cfg.maxcritical, cfg.maxover, cfg.req_ret_s,
            P.FlaresConfigFlag.GUARDED) + P.FLARES_GUARD_REQ.pack(0, 100)),
        ("wear for guarded flares", Opcode.CYCLE, P.CYCLE_REQ.pack(9, 1, 2000, 5, 0)),
        ("erase for guarded flares", Opcode.ERASE, P.ERASE_REQ.pack(9, 0)),
        *((f"guarded program page {p}, declared fresh", Opcode.FLARES_PROGRAM,
           P.FLARES_PROGRAM_REQ.pack(9, p, 0, 22, 1)) for p in range(4)),
        ("bake for guarded flares", Opcode.ADVANCE, P.ADVANCE_REQ.pack(400 * 3600 * 10**9, 12500)),
        *((f"guarded read page {p}", Opcode.FLARES_READ, P.FLARES_READ_REQ.pack(9, p, P.FlaresReadFlag.COMPARE, 22))
          for p in (2, 2, 3, 2)),  # the upper page fails at t 2: its type's counts exceed the model's expectation
        ("erase again", Opcode.ERASE, P.ERASE_REQ.pack(9, 0)),
        *((f"guarded program page {p}: t raised by the counts", Opcode.FLARES_PROGRAM,
           P.FLARES_PROGRAM_REQ.pack(9, p, 0, 23, 2)) for p in range(4)),
        ("reset", Opcode.RESET, b""),
        ("info after reset", Opcode.INFO, b""),
        ("unknown opcode", 0x7E, b""),
    ]


def _whole(req: P.Frame, frames: list[P.Frame]) -> P.Frame | str | None:
    """The one reply the frames carry, whole or in parts (protocol 1.18); else what is wrong with them."""
    assembly, replies = P.ReplyAssembly(req.op, req.seq), []
    for f in frames:
        if (got := assembly.take(f)) is not None:
            replies.append(got)
    if assembly.gap or len(replies) > 1 or (frames and not replies):
        return f"{len(frames)} frames that do not make one reply"
    return replies[0] if replies else None


def _same(name: str, req: P.Frame, native: list[P.Frame], twin: list[P.Frame]) -> str | None:
    a, b = _whole(req, native), _whole(req, twin)
    if isinstance(a, str) or isinstance(b, str):
        return f"{name}: firmware {a}, twin {b}"
    if b is None:
        return None if a is None else f"{name}: the firmware answered, the twin did not"
    if a is None:
        return f"{name}: the twin answered, the firmware did not"
    pa, pb = a.payload, b.payload
    # the boot number (random on the twin, from the clock on the rig) and the rig's name string differ by design
    layout = {Opcode.HELLO: P.HELLO_REPLY, Opcode.STATUS: P.STATUS_REPLY}.get(Opcode(a.op) if a.op in set(Opcode) else None)
    if layout is not None:
        keep = [f.name not in ("boot", "n") for f in layout.fields]
        pa, pb = (tuple(v for v, k in zip(layout.unpack(x[:layout.size]), keep) if k) if len(x) >= layout.size else x
                  for x in (pa, pb))
    if (a.status, a.op, a.seq, pa) != (b.status, b.op, b.seq, pb):
        at = next((i for i, (x, y) in enumerate(zip(pa, pb)) if x != y), min(len(pa), len(pb)))
        return (f"{name}: firmware {Err(a.status).name} ({len(a.payload)} bytes), twin {Err(b.status).name} "
                f"({len(b.payload)} bytes), first difference at byte {at}: {bytes(a.payload[at:at + 8]).hex()} / "
                f"{bytes(b.payload[at:at + 8]).hex()}")
    return None


def test_every_command_file_answers_as_its_python_twin(library):
    twin_chip, native_chip = VirtualChip(PROFILE, SEED), VirtualChip(PROFILE, SEED)
    twin_chip.reset()  # the firmware resets the chip as it identifies it; the twin takes the chip as it finds it
    twin = VirtualRig(twin_chip, exact=True, clk_hz=CLK_HZ, bch_t_max=ecc_layout.CONFIG.t_max, bus_time=False)
    native = NativeRig(library, native_chip, twin)
    covered, diffs, seqs = set(), [], {}
    for seq, (name, op, payload, *retry) in enumerate(requests(twin_chip.geometry), start=1):
        seq = seqs[name] = seqs[retry[0]] if retry else seq
        req = P.request(op, seq, payload) if isinstance(op, Opcode) else P.Frame(P.REQUEST_TYPE, op, seq, 0, payload)
        sent = native.handle(req)
        rep = twin.handle(req)
        if (d := _same(name, req, sent, twin.wire(rep) if rep is not None else [])) is not None:
            diffs.append(d)
        if name == "measure":  # a block's counts exceed a part's least size: some go before the end
            parts = [f.type for f in sent]
            assert parts.count(P.PART_TYPE) >= 1 and parts[-1] == P.END_TYPE, parts
        covered.add(op)
    assert diffs == [], "\n".join(diffs)
    assert native_chip.pe_count(10) == twin_chip.pe_count(10) == 1  # the retried erase ran once
    assert covered == set(Opcode) - {Opcode.ENERGY} | {0x7E}  # ENERGY: the twin meters its chip, the stub has no meter
