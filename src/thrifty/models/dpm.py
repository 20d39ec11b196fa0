"""Dirichlet-process mixtures (paper 000 §4.2, Fig. 7 top): a plain DP mixture of Gaussians and
the joint DP mixture of logistic regressions (JointDPM), written with ``th.CRP`` and collapsed
per-cluster feature models (:mod:`thrifty.processes`)."""

from __future__ import annotations

import numpy as np

import thrifty as th
from thrifty import dist, glm


@th.model
def dp_mixture(x, m0, k0, v0, S0, alpha=None):
    """A DP mixture of Gaussians with a collapsed Normal–Inverse-Wishart model per cluster;
    ``alpha ~ Gamma(1, 1)`` unless given — drawn by the CRP at ``("alpha",)``, so an MH step
    on it costs O(1) (:mod:`thrifty.processes.base`).  Returns the table labels.

    >>> import numpy as np, thrifty as th
    >>> from thrifty.models import dp_mixture
    >>> x = np.array([[-2.0, 0.0], [-2.1, 0.2], [2.0, 0.1], [2.2, -0.1]])
    >>> z = th.simulate(dp_mixture(x, np.zeros(2), 0.1, 4.0, np.eye(2)), seed=0).output
    >>> z.shape
    (4,)
    """
    a = dist.Gamma(1.0, 1.0) if alpha is None else alpha
    crp = th.CRP(a, name="alpha")
    feats = th.mem("feats", lambda k: th.collapsed.NormalInverseWishart(m0, k0, v0, S0))
    with th.plate("data", len(x)) as i:
        z = th.sample("z", crp)  # table labels of the executed elements
        th.observe("x", feats(z), x[i])  # one collapsed model per table
    return z


@th.model
def dp_means(y, alpha=1.0, prior_sd=5.0, sd=1.0):
    """A DP mixture of 1-d Gaussians of known sd whose table means are memoized choices, not
    collapsed: ``mu(k) ~ N(0, prior_sd²)`` for each table ``k`` a label reaches.

    >>> import numpy as np, thrifty as th
    >>> from thrifty.models import dp_means
    >>> th.simulate(dp_means(np.array([-3.0, -2.5, 3.1])), seed=0).values()["data.z"].shape
    (3,)
    """
    crp = th.CRP(alpha)
    mu = th.mem("mu", lambda k: dist.Normal(0.0, prior_sd))
    with th.plate("data", len(y)) as i:
        th.observe("y", dist.Normal(mu(th.sample("z", crp)), sd), y[i])


@th.model
def joint_dpm(X, y, m0, k0, v0, S0, sig_w):
    """The JointDPM of paper 000 Fig. 7 (top): a DP mixture whose clusters each have a
    collapsed Normal–Inverse-Wishart model of the features and their own logistic regression
    weights ``w(z)`` (memoized, not collapsed).

    ``X`` holds the regression's inputs (an intercept column first, as
    :func:`thrifty.datasets.clustered_nonlinear` returns them); the feature model covers the
    last ``len(m0)`` columns (all of them when ``len(m0) == X.shape[1]``).  Inference program of
    the paper (``step_z`` label updates per weight update, chosen to balance their time; 000
    uses drift 0.1 on its data, ``benchmarks/joint_dpm.py`` 0.5 with w ~ N(0, 10² I))::

        step_z = 10
        th.cycle([th.mh("alpha", th.drift(0.5)),
                  th.cycle([th.gibbs(th.one("data.z"))], repeats=step_z),
                  th.subsampled_mh(th.one("w"), batch_size=100, epsilon=0.3,
                                   proposal=th.drift(0.1), proxy="taylor")])

    ``proxy="taylor"`` (optional) tests Taylor remainders of each cluster's logistic terms
    (:mod:`thrifty.inference.subsampling.mem_proxy`).  Started from the prior, the chain holds many
    small tables at first (α is drawn from Gamma(1, 1) and every point opens tables); initialising
    the labels (``init={"data.z": ...}``, e.g. k-means) shortens that phase.

    >>> import numpy as np, thrifty as th
    >>> from thrifty.models import joint_dpm
    >>> d = th.datasets.clustered_nonlinear(40, 10, seed=0)
    >>> t = th.simulate(joint_dpm(d.X_train, d.y_train, np.zeros(2), 0.1, 4.0, np.eye(2), 3.0),
    ...                 seed=0)
    >>> t["alpha"] > 0
    True
    """
    D = X.shape[1]
    f = D - len(m0)
    crp = th.CRP(alpha=dist.Gamma(1.0, 1.0), name="alpha")  # α drawn by the CRP: O(1) steps
    feats = th.mem("feats", lambda k: th.collapsed.NormalInverseWishart(m0, k0, v0, S0))
    w_prior = dist.MvNormal(np.zeros(D), sig_w**2 * np.eye(D))
    w = th.mem("w", lambda k: w_prior)
    with th.plate("data", len(y)) as i:
        z = th.sample("z", crp)
        Xi = X[i]
        th.observe("x", feats(z), Xi[:, f:] if f else Xi)
        th.observe("y", glm.logistic(Xi, w(z)), y[i])
    return z
