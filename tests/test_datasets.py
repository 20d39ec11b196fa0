"""thrifty.datasets: seeded generators and the scikit-learn loaders."""

import doctest

import numpy as np
import pytest

from thrifty import datasets
from thrifty.datasets import TrainTest, synthetic_logistic, two_feature


def test_synthetic_logistic_is_seeded():
    a = synthetic_logistic(500, 3, seed=4)
    b = synthetic_logistic(500, 3, seed=4)
    c = synthetic_logistic(500, 3, seed=5)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    assert not np.array_equal(a[0], c[0])


def test_two_feature_shapes_determinism_and_balance():
    X, y = two_feature(20_000, seed=1)
    assert X.shape == (20_000, 3) and y.shape == (20_000,) and y.dtype == np.int8
    assert np.all(X[:, 0] == 1.0) and set(np.unique(y)) == {0, 1}
    X2, y2 = two_feature(20_000, seed=1)
    np.testing.assert_array_equal(X, X2)
    np.testing.assert_array_equal(y, y2)
    assert not np.array_equal(two_feature(20_000, seed=2)[0], X)
    # balanced classes: |mean − 1/2| within 4 binomial sd (0.014)
    assert abs(y.mean() - 0.5) < 4 * 0.5 / np.sqrt(20_000)
    # class means ±(1, 1) (separation 1), unit variance: within 0.05
    for label, sign in ((1, 1.0), (0, -1.0)):
        xs = X[y == label, 1:]
        np.testing.assert_allclose(xs.mean(axis=0), [sign, sign], atol=0.05)
        np.testing.assert_allclose(xs.std(axis=0), [1.0, 1.0], atol=0.05)


def test_two_feature_separation_scales_the_true_weights():
    X, y = two_feature(50_000, seed=0, separation=0.5)
    np.testing.assert_allclose(X[y == 1, 1:].mean(axis=0), [0.5, 0.5], atol=0.05)


def _check_split(d: TrainTest, n_total, n_features):
    assert isinstance(d, TrainTest)
    assert len(d.y_train) + len(d.y_test) == n_total
    assert d.X_train.shape == (len(d.y_train), n_features + 1)
    assert d.X_test.shape == (len(d.y_test), n_features + 1)
    assert np.all(d.X_train[:, 0] == 1.0) and np.all(d.X_test[:, 0] == 1.0)
    assert d.y_train.dtype == np.int8 and set(np.unique(d.y_train)) == {0, 1}
    # standardized with the training statistics
    np.testing.assert_allclose(d.X_train[:, 1:].mean(axis=0), 0.0, atol=1e-10)
    np.testing.assert_allclose(d.X_train[:, 1:].std(axis=0), 1.0, atol=1e-10)
    assert np.all(np.isfinite(d.X_test))
    # stratified: the class balance of the test set matches the training set's within 3%
    assert abs(d.y_test.mean() - d.y_train.mean()) < 0.03


def test_digits_7_vs_9():
    pytest.importorskip("sklearn")
    d = datasets.digits_7_vs_9()
    n_features = d.X_train.shape[1] - 1  # pixels constant on the training set are dropped
    assert 40 <= n_features <= 64
    _check_split(d, 359, n_features)
    assert len(d.y_test) == 72  # 20% of 179 sevens (36) and of 180 nines (36)
    assert abs(d.y_train.mean() - 0.5) < 0.01  # 143 sevens, 144 nines
    again = datasets.digits_7_vs_9()
    np.testing.assert_array_equal(d.X_train, again.X_train)
    np.testing.assert_array_equal(d.y_test, again.y_test)
    other = datasets.digits_7_vs_9(seed=1)
    assert not np.array_equal(d.y_train, other.y_train) or not np.array_equal(
        d.X_train, other.X_train
    )
    p = datasets.digits_7_vs_9(pca=10)
    _check_split(p, 359, 10)


def test_breast_cancer():
    pytest.importorskip("sklearn")
    d = datasets.breast_cancer()
    _check_split(d, 569, 30)
    assert abs(d.y_train.mean() - 357 / 569) < 0.01  # 1 = benign, scikit-learn's coding
    np.testing.assert_array_equal(d.X_test, datasets.breast_cancer().X_test)
    _check_split(datasets.breast_cancer(pca=5, test_fraction=0.3), 569, 5)


def test_bad_split_arguments():
    pytest.importorskip("sklearn")
    with pytest.raises(ValueError, match="test_fraction"):
        datasets.breast_cancer(test_fraction=1.0)
    with pytest.raises(ValueError, match="pca"):
        datasets.breast_cancer(pca=0)


def test_loaders_explain_a_missing_scikit_learn(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_sklearn(name, *args, **kw):
        if name == "sklearn" or name.startswith("sklearn."):
            raise ImportError("No module named 'sklearn'")
        return real_import(name, *args, **kw)

    monkeypatch.setattr(builtins, "__import__", no_sklearn)
    with pytest.raises(ImportError, match="pip install scikit-learn"):
        datasets.digits_7_vs_9()


def test_docstring_examples_run():
    result = doctest.testmod(datasets, verbose=False, report=False)
    assert result.failed == 0 and result.attempted > 0


def test_clustered_nonlinear_is_seeded_and_not_linearly_separable_overall():
    """One logistic regression does much worse than one per cluster (the set needs a mixture
    of experts); the generator is deterministic given the seed."""
    from sklearn.linear_model import LogisticRegression

    a = datasets.clustered_nonlinear(3000, 1000, seed=1)
    b = datasets.clustered_nonlinear(3000, 1000, seed=1)
    assert np.array_equal(a.X_train, b.X_train) and np.array_equal(a.y_test, b.y_test)
    one = LogisticRegression().fit(a.X_train[:, 1:], a.y_train).score(a.X_test[:, 1:], a.y_test)
    from sklearn.neighbors import KNeighborsClassifier

    local = KNeighborsClassifier(25).fit(a.X_train[:, 1:], a.y_train).score(a.X_test[:, 1:],
                                                                          a.y_test)
    assert local > one + 0.1, (one, local)
