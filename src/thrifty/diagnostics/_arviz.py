"""Import ArviZ once, without its banner about the 1.0 refactor."""

import warnings

with warnings.catch_warnings():
    warnings.simplefilter("ignore", FutureWarning)
    import arviz as az  # noqa: F401
