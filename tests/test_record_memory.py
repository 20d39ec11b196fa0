"""Memory of recorded draws: a one-value change costs a value and an index, not Python objects.

The events of a variable (``thrifty.runtime.series``) are held in typed arrays; these tests
check (1) the bytes per draw in the main process of ``th.infer`` with worker processes
(tracemalloc, at two run lengths: the slope is the cost of a draw), (2) the exact bytes of the
arrays per event, and (3) that every kind of value comes back as it was recorded — through
``events()``, ``materialize``, slicing and re-joining, pickling and ``to_arrays``.
"""

import gc
import os
import pickle
import tracemalloc

import numpy as np
import pytest

import thrifty as th
from thrifty import dist
from thrifty.runtime.buffers import Runs
from thrifty.runtime.draws import DrawStore
from thrifty.runtime.series import Series

#: Bytes per draw allowed in the main process for a draw that changes one float (the record
#: itself is 33 bytes for a plate element, 25 for a top-level float; then the draw's
#: log-density and, in the result, its ``sample_stats`` and the dense ``mu``).
PER_DRAW = 100


@th.model
def plate_model(n):
    mu = th.sample("mu", dist.Normal(0.0, 1.0))
    with th.plate("data", n):
        th.sample("z", dist.Normal(mu, 1.0))


@th.model
def scalar_model():
    th.sample("mu", dist.Normal(0.0, 1.0))


# worker processes do not trace their allocations (they would run several times slower)
os.register_at_fork(after_in_child=tracemalloc.stop)


def parent_bytes_per_draw(program, kernel, lengths=(400, 2000), chains=2) -> float:
    """Slope of the main process's traced memory (result alive) between two run lengths,
    after a first run that imports what a run imports."""
    th.infer(program, kernel, num_samples=10, chains=chains, workers=2, seed=1, progress=False)
    held = []
    for n in lengths:
        gc.collect()
        tracemalloc.start()
        try:
            r = th.infer(program, kernel, num_samples=n, chains=chains, workers=2, seed=0,
                         progress=False)
            assert r.stats["run"]["workers"] == 2
            gc.collect()
            held.append(tracemalloc.get_traced_memory()[0])
        finally:
            tracemalloc.stop()
        del r
    return (held[1] - held[0]) / ((lengths[1] - lengths[0]) * chains)


@pytest.mark.parametrize("case", ["plate element", "top-level float"])
def test_a_draw_that_changes_one_value_costs_at_most_100_bytes_in_the_main_process(case):
    """A prior-proposal MH step on an unobserved choice is always accepted: every draw
    changes exactly one float (measured: 58 and 49 bytes; lists of Python objects per event
    took 1,394 and 152).  The
    plate is large enough for the default ``dense_bytes`` to keep it as events in the result
    (a dense copy per draw is what a small plate's result is, by design)."""
    if case == "plate element":
        program, kernel = plate_model(50_000), th.mh(th.one("data.z"), th.prior())
    else:
        program, kernel = scalar_model(), th.mh("mu", th.prior())
    per_draw = parent_bytes_per_draw(program, kernel)
    assert per_draw <= PER_DRAW, f"{per_draw:.0f} bytes per draw"


def test_the_arrays_hold_33_bytes_per_element_change_and_25_per_scalar():
    """Exact bytes of the typed arrays (after ``trim``), at two lengths: per event a draw, a
    kind and an offset (17 bytes), then an index and a value, or one value."""
    rng = np.random.default_rng(0)

    def nbytes(n, whole):
        s = Series()
        s.set(0, np.zeros(1000))
        for d in range(1, n):
            if whole:
                s.set(d, float(rng.normal()))
            else:
                s.change(d, np.array([d % 1000]), np.array([rng.normal()]))
        s.trim()
        return s.nbytes()

    for whole, want in ((False, 33), (True, 25)):
        slope = (nbytes(4000, whole) - nbytes(1000, whole)) / 3000
        assert slope == want, (whole, slope)


