"""The README's quick start runs as written."""

import re
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import thrifty as th


def test_quick_start_runs(tmp_path, monkeypatch):
    text = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    block = re.search(r"## Quick start\n\n```python\n(.*?)```", text, re.S).group(1)
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    with warnings.catch_warnings():  # the first example a user runs has converged
        warnings.simplefilter("error", th.ConvergenceWarning)
        exec(compile(block.replace("progress=True", "progress=False"), "README", "exec"),
             namespace)
    result = namespace["result"]
    assert result["w"].shape == (4, 5000, 5)
    assert (tmp_path / "trace.png").exists()
    summary = result.summary()
    assert summary["r_hat"].max() < 1.1
