"""ONFI controller: microcoded sequencer over the PHY, page buffer, PRBS generator and error counter.

Each operation is a short program of bus steps (:data:`PROGRAMS`): a beat
kind, where its byte comes from and how often it repeats. The sequencer
walks the ROM; the PHY holds each beat until its timings allow it. Reads
store into the page buffer and, with a pattern source, count errors against
the regenerated pattern as the bytes arrive.
"""
from __future__ import annotations

from types import SimpleNamespace

import enum
import operator
from dataclasses import dataclass
from functools import reduce

from amaranth import Array, Cat, Const, DomainRenamer, Module, Mux, ResetInserter, Signal
from amaranth.lib import data, fifo, wiring
from amaranth.lib.wiring import In, Out

from nandrig.errors import NandrigError
from nandrig.gateware.bch.config import BchConfig
from nandrig.gateware.bch.decoder import SEARCH_DOMAIN
from nandrig.gateware.bch.frontend import BchFrontend
from nandrig.gateware.onfi.buffer import PageBuffer
from nandrig.gateware.onfi.counter import ErrorCounter
from nandrig.gateware.onfi.link import NAND_DOMAIN, PhyLink
from nandrig.gateware.onfi.pattern import Prbs31, walk_logic
from nandrig.gateware.onfi.phy import BEAT_LAYOUT, SYNC_STAGES, Kind, OnfiPhy, PinSignature
from nandrig.gateware.onfi.registers import (BCH_CONTROL_LAYOUT, BCH_STATUS_LAYOUT, CONTROL_LAYOUT, OP_BITS,
                                             STATUS_LAYOUT, OnfiOp, OnfiSource)
from nandrig.gateware.onfi.timing import DEFAULT_CLK_HZ
from nandrig.protocol import Limit


PREFETCH_DEPTH = 4  # buffer bytes read ahead of DIN beats: two in flight, two waiting


class Byte(enum.IntEnum):
    """Where a beat's byte comes from."""

    IMM = 0
    COL0 = 1
    COL1 = 2
    ROW0 = 3
    ROW1 = 4
    ROW2 = 5
    FADDR = 6
    PARAM = 7  # SET FEATURES parameter, repeat index selects P1..P4
    DATA = 8  # the data source (buffer, PRBS, walk)


class Count(enum.IntEnum):
    ONE = 0
    FOUR = 1
    LENGTH = 2


class Dest(enum.IntEnum):
    DATA = 0  # page buffer (and the error counter with a pattern source)
    STATUS = 1


@dataclass(frozen=True)
class Step:
    kind: Kind | None  # None ends the program
    byte: Byte = Byte.IMM
    imm: int = 0
    count: Count = Count.ONE
    dest: Dest = Dest.DATA


STEP_LAYOUT = data.StructLayout({"end": 1, "kind": 3, "byte": 4, "imm": 8, "count": 2, "dest": 1})


def cmd(c: int) -> Step:
    return Step(Kind.CMD, Byte.IMM, c)


def addr(b: Byte) -> Step:
    return Step(Kind.ADDR, b)


SEL, DESEL, WAIT, SETTLE, END = Step(Kind.SELECT), Step(Kind.DESELECT), Step(Kind.WAIT_RB), Step(Kind.SETTLE), Step(None)
COL = [addr(Byte.COL0), addr(Byte.COL1)]
ROW = [addr(Byte.ROW0), addr(Byte.ROW1), addr(Byte.ROW2)]
DATA_IN = Step(Kind.DIN, Byte.DATA, count=Count.LENGTH)
DATA_OUT = Step(Kind.DOUT, count=Count.LENGTH)
STATUS_READ = [cmd(0x70), Step(Kind.DOUT, dest=Dest.STATUS)]

