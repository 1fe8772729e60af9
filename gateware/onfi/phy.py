"""ONFI asynchronous SDR PHY: one bus cycle per beat, every timing counted in system-clock cycles.

The core sends beats (``CMD``, ``ADDR``, ``DIN``, ``DOUT``, ``WAIT_RB``,
``SETTLE``, ``SELECT``, ``DESELECT``); the PHY starts a beat only when the timings
between beats are met (tWHR, tRHW, tADL, tWB, tRR, tCS), so the sequencer
above it cannot violate them.

Several targets share the bus (DQ, CLE, ALE, WE#, RE#, WP#), each with its own CE# and R/B#: ``SELECT`` lowers
the CE# of the run-time ``target``, whose R/B# ``WAIT_RB`` waits on. ``SETTLE`` waits tWB after the last WE#
rise without waiting for ready: an operation that leaves its target busy (a launch) ends with the target's
R/B# already low through the synchronizer, so whoever polls R/B# next never sees the stale ready. Per-mode cycle counts are a ROM built from
:mod:`timing` at the build's clock, indexed by the run-time ``mode``; a chip
starts in mode 0 and the firmware switches after SET FEATURES.

Reads capture DQ ``sample`` steps after RE# falls: the point :func:`timing.read_capture` chose inside
the data-valid window with setup and hold margins across the board's delay range (RE# held low longer
where needed); ``rd_trim`` moves it at run time (the firmware's start-up calibration). A step is a clock
cycle, or with input gearing (``steps`` > 1: ``dq_i`` holds that many samples of DQ per cycle, oldest
first, the last at the clock edge) a fraction of one. In EDO operation the point may follow the next RE#
fall. R/B# passes a two-flop synchronizer; busy times are measured from
the confirming WE# rise to R/B# rising, synchronizer latency removed.

Between beats the PHY also keeps tCCS (E0h's WE# rise to the first RE# fall of CHANGE READ COLUMN),
tCEH (CE# high between selections) and tWW (a WP# change before WE# falls).
"""
from __future__ import annotations

from types import SimpleNamespace

import enum

from amaranth import Array, Cat, Const, Module, Mux, Signal, Value, signed
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from nandrig.gateware.onfi.registers import CCS_BITS, TARGET_BITS, TRIM_BITS
from nandrig.gateware.onfi.timing import DEFAULT_CLK_HZ, capture_depth, mode_cycles

SYNC_STAGES = 2


class Kind(enum.IntEnum):
    CMD = 0
    ADDR = 1
    DIN = 2
    DOUT = 3
    WAIT_RB = 4
    SELECT = 5
    DESELECT = 6
    SETTLE = 7  # tWB after the last WE# rise: the target's R/B# is low (synchronized) if the command made it busy


BEAT_LAYOUT = data.StructLayout({"kind": 3, "data": 8})


class PinSignature(wiring.Signature):
    """The NAND bus as seen from the FPGA (active-low names end in _n); DQ as o/oe/i for a tristate buffer,
    ``dq_i`` as ``steps`` samples per PHY cycle (8 bits each, oldest first: the last is taken at the edge);
    ``ce_n`` and ``rb_n`` one bit per target (bit k: target k)."""

    def __init__(self, steps: int = 1, targets: int = 1):
        ones = (1 << targets) - 1
        super().__init__({
            "ce_n": Out(targets, init=ones), "cle": Out(1), "ale": Out(1), "we_n": Out(1, init=1),
            "re_n": Out(1, init=1), "wp_n": Out(1, init=1), "rb_n": In(targets, init=ones), "dq_o": Out(8),
            "dq_oe": Out(1), "dq_i": In(8 * steps),
        })


