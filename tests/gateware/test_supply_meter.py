"""The supply meter against a behavioural AD7476A: every sample's code lands in the phase the chip was in."""
from amaranth.sim import Simulator

from nandrig.chip.supply import FRONT_END
from nandrig.gateware.supply.meter import PHASES, SupplyMeter

CLK_HZ = 50e6
CURRENT_UA = {"busy": 22_000, "transfer": 8_000, "idle": 4_000}


def run(script_phases, cycles):
    """``script_phases(cycle)`` -> phase name the chip is in; returns the meter's totals after one take, the
    expected totals, and the ADC's protocol errors."""
    dut = SupplyMeter(CLK_HZ)
    want = {p: [0, 0] for p in PHASES}
    out, problems = {}, []

    async def adc(ctx):  # the ADC: samples at CS# falling, a bit after each SCLK fall, zeros first
        bits, prev_cs, prev_sclk, cycle = [], 1, 1, 0
        async for _clk, _rst, cs_n, sclk in ctx.tick().sample(dut.adc_cs_n, dut.adc_sclk):
            cycle += 1
            if prev_cs and not cs_n:
                if not sclk:
                    problems.append("CS# fell with SCLK low")
                phase = script_phases(cycle)
                code = FRONT_END.code(CURRENT_UA[phase])
                if cycle <= cycles:  # the bench takes the totals before a later sample's conversion ends
                    want[phase][0] += code
                    want[phase][1] += 1
                bits = [0, 0, 0] + [code >> (11 - i) & 1 for i in range(12)] + [1]  # 16th: three-stated
                ctx.set(dut.adc_sdata, 0)  # the first leading zero, at CS# falling
            elif not cs_n and prev_sclk and not sclk:
                ctx.set(dut.adc_sdata, bits.pop(0) if bits else 1)
            elif cs_n and not prev_cs and bits:
                problems.append(f"CS# rose with {len(bits)} bits left")
            prev_cs, prev_sclk = cs_n, sclk

    async def bench(ctx):
        for c in range(cycles):
            phase = script_phases(c)
            ctx.set(dut.busy, phase == "busy")
            ctx.set(dut.data_cycle, phase == "transfer" and c % 3 == 0)  # a byte every third cycle
            await ctx.tick()
        for _ in range(70):  # the last conversion ends (16 SCLK cycles of 4 clocks), the next has not
            await ctx.tick()
        ctx.set(dut.take, 1)
        await ctx.tick()
        ctx.set(dut.take, 0)
        await ctx.tick()
        for p in PHASES:
            out[p] = (ctx.get(getattr(dut, f"{p}_total").sum), ctx.get(getattr(dut, f"{p}_total").count))

    sim = Simulator(dut)
    sim.add_clock(1 / CLK_HZ)
    sim.add_process(adc)
    sim.add_testbench(bench)
    sim.run()
    return out, {p: tuple(v) for p, v in want.items()}, problems


def test_each_sample_adds_to_the_phase_the_chip_was_in():
    period = round(FRONT_END.sample_ns * CLK_HZ / 1e9)

    def phases(c):  # a sample period each, changing half way between two samples (CS# falls every period)
        k = (c + period // 2) // period
        return ("idle", "busy", "busy", "transfer", "transfer", "idle", "busy", "transfer")[k % 8]

    got, want, problems = run(phases, 24 * period + period // 4)  # ends between two samples
    assert not problems
    # the phase read at each CS# fall is the one set the cycle before: the meter samples with the ADC
    assert {p: got[p][1] for p in PHASES} == {p: want[p][1] for p in PHASES}
    assert got == want and sum(n for _, n in got.values()) >= 23
    assert FRONT_END.code(22_000) == 1365 and got["busy"][0] == 1365 * got["busy"][1]


def test_samples_keep_sample_ns_on_average_where_a_period_is_no_whole_cycle_count():
    """At the ULX3S's 45.3125 MHz a 2 us sample period is 90 5/8 cycles: the reader's CS# falls come 90 or 91
    cycles apart so that the n-th lands within a cycle of n * sample_ns, and 8 periods take exactly 16 us (the
    firmware counts sample_ns per sample for time and energy)."""
    from nandrig.boards.ulx3s.build import CLOCKS
    from nandrig.gateware.supply.meter import AdcReader

    clk_hz = CLOCKS.sys_hz
    dut = AdcReader(clk_hz)
    assert (dut.period, dut.extra, dut.extra_of) == (90, 5, 8)
    falls = []

    async def bench(ctx):
        for cycle in range(90 * 41):
            await ctx.tick()
            if ctx.get(dut.sampled):
                falls.append(cycle)

    sim = Simulator(dut)
    sim.add_clock(1 / clk_hz)
    sim.add_testbench(bench)
    sim.run()
    period = FRONT_END.sample_ns * clk_hz / 1e9
    assert len(falls) == 40 and {b - a for a, b in zip(falls, falls[1:])} == {90, 91}
    assert all(abs(f - falls[0] - n * period) < 1 for n, f in enumerate(falls))
    assert falls[8] - falls[0] == 725 and falls[32] - falls[0] == 4 * 725
