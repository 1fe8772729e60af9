"""Pin-level bus-functional model: the virtual chip (nandrig.virtual_chip.chip) behind an ONFI async SDR bus.

It runs as an Amaranth testbench beside the controller, one step per system
clock, so pin edges land on clock edges and their times are exact multiples
of the period. Every edge is checked against the ONFI timing of the mode the
chip is in (timing-mode feature 01h: mode 0 after power-up and RESET); a
violation is recorded, never silently tolerated. The chip model does the
storage and physics; this wrapper adds only what the bus needs: the page
register (a cache register and a data register, for ONFI's cache program and cache read), address
decoding, R/B# (RDY) and the array's own busy time (ARDY), and the data-valid window of each read byte
(DQ carries the inverse of the byte outside it, so a mistimed capture shows up
as errors). A byte is held tRHOH after RE# rises and, only in EDO operation (read
cycle under 30 ns), tRLOH after the next RE# fall; ``io_delay_ns`` is the board's
round trip. Given the controller's capture strobe, every capture is checked
against that window with the board's setup and hold margins.

Busy times are the chip's own, multiplied by ``busy_scale`` so simulations
stay short; the controller's busy measurement is checked against the scaled
value.
"""
from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

from nandrig.virtual_chip.chip import VirtualChip
from nandrig.chip.onfi import Feature, StatusBit
from nandrig.chip.timing import EDO_BELOW_NS, MODES
from nandrig.gateware.onfi.timing import DEFAULT_BOARD, Board, input_latency_steps, wait_guard_ns

NEVER = -math.inf
PARAM_PAGE_BUSY_NS = 25_000  # READ PARAMETER PAGE's tR (the chip model has no figure for it)
FEATURES_BUSY_NS = 1_000  # tFEAT


@dataclass
class Busy:
    start: float = NEVER
    end: float = NEVER

    def low(self, t: float) -> bool:
        return self.start <= t < self.end


@dataclass
class BusLog:
    violations: list[str] = field(default_factory=list)
    ops: list[tuple] = field(default_factory=list)  # (name, args, busy_ns as the bus saw it)
    violation_count: int = 0
    # per interval the least time beyond its minimum seen at the pins (ns), and that minimum: the margin table
    min_slack: dict[str, float] = field(default_factory=dict)
    minimum: dict[str, float] = field(default_factory=dict)

    def slack(self, what: str, ns: float, need: float) -> None:
        if ns < self.min_slack.get(what, math.inf):
            self.min_slack[what], self.minimum[what] = ns, need

    def margins_from_here(self) -> None:
        self.min_slack, self.minimum = {}, {}

    def margins(self, phy_hz: float) -> dict:
        """The margin table's line since margins_from_here(): each interval's least slack at the pins, and the
        intervals left less than timing.wait_guard_ns over their minimum."""
        return {"interval_slack_ns": {k: round(v, 2) for k, v in sorted(self.min_slack.items())},
                "short_of_guard": sorted(k for k, v in self.min_slack.items()
                                         if v < wait_guard_ns(self.minimum[k], phy_hz) - 1e-6)}

    def violate(self, t: float, what: str) -> None:
        self.violation_count += 1
        if len(self.violations) < 50:
            self.violations.append(f"{t:.0f} ns: {what}")


