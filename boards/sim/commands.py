"""The virtual rig's chip commands (firmware/rig/commands.c): each checks its request against the spec's
limits, runs on the virtual chip, and packs its reply."""
from __future__ import annotations

import dataclasses
import math
import struct
from functools import lru_cache

import numpy as np

from nandrig import __version__
from nandrig import protocol as P
from nandrig.boards.sim import ecc_layout
from nandrig.virtual_chip import rng
from nandrig.virtual_chip.chip import FEATURE_TIMING_MODE
from nandrig.chip.read_retry import FeatureOffsets, table_for
from nandrig.errors import NandrigError
from nandrig.gateware.onfi.timing import WAIT_LAG_CYCLES, mode_cycles
from nandrig.boards.sim.bus_schedule import JobOps
from nandrig.boards.sim.job import RigIO
from nandrig.boards.sim.rig import Reject
from nandrig.chip.geometry import PageMap, PageType
from nandrig.chip.onfi import OptionalCommand, decode_unique_id
from nandrig.chip.vendor import BAD_BLOCK_MARK, bad_block_pages
from nandrig.chip.pattern import bits, flips, page_bits, page_seed, prbs31_bytes
from nandrig.protocol import CycleFlag, EraseFlag, Err, Frame, Limit, ProgramFlag, ReadFlag

CYCLE_CHUNK = 250  # rounds between abort checks on the statistical path
DISTURB_CHUNK = 100_000
# the page commands' flag bits as ints: an int & an IntFlag member runs enum's operators in Python
_EXPLICIT, _FORCE = int(ProgramFlag.EXPLICIT), int(ProgramFlag.FORCE)
_RAW, _COMPARE = int(ReadFlag.RAW), int(ReadFlag.COMPARE)


