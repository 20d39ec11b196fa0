"""`make demo` runs: the quick version of every section, its plots written."""

from __future__ import annotations

from thrifty.demo import run_demo


def test_quick_demo_runs_every_section(tmp_path):
    res = run_demo(tmp_path, quick=True)
    assert set(res) == {"hmm", "logistic", "tall", "particles"}
    assert (tmp_path / "pgas_ess.png").exists()
    ess = res["particles"]["ess"]
    assert len(ess["PGAS"]) == len(ess["CSMC"]) == 20