class NandBusModel:
    def __init__(self, chip: VirtualChip, clk_hz: float, busy_scale: float = 1e-3, io_delay_ns: float = 0.0,
                 inject: dict[tuple[int, int], list[int]] | None = None, stuck_dq: tuple[int, int] | None = None,
                 board: Board = DEFAULT_BOARD) -> None:
        """``inject``: (block, page) -> bit positions flipped in what reads of that page return (MSB-first
        bit numbering); ``stuck_dq``: (line, level) holds one DQ line at a level, as a broken adapter would;
        ``board``: the setup and hold margins every capture must keep."""
        self.board = board
        self.chip = chip
        # the part's own tCCS from its parameter page (ONFI's 500 ns when it gives none): what it needs, not
        # what the controller's table assumes
        self.t_ccs = chip.profile.parameter_page().t_ccs_ns or MODES[0].tCCS
        self.inject = inject or {}
        self.stuck_dq = stuck_dq
        self.period = 1e9 / clk_hz
        self.busy_scale = busy_scale
        self.io_delay = io_delay_ns
        self.log = BusLog()
        g = chip.geometry
        self.page_bits = (g.pages_per_block - 1).bit_length()
        self.block_bits, self.blocks_per_lun = (g.blocks_per_lun - 1).bit_length(), g.blocks_per_lun
        self.raw = g.raw_page_bytes
        self.register = bytearray(b"\xff" * self.raw)  # the cache register: what the bus writes and reads
        self.busy = Busy()  # R/B# (RDY) low
        self.array = Busy()  # the array busy (ARDY low): longer than RDY in a cache operation
        self.array_ops: list[tuple[str, int]] = []  # every array operation's own time (ns, unscaled), in order
        # cache operations: the page a cache read holds in the data register (block, page, bytes); the pass/fail
        # of the cache program before the last (FAILC) and of the last
        self.data_reg: tuple[int, int, bytes] | None = None
        self.cache_prog: tuple[bool, bool] | None = None
        self.t_cbsy = chip.profile.timing.t_cbsy_us * 1_000
        self.t_rcbsy = chip.profile.timing.t_rcbsy_us * 1_000
        # protocol state
        self.cmd: int | None = None
        self.addr: list[int] = []
        self.ptr = 0  # page-register pointer for data in/out
        self.out: bytes | None = None  # what RE# cycles read: register, ID, parameter page, features, status
        self.out_status = False
        self.pending = None  # operation to start at the confirming command's WE# rise
        # pin history (ns)
        self.prev: dict[str, int] = {}
        self.t_change: dict[str, float] = {}
        self.we_fall = self.we_rise = self.re_fall = self.re_rise = NEVER
        self.ce_fall = self.ce_rise = self.addr_rise = self.rb_rise = self.wp_change = self.e0_rise = NEVER
        # the bytes of the last RE# falls, newest last: [byte, valid from, valid until] at the FPGA's input (a long
        # round trip keeps several on the way back); ``windows`` holds the same entries not yet captured
        self.on_dq: deque[list] = deque([[0xFF, math.inf, math.inf]], maxlen=8)
        self.windows: list[list] = []
        self.feat = bytearray()
        self.last_read = b""
        self.din_times: list[float] = []  # WE# rises of the last page-data burst (bandwidth)
        self.dout_times: list[float] = []  # RE# falls of the last page-register read burst

    @property
    def timing(self):
        return MODES[self.chip.features[Feature.TIMING_MODE][0] & 0x0F]

    # -- the testbench ------------------------------------------------------------
    async def run(self, ctx, pins, capture=None, domain: str = "sync", capture_lane=None) -> None:
        """``capture``: the controller's one-cycle strobe, high after each edge at which it sampled DQ, and
        ``capture_lane`` which of ``pins.dq_i``'s samples it took (with input gearing: ``dq_i`` holds DQ at
        ``steps`` points of each cycle, the last at the edge); ``domain``: the PHY's clock (``clk_hz``)."""
        await run_bus(ctx, [self], pins, capture, domain, capture_lane)

    def _dq_at(self, t: float) -> int:
        """The byte on DQ at time t, or its inverse outside every data-valid window less the board's setup and
        hold margins: a capture outside them reads wrong, whatever sample the controller says it took."""
        setup, hold = self.board.setup_ns - 1e-6, self.board.hold_ns - 1e-6
        for byte, valid_from, valid_until in reversed(self.on_dq):  # in EDO a byte outlives the next RE# fall
            if valid_from + setup <= t <= valid_until - hold:
                return byte
        return ~self.on_dq[-1][0] & 0xFF

    def _captured(self, t: float) -> None:
        """The controller sampled DQ at t: the oldest uncaptured byte must be valid, with margins, around t."""
        if not self.windows:
            self.log.violate(t, "capture with no byte on DQ")
            return
        _, valid_from, valid_until = self.windows.pop(0)
        if t - valid_from < self.board.setup_ns - 1e-6:
            self.log.violate(t, f"read capture {t - valid_from:.1f} ns after data valid (setup {self.board.setup_ns} ns)")
        if valid_until - t < self.board.hold_ns - 1e-6:
            self.log.violate(t, f"read capture {valid_until - t:.1f} ns before data invalid (hold {self.board.hold_ns} ns)")

    # -- checks ---------------------------------------------------------------------
    def _since(self, now: float, then: float, need: float, what: str) -> None:
        if now - then < need - 1e-6:
            self.log.violate(now, f"{what}: {now - then:.1f} ns < {need} ns")
        if then != NEVER:
            self.log.slack(what, now - then - need, need)

    def _edges(self, now: float, cur: dict[str, int]) -> None:
        t, p = self.timing, self.prev
        changed = {k for k in cur if cur[k] != p.get(k)}
        # holds after the last WE# rise
        if p.get("we_n") == 1:  # holds after the last WE# rise, up to and including the next WE# fall
            for sig, hold, name in (("cle", t.tCLH, "tCLH"), ("ale", t.tALH, "tALH"), ("dq_o", t.tDH, "tDH"),
                                    ("dq_oe", t.tDH, "tDH"), ("ce_n", t.tCH, "tCH")):
                if sig in changed:
                    self._since(now, self.we_rise, hold, name)
        for k in changed:
            self.t_change[k] = now
        if cur["we_n"] == 0 and cur["re_n"] == 0:
            self.log.violate(now, "WE# and RE# low together")
        if cur["dq_oe"] and (cur["re_n"] == 0 or now - self.re_rise < t.tRHZ):
            self.log.violate(now, "DQ contention: the controller drives while the chip may")
        if "dq_oe" in changed and cur["dq_oe"] and self.re_rise != NEVER:  # the controller takes DQ after a read
            self.log.slack("tRHZ", now - self.re_rise - t.tRHZ, t.tRHZ)
        if "wp_n" in changed and "wp_n" in p:  # a change, not the power-up level
            self.wp_change = now
        if "ce_n" in changed:
            if cur["ce_n"] == 0:
                self._since(now, self.ce_rise, t.tCEH, "tCEH")
                self.ce_fall = now
            else:
                self.ce_rise = now
        if cur["ce_n"]:
            return  # deselected: the chip ignores the bus
        if "we_n" in changed:
            if cur["we_n"] == 0:
                self._since(now, self.we_rise, t.tWH, "tWH")
                self._since(now, self.we_fall, t.tWC, "tWC")
                self._since(now, self.re_rise, t.tRHW, "tRHW")
                self._since(now, self.wp_change, t.tWW, "tWW")
                self.we_fall = now
            else:
                self._latch(now, cur)
                self.we_rise = now
        if "re_n" in changed:
            if cur["re_n"] == 0:
                self._since(now, self.re_rise, t.tREH, "tREH")
                self._since(now, self.re_fall, t.tRC, "tRC")
                self._since(now, self.we_rise, t.tWHR, "tWHR")
                self._since(now, self.e0_rise, self.t_ccs, "tCCS")
                self._since(now, self.rb_rise, t.tRR, "tRR")
                if cur["cle"] or cur["ale"]:
                    self.log.violate(now, "RE# low with CLE or ALE high")
                else:  # both low: time since they fell
                    self._since(now, self.t_change.get("cle", NEVER), t.tCLR, "tCLR")
                    self._since(now, self.t_change.get("ale", NEVER), t.tAR, "tAR")
                self._next_out(now)
                self.re_fall = now
            else:
                self._since(now, self.re_fall, t.tRP, "tRP")
                self.re_rise = now
                self.on_dq[-1][2] = now + t.tRHOH + self.io_delay  # held tRHOH (longer in EDO: see _next_out)

    def _latch(self, now: float, cur: dict[str, int]) -> None:
        t = self.timing
        self._since(now, self.we_fall, t.tWP, "tWP")
        self._since(now, self.ce_fall, t.tCS, "tCS")
        self._since(now, self.t_change.get("cle", NEVER), t.tCLS, "tCLS")
        self._since(now, self.t_change.get("ale", NEVER), t.tALS, "tALS")
        self._since(now, max(self.t_change.get("dq_o", NEVER), self.t_change.get("dq_oe", NEVER)), t.tDS, "tDS")
        if not cur["dq_oe"]:
            self.log.violate(now, "WE# latch with DQ not driven")
        if cur["cle"] and cur["ale"]:
            self.log.violate(now, "CLE and ALE high together")
        byte = cur["dq_o"]
        if self.busy.low(now) and not (cur["cle"] and byte in (0x70, 0xFF)):
            self.log.violate(now, f"bus cycle while busy ({'command %02Xh' % byte if cur['cle'] else 'address/data'})")
            return
        if cur["cle"]:
            self._command(now, byte, cur)
        elif cur["ale"]:
            self._address(now, byte)
        else:
            self._since(now, self.addr_rise, t.tADL, "tADL")
            self._data_in(now, byte)

    # -- chip behaviour -----------------------------------------------------------------
    def _row(self) -> tuple[int, int]:
        a = self.addr
        row = a[-3] | a[-2] << 8 | a[-1] << 16
        blocks = row >> self.page_bits  # the block within its LUN, then the LUN (ONFI's row address)
        lun, block = blocks >> self.block_bits, blocks & ((1 << self.block_bits) - 1)
        return lun * self.blocks_per_lun + block, row & ((1 << self.page_bits) - 1)

    def _col(self) -> int:
        return self.addr[0] | self.addr[1] << 8

    def _go_busy(self, now: float, busy_ns: float, name: str, args: tuple) -> None:
        t = self.timing
        scaled = max(busy_ns * self.busy_scale, t.tWB + self.period)
        self.busy = self.array = Busy(now + t.tWB, now + scaled)
        self.rb_rise = now + scaled
        self.log.ops.append((name, args, scaled))
        if name in ("erase", "program", "read"):
            self.array_ops.append((name, int(busy_ns)))
        self.cache_prog = self.data_reg = None  # a plain operation ends any cache operation

    def _cache_busy(self, now: float, move_ns: float, array_ns: float, name: str, args: tuple) -> None:
        """A cache operation: once the array has finished what it holds, a page moves between the registers
        (``move_ns``, R/B# low until then); then the array works ``array_ns`` more with R/B# high."""
        t = self.timing
        start = max(now + t.tWB, self.array.end)
        ready = start + max(move_ns * self.busy_scale, self.period)
        self.busy = Busy(now + t.tWB, ready)
        self.array = Busy(now + t.tWB, ready + array_ns * self.busy_scale)
        self.rb_rise = ready
        self.log.ops.append((name, args, ready - now))

    def status_at(self, now: float) -> int:
        """READ STATUS: RDY and ARDY from the bus's and the array's busy times; in a cache program FAIL is the
        last page's result once the array is idle and FAILC the one before it (ONFI's status register)."""
        s = self.chip.status & ~(StatusBit.FAIL | StatusBit.FAILC)
        if self.cache_prog is not None:
            fail_c, fail_last = self.cache_prog
            s |= StatusBit.FAILC if fail_c else 0
            s |= StatusBit.FAIL if fail_last and not self.array.low(now) else 0
        else:
            s |= self.chip.status & StatusBit.FAIL
        if self.array.low(now):
            s &= ~StatusBit.ARDY
        if self.busy.low(now):
            s &= ~(StatusBit.RDY | StatusBit.ARDY)
        return s

    def _command(self, now: float, c: int, cur: dict[str, int]) -> None:
        chip = self.chip
        protected = cur["wp_n"] == 0
        self.out_status = c == 0x70
        if c == 0x70:
            return
        if self.array.low(now) and c not in self._while_array_busy():
            self.log.violate(now, f"command {c:02X}h while the array is busy (ARDY low)")
        if c == 0xFF:
            self._go_busy(now, chip.reset().busy_ns, "reset", ())
            self.register[:] = b"\xff" * self.raw
            self.cmd, self.out = None, None
        elif c in (0x90, 0xEC, 0xED, 0xEF, 0xEE, 0x60, 0x80, 0x00, 0x05):
            self.cmd, self.addr, self.out, self.feat = c, [], None, bytearray()
            if c == 0x80:
                self.register[:] = b"\xff" * self.raw
                self.ptr, self.din_times = -1, []
        elif c == 0xD0 and self.cmd == 0x60:
            block, _ = self._row()
            if protected:
                chip.status = StatusBit.FAIL | 0x60
                self._go_busy(now, 0, "erase-protected", (block,))
            else:
                self._go_busy(now, chip.erase(block).busy_ns, "erase", (block,))
            self.cmd = None
        elif c in (0x10, 0x15) and self.cmd == 0x80:
            block, page = self._row()
            if protected:
                chip.status = StatusBit.FAIL | 0x60
                self._go_busy(now, 0, "program-protected", (block, page))
            else:
                op = chip.program(block, page, bytes(self.register))
                if c == 0x10 and self.cache_prog is None:
                    self._go_busy(now, op.busy_ns, "program", (block, page))
                else:  # 15h, or the 10h that ends a cache program: R/B# low until the array has this page too
                    self.array_ops.append(("program", op.busy_ns))
                    if c == 0x15:
                        self._cache_busy(now, self.t_cbsy, op.busy_ns, "cache-program", (block, page))
                    else:
                        self._cache_busy(now, self.t_cbsy + op.busy_ns, 0, "program", (block, page))
                    before = self.cache_prog[1] if self.cache_prog else False
                    self.cache_prog = (before, bool(op.status & StatusBit.FAIL))
            self.cmd = None
        elif c == 0x30 and self.cmd == 0x00:
            block, page = self._row()
            data, busy_ns = self._array_read(block, page)
            self._go_busy(now, busy_ns, "read", (block, page))
            self._to_cache_register(data, self._col())
            self.data_reg = (block, page, data)
        elif c in (0x31, 0x3F):  # sequential cache read: the data register's page out, the next one in
            if self.data_reg is None:
                self.log.violate(now, f"{c:02X}h with no page read before it")
                return
            block, page, data = self.data_reg
            self._to_cache_register(data, 0)
            last = c == 0x3F or page + 1 >= self.chip.geometry.pages_per_block
            if c == 0x31 and last:
                self.log.violate(now, "31h past the block's last page")
            if last:
                self.data_reg = None
                self._cache_busy(now, self.t_rcbsy, 0, "cache-read-end", (block, page))
            else:
                nxt, busy_ns = self._array_read(block, page + 1)
                self.array_ops.append(("read", busy_ns))
                self.data_reg = (block, page + 1, nxt)
                self._cache_busy(now, self.t_rcbsy, busy_ns, "cache-read", (block, page + 1))
            self.cmd = None
        elif c == 0xE0 and self.cmd in (0x05, 0x00, 0x80):
            self.e0_rise = now
            self.ptr, self.out, self.dout_times = self._col(), self.register, []
            self.log.ops.append(("change-read-column", (self.ptr,), 0))
        else:
            self.log.violate(now, f"unexpected command {c:02X}h")

    def _while_array_busy(self) -> tuple[int, ...]:
        """Commands a cache operation accepts while the array works (RDY high, ARDY low)."""
        if self.cache_prog is not None:
            return 0x70, 0xFF, 0x80, 0x10, 0x15
        if self.data_reg is not None:
            return 0x70, 0xFF, 0x31, 0x3F, 0x05, 0xE0
        return 0x70, 0xFF

    def _array_read(self, block: int, page: int) -> tuple[bytes, int]:
        """A page from the array into the data register, with the injected bit flips."""
        r = self.chip.read(block, page)
        data = bytearray(r.data)
        for bit in self.inject.get((block, page), ()):
            data[bit // 8] ^= 0x80 >> (bit % 8)
        return bytes(data), r.busy_ns

    def _to_cache_register(self, data: bytes, col: int) -> None:
        self.register[:] = data
        self.last_read = bytes(data)
        self.ptr, self.out, self.dout_times = col, self.register, []

    def _address(self, now: float, byte: int) -> None:
        self.addr.append(byte)
        self.addr_rise = now
        if self.cmd == 0x90:
            self.out, self.ptr = self.chip.read_id(byte) + bytes(4), 0
        elif self.cmd == 0xEC:
            self.out, self.ptr = self.chip.read_parameter_page(), 0
            self._go_busy(now, PARAM_PAGE_BUSY_NS, "read-parameter-page", ())
        elif self.cmd == 0xED:
            self.out, self.ptr = self.chip.read_unique_id(), 0
            self._go_busy(now, PARAM_PAGE_BUSY_NS, "read-unique-id", ())
        elif self.cmd == 0xEE:
            self.out, self.ptr = self.chip.get_features(byte), 0
            self._go_busy(now, FEATURES_BUSY_NS, "get-features", (byte,))

    def _data_in(self, now: float, byte: int) -> None:
        if self.cmd == 0x80:
            if self.ptr < 0:
                self.ptr = self._col()
            if self.stuck_dq is not None:  # the broken line corrupts both directions
                line, level = self.stuck_dq
                byte = byte | 1 << line if level else byte & ~(1 << line)
            if self.ptr < self.raw:
                self.register[self.ptr] = byte
            self.ptr += 1
            self.din_times.append(now)
        elif self.cmd == 0xEF:
            self.feat.append(byte)
            if len(self.feat) == 4:
                res = self.chip.set_features(self.addr[0], bytes(self.feat))
                self._go_busy(now, max(res.busy_ns, FEATURES_BUSY_NS), "set-features", (self.addr[0],))
                self.cmd = None
        else:
            self.log.violate(now, "data input outside PROGRAM / SET FEATURES")

    def _next_out(self, now: float) -> None:
        """RE# fell: the chip puts the next byte on DQ, valid tREA later; in EDO operation the previous one
        stays tRLOH longer."""
        t = self.timing
        edo = now - self.re_fall < EDO_BELOW_NS
        prev = self.on_dq[-1]  # the previous byte: held tRHOH after RE# rose, in EDO until tRLOH after this fall
        prev[2] = max(self.re_rise + t.tRHOH, now + t.tRLOH if edo else NEVER) + self.io_delay
        entry = [self._byte_out(now), now + t.tREA + self.io_delay, math.inf]
        self.on_dq.append(entry)
        self.windows.append(entry)

    def _byte_out(self, now: float) -> int:
        if self.out_status:
            return self.status_at(now)
        if self.busy.low(now):
            self.log.violate(now, "data read while busy")
        if self.out is None:
            self.log.violate(now, "RE# with nothing to read")
            return 0xFF
        byte = self.out[self.ptr] if self.ptr < len(self.out) else 0x00
        self.ptr += 1
        if self.out is self.register:
            self.dout_times.append(now)
        return byte


PIN_NAMES = ("ce_n", "cle", "ale", "we_n", "re_n", "wp_n", "dq_o", "dq_oe")


async def run_bus(ctx, models: list[NandBusModel], pins, capture=None, domain: str = "sync", capture_lane=None,
                  latency_steps: int | None = None) -> None:
    """Chips on one bus: model k on CE# and R/B# bit k, all seeing DQ, CLE, ALE, WE#, RE# and WP#; DQ carries
    the byte of the target selected last (the PHY captures only while one is selected). All share one clock.
    ``latency_steps``: steps between a DQ sample and the PHY seeing it in ``dq_i`` (the input gearing's; None:
    its nominal, :func:`timing.input_latency_steps`)."""
    sigs = [getattr(pins, n) for n in PIN_NAMES]
    period = models[0].period
    steps = len(pins.dq_i) // 8
    step = period / steps
    latency = input_latency_steps(steps) if latency_steps is None else latency_steps
    samples = deque([0] * latency, maxlen=latency + steps)  # DQ as sampled, oldest first, on its way to dq_i
    n, talking = 0, models[0]
    while True:
        await ctx.tick(domain)
        n += 1
        now = n * period
        shared = dict(zip(PIN_NAMES, (ctx.get(s) for s in sigs)))
        for k, m in enumerate(models):
            cur = shared | {"ce_n": shared["ce_n"] >> k & 1}
            if not cur["ce_n"]:
                talking = m
            if cur != m.prev:
                m._edges(now, cur)
                m.prev = cur
        if capture is not None and ctx.get(capture):  # sampled at this edge, where RE# may have risen too
            lane = ctx.get(capture_lane) if capture_lane is not None else steps - 1
            talking._captured(now - (steps - 1 - lane + latency) * step)
        nxt = now + period  # the controller samples what we drive now by the next edge
        ctx.set(pins.rb_n, sum((0 if m.busy.low(nxt) else 1) << k for k, m in enumerate(models)))
        for k in range(steps):
            dq = talking._dq_at(nxt - (steps - 1 - k) * step)
            if talking.stuck_dq is not None:
                line, level = talking.stuck_dq
                dq = dq | 1 << line if level else dq & ~(1 << line)
            samples.append(dq)
        ctx.set(pins.dq_i, sum(samples[k] << 8 * k for k in range(steps)))


def ns_per_byte(times: list[float]) -> float:
    """Mean spacing of a burst's bus cycles."""
    return (times[-1] - times[0]) / (len(times) - 1)