PROGRAMS: dict[OnfiOp, list[Step]] = {
    OnfiOp.RESET: [SEL, cmd(0xFF), WAIT, DESEL, END],
    OnfiOp.READ_ID: [SEL, cmd(0x90), addr(Byte.FADDR), DATA_OUT, DESEL, END],
    OnfiOp.READ_PARAM: [SEL, cmd(0xEC), addr(Byte.IMM), WAIT, DATA_OUT, DESEL, END],
    OnfiOp.READ_UNIQUE_ID: [SEL, cmd(0xED), addr(Byte.IMM), WAIT, DATA_OUT, DESEL, END],
    OnfiOp.READ_STATUS: [SEL, *STATUS_READ, DESEL, END],
    OnfiOp.SET_FEATURES: [SEL, cmd(0xEF), addr(Byte.FADDR), Step(Kind.DIN, Byte.PARAM, count=Count.FOUR), WAIT, DESEL, END],
    OnfiOp.GET_FEATURES: [SEL, cmd(0xEE), addr(Byte.FADDR), WAIT, Step(Kind.DOUT, count=Count.FOUR), DESEL, END],
    OnfiOp.ERASE: [SEL, cmd(0x60), *ROW, cmd(0xD0), WAIT, *STATUS_READ, DESEL, END],
    OnfiOp.PROGRAM: [SEL, cmd(0x80), *COL, *ROW, DATA_IN, cmd(0x10), WAIT, *STATUS_READ, DESEL, END],
    # the status after 15h reports the page before this one (FAILC): this one is still programming
    OnfiOp.CACHE_PROGRAM: [SEL, cmd(0x80), *COL, *ROW, DATA_IN, cmd(0x15), WAIT, *STATUS_READ, DESEL, END],
    OnfiOp.READ: [SEL, cmd(0x00), *COL, *ROW, cmd(0x30), WAIT, DATA_OUT, DESEL, END],
    # sequential cache read: after READ (00h-30h) of page n, each 31h brings page n, n+1, ... out of the cache register
    # while the array reads the one after; 3Fh brings out the last without starting another
    OnfiOp.READ_CACHE: [SEL, cmd(0x31), WAIT, DATA_OUT, DESEL, END],
    OnfiOp.READ_CACHE_END: [SEL, cmd(0x3F), WAIT, DATA_OUT, DESEL, END],
    OnfiOp.CHANGE_READ_COLUMN: [SEL, cmd(0x05), *COL, cmd(0xE0), DATA_OUT, DESEL, END],
    OnfiOp.ERASE_LAUNCH: [SEL, cmd(0x60), *ROW, cmd(0xD0), SETTLE, DESEL, END],
    OnfiOp.PROGRAM_LAUNCH: [SEL, cmd(0x80), *COL, *ROW, DATA_IN, cmd(0x10), SETTLE, DESEL, END],
    OnfiOp.READ_LAUNCH: [SEL, cmd(0x00), *COL, *ROW, cmd(0x30), SETTLE, DESEL, END],
    OnfiOp.CACHE_PROGRAM_LAUNCH: [SEL, cmd(0x80), *COL, *ROW, DATA_IN, cmd(0x15), SETTLE, DESEL, END],
    # load the page register without confirming and read it back; the next 80h or 00h-30h overwrites it
    # (not RESET, which would also drop the chip to timing mode 0)
    OnfiOp.SELFTEST: [SEL, cmd(0x80), *COL, *ROW, DATA_IN, cmd(0x05), *COL, cmd(0xE0), DATA_OUT, DESEL, END],
}


# the operations whose data goes out from the page buffer (with the BUFFER source): it is read ahead for them
BUFFER_PROGRAMS = [op for op, steps in PROGRAMS.items() if DATA_IN in steps]


def assemble() -> tuple[list[int], dict[OnfiOp, int]]:
    """The microcode ROM and each operation's entry point."""
    rom, entry = [], {}
    for op, steps in PROGRAMS.items():
        # the sequencer starts on SELECT and ends on the only DESELECT (PhyLink)
        assert steps[0] == SEL and steps[-2:] == [DESEL, END] and steps.count(DESEL) == 1, op
        entry[op] = len(rom)
        for s in steps:
            rom.append(STEP_LAYOUT.const({"end": s.kind is None, "kind": 0 if s.kind is None else s.kind,
                                          "byte": s.byte, "imm": s.imm, "count": s.count, "dest": s.dest}).as_value().value)
    return rom, entry


