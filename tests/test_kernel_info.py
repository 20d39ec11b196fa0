"""Every kernel step says what it did (``kernel.update(trace, rng) -> (trace, info)``), and a
kernel's statistics — ``result.stats`` — are the sum of its steps' infos."""

import numpy as np

import thrifty as th
from shared_models import mean_of_normals
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


def test_result_stats_are_the_sampling_steps_with_the_burn_in_apart():
    """``result.stats[label]`` sums the steps after the burn-in (``num_samples * thin``),
    ``["burn_in"]`` the burn-in's, with the same keys — as Stan's and PyMC's sampler
    statistics are the sampling iterations' (during the burn-in th.drift() adapts).  Exact on
    MH of one continuous choice with thin=1, where an accepted proposal changes the value: the
    sampling steps accepted the changes between successive draws, plus 0 or 1 (the step
    before the first draw).  Before, the row summed both phases (500 steps here)."""
    k = th.mh("mu", th.drift())
    r = th.infer(mean_of_normals(Y), k, num_samples=300, burn_in=200, chains=2, seed=3,
                 workers=1, progress=False)
    s = r.stats[k.label()]
    assert (s["steps"], s["proposed"]) == (600, 600)
    assert (s["burn_in"]["steps"], s["burn_in"]["proposed"]) == (400, 400)
    for c, row in enumerate(s["chains"]):
        changes = int((np.diff(r["mu"][c]) != 0).sum())
        assert row["accepted"] - changes in (0, 1), (row["accepted"], changes)
        assert row["acceptance_rate"] == row["accepted"] / 300
    assert s["accepted"] == sum(row["accepted"] for row in s["chains"])
    assert s["burn_in"]["accepted"] == sum(row["burn_in"]["accepted"] for row in s["chains"])
    assert s["burn_in"].keys() == s.keys() - {"burn_in", "chains", "proposal", "start"}
    r3 = th.infer(mean_of_normals(Y), k, num_samples=50, burn_in=20, thin=3, seed=3,
                  progress=False)
    assert r3.stats[k.label()]["steps"] == 150 and r3.stats[k.label()]["burn_in"]["steps"] == 20


def test_without_a_burn_in_its_statistics_are_of_no_step():
    k = th.mh("mu", th.drift(0.5))
    r = th.infer(mean_of_normals(Y), k, num_samples=40, seed=0, progress=False)
    s = r.stats[k.label()]
    assert s["steps"] == 40 and s["burn_in"]["steps"] == 0 and s["burn_in"]["proposed"] == 0
    assert s["burn_in"].keys() == s.keys() - {"burn_in", "chains"}


def test_a_kernel_sums_the_burn_in_apart_from_the_steps_after_it():
    """``set_tuning(False)`` ends the burn-in: what the steps did until then becomes
    ``stats.burn_in`` (a composite's and its parts'), ``stats`` restarts from zero; the
    progress bar's totals (ChainRecord) count both phases."""
    from thrifty.runtime.chain import ChainRecord

    rng = np.random.default_rng(4)
    trace = initialize(mixture(Y), rng)
    parts = [th.mh("mu", th.drift(0.3)), th.gibbs(th.one("data.z"))]
    k = th.cycle(parts)
    k.set_tuning(True)
    for _ in range(15):
        trace = k.step(trace, rng)
    during = ChainRecord()
    during.set_stats([(lbl, kk.stats.as_burn_in([])) for lbl, kk in k.kernels()])
    k.set_tuning(False)
    for _ in range(10):
        trace = k.step(trace, rng)
    for kk, per_step in ((k, 2), (parts[0], 1), (parts[1], 1)):  # (the cycle: its parts')
        assert (kk.stats.burn_in.steps, kk.stats.steps) == (15, 10)
        assert (kk.stats.burn_in.proposed, kk.stats.proposed) == (15 * per_step, 10 * per_step)
    assert parts[0].stats.burn_in.site_names == ["('mu',)"]
    rec = ChainRecord()
    rec.set_stats([(lbl, kk.stats) for lbl, kk in k.kernels()])
    assert rec.proposed == 50 and during.proposed == 30
    assert rec.accepted == sum(p.stats.accepted + p.stats.burn_in.accepted for p in parts)
