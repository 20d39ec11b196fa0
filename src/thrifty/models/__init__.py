"""Ready-made models from the papers."""

from thrifty.models.dpm import dp_means, dp_mixture, joint_dpm
from thrifty.models.gp import gp_hyperparameters
from thrifty.models.hmm import forward_backward, hmm
from thrifty.models.lds import generate_lds, lds, lds_matrices
from thrifty.models.logistic import logistic_regression, robust_regression, sitewise_logistic
from thrifty.models.mrf import dense_mrf, exact_marginals, random_potentials
from thrifty.models.sv import generate_sv, sv

__all__ = [
    "dense_mrf",
    "dp_means",
    "dp_mixture",
    "exact_marginals",
    "forward_backward",
    "generate_lds",
    "generate_sv",
    "gp_hyperparameters",
    "hmm",
    "joint_dpm",
    "lds",
    "lds_matrices",
    "logistic_regression",
    "random_potentials",
    "robust_regression",
    "sitewise_logistic",
    "sv",
]