@lru_cache(maxsize=64)
def _spare_layout(page_bytes: int, codeword_bytes: int, t: int) -> tuple[tuple[int, int], tuple[tuple[int, int], ...],
                                                                        tuple[float, ...]]:
    """The statistical read's bit ranges of a page's ECC area and of each codeword's parity at t, and each
    codeword's length as a share of the code's full length (2^m), shortened as the layout stores it."""
    area = ecc_layout.ecc_area(page_bytes, t)
    parity = [ecc_layout.parity_slice(page_bytes, k, t) for k in range(page_bytes // codeword_bytes)]
    return ((8 * area.start, 8 * area.stop), tuple((8 * p.start, 8 * p.stop) for p in parity),
            tuple((8 * codeword_bytes + 8 * (p.stop - p.start)) / 2.0 ** ecc_layout.CONFIG.m for p in parity))


class ChipCommands:
    """Mixed into VirtualRig, whose chip, job and link these use."""

    def _args(self, req: Frame, layout: P.Layout) -> tuple:
        if layout.size != len(req.payload):
            raise Reject(Err.BAD_FRAME)
        return layout.unpack(req.payload)

    def _block(self, block: int, count: int = 1) -> None:
        if self.ident is None or count < 1 or block < 0 or block + count > self.chip.geometry.blocks:
            raise Reject(Err.OUT_OF_RANGE)

    def _page(self, page: int, count: int = 1) -> None:
        if count < 1 or page < 0 or page + count > self.chip.geometry.pages_per_block:
            raise Reject(Err.OUT_OF_RANGE)

    def _flags(self, flags: int, allowed: int) -> None:
        if flags & ~int(allowed) & 0xFF:  # IntFlag's ~ would keep only defined bits
            raise Reject(Err.BAD_PARAMETER)

    def is_bad(self, block: int) -> bool:
        """The factory mark, read once before the block is touched: the first spare byte of each page the
        maker's convention names (nandrig.chip.vendor)."""
        if block not in self.bad:
            g = self.chip.geometry
            pages = bad_block_pages(self.read_id0[0], self.ident.page.bits_per_cell, g.pages_per_block)
            self.bad[block] = any(self.chip.read(block, p).data[g.page_bytes] != BAD_BLOCK_MARK for p in pages)
        return self.bad[block]

    def _guard(self, block: int, forced: int) -> None:
        if self.is_bad(block) and not forced:
            raise Reject(Err.BAD_BLOCK)


    def _page_errors(self, block: int, pages: range, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per-page (1->0, 0->1, busy ns) against the pattern."""
        chip = self.chip
        if not self.exact:
            m = chip.measure(block, pages)
            return m.err_1to0, m.err_0to1, m.busy_ns
        n = chip.geometry.raw_page_bytes
        reads = [chip.read(block, p) for p in pages]
        counts = [flips(page_bits(seed, block, p, n), bits(r.data)) for p, r in zip(pages, reads)]
        return (np.array([c[0] for c in counts]), np.array([c[1] for c in counts]),
                np.array([r.busy_ns for r in reads]))

    # -- commands ---------------------------------------------------------------
    def _cmd_hello(self, req: Frame, io: RigIO) -> bytes:
        # another major version may lay HELLO out otherwise: its first field is enough to answer it
        if len(req.payload) >= 2 and struct.unpack_from("<H", req.payload)[0] != P.VERSION[0]:
            major, minor, session, flags = struct.unpack_from("<H", req.payload)[0], 0, 0, 0
        else:
            major, minor, session, flags = self._args(req, P.HELLO_REQ)
        ident = " ".join([f"nandrig-virtual/{__version__} chip={self.chip.profile.name} seed={self.chip.seed} "
                          f"life={self.chip.instance:08x}",  # target 0's; then the others' as t<k>=chip:seed:life
                          *(f"t{k}={t.chip.profile.name}:{t.chip.seed}:{t.chip.instance:08x}"
                            for k, t in self.targets.items() if k)]).encode()
        status = Err.OK
        if major != P.VERSION[0]:
            status = Err.VERSION_MISMATCH
        elif flags & ~P.all_flags(P.HelloFlag):
            raise Reject(Err.BAD_PARAMETER)
        elif flags & P.HelloFlag.OBSERVE:
            pass  # a look: session and holder stay
        elif flags & P.HelloFlag.RELEASE:
            if session == self.holder:
                self.holder = 0
        elif self.holder in (0, session) or flags & P.HelloFlag.TAKE_OVER:
            self.session = self.holder = session
            self.streaming = (major, minor) >= P.STREAMED_SINCE
        else:
            status = Err.HELD
        body = P.HELLO_REPLY.pack(*P.VERSION, int(self.kind), int(self._caps()), self.holder, self.boot,
                                  len(ident)) + ident
        if status != Err.OK:
            raise Reject(status, body)
        return body

    def _caps(self) -> P.Cap:
        return (P.Cap.VIRTUAL_TIME | P.Cap.BCH | P.Cap.RAW_READ | P.Cap.ENERGY | P.Cap.CYCLE_JOBS |
                (P.Cap.FLARES if self.t_max else P.Cap(0)))

    def _cmd_info(self, req: Frame, io: RigIO) -> bytes:
        self._args(req, P.EMPTY_REQ)
        capture = (self.capture, self.rd_trim, self.trim_pass)
        if self.ident is None:  # as the firmware: a chip it could not read or cannot drive is all zeros
            read_id = self.read_id0 if self.capture == P.Capture.CALIBRATED else bytes(5)
            return P.INFO_REPLY.pack(read_id, bytes(12), bytes(20), *[0] * 8, self.codeword_bytes, self.t_max,
                                     int(self._caps()), *capture, 0, bytes(16), 0, 0, int(self.param_status),
                                     self.capture_step_ps, *self._targets_found())
        pp, ecc = self.ident.page, self.ident.ecc
        mode = self.chip.get_features(FEATURE_TIMING_MODE)[0] & 0x0F
        uid = (decode_unique_id(self.wiring.apply_bytes(self.chip.read_unique_id()))  # as the firmware reads it
               if pp.optional_commands & OptionalCommand.READ_UNIQUE_ID else None)
        return P.INFO_REPLY.pack(
            self.read_id0, pp.manufacturer.encode().ljust(12), pp.model.encode().ljust(20),
            pp.page_bytes, pp.spare_bytes, pp.pages_per_block, pp.blocks_per_lun * pp.luns, pp.bits_per_cell,
            sum(1 << m for m in pp.timing_modes), mode, ecc.bits if ecc else 0, self.codeword_bytes, self.t_max,
            int(self._caps()), *capture, uid is not None, uid or bytes(16), ecc.step_bytes if ecc else 0, pp.luns,
            int(self.param_status), self.capture_step_ps, *self._targets_found(),
        )

    def _targets_found(self) -> tuple[int, int]:
        """INFO's target (the one this answers for) and targets (bit k: a chip on CE# k)."""
        return next(k for k, t in self.targets.items() if t is self.at), sum(1 << k for k in self.targets)

    @property
    def read_id0(self) -> bytes:
        return self.wiring.apply_bytes(self.chip.read_id(0x00))

    def _cmd_reset(self, req: Frame, io: RigIO) -> bytes:
        self._args(req, P.EMPTY_REQ)
        status = self.chip.reset().status
        if self.capture == P.Capture.CALIBRATED:  # back in mode 0: its own capture point
            self._calibrate(0)
        return P.BYTE_REPLY.pack(status)

    def _cmd_read_id(self, req: Frame, io: RigIO) -> bytes:
        (addr,) = self._args(req, P.READ_ID_REQ)
        ident = self.wiring.apply_bytes(self.chip.read_id(addr))
        return P.READ_ID_HEAD.pack(len(ident)) + ident

    def _cmd_read_param_page(self, req: Frame, io: RigIO) -> bytes:
        self._args(req, P.EMPTY_REQ)
        raw = self.chip.read_parameter_page()[:Limit.PARAM_PAGE_REPLY_BYTES]
        return self.wiring.apply_bytes(raw.ljust(Limit.PARAM_PAGE_REPLY_BYTES, b"\x00"))

    def _cmd_scan_bad(self, req: Frame, io: RigIO) -> bytes:
        first, count = self._args(req, P.SCAN_BAD_REQ)
        if count > Limit.SCAN_BAD_MAX_BLOCKS:
            raise Reject(Err.OUT_OF_RANGE)
        self._block(first, count)
        bits = bytearray(math.ceil(count / 8))
        job = self._start(req, count)
        for i in range(count):
            if job.abort:
                break
            if self.is_bad(first + i):
                bits[i // 8] |= 1 << (i % 8)
            job.done += 1
            self._poll(io)
        return self._end_job(bytes(bits))

    def _cmd_erase(self, req: Frame, io: RigIO) -> bytes:
        block, flags = self._args(req, P.ERASE_REQ)
        self._block(block)
        self._flags(flags, P.all_flags(EraseFlag))
        self._guard(block, flags & EraseFlag.FORCE)
        r = self.chip.erase(block)
        return self._chip_result(r.status, r.busy_ns)

    def _chip_result(self, status: int, busy_ns: int) -> bytes:
        body = P.CHIP_RESULT.pack(status, min(busy_ns, 0xFFFFFFFF))
        if status & 0x01:
            raise Reject(Err.CHIP_FAIL, body)
        return body

    def _cmd_program(self, req: Frame, io: RigIO) -> bytes:
        if len(req.payload) < P.PROGRAM_HEAD.size:
            raise Reject(Err.BAD_FRAME)
        block, page, t, flags = P.PROGRAM_HEAD.unpack(req.payload)
        rest = req.payload[P.PROGRAM_HEAD.size:]
        self._block(block)
        self._page(page)
        self._flags(flags, P.all_flags(ProgramFlag))
        if t > self.t_max:
            raise Reject(Err.BAD_PARAMETER)
        g = self.chip.geometry
        if flags & _EXPLICIT:
            if not 0 < len(rest) <= g.raw_page_bytes:
                raise Reject(Err.BAD_FRAME)
            raw = rest + b"\xff" * (g.raw_page_bytes - len(rest))
        elif len(rest) != P.PATTERN_SEED.size:
            raise Reject(Err.BAD_FRAME)
        self._guard(block, flags & _FORCE)
        self._bus(g.raw_page_bytes, write=True)
        if not flags & _EXPLICIT:
            seed = page_seed(P.PATTERN_SEED.unpack(rest).pattern_seed, block, page)
            if (t == 0 or self.stat_reads) and not self.wiring.dq_faulty:
                r = self.chip.program(block, page, seed=seed, ecc_t=t)
                return self._chip_result(r.status, r.busy_ns)
            raw = prbs31_bytes(seed, g.raw_page_bytes)
        r = self.chip.program(block, page, self.wiring.apply_bytes(ecc_layout.encode_page(raw, g.page_bytes, t) if t else raw))
        return self._chip_result(r.status, r.busy_ns)

    def _cmd_read(self, req: Frame, io: RigIO) -> bytes:
        block, page, t, flags, seed = self._args(req, P.READ_REQ)
        self._block(block)
        self._page(page)
        self._flags(flags, P.all_flags(ReadFlag))
        g = self.chip.geometry
        if t > self.t_max or (flags & _RAW and P.read_reply_bytes(g.page_bytes, g.spare_bytes,
                                                                          self.codeword_bytes) > P.MAX_PAYLOAD):
            raise Reject(Err.BAD_PARAMETER)
        content = self.chip.content(block, page)
        if content is not None and content.seed is not None and (content.ecc_t or self.stat_reads) \
                and not self.wiring.dq_faulty:  # explicit bytes are drawn cell by cell
            return self._stat_read_reply(content, block, page, t, flags, seed)
        r = self.chip.read(block, page)
        if self.wiring.dq_faulty:
            r = dataclasses.replace(r, data=self.wiring.apply_bytes(r.data))
        return self._read_reply(r, block, page, t, flags, seed)[0]

    def _stat_read_reply(self, content, block: int, page: int, t: int, flags: int, seed: int) -> bytes:
        """READ's reply on the statistical path (``stat_reads``), for a page programmed from a pattern (t 0 too):
        the page's error count drawn from the chip's exact per-bit error probabilities (its MEASURE path), the
        errors put on bits of the page drawn at random, each codeword decoded by count: corrected when its data
        and parity hold at most t errors, else uncorrectable, or, with the chance that a random word lies within
        t of another codeword (about (n / 2^m)^t / t! for a code shortened to n bits), miscorrected by up to t
        more bits. The decoded bytes are the pattern with each undecoded codeword's errors (and a
        miscorrection's changes) in place; the spare's parity reads as pattern."""
        g, chip = self.chip.geometry, self.chip
        m = chip.measure(block, [page])
        self._bus(g.raw_page_bytes, write=False)
        e10, e01 = int(m.err_1to0[0]), int(m.err_0to1[0])
        blk = chip.blocks[block]
        gen = self._stat_gen
        gen.seed(rng.key(rng.STAT_DECODE, chip.seed, block, page, blk.pe, blk.reads))  # as random.Random(key)
        cw_bits, data_bits = 8 * self.codeword_bytes, 8 * g.page_bytes
        n_cw = g.page_bytes // self.codeword_bytes
        ecc, parity, shortened_by = _spare_layout(g.page_bytes, self.codeword_bytes, content.ecc_t)
        in_data: list[list[int]] = [[] for _ in range(n_cw + 1)]  # per codeword, then the spare beside the ECC area
        in_parity = [0] * n_cw
        for bit in gen.sample(range(8 * g.raw_page_bytes), min(e10 + e01, 8 * g.raw_page_bytes)):
            if bit < data_bits:
                in_data[bit // cw_bits].append(bit)
            elif not ecc[0] <= bit < ecc[1]:
                in_data[n_cw].append(bit)
            else:
                in_parity[next((k for k, (lo, hi) in enumerate(parity) if lo <= bit < hi), 0)] += 1
        ones_share = e10 / (e10 + e01) if e10 + e01 else 0.5
        same = content.seed == page_seed(seed, block, page)
        data = bytearray(prbs31_bytes(content.seed, g.raw_page_bytes))
        out = bytearray(P.READ_HEAD.pack(chip.status, int(m.busy_ns[0]), n_cw + 1))
        for k, errors in enumerate(in_data):
            corrected, changed = 0, errors
            if k < n_cw and t:
                total = len(errors) + in_parity[k]
                shortened = shortened_by[k]
                if t != content.ecc_t:
                    corrected = -1  # parity of another t: no decode
                elif total <= t:
                    corrected, changed = total, []
                elif gen.random() < shortened ** t / math.factorial(t):
                    corrected = gen.randint(1, t)
                    changed = errors + gen.sample(range(k * cw_bits, (k + 1) * cw_bits), corrected)
                else:
                    corrected = -1
            for bit in changed:
                data[bit // 8] ^= 0x80 >> (bit % 8)
            if not flags & _COMPARE:
                c10 = c01 = 0
            elif same:
                c10 = sum(gen.random() < ones_share for _ in errors)
                c01 = len(errors) - c10
            else:  # another pattern than the page holds: about half its bits differ
                half = (cw_bits if k < n_cw else 8 * g.spare_bytes) // 2
                c10, c01 = gen.getrandbits(half).bit_count(), gen.getrandbits(half).bit_count()
            out += P.CODEWORD_COUNTS.pack(min(c10, 0xFFFF), min(c01, 0xFFFF), corrected)
        self.page_buffer = bytes(data)
        if flags & _RAW:
            out += data
        return bytes(out)

    def _cmd_read_buffer(self, req: Frame, io: RigIO) -> bytes:
        offset, count = self._args(req, P.READ_BUFFER_REQ)
        if self.ident is None or count < 1 or count > P.MAX_PAYLOAD or offset + count > self.chip.geometry.raw_page_bytes:
            raise Reject(Err.OUT_OF_RANGE)
        return self.page_buffer[offset:offset + count].ljust(count, b"\xff")

    def _read_reply(self, r, block: int, page: int, t: int, flags: int, seed: int) -> tuple[bytes, int, int]:
        """READ's reply for a page as read, decoded at t; with the bits corrected and the data codewords
        that failed, over the data codewords."""
        g = self.chip.geometry
        self._bus(g.raw_page_bytes, write=False)
        got = bits(r.data)
        want = page_bits(seed, block, page, g.raw_page_bytes) if flags & _COMPARE else got
        bounds = sorted(set(range(0, g.page_bytes, self.codeword_bytes)) | {g.page_bytes, g.raw_page_bytes})
        out = bytearray(P.READ_HEAD.pack(self.chip.status, r.busy_ns, len(bounds) - 1))
        data = bytearray(r.data)
        corrected_bits = failed = 0
        if t:  # the spare's ECC area holds no pattern: its errors are the decoder's to count
            area = ecc_layout.ecc_area(g.page_bytes, t)
            got[area.start * 8:area.stop * 8] = want[area.start * 8:area.stop * 8]
        for k, (lo, hi) in enumerate(zip(bounds, bounds[1:])):
            e10, e01 = flips(want[lo * 8:hi * 8], got[lo * 8:hi * 8])
            corrected = 0
            if t and hi <= g.page_bytes:
                parity = r.data[ecc_layout.parity_slice(g.page_bytes, k, t)]
                data[lo:hi], corrected = ecc_layout.decode_codeword(r.data[lo:hi], parity, t)
                failed += corrected < 0
                corrected_bits += max(corrected, 0)
            out += P.CODEWORD_COUNTS.pack(min(e10, 0xFFFF), min(e01, 0xFFFF), corrected)
        self.page_buffer = bytes(data)
        if flags & _RAW:
            out += data
        return bytes(out), corrected_bits, failed


    def _cmd_energy(self, req: Frame, io: RigIO) -> bytes:
        self._args(req, P.EMPTY_REQ)
        pw = self.chip.profile.power
        return P.ENERGY_REPLY.pack(*self.chip.energy.take(), round(pw.icc_idle_ma * pw.vcc_v * 1000))

    def _mode_cycles(self):
        """The controller's cycle counts at the chip's timing mode."""
        return mode_cycles(self.chip.get_features(FEATURE_TIMING_MODE)[0] & 0x0F, self.clk_hz, steps=self.capture_steps)

    def _bus(self, n_bytes: int, write: bool) -> None:
        """Supply energy of moving bytes on the bus, at the cycle the controller runs the chip's mode at."""
        c = self._mode_cycles()
        ns = n_bytes * ((c.wp + c.wh) if write else (c.rp + c.reh)) * 1e9 / self.clk_hz
        pw = self.chip.profile.power
        self.chip.energy.add_transfer(round(ns), pw.icc_io_ma, pw.vcc_v)

    def _cmd_set_read_offset(self, req: Frame, io: RigIO) -> bytes:
        (offset,) = self._args(req, P.SET_READ_OFFSET_REQ)
        return self._set_read_refs((offset,) * 3)

    def _cmd_set_read_refs(self, req: Frame, io: RigIO) -> bytes:
        return self._set_read_refs(self._args(req, P.SET_READ_REFS_REQ))

    def _set_read_refs(self, offsets: tuple[int, int, int]) -> bytes:
        """Through the chip's read-retry table, found by its parameter page as the firmware finds it: UNSUPPORTED
        without one, BAD_PARAMETER outside its range, either before the chip is touched."""
        table = table_for(self.ident.page.manufacturer, self.ident.page.model) if self.ident is not None else None
        return self._set_offsets(table, offsets)

    def _cmd_set_verify_levels(self, req: Frame, io: RigIO) -> bytes:
        """Through the chip design's verify-level feature, as SET_READ_REFS through its retry table."""
        table = table_for(self.ident.page.manufacturer, self.ident.page.model) if self.ident is not None else None
        return self._set_offsets(table and table.verify, self._args(req, P.SET_VERIFY_LEVELS_REQ))

    def _set_offsets(self, feature: FeatureOffsets | None, offsets: tuple[int, int, int]) -> bytes:
        if feature is None:
            raise Reject(Err.UNSUPPORTED)
        try:
            writes = feature.encode(offsets)
        except NandrigError:  # outside the feature's range
            raise Reject(Err.BAD_PARAMETER) from None
        return P.BYTE_REPLY.pack([self.chip.set_features(a, p) for a, p in writes][-1].status)

    def _cycle_pages(self, req: Frame, flags: int) -> tuple[int, ...]:
        """The pages each CYCLE round programs: all, or the request's page set."""
        ppb = self.chip.geometry.pages_per_block
        if not flags & CycleFlag.PAGE_SET:
            if len(req.payload) != P.CYCLE_REQ.size:
                raise Reject(Err.BAD_FRAME)
            return tuple(range(ppb))
        bitmap = req.payload[P.CYCLE_REQ.size:]
        if len(bitmap) != -(-ppb // 8):
            raise Reject(Err.BAD_FRAME)
        pages = P.page_set(bitmap)
        if not pages or pages[-1] >= ppb:
            raise Reject(Err.BAD_PARAMETER)
        return pages

    def _cmd_cycle(self, req: Frame, io: RigIO) -> bytes:
        if len(req.payload) < P.CYCLE_REQ.size:
            raise Reject(Err.BAD_FRAME)
        first, n_blocks, cycles, seed, flags = P.CYCLE_REQ.unpack(req.payload[:P.CYCLE_REQ.size])
        if n_blocks > Limit.CYCLE_MAX_BLOCKS:
            raise Reject(Err.OUT_OF_RANGE)
        if cycles > Limit.CYCLE_MAX_ROUNDS:
            raise Reject(Err.BAD_PARAMETER)
        self._block(first, n_blocks)
        self._flags(flags, P.all_flags(CycleFlag))
        pages = self._cycle_pages(req, flags)
        g = self.chip.geometry
        # the chip's bulk path knows two page sets: every page, and the lower pages alone (pseudo-SLC)
        pslc = pages == PageMap.shuffled_mlc(g.pages_per_block).of_type(PageType.LOWER)
        exact = self.exact or not (pslc or len(pages) == g.pages_per_block)
        blocks = range(first, first + n_blocks)
        for b in blocks:
            self._guard(b, flags & CycleFlag.FORCE)
        done = {b: 0 for b in blocks}
        failed = {b: False for b in blocks}
        busy_before = self.chip.busy_ns_by_phase.copy()
        job = self._start(req, n_blocks * cycles)
        rounds = 0
        while rounds < cycles and not job.abort:
            step = 1 if exact else min(CYCLE_CHUNK, cycles - rounds)
            for b in blocks:
                if failed[b]:
                    continue
                if exact:
                    ok = not self.chip.erase(b).fail and all(
                        not self.chip.program(b, p, seed=page_seed(seed, b, p)).fail for p in pages)
                    n, bad = 1, not ok
                else:
                    n, bad = self.chip.cycle(b, step, seed, pslc=pslc)
                done[b] += n
                failed[b] = bad
                job.done += n
                self._poll(io)
            rounds += step
        self._bus(sum(done.values()) * len(pages) * g.raw_page_bytes, write=True)
        busy = self.chip.busy_ns_by_phase - busy_before
        self.at.unscheduled.extend(self._cycle_ops(sum(done.values()), pages, busy["erase"], busy["program"]))
        return self._end_job(P.CYCLE_HEAD.pack(min(done.values())) + b"".join(
            P.CYCLE_BLOCK.pack(done[b], failed[b]) for b in blocks))

    def _cycle_ops(self, block_rounds: int, pages: tuple[int, ...], erase_ns: int, program_ns: int) -> list[JobOps]:
        """A CYCLE's operations for the bus schedule, as its job issues them (cycle_job.c): per block round an
        erase, then each page of the set, by cache program where the chip has it. Its array times are the mean
        erase and the mean program split by page type in the profile's proportion (lower pages program ~6x
        faster). A transfer carries its command, address and data cycles at the chip's mode, the waits between
        them (tADL, tWB), and the status read of the operation before (70h, tWHR, one byte)."""
        c = self._mode_cycles()
        ns = 1e9 / self.clk_hz if self.bus_time else 0.0
        lag = WAIT_LAG_CYCLES
        latch, status = c.latch_cycle * ns, (c.latch_cycle + c.whr + lag + c.read_cycle) * ns
        erase_bus = round(5 * latch + (c.wb + lag) * ns + status)
        program_bus = round(7 * latch + self.chip.geometry.raw_page_bytes * c.write_cycle * ns
                            + (c.adl + c.wb + 2 * lag) * ns + status)
        cache = bool(self.ident.page.optional_commands & OptionalCommand.PAGE_CACHE_PROGRAM)
        timing, page_map = self.chip.profile.timing, PageMap.shuffled_mlc(self.chip.geometry.pages_per_block)
        weight = np.array([timing.t_prog_msb_us if page_map.is_upper(p) else timing.t_prog_lsb_us for p in pages])
        last = JobOps(np.array([round(status)]), np.zeros(1, np.int64), np.zeros(1, bool))  # the last status read
        if not block_rounds:
            return [dataclasses.replace(last, bus_ns=np.zeros(1, np.int64))]
        round_bus = np.array([erase_bus] + [program_bus] * len(pages), dtype=np.int64)
        one = JobOps(round_bus, np.round(np.concatenate([[erase_ns / block_rounds],
                                                         program_ns / block_rounds * weight / weight.sum()])
                                         ).astype(np.int64), np.array([False, False] + [cache] * (len(pages) - 1)))
        first = dataclasses.replace(one, bus_ns=np.concatenate([[erase_bus - round(status)], round_bus[1:]]))
        return [first, dataclasses.replace(one, repeat=block_rounds - 1), last]  # the first follows no operation

    def _cmd_measure(self, req: Frame, io: RigIO) -> bytes:
        first, n_blocks, first_page, n_pages, seed, flags = self._args(req, P.MEASURE_REQ)
        self._flags(flags, P.all_flags(P.MeasureFlag))
        self._block(first, n_blocks)
        self._page(first_page, n_pages)
        if n_blocks * n_pages * P.MEASURE_PAGE.size > P.MAX_PAYLOAD:
            raise Reject(Err.BAD_PARAMETER)
        # as the firmware: a cache read where the chip has one, in which only the first page's tR shows
        cache = (not flags & P.MeasureFlag.TIMED and n_pages > 1
                 and bool(self.ident.page.optional_commands & OptionalCommand.READ_CACHE))
        job = self._start(req, n_blocks * n_pages)
        out = bytearray()
        for b in range(first, first + n_blocks):
            if job.abort:
                break
            e10, e01, busy = self._page_errors(b, range(first_page, first_page + n_pages), seed)
            if cache:
                busy = np.concatenate([busy[:1], np.full(n_pages - 1, P.Limit.BUSY_NOT_SEEN)])
            for x in zip(e10, e01, busy):
                out += P.MEASURE_PAGE.pack(min(int(x[0]), 0xFFFF), min(int(x[1]), 0xFFFF), min(int(x[2]), 0xFFFFFFFF))
            job.done += n_pages
            self._bus(n_pages * self.chip.geometry.raw_page_bytes, write=False)
            self._poll(io)
        return self._end_job(bytes(out))

    def _cmd_read_disturb(self, req: Frame, io: RigIO) -> bytes:
        block, page, reads = self._args(req, P.READ_DISTURB_REQ)
        self._block(block)
        self._page(page)
        job = self._start(req, reads)
        busy = 0
        while job.done < reads and not job.abort:
            if self.exact:  # as the firmware: one array read after another, a byte of each on the bus
                busy += self.chip.read(block, page).busy_ns
                self._bus(1, write=False)
                job.done += 1
            else:
                n = min(DISTURB_CHUNK, reads - job.done)
                busy += self.chip.hammer(block, page, n)
                job.done += n
            self._poll(io)
        return self._end_job(P.READ_DISTURB_REPLY.pack(job.done, min(busy // 1000, 0xFFFFFFFF)))

    def _cmd_time(self, req: Frame, io: RigIO) -> bytes:
        self._args(req, P.EMPTY_REQ)
        return P.CLOCK_REPLY.pack(self.clock_ns)

    def _cmd_advance(self, req: Frame, io: RigIO) -> bytes:
        ns, temp = self._args(req, P.ADVANCE_REQ)
        if not Limit.ADVANCE_TEMP_MIN_CENTI_C <= temp <= Limit.ADVANCE_TEMP_MAX_CENTI_C:
            raise Reject(Err.BAD_PARAMETER)
        self.wait(ns / 3.6e12, temp_c=temp / 100.0)
        return P.CLOCK_REPLY.pack(self.clock_ns)

    def _cmd_status(self, req: Frame, io: RigIO) -> bytes:
        self._args(req, P.EMPTY_REQ)
        return self._status_payload()

    def _cmd_abort(self, req: Frame, io: RigIO) -> bytes:
        self._args(req, P.EMPTY_REQ)
        return P.BYTE_REPLY.pack(0)  # nothing runs when ABORT reaches the dispatcher
