"""The ``thrifty`` command line."""

from __future__ import annotations

import click

import thrifty


@click.group()
@click.version_option(thrifty.__version__, prog_name="thrifty")
def main() -> None:
    """thrifty: probabilistic programming whose MCMC spends computation only where it matters."""


@main.command()
@click.option("--out", default="demo_output", show_default=True, help="Directory for plots.")
@click.option("--quick", is_flag=True, help="A smaller run (seconds instead of a minute).")
@click.option("--seed", default=0, show_default=True, help="Random seed.")
def demo(out: str, quick: bool, seed: int) -> None:
    """Run the demo: an HMM (LMH and Gibbs against the exact marginals), Bayesian logistic
    regression (MH), tall data (exact MH, subsampled MH and SMH: ESS per second) and particle
    Gibbs (PGAS against CSMC) on a linear-Gaussian state-space model."""
    from thrifty.demo import run_demo

    run_demo(out, quick=quick, seed=seed)


if __name__ == "__main__":
    main()
