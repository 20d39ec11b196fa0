"""Every kernel step says what it did (``kernel.update(trace, rng) -> (trace, info)``), and a
kernel's statistics — ``result.stats`` — are the sum of its steps' infos."""

import numpy as np

import thrifty as th
from thrifty import dist
from thrifty.core.simulate import initialize
from thrifty.inference.kernel import Info


@th.model
def mixture(y):
    mu = th.sample("mu", dist.Normal(0.0, 3.0))
    with th.plate("data", len(y)) as i:
        z = th.sample("z", dist.Bernoulli(probs=0.5))
        th.observe("y", dist.Normal(mu * (2 * z - 1), 1.0), y[i])


Y = np.random.default_rng(0).normal(size=50) + 1.0


def test_update_returns_what_the_step_did_and_stats_are_their_sum():
    rng = np.random.default_rng(1)
    trace = initialize(mixture(Y), rng)
    k = th.mh("mu", th.drift(0.3))
    infos = []
    for _ in range(30):
        trace, info = k.update(trace, rng)
        assert isinstance(info, Info)
        assert info.proposed == 1 and info.accepted in (0, 1)
        assert info.runs >= 1 and info.elements == 50 * info.runs and info.seconds > 0
        infos.append(info)
    s = k.stats
    assert s.steps == 30
    assert s.proposed == sum(i.proposed for i in infos)
    assert s.accepted == sum(i.accepted for i in infos)
    assert s.runs == sum(i.runs for i in infos) and s.elements == sum(i.elements for i in infos)


def test_kernel_specific_counters_are_in_the_info():
    X, y, _ = th.datasets.synthetic_logistic(20_000, 2, seed=0)
    from thrifty.models.logistic import logistic_regression

    rng = np.random.default_rng(0)
    trace = initialize(logistic_regression(X, y), rng, init={"w": np.array([1.0, -0.5])})
    k = th.subsampled_mh("w", proposal=th.drift(0.01))
    total = 0.0
    for _ in range(10):
        trace, info = k.update(trace, rng)
        assert info.extra["sections"] >= 100
        total += info.extra["sections"]
    assert k.stats.as_dict()["sections_per_step"] == total / 10


def test_result_stats_sum_the_infos_of_each_kernel_of_a_cycle():
    gz, mm = th.gibbs(th.one("data.z")), th.mh("mu", th.drift(0.3))
    r = th.infer(mixture(Y), th.cycle([gz, mm], repeats=2), num_samples=40, seed=0,
                 progress=False)
    g, m = r.stats[gz.label()], r.stats[mm.label()]
    assert g["steps"] == m["steps"] == 80  # two of each per draw
    assert g["elements_per_step"] == 1.0  # one element per label update
    assert m["elements_per_step"] == 50.0  # mu is read by every element


def test_work_outside_a_step_goes_to_the_totals():
    rng = np.random.default_rng(2)
    trace = initialize(mixture(Y), rng)
    k = th.mh("mu", th.drift(0.3))
    k.execute(trace, rng)  # e.g. a diagnostic's trial run, not a step
    assert k.stats.runs == 1 and k.stats.steps == 0


def test_the_interface_and_kernel_examples_run():
    import doctest

    import thrifty.core.choices
    import thrifty.core.engine
    import thrifty.core.sections
    import thrifty.inference.kernel

    for mod in (thrifty.core.engine, thrifty.core.sections, thrifty.core.choices,
                thrifty.inference.kernel):
        res = doctest.testmod(mod, verbose=False, report=False)
        assert res.attempted > 0 and res.failed == 0, mod.__name__


def test_a_composite_step_info_is_the_sum_of_its_parts_and_is_not_counted_twice():
    """A cycle's (and a mixture's) step info sums its parts' proposals, acceptances, runs and
    elements; ``result.stats`` shows it so, and the chain's acceptance totals (progress bar)
    count the parts only."""
    from thrifty.runtime.chain import ChainRecord

    rng = np.random.default_rng(2)
    trace = initialize(mixture(Y), rng)
    parts = [th.mh("mu", th.drift(0.3)), th.gibbs(th.one("data.z"))]
    k = th.cycle(parts)
    for _ in range(20):
        trace, info = k.update(trace, rng)
        assert info.proposed == 2 and info.runs >= 2  # one proposal of each part
    for f in ("proposed", "accepted", "runs", "elements"):
        assert getattr(k.stats, f) == sum(getattr(p.stats, f) for p in parts), f
    assert k.stats.composite and not any(p.stats.composite for p in parts)
    rec = ChainRecord()
    rec.set_stats([(lbl, kk.stats) for lbl, kk in k.kernels()])
    assert rec.proposed == 40 and rec.accepted == sum(p.stats.accepted for p in parts)
    r = th.infer(mixture(Y), th.mixture([(0.5, th.mh("mu", th.drift(0.3))),
                                         (0.5, th.gibbs(th.one("data.z")))]),
                 num_samples=100, seed=0, progress=False)
    top = r.stats[next(iter(r.stats))]
    assert top["steps"] == 100 and 0.0 < top["acceptance_rate"] <= 1.0
    assert top["runs_per_step"] >= 1.0
