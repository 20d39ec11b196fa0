"""The ``thrifty`` command line."""

from __future__ import annotations

from pathlib import Path

import click

import thrifty


@click.group()
@click.version_option(thrifty.__version__, prog_name="thrifty")
def main() -> None:
    """thrifty: probabilistic programming whose MCMC spends computation only where it matters."""


@main.command()
@click.option("--out", default="demo_output", show_default=True, help="Directory for plots.",
              type=click.Path(file_okay=False))
@click.option("--quick", is_flag=True, help="A smaller run (seconds instead of a minute).")
@click.option("--seed", default=0, show_default=True, help="Random seed.",
              type=click.IntRange(min=0))
def demo(out: str, quick: bool, seed: int) -> None:
    """Run the demo: an HMM (LMH and Gibbs against the exact marginals), Bayesian logistic
    regression (MH), tall data (exact MH, subsampled MH and SMH: ESS per second) and particle
    Gibbs (PGAS against CSMC) on a linear-Gaussian state-space model."""
    from thrifty.demo import run_demo

    try:  # (the directory first: a file or a device there is a usage error, not a traceback)
        Path(out).mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise click.BadParameter(f"cannot make the directory {out!r}: {e.strerror}",
                                 param_hint="'--out'") from None
    run_demo(out, quick=quick, seed=seed)


if __name__ == "__main__":
    main()
