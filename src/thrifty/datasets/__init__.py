"""Data sets: seeded synthetic generators (no downloads) and loaders of the small real sets
that ship with scikit-learn (an optional dependency, imported by those loaders only).

>>> import thrifty as th
>>> X, y, theta = th.datasets.synthetic_logistic(100, 3, seed=0)
>>> X.shape, y.shape, theta.shape
((100, 3), (100,), (3,))
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


def synthetic_logistic(n: int, d: int, theta=1.0, seed=0, intercept: bool = False):
    """Tall logistic-regression data as in paper 002: x_ij ~ N(0, 1), y ~ Bernoulli(σ(x·θ)).

    Returns ``(X, y, theta)``; ``y`` is an int8 array.  With ``intercept`` the first column is 1.

    >>> X, y, theta = synthetic_logistic(1000, 10, seed=0)
    >>> X.shape, y.dtype.name, float(theta[0])
    ((1000, 10), 'int8', 1.0)
    """
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    if intercept:
        X[:, 0] = 1.0
    theta = np.broadcast_to(np.asarray(theta, dtype=float), (d,)).copy()
    p = 1.0 / (1.0 + np.exp(-(X @ theta)))
    y = (rng.random(n) < p).astype(np.int8)
    return X, y, theta


def two_feature(n: int, seed=0, separation: float = 1.0):
    """The 2-feature classification set of paper 000 §4.1.1 (Fig. 5a): two Gaussian classes.

    Labels y ~ Bernoulli(1/2); the features of class y are N(±(separation, separation), I₂)
    (+ for y = 1).  Returns ``(X, y)`` with ``X = [1, x₁, x₂]`` (an intercept column first) and
    ``y`` an int8 array.  The log-odds of the generating model are ``2·separation·(x₁ + x₂)``,
    so logistic regression's true weights are ``(0, 2·separation, 2·separation)``.  (The paper
    gives no numbers for its figure; these are ours.)

    >>> X, y = two_feature(1000, seed=0)
    >>> X.shape, y.dtype.name, float(X[:, 0].min())
    ((1000, 3), 'int8', 1.0)
    """
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.5).astype(np.int8)
    sign = (2.0 * y - 1.0)[:, None]
    x = sign * separation + rng.standard_normal((n, 2))
    X = np.column_stack([np.ones(n), x])
    return X, y


class TrainTest(NamedTuple):
    """A fixed train/test split: features with an intercept column first, labels in {0, 1}."""

    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray


def _sklearn_datasets():
    try:
        from sklearn import datasets
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError(
            "this loader reads a data set that ships with scikit-learn, which is not installed: "
            "pip install scikit-learn (or install thrifty with its dev extra)"
        ) from e
    return datasets


def _split(X, y, test_fraction: float, seed, pca: int | None) -> TrainTest:
    """Stratified seeded split; standardize with the training statistics (constant columns
    dropped), optionally project on the first ``pca`` principal components of the training
    set (then standardize those), and prepend an intercept column."""
    if not 0 < test_fraction < 1:
        raise ValueError(f"test_fraction must be in (0, 1), got {test_fraction}")
    rng = np.random.default_rng(seed)
    test = np.zeros(len(y), dtype=bool)
    for c in np.unique(y):
        idx = rng.permutation(np.flatnonzero(y == c))
        test[idx[: round(test_fraction * len(idx))]] = True
    Xtr, Xte = X[~test].astype(float), X[test].astype(float)
    mu, sd = Xtr.mean(axis=0), Xtr.std(axis=0)
    keep = sd > 0
    Xtr = (Xtr[:, keep] - mu[keep]) / sd[keep]
    Xte = (Xte[:, keep] - mu[keep]) / sd[keep]
    if pca is not None:
        if not 1 <= pca <= Xtr.shape[1]:
            raise ValueError(f"pca must be in [1, {Xtr.shape[1]}], got {pca}")
        _, _, vt = np.linalg.svd(Xtr, full_matrices=False)
        # fix the sign of each component (largest coefficient positive): deterministic output
        vt = vt[:pca] * np.sign(vt[:pca][np.arange(pca), np.abs(vt[:pca]).argmax(axis=1)])[:, None]
        Xtr, Xte = Xtr @ vt.T, Xte @ vt.T
        s = Xtr.std(axis=0)
        Xtr, Xte = Xtr / s, Xte / s
    ones = np.ones
    return TrainTest(
        np.column_stack([ones(len(Xtr)), Xtr]),
        y[~test].astype(np.int8),
        np.column_stack([ones(len(Xte)), Xte]),
        y[test].astype(np.int8),
    )


def digits_7_vs_9(test_fraction: float = 0.2, seed=0, pca: int | None = None) -> TrainTest:
    """The 8×8 digits of scikit-learn, 7 (y = 0) vs 9 (y = 1): 359 images (179 sevens, 180
    nines) — the small cousin of the MNIST 7-vs-9 task of papers 000 §4.1 and 004 §6.1.

    Pixels standardized with the training statistics (pixels constant on the training set
    dropped), optionally reduced to ``pca`` principal components, intercept column first; a
    stratified split with ``test_fraction`` of each class held out, fixed by ``seed``.  Needs
    scikit-learn (imported here, not by thrifty).
    """
    data = _sklearn_datasets().load_digits()
    keep = (data.target == 7) | (data.target == 9)
    X = data.data[keep]
    y = (data.target[keep] == 9).astype(np.int8)
    return _split(X, y, test_fraction, seed, pca)


def breast_cancer(test_fraction: float = 0.2, seed=0, pca: int | None = None) -> TrainTest:
    """The Wisconsin breast-cancer set of scikit-learn: 569 cases, 30 features, y = 1 for
    benign (357) and 0 for malignant (212), scikit-learn's coding.

    Standardized with the training statistics, optionally reduced to ``pca`` components,
    intercept column first; stratified split fixed by ``seed``.  Needs scikit-learn.
    """
    data = _sklearn_datasets().load_breast_cancer()
    return _split(data.data, data.target.astype(np.int8), test_fraction, seed, pca)


def clustered_nonlinear(n_train: int = 10_000, n_test: int = 1_000, clusters: int = 6,
                        seed=0) -> TrainTest:
    """A 2-d nonlinear classification set in the spirit of paper 000 Fig. 6b (which does not
    specify its generator): ``clusters`` Gaussian clusters of features (centres on a circle of
    radius 4, sd 1) each with its own logistic decision boundary through its centre at a random
    angle (weights of norm 4) — linear within a cluster, nonlinear overall, so a joint DP
    mixture of logistic regressions fits it and one logistic regression does not.  Returns
    ``TrainTest`` with an intercept column first (labels int8 in {0, 1}).

    >>> d = clustered_nonlinear(200, 50, seed=0)
    >>> d.X_train.shape, d.X_test.shape, sorted(set(d.y_train.tolist()))
    ((200, 3), (50, 3), [0, 1])
    """
    rng = np.random.default_rng(seed)
    angles = 2 * np.pi * np.arange(clusters) / clusters
    centres = 4.0 * np.c_[np.cos(angles), np.sin(angles)]
    normals = rng.uniform(0, 2 * np.pi, clusters)
    weights = 4.0 * np.c_[np.cos(normals), np.sin(normals)]

    def draw(n):
        k = rng.integers(clusters, size=n)
        x = centres[k] + rng.standard_normal((n, 2))
        logit = np.einsum("ij,ij->i", x - centres[k], weights[k])
        y = (rng.random(n) < 1.0 / (1.0 + np.exp(-logit))).astype(np.int8)
        return np.c_[np.ones(n), x], y

    Xtr, ytr = draw(n_train)
    Xte, yte = draw(n_test)
    return TrainTest(Xtr, ytr, Xte, yte)