class TimingRom:
    """Per-mode cycle counts, one Array per field, indexed by the run-time mode."""

    # sums and differences the PHY compares against are precomputed here, off the logic paths
    FIELDS = {
        "wp": lambda c: c.wp, "rp": lambda c: c.rp, "cs": lambda c: c.cs, "whr": lambda c: c.whr,
        "rhw": lambda c: c.rhw, "rr": lambda c: c.rr, "sample": lambda c: c.sample, "ccs": lambda c: c.ccs,
        "ceh": lambda c: c.ceh, "ww": lambda c: c.ww,
        "wp_latch": lambda c: c.wp_latch,
        # every bus cycle is >= 2 counts: its end is compared 2 ahead, and whether it is 2 is a flag
        "wc_m2": lambda c: c.write_cycle - 2, "lc_m2": lambda c: c.latch_cycle - 2, "rc_m2": lambda c: c.read_cycle - 2,
        "wc_2": lambda c: c.write_cycle == 2, "lc_2": lambda c: c.latch_cycle == 2, "rc_2": lambda c: c.read_cycle == 2,
        "adl_wp": lambda c: max(c.adl - c.wp, 0),  # tADL counts to the data cycle's WE# rise, wp after it starts
        "wb_sync": lambda c: c.wb + SYNC_STAGES,  # R/B# low within tWB, seen SYNC_STAGES cycles later
    }

    def __init__(self, clk_hz: float, steps: int = 1):
        self.modes = [mode_cycles(m, clk_hz, steps=steps) for m in range(6)]
        self.width = max(f(c) for c in self.modes for f in self.FIELDS.values()).bit_length() + 1

    def select(self, mod: Module, mode) -> dict[str, Signal]:
        out = {}
        for name, f in self.FIELDS.items():
            s = Signal(self.width, name=f"t_{name}")
            # registered: the mode changes only between operations
            mod.d.sync += s.eq(Array(Const(f(c), self.width) for c in self.modes)[mode])
            out[name] = s
        return out


class Since:
    """Cycles since an event, as a flag per threshold that is a flop: ``at_least(t)`` is "at least t cycles since
    the event". Each flag counts its own interval down (loaded at the event with ``t - restart_at``, registered)
    and rises when one cycle is left, so no compare with a carry chain reaches a flag: at the ULX3S's 100 MHz NAND
    clock with eight sockets, one shared count feeding three such compares was the critical path. A threshold that
    changes (mode, target or tCCS, between operations) restarts its interval a cycle later: a wait can only grow."""

    def __init__(self, mod: Module, name: str, restart_at: int = 1) -> None:
        self.mod, self.name, self.restart_at = mod, name, restart_at
        self.restart = Signal(name=f"since_{name}_restart")  # comb: the event happens at this edge
        self._flags: list[tuple[object, Signal]] = []

    def at_least(self, threshold) -> Signal:
        """Call outside any If/Switch: the flag's registers are written where this is called."""
        for t, flag in self._flags:
            if t is threshold:
                return flag
        name, r = f"since_{self.name}_ge{len(self._flags)}", self.restart_at
        t = Value.cast(threshold)
        flag = Signal(name=name, init=1)  # no event yet: every interval is over
        left = Signal(len(t), name=f"{name}_left")  # cycles the interval still lasts
        start, start_zero = Signal(len(t), name=f"{name}_start"), Signal(name=f"{name}_start_zero")
        seen, moved = Signal(len(t), name=f"{name}_seen"), Signal(name=f"{name}_moved")
        self.mod.d.sync += [
            seen.eq(t), moved.eq(seen != t),
            start.eq(Mux(t > r, t - r, 0)), start_zero.eq(t <= r),
            left.eq(Mux(moved, t, Mux(self.restart, start, Mux(left != 0, left - 1, 0)))),
            flag.eq(~moved & Mux(self.restart, start_zero, left <= 1)),
        ]
        self._flags.append((threshold, flag))
        return flag


