"""examples/characterize.ipynb, executed as a user would run it: every cell without an error, the fit printed and
the figure drawn."""
import time
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).resolve().parents[1] / "examples" / "characterize.ipynb"


@pytest.mark.slow
def test_the_example_notebook_runs_and_draws(tmp_path):
    nb = nbformat.read(NOTEBOOK, as_version=4)
    assert not any(c.get("outputs") for c in nb.cells if c.cell_type == "code"), "commit the notebook without outputs"
    t0 = time.monotonic()
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    took = time.monotonic() - t0
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "lower: chi2/dof" in text and "upper: chi2/dof" in text
    assert any("image/png" in o.get("data", {}) for o in outputs), "the figure was not drawn"
    print(f"notebook executed in {took:.1f} s")