def test_a_scalar_series_holds_no_python_object_per_draw():
    s = Series()
    for d in range(5000):
        s.set(d, float(d))
    gc.collect()
    tracemalloc.start()
    try:
        s.trim()
        arrays = s.to_arrays()
        gc.collect()
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert len(arrays["objects"]) == 0 and arrays["rows"].dtype == np.float64
    assert held <= 25 * 5000 + 4096  # the trimmed arrays, nothing per event beyond them


# -- every kind of value comes back as it was recorded --------------------------------------------
class Label:
    def __init__(self, name):
        self.name = name

    def __eq__(self, other):
        return isinstance(other, Label) and other.name == self.name


EVENTS = [
    (0, None, np.arange(4.0)),  # a small whole array: a row
    (1, np.array([2]), np.array([7.5])),  # a change of one element
    (1, np.array([0, 3]), np.array([-1.0, 2.25])),  # a second change at the same draw
    (3, None, None),  # absent
    (4, None, np.arange(4.0) * 3),
    (5, np.arange(1000) % 4, np.linspace(0, 1, 1000)),  # a large change: kept as objects
    (6, None, np.arange(600.0)),  # another shape (and large): an object
    (8, None, np.ones(4, dtype=np.float32)),  # another dtype: promoted exactly
    (9, np.array([1]), np.array([3], dtype=np.int64)),  # an int change into float values
]


def check_events(s, events):
    got = list(s.events())
    assert len(got) == len(events) == len(s)
    for (d, e, v), (gd, ge, gv) in zip(events, got):
        assert gd == d
        assert (ge is None) == (e is None)
        if e is not None:
            np.testing.assert_array_equal(ge, e)
        if v is None:
            assert gv is None
        else:
            assert type(gv) is type(v) or isinstance(v, np.ndarray)
            np.testing.assert_array_equal(gv, v)


def reference(events, n):
    """The dense form computed by hand."""
    cur, out = None, []
    it = iter(events)
    ev = next(it, None)
    for d in range(n):
        while ev is not None and ev[0] <= d:
            _, e, v = ev
            if e is None:
                cur = None if v is None else np.array(v, dtype=float)
            else:
                cur[e] = v
            ev = next(it, None)
        out.append(np.full(4, np.nan) if cur is None or cur.shape != (4,) else cur.copy())
    return np.array(out)


def build(events):
    s = Series()
    for d, e, v in events:
        if e is None:
            s.set(d, v)
        else:
            s.change(d, e, v)
    return s


def test_values_come_back_as_recorded_through_every_path():
    s = build(EVENTS)
    check_events(s, EVENTS)
    assert s.layout() is None  # shapes vary: an object array
    small = [ev for ev in EVENTS if ev[0] != 6]
    t = build(small)
    assert t.layout() == ((4,), np.float64, False)
    np.testing.assert_array_equal(t.materialize(11), reference(small, 11))
    for copy in (pickle.loads(pickle.dumps(s)), Series.from_arrays(s.to_arrays())):
        check_events(copy, EVENTS)
    for cut in range(11):  # split at every draw, then joined again
        joined = s.prefix(cut)
        joined.extend(s.between(cut, 11))
        check_events(joined, EVENTS)
        np.testing.assert_array_equal(joined.prefix(cut).draws, s.prefix(cut).draws)


def test_python_scalars_keep_their_type_and_integers_promote_only_exactly():
    events = [(0, None, 0), (1, None, 0.5), (2, None, True), (3, None, np.float64(2.0)),
              (4, None, 7)]
    s = build(events)
    check_events(s, events)
    assert len(s.to_arrays()["objects"]) == 0  # all in one float64 array
    big = [(0, None, 2**60 + 1), (1, None, 0.5), (2, None, 3)]  # 2⁶⁰+1 is not a float64
    s = build(big)
    check_events(s, big)
    assert [type(v) for _, _, v in s.events()] == [int, float, int]
    assert len(s.to_arrays()["objects"]) == 1  # the float kept as an object, not rounded
    huge = [(0, None, 2**70), (1, None, "a"), (2, None, Label("x")), (3, None, (1, 2))]
    check_events(build(huge), huge)


