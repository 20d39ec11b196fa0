"""`make demo` runs: the quick version of every section, its plots written."""

from __future__ import annotations

from thrifty.demo import run_demo


def test_quick_demo_runs_every_section(tmp_path):
    res = run_demo(tmp_path, quick=True)
    assert set(res) == {"hmm", "logistic", "tall", "particles"}
    assert (tmp_path / "pgas_ess.png").exists()
    ess = res["particles"]["ess"]
    assert len(ess["PGAS"]) == len(ess["CSMC"]) == 20


def test_ctrl_c_ends_the_demo(tmp_path, monkeypatch):
    """A Ctrl-C during one of the demo's runs ends the demo: th.infer returns the draws so far,
    which the demo's tables presented as its complete runs' ("2 chains × 222 sweeps" after 193)
    before it went on to the next section."""
    import importlib

    import pytest

    infer_module = importlib.import_module("thrifty.runtime.infer")

    class Pressed(infer_module.StopRequest):
        def __init__(self):
            super().__init__()
            self.requested = True  # (Ctrl-C before the first step)

    monkeypatch.setattr(infer_module, "StopRequest", Pressed)
    with pytest.raises(KeyboardInterrupt):
        run_demo(tmp_path, quick=True)