class OnfiPhy(wiring.Component):
    def __init__(self, clk_hz: float = DEFAULT_CLK_HZ, steps: int = 1, targets: int = 1) -> None:
        assert steps & (steps - 1) == 0, "capture steps per cycle: a power of two"
        assert 1 <= targets <= 1 << TARGET_BITS
        self.clk_hz, self.steps, self.targets = clk_hz, steps, targets
        self.rom = TimingRom(clk_hz, steps)
        self.capture_lane = Signal(range(steps))  # which of dq_i's samples the last capture took (the bus model's)
        super().__init__({
            "pins": Out(PinSignature(steps, targets)),
            "target": In(TARGET_BITS),  # the CE# a SELECT lowers and the R/B# a WAIT_RB watches
            "mode": In(range(6)),
            "rd_trim": In(signed(TRIM_BITS)),
            "timeout": In(32),  # WAIT_RB gives up after this many cycles
            "beats": In(stream.Signature(BEAT_LAYOUT)),
            "rdata": Out(stream.Signature(8, always_ready=True)),
            "busy_cycles": Out(32),  # the last WAIT_RB's busy time
            "timeout_hit": Out(1),  # one cycle: a WAIT_RB gave up
            "wp_n": In(1, init=1),
            "ccs": In(CCS_BITS),  # tCCS in cycles from the chip's parameter page; 0: the table's (ONFI's 500 ns)
        })

    # The PHY in five parts, emitted in this order: the timing counters since each bus event, when a bus cycle ends,
    # the read-capture pipe, the gates that hold a beat until its timings are met, the capture point, and the bus
    # cycle itself (its edges, and a beat starting).
    def elaborate(self, platform):
        mod = Module()
        mod.d.comb += self.pins.wp_n.eq(self.wp_n)
        s = SimpleNamespace(t=self.rom.select(mod, self.mode), w=self.rom.width)
        self._timers(mod, s)
        self._cycle_end(mod, s)
        self._capture_pipe(mod, s)
        self._gates(mod, s)
        self._capture_point(mod, s)
        self._bus_cycle(mod, s)
        return mod

    def _timers(self, mod: Module, s: SimpleNamespace) -> None:
        t, w = s.t, s.w
        # tCCS: the chip's own when the firmware gives it, never under tWHR; registered, it changes between operations
        s.ccs = Signal(max(w, CCS_BITS), name="ccs")
        mod.d.sync += s.ccs.eq(Mux(self.ccs == 0, t["ccs"], Mux(self.ccs > t["whr"], self.ccs, t["whr"])))

        s.since_addr, s.since_re, s.since_wp = (Since(mod, n) for n in ("addr", "re", "wp"))
        s.since_we = Since(mod, "we")
        # CE# edges come from a beat's start, which waits on these counts' own flags: they restart a cycle late
        # from a registered event, counting from 2 so the count stays exact, and the one stale cycle is gated
        ce_fell, ce_rose = Signal(), Signal()  # (named as before the split: names steer the placer)
        s.ce_fell, s.ce_rose = ce_fell, ce_rose
        s.since_ce, s.since_deselect = Since(mod, "ce", restart_at=2), Since(mod, "deselect", restart_at=2)
        mod.d.comb += [s.since_ce.restart.eq(s.ce_fell), s.since_deselect.restart.eq(s.ce_rose)]
        s.since_rb = Since(mod, "rb", restart_at=0)  # tRR counts from R/B# rising, never from before the busy period
        wp_prev = Signal(init=1)
        mod.d.sync += wp_prev.eq(self.wp_n)
        mod.d.comb += s.since_wp.restart.eq(wp_prev != self.wp_n)
        s.after_e0 = Signal(name="after_e0")  # the last command was E0h: the next RE# fall waits tCCS

        # every target's R/B# through the first stages, the selected one into the last: the same latency at any
        # count (the target changes only between operations), and no multiplexer after the flop the PHY waits on
        n = self.targets
        rb = [Signal(n, init=(1 << n) - 1, name=f"rb{k}") for k in range(SYNC_STAGES - 1)]
        mod.d.sync += [rb[0].eq(self.pins.rb_n), *(b.eq(a) for a, b in zip(rb, rb[1:]))]
        s.rb_now = Signal(init=1, name="rb_now")  # the synchronized R/B# of the selected target
        s.rb_next = rb[-1].bit_select(self.target, 1) if n > 1 else rb[-1]
        mod.d.sync += s.rb_now.eq(s.rb_next)
        mod.d.comb += s.since_rb.restart.eq(~s.rb_now)

        s.kind = Signal(3, name="kind")
        s.active = Signal(name="active")
        s.cnt = Signal(w + 1, name="cnt")
        s.busy = Signal(32, name="busy")
        with mod.If(s.busy != 0xFFFFFFFF):
            mod.d.sync += s.busy.eq(s.busy + 1)
        s.over = Signal(name="over")  # busy reached the timeout (a cycle late, off the critical path)
        mod.d.sync += s.over.eq(s.busy >= self.timeout)

    def _cycle_end(self, mod: Module, s: SimpleNamespace) -> None:
        """A beat ends in the cycle its last timing count completes."""
        kind, t = s.kind, s.t
        s.is_write = (kind == Kind.CMD) | (kind == Kind.ADDR) | (kind == Kind.DIN)
        s.last = last = Signal(name="last")
        # a bus cycle ends when its count reaches the mode's cycle: compared a cycle ahead, so the PHY's ready, which
        # the next beat waits on, starts from a flop (the board's NAND clock critical path otherwise); ends' own next
        # value is a flop too, compared two cycles ahead (in _gates), because the gates' next values read it
        s.ends, s.ends_next = Signal(name="ends"), Signal(name="ends_next")
        mod.d.sync += s.ends.eq(s.ends_next)
        with mod.Switch(kind):
            with mod.Case(Kind.CMD, Kind.ADDR, Kind.DIN, Kind.DOUT):
                mod.d.comb += last.eq(s.ends)
            with mod.Case(Kind.WAIT_RB):
                mod.d.comb += last.eq(s.rb_now | s.over)
            with mod.Default():
                mod.d.comb += last.eq(1)
        # whether the bus is free, as a flop: its next value is worked out from the next values of what decides it
        # (ends, R/B#, the timeout, active and kind), so the beat-start decision reads one flop, not the kind's
        # mux of end conditions (two LUTs of the ULX3S's NAND-clock critical path); _gates sets its next value
        s.free = Signal(init=1, name="free")

    def _capture_pipe(self, mod: Module, s: SimpleNamespace) -> None:
        """Read captures in flight: bit k fires k cycles from now; a trimmed sample point may land after the next
        RE# fall (board delays), so more than one capture can be pending."""
        steps = self.steps
        s.lane = lane = Signal(range(steps), name="lane")
        s.depth_steps = capture_depth(self.clk_hz, steps=steps)
        s.depth = depth = -(-s.depth_steps // steps)  # cycles
        s.pipe = pipe = Signal(depth, name="pipe")
        s.pipe_next = Signal(depth, name="pipe_next")
        mod.d.comb += s.pipe_next.eq(pipe >> 1)
        mod.d.sync += pipe.eq(s.pipe_next)
        dq_i = self.pins.dq_i
        with mod.If(pipe[0]):
            mod.d.sync += [self.rdata.payload.eq(dq_i.word_select(lane, 8) if steps > 1 else dq_i),
                           self.rdata.valid.eq(1), self.capture_lane.eq(lane)]
        with mod.Else():
            mod.d.sync += self.rdata.valid.eq(0)

    def _gates(self, mod: Module, s: SimpleNamespace) -> None:
        """Whether the waiting beat may start: its kind's timings since the events it follows are met.

        Each kind's gate is a flop, set a cycle after its timing flags are all up, and cleared in any cycle one of
        its events happens or a beat starts (a flag is a cycle late to fall after its event). So every wait between
        two lines' edges (tWHR, tRHW/tRHZ, tADL, tCS, tCCS, tRR, tCEH, tWW) ends a whole PHY cycle past its minimum
        at the pins, a margin against skew between the adapter's lines, and the beat-start decision reads one flop
        per kind instead of the flags' logic (that logic had put RE#'s start on an eight-LUT path on the ULX3S).
        The flop also holds "the bus will be free and no flush is on", so the decision is the waiting beat's valid and
        one flop picked by its kind (the end of a bus cycle, R/B# and the flush had been three more LUTs)."""
        b, t = self.beats.payload, s.t
        gate = Signal(name="gate")
        # after a timeout the beats the sequencer queued behind WAIT_RB are dropped up to its DESELECT: no bus
        # cycle reaches a chip that is still busy
        s.flushing = Signal(name="flushing")
        s.drop = s.flushing & (b.kind != Kind.DESELECT)
        s.starting = starting = Signal(name="starting")  # a beat starts at this edge
        write_events = s.since_re.restart | s.since_wp.restart | s.ce_fell
        # the flags' registers are written outside the switch below, every cycle
        write_ok = (s.since_re.at_least(t["rhw"]) & s.since_ce.at_least(t["cs"]) & s.since_wp.at_least(t["ww"])
                    & ~write_events)
        din_ok = write_ok & s.since_addr.at_least(t["adl_wp"]) & ~s.since_addr.restart
        dout_ok = (Mux(s.after_e0, s.since_we.at_least(s.ccs), s.since_we.at_least(t["whr"]))
                   & s.since_rb.at_least(t["rr"]) & ~s.since_we.restart & ~s.since_rb.restart)
        select_ok = s.since_deselect.at_least(t["ceh"]) & ~s.ce_rose
        wait_ok = s.since_we.at_least(t["wb_sync"]) & ~s.since_we.restart
        # free's next value: a bus cycle ends on its count, WAIT_RB on R/B# (a timeout ends it too, but the next beat
        # then starts a cycle later, when flushing drops it), every other kind after one cycle
        kind = s.kind
        is_bus = lambda k: k < Kind.WAIT_RB  # CMD, ADDR, DIN, DOUT
        at_start = Mux(is_bus(b.kind), 0, Mux(b.kind == Kind.WAIT_RB, s.rb_next, 1))
        going_on = ~s.active | s.last | (is_bus(kind) & s.ends_next) | ((kind == Kind.WAIT_RB) & s.rb_next)
        free_next = Mux(starting, at_start, going_on)
        # ends' next value: a starting beat has counted 1 at the next edge, a running one counts on to its kind's
        # cycle (s.end_m2, loaded as it starts)
        by_kind = lambda f: Mux(b.kind == Kind.DOUT, t[f"rc_{f}"], Mux(b.kind == Kind.DIN, t[f"wc_{f}"], t[f"lc_{f}"]))
        s.end_m2, s.we_rise_at = Signal(s.w, name="end_m2"), Signal(s.w, name="we_rise_at")
        with mod.If(starting):
            mod.d.sync += [s.end_m2.eq(by_kind("m2")),
                           s.we_rise_at.eq(Mux(b.kind == Kind.DIN, t["wp"], t["wp_latch"]))]
        cycle_is_2 = by_kind("2")
        counts_out = s.cnt == s.end_m2
        mod.d.sync += s.ends_next.eq(Mux(starting, cycle_is_2, s.active & ~s.last & counts_out))
        mod.d.sync += s.free.eq(free_next)
        # a timed-out WAIT_RB sets flushing (in _bus_cycle) in the cycle it ends
        flushing_next = s.flushing | (s.active & (kind == Kind.WAIT_RB) & s.over & ~s.rb_now)
        go = {}  # each from the next values of free, flushing and its kind's timing flags
        for name, ok in (("write", write_ok), ("din", din_ok), ("dout", dout_ok), ("select", select_ok),
                         ("wait", wait_ok)):
            go[name] = Signal(name=f"gate_{name}")
            mod.d.sync += go[name].eq(ok & ~starting & going_on & ~flushing_next)
        go["deselect"] = Signal(name="gate_deselect")  # DESELECT is never dropped: it ends a flush
        mod.d.sync += go["deselect"].eq(free_next & (s.pipe_next == 0))
        with mod.Switch(b.kind):
            with mod.Case(Kind.CMD, Kind.ADDR):
                mod.d.comb += gate.eq(go["write"])
            with mod.Case(Kind.DIN):
                mod.d.comb += gate.eq(go["din"])
            with mod.Case(Kind.DOUT):
                mod.d.comb += gate.eq(go["dout"])
            with mod.Case(Kind.SELECT):
                mod.d.comb += gate.eq(go["select"])
            with mod.Case(Kind.WAIT_RB, Kind.SETTLE):
                mod.d.comb += gate.eq(go["wait"])
            with mod.Case(Kind.DESELECT):
                mod.d.comb += gate.eq(go["deselect"])
        mod.d.comb += [self.beats.ready.eq(s.drop | gate), starting.eq(self.beats.valid & gate)]

    def _capture_point(self, mod: Module, s: SimpleNamespace) -> None:
        """The capture point, a register stage per step (mode and trim change only between operations, so the few
        cycles' lag is harmless): the mode's table entry plus the trim, clamped to 1..depth_steps, as the pipe's
        one-hot bit for its cycle and the sample within it (step s is in cycle ceil(s / steps): the steps - 1 that
        rounds up is added to the trim first, so no adder follows the clamp)."""
        steps, depth, depth_steps = self.steps, s.depth, s.depth_steps
        shift = steps.bit_length() - 1
        trim_up = Signal(signed(TRIM_BITS + shift + 1))
        sample = Signal(signed(s.w + 2 + TRIM_BITS + shift))
        sample_eff = Signal(range(depth_steps + steps))
        s.sample_bit = Signal(depth, name="sample_bit")
        hi = depth_steps + steps - 1
        # the clamp's compares (carry chains) have a register stage of their own, apart from its mux
        below, above, sample_d = Signal(), Signal(), Signal(range(depth_steps + steps))
        mod.d.sync += [trim_up.eq(self.rd_trim + (steps - 1)),
                       sample.eq(s.t["sample"] + trim_up),
                       below.eq(sample < steps), above.eq(sample > hi), sample_d.eq(sample),
                       sample_eff.eq(Mux(below, steps, Mux(above, hi, sample_d))),
                       s.sample_bit.eq((Const(1, depth + 1) << (sample_eff >> shift))[1:]),
                       s.lane.eq(sample_eff[:shift])]

    def _bus_cycle(self, mod: Module, s: SimpleNamespace) -> None:
        """The running bus cycle's edges and end, then a new beat's start."""
        p, b, t, kind, last = self.pins, self.beats.payload, s.t, s.kind, s.last
        with mod.If(s.active):
            mod.d.sync += s.cnt.eq(s.cnt + 1)
            with mod.If(s.is_write & (s.cnt == s.we_rise_at)):
                mod.d.sync += [p.we_n.eq(1), s.busy.eq(1)]
                mod.d.comb += [s.since_we.restart.eq(1), s.since_addr.restart.eq(kind == Kind.ADDR)]
            with mod.If((kind == Kind.DOUT) & (s.cnt == t["rp"])):
                mod.d.sync += p.re_n.eq(1)
                mod.d.comb += s.since_re.restart.eq(1)
            with mod.If((kind == Kind.WAIT_RB) & last):
                mod.d.sync += self.busy_cycles.eq(s.busy - SYNC_STAGES)
                mod.d.comb += self.timeout_hit.eq(~s.rb_now)
                with mod.If(~s.rb_now):
                    mod.d.sync += s.flushing.eq(1)
            with mod.If(last):
                mod.d.sync += [s.active.eq(0), p.cle.eq(0), p.ale.eq(0), p.dq_oe.eq(0)]

        mod.d.sync += [s.ce_fell.eq(0), s.ce_rose.eq(0)]
        # DQ's output register takes the waiting beat's byte whenever the bus cycle is over, not only when the
        # beat starts: DQ is driven only from the start (dq_oe), and a cycle's byte still changes only at its end.
        # The timing gates then stay off the eight registers' enable (the NAND clock's critical path at one seed)
        with mod.If(s.free & self.beats.valid):
            mod.d.sync += p.dq_o.eq(b.data)
        with mod.If(s.starting):
            mod.d.sync += [kind.eq(b.kind), s.cnt.eq(1), s.active.eq(1), s.ends.eq(0)]  # every bus cycle is >= 2 counts
            with mod.Switch(b.kind):
                with mod.Case(Kind.CMD, Kind.ADDR, Kind.DIN):
                    mod.d.sync += [p.we_n.eq(0), p.cle.eq(b.kind == Kind.CMD), p.ale.eq(b.kind == Kind.ADDR),
                                   p.dq_oe.eq(1)]
                    with mod.If(b.kind == Kind.CMD):
                        mod.d.sync += s.after_e0.eq(b.data == 0xE0)
                with mod.Case(Kind.DOUT):
                    mod.d.sync += [p.re_n.eq(0), s.pipe.eq(s.pipe_next | s.sample_bit)]
                with mod.Case(Kind.SELECT):
                    one_hot = (Const(1, self.targets) << self.target)[:self.targets] if self.targets > 1 else 1
                    mod.d.sync += [p.ce_n.eq(~one_hot), s.ce_fell.eq(1)]
                with mod.Case(Kind.DESELECT):
                    mod.d.sync += [p.ce_n.eq((1 << self.targets) - 1), s.ce_rose.eq(1), s.flushing.eq(0)]
