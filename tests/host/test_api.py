"""The public Python API (nandrig.api, docs/api.md): its examples run as written, its tables keep their types
through Parquet, and a script needs nothing but the public names."""
import json
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

import nandrig.api as api
from nandrig.api import TABLES, Lab

ROOT = Path(__file__).resolve().parents[2]


def doc_examples() -> list[str]:
    return re.findall(r"```python\n(.*?)```", (ROOT / "docs" / "api.md").read_text(), re.S)


@pytest.mark.slow
def test_the_api_docs_examples_run_in_order(tmp_path):
    """Each block of docs/api.md in a fresh interpreter in one folder, in the page's order (later blocks read the
    database the earlier ones made); an assertion in a block fails the test."""
    blocks = doc_examples()
    assert len(blocks) >= 5
    for i, code in enumerate(blocks):
        r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, f"docs/api.md example {i + 1}:\n{code}\n{r.stderr}"
        assert r.stdout.strip(), f"example {i + 1} printed nothing"


def test_a_script_needs_only_the_public_names():
    """Everything __all__ names exists, and a script that imports only those names can do the documented work
    (the examples import nothing else: checked here)."""
    assert all(hasattr(api, n) for n in api.__all__)
    for code in doc_examples():
        for line in code.splitlines():
            if m := re.match(r"\s*from (\S+) import (.+)", line):
                assert m.group(1) == "nandrig.api", line
                assert {n.strip() for n in m.group(2).split(",")} <= set(api.__all__), line
            assert not re.match(r"\s*import nandrig", line), line


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A database with the tables filled: endurance (checkpoints, pages), latency (operations with energy),
    bitmap (bit errors)."""
    path = tmp_path_factory.mktemp("api") / "lab.db"
    with Lab(path) as lab:
        lab.run("endurance", blocks="0-1", cycles=3000, checkpoints=[1, 3000])
        lab.run("latency", blocks="2", checkpoints=[1, 3000])
        lab.run("bitmap", blocks="3", wear=[3000], after_h=8760.0)
        lab.run("vth-states", blocks="4-5", pe=[1000, 10_000], retention_h=8760.0, offsets=list(range(-100, 101, 4)))
    return path


@pytest.mark.parametrize("name, campaign", [("checkpoints", 1), ("by_block", 1), ("pages", 1), ("operations", 2),
                                            ("bit_errors", 3), ("vth_states", 4)])
def test_parquet_export_reads_back_with_the_stores_rows_and_types(lab, run_cli, tmp_path, name, campaign):
    flag = {"checkpoints": [], "by_block": ["--by-block"], "pages": ["--per-page"], "operations": ["--ops"],
            "bit_errors": ["--bit-errors"], "vth_states": ["--vth-states"]}[name]
    out = tmp_path / f"{name}.parquet"
    r = run_cli("export", "--db", lab, "--campaign", str(campaign), "--parquet", *flag, "--out", out)
    assert r.code == 0, r.err
    df = pd.read_parquet(out)
    t = TABLES[name]
    assert list(df.columns) == t.names
    assert {c: str(df[c].dtype) for c in df.columns} == {c.name: c.dtype for c in t.columns}
    with Lab(lab, read_only=True) as l:
        store, c = l.store, l.store.campaign(campaign)
        rows = list(t.rows(store, c))
        expected = {"pages": len(store.rows(c.id)), "operations": len(store.op_times(c.id))}.get(name, len(rows))
        assert len(df) == len(rows) == expected > 0
        same = l.table(campaign, name)
    pd.testing.assert_frame_equal(df, same)
    schema = pq.read_schema(out)
    assert schema.field(t.names[0]).metadata[b"description"].decode() == t.columns[0].doc
    # the same table as CSV: the same header and row count
    text = run_cli("export", "--db", lab, "--campaign", str(campaign), *flag).out.splitlines()
    assert text[0].split(",") == t.names and len(text) == len(df) + 1


def test_operations_carry_their_energy_where_metered(lab):
    with Lab(lab, read_only=True) as l:
        ops = l.table(2, "operations")
    assert set(ops.op) == {"erase", "program", "read"}
    assert ops.busy_pj.notna().all() and (ops.busy_pj > 0).all() and (ops.busy_ns > 0).all()
    assert set(ops.pe) >= {1, 3000}


def test_lab_lists_campaigns_results_and_refuses_what_it_does_not_have(lab):
    with Lab(lab, read_only=True) as l:
        df = l.campaigns()
        assert list(df.kind) == ["endurance", "latency", "bitmap", "vth-states"] and set(df.state) == {"done"}
        assert json.dumps(l.results(2), default=str)
        with pytest.raises(api.NandrigError, match="no table 'vth'"):
            l.table(1, "vth")
    with Lab(lab) as l, pytest.raises(api.NandrigError, match="unknown campaign kind"):
        l.run("enduranse", blocks="9", cycles=1, checkpoints=[1])


def test_vth_states_give_each_states_density_at_each_condition(lab):
    """Four states at two wear levels, fresh and a year on: each density sums to about its state's cells (what the
    sweep saw of it), and a year moves the programmed states down."""
    with Lab(lab, read_only=True) as l:
        v = l.table(4, "vth_states")
    assert set(v.state) == {"L0", "L1", "L2", "L3"} and set(v.pe) == {1000, 10_000} and set(v.retention_h) == {0.0, 8760.0}
    for (pe, hours, state), d in v.groupby(["pe", "retention_h", "state"]):
        assert 0 < d.cells_per_step.sum() * 4 <= 1.05, (pe, hours, state)  # 4: the sweep's step
    mean = lambda d: (d.vth_mv * d.cells_per_step).sum() / d.cells_per_step.sum()  # noqa: E731
    l2 = v[(v.state == "L2") & (v.pe == 10_000)]
    assert mean(l2[l2.retention_h > 0]) < mean(l2[l2.retention_h == 0])
