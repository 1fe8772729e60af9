import json
import math
import shutil
import subprocess

import numpy as np
import pytest

from nandrig.characterization import ALWAYS, NEVER, CorrTable, RetentionGrid, load_params, max_ret_time, required_t
from nandrig.characterization.tables import RBER_FRAC_BITS, tables_json
from nandrig.characterization.flares_tables import c_header
from nandrig.characterization.uber import log_uber
from nandrig.errors import NandrigError

K = 4096 * 8
PARAMS = load_params("flares-taco2014")


@pytest.fixture(scope="module")
def table() -> CorrTable:
    return CorrTable.build(1e-11, K, 1, 100)


def test_corr_table_ranges_are_contiguous_and_increasing(table):
    entries = table.entries()
    assert [e["t"] for e in entries] == list(range(1, 101))
    assert entries[0]["rber_min"] == 0.0
    for a, b in zip(entries, entries[1:]):
        assert b["rber_min"] == a["rber_max"] and b["rber_max"] > a["rber_max"]


def test_corr_table_agrees_with_required_t(table):
    rng = np.random.default_rng(5)
    rbers = 10 ** rng.uniform(-8, math.log10(table.rber_max[-1]) - 1e-6, 200)
    got = table.t_for(rbers)
    for r, t in zip(rbers, got):
        assert t == required_t(float(r), 1e-11, K)
    assert table.t_for(table.rber_max[-1] * 1.01) == -1


def test_max_ret_time_is_where_the_model_reaches_the_limit(table):
    for t, pe in ((50, 10_000), (10, 3000), (3, 100), (30, 6000)):
        h = max_ret_time(PARAMS, table, t, pe)
        assert 0 < h < math.inf
        assert float(PARAMS.rber(pe, h)) == pytest.approx(table.rber_max[t - 1], rel=1e-9)
        assert required_t(float(PARAMS.rber(pe, h * 0.999)), 1e-11, K) <= t
        assert required_t(float(PARAMS.rber(pe, h * 1.01)), 1e-11, K) > t
    # the paper's point: t = 50 holds a 10k-cycle page for about a year
    assert 8760 <= max_ret_time(PARAMS, table, 50, 10_000) < 2 * 8760


def test_max_ret_time_special_values(table):
    assert max_ret_time(PARAMS, table, 3, 0) == ALWAYS  # no wear, no retention loss in eq. 5
    assert max_ret_time(PARAMS, table, 1, 10_000) == NEVER  # t=1 fails right after programming
    with pytest.raises(NandrigError):
        max_ret_time(PARAMS, table, 0, 100)
    with pytest.raises(NandrigError):
        max_ret_time(PARAMS, table, 5, -1)


def test_max_ret_time_falls_with_wear_and_rises_with_t(table):
    grid = RetentionGrid.build(PARAMS, table, 10_000, 500)
    h = np.array(grid.hours)
    finite = np.where(np.isfinite(h), h, 1e30)
    assert np.all(np.diff(finite, axis=1) <= 0)  # along P/E
    assert np.all(np.diff(finite, axis=0) >= 0)  # along t


def test_json_shape_and_sentinels(table):
    grid = RetentionGrid.build(PARAMS, table, 10_000, 2500)
    j = json.loads(json.dumps(tables_json(PARAMS, table, grid), allow_nan=False))
    assert j["gf_m"] == 16 and j["codeword_bytes"] == 4096 and j["uber"] == 1e-11
    assert j["max_ret_time_h"]["pe"] == [0, 2500, 5000, 7500, 10000]
    assert j["max_ret_time_h"]["t"] == list(range(1, 101))
    hours = j["max_ret_time_h"]["hours"]
    assert hours[2][0] is None  # t=3 at 0 P/E: always met
    assert hours[0][-1] == -1  # t=1 at 10k: never met


def test_c_header_is_deterministic_and_compiles_to_the_same_numbers(table, tmp_path):
    grid = RetentionGrid.build(PARAMS, table, 10_000, 250)
    text = c_header(PARAMS, table, grid)
    assert text == c_header(PARAMS, CorrTable.build(1e-11, K, 1, 100), RetentionGrid.build(PARAMS, table, 10_000, 250))
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.fail("a C compiler is needed to check the header")
    (tmp_path / "flares_tables.h").write_text(text)
    (tmp_path / "dump.c").write_text(
        '#include <stdio.h>\n#include <inttypes.h>\n#include "flares_tables.h"\n'
        "int main(void) {\n"
        "  for (unsigned i = 0; i < FLARES_T_COUNT; i++) printf(\"%\" PRIu64 \"\\n\", flares_corr_rber_max[i]);\n"
        "  for (unsigned i = 0; i < FLARES_T_COUNT; i++) for (unsigned j = 0; j < FLARES_PE_COLS; j++)\n"
        "    printf(\"%\" PRIu32 \"\\n\", flares_max_ret_time_min[0][i][j]);\n"
        "  printf(\"%u %u %u\\n\", FLARES_GF_M, FLARES_PE_STEP, FLARES_RBER_FRAC_BITS);\n  return 0;\n}\n"
    )
    subprocess.run([cc, "-std=c99", "-Wall", "-Werror", "-o", str(tmp_path / "dump"), str(tmp_path / "dump.c")], check=True)
    out = subprocess.run([str(tmp_path / "dump")], check=True, capture_output=True, text=True).stdout.split("\n")
    nt, npe = 100, len(grid.pe)
    rber = [int(x) for x in out[:nt]]
    for fixed, r in zip(rber, table.rber_max):
        assert fixed <= r * 2**RBER_FRAC_BITS < fixed + 1
    mins = np.array([int(x) for x in out[nt:nt + nt * npe]]).reshape(nt, npe)
    hours = np.array(grid.hours)
    assert np.all(mins[np.isinf(hours)] == 0xFFFFFFFF)
    assert np.all(mins[hours < 0] == 0)
    ok = np.isfinite(hours) & (hours >= 0)
    assert np.array_equal(mins[ok], np.minimum(np.floor(hours[ok] * 60), 0xFFFFFFFE))  # rounded down, clamped
    assert out[nt + nt * npe] == f"16 250 {RBER_FRAC_BITS}"


def test_table_bad_inputs():
    with pytest.raises(NandrigError):
        CorrTable.build(0.0, K)
    with pytest.raises(NandrigError):
        CorrTable.build(1e-11, K, 5, 2)
    with pytest.raises(NandrigError):
        CorrTable.build(1e-11, 0)


def test_uber_at_rber_max_is_the_target(table):
    for t in (1, 3, 20, 50, 100):
        assert log_uber(table.rber_max[t - 1], t, K) == pytest.approx(math.log(1e-11), abs=1e-6)