def test_extending_with_values_of_another_layout_keeps_every_value():
    a = build([(0, None, 1.5), (1, None, 2.5)])
    b = build([(2, None, np.arange(3)), (3, None, np.arange(3) + 1)])  # rows of another shape
    a.extend(b)
    check_events(a, [(0, None, 1.5), (1, None, 2.5), (2, None, np.arange(3)),
                     (3, None, np.arange(3) + 1)])


def test_slices_share_memory_but_appending_to_one_never_writes_into_another():
    s = build([(d, np.array([d % 5]), np.array([float(d)])) for d in range(50)])
    head = s.prefix(20)
    assert np.shares_memory(head.to_arrays()["values"], s.to_arrays()["values"])
    head.change(20, np.array([0]), np.array([-99.0]))
    head.extend(build([(21, np.array([1]), np.array([-98.0]))]))
    check_events(s, [(d, np.array([d % 5]), np.array([float(d)])) for d in range(50)])
    assert [v[0] for _, _, v in head.events()][-2:] == [-99.0, -98.0]


def test_a_store_split_into_chunks_and_joined_again_is_the_same_store():
    """``DrawStore.chunk`` / ``extend`` (what checkpoints do) and ``prefix`` (what results
    hold) keep every draw's log-density, latent count, output (the same objects) and events."""
    rng = np.random.default_rng(1)
    shared, n = Label("same"), 40
    outputs = [None] * 10 + [shared] * 10 + [float(i) for i in range(10)]
    outputs += [(i,) for i in range(10)]
    n_latent = [5] * 15 + [6] * 5 + [5] * 20
    store = DrawStore()
    for a in range(0, n, 7):  # ticks of 7 draws
        b = min(n, a + 7)
        series = {"w": build([(d, None, float(rng.normal())) for d in range(a, b)]),
                  "z": build([(d, np.array([d % 3]), np.array([rng.normal()]))
                              for d in range(a, b) if d % 2])}
        store.extend({"meta": {}, "series": series, "lp": list(rng.normal(size=b - a)),
                      "n_latent": n_latent[a:b], "outputs": outputs[a:b], "n": b - a})
    assert store.outputs == outputs and all(x is y for x, y in zip(store.outputs, outputs))
    assert store.n_latent.tolist() == n_latent
    assert store._n_latent.runs == 3 and store._outputs.runs == 1 + 1 + 10 + 10

    def same(a, b):
        assert a.n == b.n and a.outputs == b.outputs
        np.testing.assert_array_equal(a.lp, b.lp)
        np.testing.assert_array_equal(a.n_latent, b.n_latent)
        for name in a.series:
            check_events(b.series[name], list(a.series[name].events()))

    for cut in (0, 1, 13, 39, 40):
        joined = DrawStore()
        joined.extend(store.chunk(0, cut))
        joined.extend(pickle.loads(pickle.dumps(store.chunk(cut, n))))
        same(store, joined)
        head = store.prefix(cut)
        assert head.n == cut and head.outputs == outputs[:cut]
        assert head.n_latent.tolist() == n_latent[:cut]
    store.trim()
    same(store, store.prefix(n))


def test_runs_hold_a_value_per_change():
    r = Runs()
    r.extend(np.full(1000, 7))
    r.extend([7, 8, 8])
    assert r.runs == 2 and len(r) == 1003
    assert r.take(998, 1003).tolist() == [7, 7, 7, 8, 8]
    assert r.take(1001, 1003).tolist() == [8, 8]
    assert r.prefix(1001).take(0, 1001).tolist() == [7] * 1001
    o = Runs(objects=True)
    x = [1.0]
    o.extend([None, None, x, x, [1.0]])
    assert o.runs == 3 and o.take(0, 5)[2] is x and o.take(0, 5)[4] is not x


def test_a_long_series_of_scalars_reads_back_every_type_across_blocks():
    """More events than one block of ``events()``: bools, ints, floats and NumPy floats in
    one float64 array, each read back as its own type."""
    want = []
    for d in range(10_000):
        v = float(d) + 0.5 if d % 3 else (d if d % 2 else bool(d % 4))
        want.append(np.float64(d) if d % 7 == 0 else v)
    s = build([(d, None, v) for d, v in enumerate(want)])
    arrays = s.to_arrays()
    assert len(arrays["objects"]) == 0 and arrays["rows"].dtype == np.float64
    got = [v for _, _, v in s.events()]
    assert [type(v) for v in got] == [type(v) for v in want] and got == want
    np.testing.assert_array_equal(s.materialize(10_000), np.array(want, dtype=float))


