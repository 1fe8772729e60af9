"""Run the ONFI controller against the pin-level chip model in Amaranth's simulator."""
from __future__ import annotations

from amaranth.sim import Simulator

from nandrig.virtual_chip.chip import VirtualChip
from nandrig.gateware.onfi.bfm import NandBusModel, run_bus
from nandrig.gateware.onfi.core import OnfiController
from nandrig.gateware.onfi.link import NAND_DOMAIN
from nandrig.gateware.onfi.registers import CONTROL, STATUS, OnfiOp, OnfiSource
from nandrig.gateware.onfi.timing import DEFAULT_CLK_HZ

MAX_OP_CYCLES = 500_000  # 5.6 ms at 90 MHz: a 16 KiB page at mode 0 and every scaled busy time of the tests fit
DEFAULTS = {"cw_bytes": 1024, "timeout": 1 << 30, "wp_n": 1, "src": OnfiSource.BUFFER}


class Driver:
    """What firmware does through the registers, as testbench calls."""

    def __init__(self, ctx, dut: OnfiController, model: NandBusModel | list[NandBusModel]) -> None:
        self.ctx, self.dut, self.model = ctx, dut, model
        self.ctrl = {name: 0 for name, _, _ in CONTROL} | DEFAULTS

    async def op(self, op: OnfiOp, **fields) -> dict:
        ctx, dut = self.ctx, self.dut
        unknown = set(fields) - set(self.ctrl)
        if unknown:
            raise ValueError(f"unknown control fields {sorted(unknown)}")
        self.ctrl.update(fields, op=int(op))
        ctx.set(dut.ctrl, self.ctrl)
        ctx.set(dut.start, 1)
        await ctx.tick()
        ctx.set(dut.start, 0)
        for _ in range(MAX_OP_CYCLES):  # a controller that never finishes fails the test rather than hanging it
            if not ctx.get(dut.stat.busy):
                return self.status()
            await ctx.tick()
        raise AssertionError(f"{op.name} still busy after {MAX_OP_CYCLES} cycles")

    async def until_ready(self, target: int) -> int:
        """Cycles until the target's R/B# (the ``ready`` status) is high, as firmware polls it."""
        for n in range(MAX_OP_CYCLES):
            if self.ctx.get(self.dut.stat.ready) >> target & 1:
                return n
            await self.ctx.tick()
        raise AssertionError(f"target {target} still busy after {MAX_OP_CYCLES} cycles")

    def status(self) -> dict:
        v = self.ctx.get(self.dut.stat)
        return {name: int(getattr(v, name)) for name, _, _ in STATUS}

    async def write_buffer(self, data: bytes, addr: int = 0) -> None:
        ctx, dut = self.ctx, self.dut
        assert addr % 4 == 0
        data = data + bytes(-len(data) % 4)
        ctx.set(dut.cpu_we, 1)
        ctx.set(dut.cpu_sel, 0xF)
        for i in range(0, len(data), 4):
            ctx.set(dut.cpu_addr, (addr + i) // 4)
            ctx.set(dut.cpu_wdata, int.from_bytes(data[i:i + 4], "little"))
            await ctx.tick()
        ctx.set(dut.cpu_we, 0)

    async def read_buffer(self, n: int, addr: int = 0) -> bytes:
        ctx, dut = self.ctx, self.dut
        out = bytearray()
        for i in range(addr // 4, (addr + n + 3) // 4):
            ctx.set(dut.cpu_addr, i)
            await ctx.tick()
            out += ctx.get(dut.cpu_rdata).to_bytes(4, "little")
        return bytes(out[addr % 4: addr % 4 + n])

    async def codeword_counts(self, n: int) -> list[tuple[int, int]]:
        out = []
        for i in range(n):
            self.ctx.set(self.dut.cw_index, i)
            await self.ctx.tick()
            v = self.ctx.get(self.dut.cw_counts)
            out.append((int(v.err_1to0), int(v.err_0to1)))
        return out

    def lanes(self) -> tuple[list[int], list[int]]:
        a, b = self.ctx.get(self.dut.lane_1to0), self.ctx.get(self.dut.lane_0to1)
        return [int(a[k]) for k in range(8)], [int(b[k]) for k in range(8)]


def run(chip: VirtualChip | list[VirtualChip], script, clk_hz: float = DEFAULT_CLK_HZ, vcd: str | None = None,
        nand_clk_hz: float | None = None, nand_phase: float = 0.0, capture_steps: int = 1,
        latency_steps: int | None = None, **model) -> tuple[object, NandBusModel | list[NandBusModel]]:
    """Run ``await script(driver)`` with the controller wired to ``chip`` through a NandBusModel(``model``);
    with ``nand_clk_hz`` the PHY runs on a clock of its own, its edges ``nand_phase`` of a period late;
    ``capture_steps``: DQ samples per PHY cycle (input gearing), which the bus model drives at their own times,
    ``latency_steps`` after taking them (None: the gearing's nominal latency).
    A list of chips puts them on one bus, chip k on CE# k (the controller built for that many targets).

    Returns (what the script returned, the bus model with its log, or the list of them).
    """
    chips = chip if isinstance(chip, list) else [chip]
    dut = OnfiController(clk_hz, nand_clk_hz=nand_clk_hz, capture_steps=capture_steps, targets=len(chips))
    bfms = [NandBusModel(c, nand_clk_hz or clk_hz, **model) for c in chips]
    sim = Simulator(dut)
    sim.add_clock(1 / clk_hz)
    if nand_clk_hz:
        sim.add_clock(1 / nand_clk_hz, phase=nand_phase / nand_clk_hz, domain=NAND_DOMAIN)
    result = []

    async def bus(ctx):
        await run_bus(ctx, bfms, dut.pins, dut.phy.rdata.valid, NAND_DOMAIN if nand_clk_hz else "sync",
                      dut.phy.capture_lane, latency_steps)

    async def main(ctx):
        result.append(await script(Driver(ctx, dut, bfms[0] if len(bfms) == 1 else bfms)))

    sim.add_testbench(bus, background=True)
    sim.add_testbench(main)
    if vcd:
        with sim.write_vcd(vcd):
            sim.run()
    else:
        sim.run()
    return result[0], bfms if isinstance(chip, list) else bfms[0]
