"""The documentation site builds with warnings as errors, its worked examples run, and every
public name of ``thrifty`` is in the API reference with a docstring and an example."""

from __future__ import annotations

import html
import inspect
import re
import subprocess
import sys
from pathlib import Path

import pytest

import thrifty as th

DOCS = Path(__file__).resolve().parents[1] / "docs"
pytest.importorskip("sphinx", reason="the docs extra is not installed (pip install -e '.[docs]')")
pytest.importorskip("myst_nb", reason="the docs extra is not installed (pip install -e '.[docs]')")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("html")
    proc = subprocess.run(
        [sys.executable, "-m", "sphinx", "-E", "-W", "--keep-going", "-b", "html", str(DOCS),
         str(out)],
        capture_output=True, text=True, timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return out


def text(page: Path) -> str:
    return html.unescape(re.sub(r"<[^>]+>", " ", page.read_text()))


def test_every_public_name_has_a_docstring_with_an_example():
    missing = [n for n in th.__all__ if ">>>" not in (inspect.getdoc(getattr(th, n)) or "")]
    assert not missing, f"public names without a docstring example: {missing}"


def test_every_public_name_is_in_the_api_reference(site):
    api = (site / "api.html").read_text()
    absent = [n for n in th.__all__
              if f'id="thrifty.{n}"' not in api and f'id="module-thrifty.{n}"' not in api]
    assert not absent, f"not in the API reference: {absent}"


def test_the_worked_examples_ran(site):
    schools = text(site / "examples" / "eight_schools.html")
    assert "elpd_loo" in schools and "Pareto k" in schools  # az.loo's output
    assert "P(simulated y ≥ observed y)" in schools
    hmm = text(site / "examples" / "hmm.html")
    assert hmm.count("µs per step") >= 3
    tall = text(site / "examples" / "tall_logistic.html")
    assert "likelihood terms per step" in tall and "of 100,000" in tall
    assert list((site / "_images").glob("*.png"))  # the plots


def test_bibliography_names_the_five_papers(site):
    bib = text(site / "bibliography.html")
    for title in ("Sublinear-Time Approximate MCMC", "Output-Sensitive Adaptive",
                  "Scalable Metropolis", "Particle Gibbs with Ancestor Sampling",
                  "Austerity in MCMC Land"):
        assert title in bib