def test_the_result_builds_a_variable_s_array_when_it_is_first_read():
    """``th.infer`` returns without building the variables' dense (chains, draws, ...) arrays
    — 3,000 draws of a 1,000-element plate are 24 MB dense, 3,000 events recorded — and builds
    one the first time it is read (once: a second read is the same array)."""
    program, kernel = plate_model(1000), th.mh(th.one("data.z"), th.prior())
    th.infer(program, kernel, num_samples=10, seed=1, progress=False)
    gc.collect()
    tracemalloc.start()
    try:
        r = th.infer(program, kernel, num_samples=3000, seed=0, progress=False)
        gc.collect()
        returned = tracemalloc.get_traced_memory()[0]
        z = r["data.z"]
        read = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    dense = z.nbytes
    assert dense == 3000 * 1000 * 8
    assert returned < dense / 10, f"{returned} bytes held before any variable is read"
    assert read - returned >= dense
    assert r["data.z"] is z


def test_series_of_mixed_events_reads_back_every_draw():
    """One-element changes (moved into the arrays as one block), changes of several elements,
    whole values, values of another dtype (kept as objects) and seals at random points: the
    series gives back every draw's value exactly, in order."""
    from thrifty.runtime.series import Series

    rng = np.random.default_rng(0)
    for trial in range(200):
        s, cur = Series(), np.zeros(6, dtype=[np.int64, np.float64][trial % 2])
        s.set(0, cur.copy())
        ref = [cur.copy()]
        for d in range(1, 60):
            r = rng.random()
            if r < 0.6:
                i = int(rng.integers(6))
                v = (np.array([rng.integers(5)], dtype=cur.dtype) if rng.random() < 0.9
                     else np.array([2.5]))
                s.change(d, np.array([i]), v)
                cur = cur.astype(np.result_type(cur.dtype, v.dtype))
                cur[i] = v[0]
            elif r < 0.8:
                idx = np.sort(rng.choice(6, 2, replace=False))
                v = rng.integers(5, size=2).astype(cur.dtype)
                s.change(d, idx, v)
                cur[idx] = v
            else:
                cur = rng.integers(5, size=6).astype(cur.dtype)
                s.set(d, cur.copy())
            ref.append(cur.copy())
            if rng.random() < 0.1:
                s._seal()
        np.testing.assert_array_equal(s.materialize(60), np.array(ref))


def test_one_element_changes_keep_the_columns_dtype():
    """Draws that change one plate element record values of float32, int32 and uint64 columns
    (uint64 values past 2⁶³ included) with their own dtype and values, as whole columns do."""

    @th.model
    def typed(n):
        mu = th.sample("mu", dist.Normal(0.0, 1.0))
        with th.plate("data", n):
            z = th.sample("z", dist.Normal(mu, 1.0))
            th.deterministic("f32", np.asarray(z, dtype=np.float32) * np.float32(1.5))
            th.deterministic("i32", (np.asarray(z) * 10).astype(np.int32))
            th.deterministic("u64", (np.abs(np.asarray(z)) * 1e18 + 9.3e18).astype(np.uint64))

    r = th.infer(typed(3), th.mh(th.one("data.z"), th.prior()), num_samples=200, seed=0,
                 progress=False)
    z = r["data.z"]
    assert r["data.f32"].dtype == np.float32 and r["data.i32"].dtype == np.int32
    assert r["data.u64"].dtype == np.uint64 and r["data.u64"].max() >= 2**63
    np.testing.assert_array_equal(r["data.f32"], z.astype(np.float32) * np.float32(1.5))
    np.testing.assert_array_equal(r["data.i32"], (z * 10).astype(np.int32))
    np.testing.assert_array_equal(r["data.u64"], (np.abs(z) * 1e18 + 9.3e18).astype(np.uint64))
