"""FLARES on the virtual rig (firmware/rig/flares_ops.c): FLARES_CONFIG / FLARES_PROGRAM / FLARES_READ /
FLARES_TABLES over the golden model of boards/sim/rig_flares.py."""
from __future__ import annotations

from nandrig import protocol as P
from nandrig.boards.sim import ecc_layout, rig_flares
from nandrig.boards.sim.job import RigIO
from nandrig.boards.sim.rig import Reject
from nandrig.chip.pattern import page_seed, prbs31_bytes
from nandrig.protocol import Err, FlaresProgramFlag, FlaresReadFlag, FlaresTablesFlag, Frame, Limit, ReadFlag


class FlaresCommands:
    """Mixed into VirtualRig beside ChipCommands, whose checks and READ reply these use."""

    def _now_s(self) -> int:
        """FLARES' clock (firmware/rig/flares_ops.c now_s): the rig's whole seconds and the bakes' credit, u32."""
        return (self.chip.clock_ns // 1_000_000_000 + self.flares.clock_credit_s) & 0xFFFF_FFFF

    def _flares_supported(self) -> None:
        if not self.t_max:
            raise Reject(Err.UNSUPPORTED)

    def _cmd_flares_config(self, req: Frame, io: RigIO) -> bytes:
        head = P.FLARES_CONFIG_REQ.size
        if len(req.payload) < head:
            raise Reject(Err.BAD_FRAME)
        wsize, mix, saferange, maxfail, maxcritical, maxover, req_ret, flags = \
            P.FLARES_CONFIG_REQ.unpack(req.payload[:head])
        guarded = bool(flags & P.FlaresConfigFlag.GUARDED)
        if len(req.payload) != head + (P.FLARES_GUARD_REQ.size if guarded else 0):
            raise Reject(Err.BAD_FRAME)
        z10, use_pm = P.FLARES_GUARD_REQ.unpack(req.payload[head:]) if guarded else (0, 0)
        self._flares_supported()
        if not 1 <= wsize <= Limit.FLARES_WSIZE_MAX or mix > Limit.PERMILLE_MAX or saferange > Limit.PERMILLE_MAX \
                or z10 > Limit.FLARES_GUARD_Z10_MAX or use_pm > Limit.PERMILLE_MAX:
            raise Reject(Err.BAD_PARAMETER)
        self._flags(flags, P.all_flags(P.FlaresConfigFlag))
        self.flares.configure(rig_flares.FlaresConfig(
            wsize, mix, saferange, maxfail, maxcritical, maxover, req_ret,
            evaluate_on_alarm=bool(flags & P.FlaresConfigFlag.EVALUATE_ON_ALARM),
            guarded=guarded, guard_z10=z10, alarm_use_pm=use_pm))
        return P.FLARES_CONFIG_REPLY.pack(rig_flares.rig_tables().t_min, self.flares.config.t_cap, rig_flares.PROFILE_SLOTS,
                                          *self.flares.source)

    def _cmd_flares_tables(self, req: Frame, io: RigIO) -> bytes:
        head = P.FLARES_TABLES_REQ.size
        if len(req.payload) < head:
            raise Reject(Err.BAD_FRAME)
        offset, total, crc, flags = P.FLARES_TABLES_REQ.unpack(req.payload[:head])
        chunk = req.payload[head:]
        self._flares_supported()
        self._flags(flags, P.all_flags(FlaresTablesFlag))
        if flags & FlaresTablesFlag.BUILTIN and (chunk or flags != FlaresTablesFlag.BUILTIN):
            raise Reject(Err.BAD_PARAMETER)
        if offset + len(chunk) > Limit.PAGE_BUFFER_BYTES or total > Limit.PAGE_BUFFER_BYTES:
            raise Reject(Err.OUT_OF_RANGE)
        self.flares.stage_chunk(offset, chunk)
        if flags & FlaresTablesFlag.BUILTIN:
            self.flares.builtin()
        elif flags & FlaresTablesFlag.COMMIT and not self.flares.commit(total, crc):
            raise Reject(Err.BAD_PARAMETER)
        source, crc_now = self.flares.source
        return P.FLARES_TABLES_REPLY.pack(source, len(self.flares.tables), crc_now)

    def _cmd_flares_clock(self, req: Frame, io: RigIO) -> bytes:
        (credit,) = self._args(req, P.FLARES_CLOCK_REQ)
        self._flares_supported()
        self.flares.clock_credit_s = credit  # a total: a repeated request leaves the clock as it was
        return P.FLARES_CLOCK_REPLY.pack(self._now_s())

    def _cmd_flares_program(self, req: Frame, io: RigIO) -> bytes:
        block, page, flags, seed, pe = self._args(req, P.FLARES_PROGRAM_REQ)
        self._flares_supported()
        self._block(block)
        self._page(page)
        self._flags(flags, P.all_flags(FlaresProgramFlag))
        if not 1 <= pe <= rig_flares.PE_MAX:
            raise Reject(Err.BAD_PARAMETER)
        self._guard(block, flags & FlaresProgramFlag.FORCE)
        if not self.flares.has_room((block, page)):
            raise Reject(Err.NO_SPACE)
        pp, d, new = self.flares.program((block, page), pe, self._now_s(), _page_type(flags))
        g = self.chip.geometry
        raw = prbs31_bytes(page_seed(seed, block, page), g.raw_page_bytes)
        self._bus(g.raw_page_bytes, write=True)
        r = self.chip.program(block, page, ecc_layout.encode_page(raw, g.page_bytes, pp.p_cur, rig_flares.pack(pp)))
        body = P.CHIP_RESULT.pack(r.status, min(r.busy_ns, 0xFFFFFFFF)) + _decision(pp.p_cur, d, new)
        if r.status & 0x01:
            raise Reject(Err.CHIP_FAIL, body)
        return body

    def _cmd_flares_read(self, req: Frame, io: RigIO) -> bytes:
        block, page, flags, seed = self._args(req, P.FLARES_READ_REQ)
        self._flares_supported()
        self._block(block)
        self._page(page)
        self._flags(flags, P.all_flags(FlaresReadFlag))
        page_type, flags = _page_type(flags), flags & P.all_flags(ReadFlag)
        key = (block, page)
        if not self.flares.has_room(key):
            raise Reject(Err.NO_SPACE)
        g = self.chip.geometry
        r = self.chip.read(block, page)
        pp, source = self.flares.profile_for_read(key, r.data[ecc_layout.profile_slice(g.page_bytes)])
        t = pp.p_cur if pp else 0
        body, corrected, failed = self._read_reply(r, block, page, t, flags, seed)
        d, deterr = rig_flares.NO_DECISION, 0
        if pp is not None:  # FLARES' error count: the mean over the page's codewords, rounded up
            n_data = g.page_bytes // self.codeword_bytes
            deterr = -(-corrected // n_data)
            d = self.flares.read(pp, deterr, failed > 0, self._now_s(), page_type, corrected, n_data)
        head = _decision(t, d, False) + P.FLARES_READ_TAIL.pack(int(source), min(deterr, 0xFFFF), failed)
        return head + body


def _page_type(flags: int) -> int:
    """nandrig.chip.geometry.PageType as the host names it (FLARES_PROGRAM and FLARES_READ share the bit)."""
    return 1 if flags & P.UPPER_PAGE_FLAG else 0


def _decision(t: int, d: rig_flares.Decision, new: bool) -> bytes:
    flags = ((P.Decide.ALARM if d.alarm else 0) | (P.Decide.INVALIDATE if d.invalidate else 0)
             | (P.Decide.NEW_PROFILE if new else 0) | (P.Decide.BEYOND_REACH if d.beyond_reach else 0))
    return P.FLARES_DECISION.pack(t, int(d.zone), d.p, int(flags))

