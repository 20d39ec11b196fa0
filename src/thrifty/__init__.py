"""thrifty: probabilistic programming whose MCMC spends computation only where it matters."""

import logging
import sys

from thrifty import distributions as dist
from thrifty.core.model import Model, Program, model
from thrifty.core.primitives import (
    call,
    deterministic,
    factor,
    markov,
    mem,
    observe,
    plate,
    sample,
)
from thrifty.core.simulate import initialize, simulate
from thrifty.core.trace import Trace
from thrifty.inference.compose import cycle, mixture
from thrifty.inference.gradient.hmc import hmc, nuts
from thrifty.inference.kernel import Kernel, ZeroAcceptanceWarning
from thrifty.inference.mcmc.adaptive import adaptive_lmh
from thrifty.inference.mcmc.gibbs import gibbs
from thrifty.inference.mcmc.mh import lmh, mh
from thrifty.inference.particles.pgibbs import pgibbs
from thrifty.inference.particles.pmmh import pmmh
from thrifty.inference.particles.smc import SMCResult, smc
from thrifty.inference.particles.smc_replay import ReplayWarning
from thrifty.inference.proposals.base import drift, prior
from thrifty.inference.selection import each, one, ordered_range, select
from thrifty.inference.subsampling.austerity import austerity_gibbs
from thrifty.inference.subsampling.sgld import sgld
from thrifty.inference.subsampling.smh import smh
from thrifty.inference.subsampling.subsampled import subsampled_mh
from thrifty.processes.crp import CRP
from thrifty.processes.pitman_yor import PitmanYor
from thrifty.runtime import InterruptedWarning, load_checkpoint
from thrifty.runtime.convergence import ConvergenceWarning
from thrifty.runtime.infer import infer
from thrifty.runtime.predictive import Predictive, predictive
from thrifty.runtime.ray_executor import RayExecutor
from thrifty.runtime.result import Result

__version__ = "0.1.0"

__all__ = [
    "CRP",
    "ConvergenceWarning",
    "InterruptedWarning",
    "Kernel",
    "Model",
    "PitmanYor",
    "Predictive",
    "Program",
    "RayExecutor",
    "ReplayWarning",
    "Result",
    "SMCResult",
    "Trace",
    "ZeroAcceptanceWarning",
    "adaptive_lmh",
    "austerity_gibbs",
    "call",
    "collapsed",
    "cycle",
    "datasets",
    "deterministic",
    "diagnostics",
    "dist",
    "drift",
    "each",
    "factor",
    "gibbs",
    "glm",
    "hmc",
    "infer",
    "initialize",
    "lmh",
    "load_checkpoint",
    "markov",
    "mem",
    "mh",
    "mixture",
    "model",
    "nuts",
    "observe",
    "one",
    "ordered_range",
    "pgibbs",
    "plate",
    "pmmh",
    "predictive",
    "prior",
    "sample",
    "select",
    "sgld",
    "simulate",
    "smc",
    "smh",
    "subsampled_mh",
]

from thrifty import (  # subpackages users reach as th.datasets, ...
    collapsed,
    datasets,
    diagnostics,
)
from thrifty.distributions import glm  # the GLM families, as th.glm

sys.modules[__name__ + ".glm"] = glm  # ``import thrifty.glm`` names the same module

class _UntilConfigured(logging.StreamHandler):
    """stderr for thrifty's messages while the application has not configured logging: once
    the root logger has handlers (``logging.basicConfig`` after ``import thrifty``), theirs
    print them, and no message appears twice."""

    def emit(self, record):
        if not logging.root.handlers:
            super().emit(record)


# what th.infer says it chose for a program without a kernel (INFO, as PyMC's "Assigned NUTS
# to ..."): shown on stderr unless the application configured logging itself
_log = logging.getLogger("thrifty")
if not logging.root.handlers and not _log.handlers:
    _log.setLevel(logging.INFO)
    _log.addHandler(_UntilConfigured())