class OnfiController(wiring.Component):
    """PHY + sequencer + page buffer + PRBS + error counter; ``ctrl``/``stat`` are the register file.

    With ``bch`` the BCH engine's frontend shares the buffer's engine port: it runs while the
    sequencer idles, and a start of either waits for the other (``bch_ctrl``/``bch_stat``)."""

    def __init__(self, clk_hz: float = DEFAULT_CLK_HZ, buffer_bytes: int = Limit.PAGE_BUFFER_BYTES, max_codewords: int = 32,
                 bch: BchConfig | None = None, nand_clk_hz: float | None = None, capture_steps: int = 1,
                 targets: int = 1) -> None:
        """``capture_steps``: DQ samples per PHY cycle the board's input gearing gives (``pins.dq_i``); ``targets``:
        chips on the bus, each with its own CE# and R/B# (``pins.ce_n``/``rb_n`` bit k)."""
        self.targets = targets
        self.clk_hz = clk_hz
        self.nand_clk_hz = nand_clk_hz  # None: the PHY runs on the system clock
        self.buffer_bytes = buffer_bytes
        self.max_codewords = max_codewords
        self.bch = bch
        if bch is not None and bch.search_clock_ratio > 1 and nand_clk_hz != bch.search_clock_ratio * clk_hz:
            raise NandrigError(f"the BCH engine's Chien search runs on the NAND clock, which must be "
                               f"{bch.search_clock_ratio} x the system clock ({clk_hz / 1e6:g} MHz), "
                               f"not {(nand_clk_hz or 0) / 1e6:g} MHz")
        counter = ErrorCounter(max_codewords)
        bch_ports = {"bch_ctrl": In(BCH_CONTROL_LAYOUT), "bch_start": In(1), "bch_stat": Out(BCH_STATUS_LAYOUT)} if bch else {}
        super().__init__({
            **bch_ports,
            "pins": Out(PinSignature(capture_steps, targets)),
            "ctrl": In(CONTROL_LAYOUT),
            "start": In(1),
            "stat": Out(STATUS_LAYOUT),
            "lane_1to0": Out(counter.lane_1to0.shape()), "lane_0to1": Out(counter.lane_0to1.shape()),
            "cw_index": In(range(max_codewords)), "cw_counts": Out(counter.cw_counts.shape()),
            "cpu_addr": In((buffer_bytes - 1).bit_length() - 2), "cpu_we": In(1), "cpu_sel": In(4),
            "cpu_wdata": In(32), "cpu_rdata": Out(32),
        })
        self._counter = counter
        self.phy = OnfiPhy(nand_clk_hz or clk_hz, capture_steps, targets)  # its capture strobe is what the bus model checks read timing by

    # The controller in six parts, emitted in this order (a later statement takes precedence in a cycle): its
    # parts and their wiring, the sequencer stepping through the operation's program, the beats it queues for the
    # PHY, the read bytes coming back, the page buffer read ahead for programs, and an operation's start and end
    # (the BCH frontend taking the buffer between operations).
    def elaborate(self, platform):
        mod = Module()
        s = self._parts(mod)
        self._sequencer(mod, s)
        self._beats(mod, s)
        self._read_back(mod, s)
        self._read_ahead(mod, s)
        self._start_and_end(mod, s)
        return mod

    def _parts(self, mod: Module) -> SimpleNamespace:
        phy = self.phy
        mod.submodules.phy = phy if self.nand_clk_hz is None else DomainRenamer(NAND_DOMAIN)(phy)
        mod.submodules.buf = buf = PageBuffer(self.buffer_bytes)
        mod.submodules.counter = cnt = self._counter
        mod.submodules.prbs = prbs = Prbs31()
        wiring.connect(mod, wiring.flipped(self.pins), phy.pins)
        mod.d.comb += [
            buf.cpu_addr.eq(self.cpu_addr), buf.cpu_we.eq(self.cpu_we), buf.cpu_sel.eq(self.cpu_sel),
            buf.cpu_wdata.eq(self.cpu_wdata), self.cpu_rdata.eq(buf.cpu_rdata),
            cnt.cw_index.eq(self.cw_index), self.cw_counts.eq(cnt.cw_counts),
            self.lane_1to0.eq(cnt.lane_1to0), self.lane_0to1.eq(cnt.lane_0to1),
        ]
        return SimpleNamespace(buf=buf, cnt=cnt, prbs=prbs)

    def _sequencer(self, mod: Module, s: SimpleNamespace) -> None:
        """The operation's program from the ROM: a step's beats repeated ``count`` times, the next step read ahead."""
        rom_words, entry = assemble()
        rom = Array(Const(w, STEP_LAYOUT.size) for w in rom_words)
        end_of = {op: entry[op] + len(PROGRAMS[op]) - 1 for op in entry}
        s.entries = Array(Const(entry.get(op, end_of[OnfiOp.RESET]), 8)  # unknown ops do nothing
                          for op in range(1 << OP_BITS))

        s.c = c = Signal(CONTROL_LAYOUT, name="c")  # operands latched at start
        s.pc = Signal(range(len(rom_words)), name="pc")
        s.rep = Signal(16, name="rep")
        s.running = Signal(name="running")
        s.step = Signal(STEP_LAYOUT, name="step")
        mod.d.comb += s.step.eq(rom[s.pc])
        s.link = link = PhyLink(self.phy, self.nand_clk_hz is not None)
        mod.submodules.link = link
        # set at start (wp_n by the CPU) and steady while the PHY works: each crosses on its own
        mod.d.comb += [link.mode.eq(c.mode), link.rd_trim.eq(c.rd_trim), link.timeout.eq(c.timeout),
                       link.ccs.eq(c.ccs), link.target.eq(c.target), link.wp_n.eq(self.ctrl.wp_n)]
        # every target's R/B# for the CPU, which polls it to schedule the targets: its own synchronizer here, in the
        # system clock (a launch ends once the PHY's has seen the target busy, so this one has too by then)
        ready = [Signal(self.targets, init=(1 << self.targets) - 1, name=f"ready{k}") for k in range(SYNC_STAGES)]
        mod.d.sync += [ready[0].eq(self.pins.rb_n), *(b.eq(a) for a, b in zip(ready, ready[1:]))]
        mod.d.comb += self.stat.ready.eq(ready[-1])
        s.count_of = lambda st: Mux(st.count == Count.ONE, 1, Mux(st.count == Count.FOUR, 4, c.length))
        s.step_nx = Signal(STEP_LAYOUT, name="step_nx")  # the step after this one, looked up in parallel
        mod.d.comb += s.step_nx.eq(rom[s.pc + 1])
        s.rep_last = Signal(init=1, name="rep_last")  # registered "this repetition ends the step": keeps the ROM off the fire path

    def _beats(self, mod: Module, s: SimpleNamespace) -> None:
        """Each step's beat, with its byte, into the PHY's queue; DIN bytes from the pattern or the buffer."""
        c, step, rep, prbs = s.c, s.step, s.rep, s.prbs
        pattern = Signal(8)
        pf_byte = Signal(8)  # the buffer's next byte, read ahead (below)
        with mod.Switch(c.src):
            with mod.Case(OnfiSource.PRBS):
                mod.d.comb += pattern.eq(prbs.byte)
            with mod.Case(OnfiSource.WALK):
                mod.d.comb += pattern.eq(walk_logic(rep))
            with mod.Default():
                mod.d.comb += pattern.eq(pf_byte)
        byte = Signal(8)
        sources = {Byte.IMM: step.imm, Byte.COL0: c.col[:8], Byte.COL1: c.col[8:], Byte.ROW0: c.row[:8],
                   Byte.ROW1: c.row[8:16], Byte.ROW2: c.row[16:], Byte.FADDR: c.faddr,
                   Byte.PARAM: c.params.word_select(rep[:2], 8), Byte.DATA: pattern}
        with mod.Switch(step.byte):
            for k, v in sources.items():
                with mod.Case(k):
                    mod.d.comb += byte.eq(v)

        queue = s.link.queue
        beat = Signal(BEAT_LAYOUT)
        s.is_din = is_din = (step.kind == Kind.DIN) & (step.byte == Byte.DATA)
        s.from_buffer = from_buffer = is_din & (c.src == OnfiSource.BUFFER)
        # the buffer answers two cycles after an address: its bytes are read ahead into a small FIFO, so a
        # DIN beat can go every cycle (the ULX3S's system clock, half its NAND clock, gives a byte per mode-5 write cycle)
        s.go = Signal(name="go")  # an operation starts
        s.prefetch = prefetch = ResetInserter(s.go)(fifo.SyncFIFO(width=8, depth=PREFETCH_DEPTH))
        mod.submodules.prefetch = prefetch
        pf_addr, pf_left = Signal(16), Signal(16)  # the next byte to read ahead, and how many are left
        s.pf_addr, s.pf_left = pf_addr, pf_left  # (named as before the split: names steer the placer)
        mod.d.comb += [beat.kind.eq(step.kind), beat.data.eq(byte), queue.w_data.eq(beat),
                       queue.w_en.eq(s.running & ~step.end & (~from_buffer | prefetch.r_rdy))]
        s.fire = fire = queue.w_en & queue.w_rdy
        advance = fire & s.rep_last
        mod.d.comb += [prefetch.r_en.eq(fire & from_buffer), pf_byte.eq(prefetch.r_data)]
        with mod.If(fire):
            mod.d.sync += rep.eq(Mux(advance, 0, rep + 1))
            with mod.If(advance):
                mod.d.sync += [s.pc.eq(s.pc + 1), s.rep_last.eq(s.count_of(s.step_nx) <= 1)]
            with mod.Else():
                mod.d.sync += s.rep_last.eq(rep + 2 >= s.count_of(step))
        mod.d.comb += prbs.advance.eq(fire & is_din & (c.src == OnfiSource.PRBS))

    def _read_back(self, mod: Module, s: SimpleNamespace) -> None:
        """Read data: DOUT beats remember their destination; bytes arrive sample cycles later, into the buffer and
        the error counter (a pattern to compare with) or the status register."""
        c, buf, cnt, prbs, link = s.c, s.buf, s.cnt, s.prbs, s.link
        rdest = Signal(1)
        s.ridx = ridx = Signal(16, name="ridx")
        s.wa = wa = Signal(16, name="wa")  # buf_addr + ridx
        with mod.If(s.fire & (s.step.kind == Kind.DOUT)):
            mod.d.sync += rdest.eq(s.step.dest)
        arrive = link.rdata_valid
        s.to_data = to_data = arrive & (rdest == Dest.DATA)
        compare = c.src != OnfiSource.BUFFER
        expected = Mux(c.src == OnfiSource.PRBS, prbs.byte, walk_logic(ridx))
        mod.d.comb += [
            # one engine address (block RAM ports): no operation reads and writes the buffer at once
            buf.eng_addr.eq(Mux(to_data, wa, s.pf_addr)),
            buf.eng_wdata.eq(link.rdata), buf.eng_we.eq(to_data),
            cnt.valid.eq(to_data & compare), cnt.expected.eq(expected), cnt.got.eq(link.rdata),
            cnt.last.eq(ridx + 1 == c.length), cnt.cw_bytes.eq(c.cw_bytes),
        ]
        with mod.If(to_data):
            mod.d.sync += [ridx.eq(ridx + 1), wa.eq(wa + 1)]
            with mod.If(c.src == OnfiSource.PRBS):
                mod.d.comb += prbs.advance.eq(1)
        with mod.If(arrive & (rdest == Dest.STATUS)):
            mod.d.sync += self.stat.chip_status.eq(link.rdata)

    def _read_ahead(self, mod: Module, s: SimpleNamespace) -> None:
        """PROGRAM and SELFTEST from the buffer take `length` bytes from buf_addr on; a read is issued while the
        FIFO has room for it beside those in flight, never in a cycle a read byte is written."""
        prefetch = s.prefetch
        in_flight = Signal(2)  # bit k: a read issued k + 1 cycles ago
        issue = (s.running & (s.pf_left != 0) & ~s.to_data
                 & (prefetch.level + in_flight[0] + in_flight[1] < PREFETCH_DEPTH))
        mod.d.sync += in_flight.eq(Cat(issue, in_flight[0]))
        mod.d.comb += [prefetch.w_data.eq(s.buf.eng_rdata), prefetch.w_en.eq(in_flight[1])]
        with mod.If(issue):
            mod.d.sync += [s.pf_addr.eq(s.pf_addr + 1), s.pf_left.eq(s.pf_left - 1)]

    def _start_and_end(self, mod: Module, s: SimpleNamespace) -> None:
        buf, cnt, link, running = s.buf, s.cnt, s.link, s.running
        with mod.If(running):
            mod.d.sync += self.stat.op_cycles.eq(self.stat.op_cycles + 1)
            # every program ends with its only DESELECT; after a timeout (R/B# never came back) the PHY drops
            # the beats before it, so the chip is released either way
            with mod.If(link.deselected):
                mod.d.sync += [running.eq(0), self.stat.timed_out.eq(link.timed_out)]
        bch_busy = Const(0)
        if self.bch is not None:
            # a search at twice the engine's clock runs on the PHY's (the same PLL)
            mod.submodules.bch = fe = DomainRenamer({SEARCH_DOMAIN: NAND_DOMAIN})(BchFrontend(self.bch))
            bc, bs = self.bch_ctrl, self.bch_stat
            mod.d.comb += [fe.op.eq(bc.bch_op), fe.t.eq(bc.bch_t), fe.data_addr.eq(bc.bch_data_addr),
                           fe.parity_addr.eq(bc.bch_parity_addr), fe.start.eq(self.bch_start & ~running & ~cnt.pending),
                           fe.rdata.eq(buf.eng_rdata), bs.bch_busy.eq(fe.busy), bs.bch_corrected.eq(fe.corrected),
                           bs.bch_fail.eq(fe.fail), bs.bch_erased.eq(fe.erased)]
            with mod.If(fe.busy):  # the sequencer idles: the engine port is the frontend's
                mod.d.comb += [buf.eng_addr.eq(fe.addr), buf.eng_we.eq(fe.we), buf.eng_wdata.eq(fe.wdata)]
            bch_busy = fe.busy
        go, ctrl = s.go, self.ctrl
        mod.d.comb += go.eq(self.start & ~running & ~cnt.pending & ~bch_busy)  # a start while busy is ignored
        mod.d.comb += [s.prbs.seed.eq(ctrl.seed), s.prbs.load.eq(go), cnt.clear.eq(go)]
        with mod.If(go):
            # every program starts with SELECT (one beat), so rep_last starts true
            mod.d.sync += [s.c.eq(ctrl), s.pc.eq(s.entries[ctrl.op]), s.rep.eq(0), s.rep_last.eq(1), running.eq(1),
                           s.ridx.eq(0), s.wa.eq(ctrl.buf_addr), s.pf_addr.eq(ctrl.buf_addr),
                           s.pf_left.eq(Mux((ctrl.src == OnfiSource.BUFFER)
                                            & reduce(operator.or_, (ctrl.op == op for op in BUFFER_PROGRAMS)),
                                            ctrl.length, 0)),
                           self.stat.op_cycles.eq(0), self.stat.timed_out.eq(0)]
        mod.d.comb += [
            self.stat.busy.eq(running | cnt.pending), self.stat.busy_cycles.eq(link.busy_cycles),
            self.stat.err_1to0.eq(cnt.err_1to0), self.stat.err_0to1.eq(cnt.err_0to1), self.stat.max_cw.eq(cnt.max_cw),
            self.stat.codewords.eq(cnt.codewords),
        ]
