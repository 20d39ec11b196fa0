"""``Result.to_arviz``: groups, dimension names and coordinates that read well.

* A plate site (``"school.eta"``) has the plate's elements as the dimension named after the
  plate (``school``, coordinates 0..N−1), shared by its observations and their log-likelihood.
* A markov site (``"s.x"``) has the chain's steps as the dimension ``s_t``.
* A memoized function's values (``mu.0``, ``mu.1``, … in ``result``) are one variable ``mu``
  with the keys as coordinates of the dimension ``mu_key``.
* A vector site's own axes are ``<name>_dim_0``, … (ArviZ's convention) unless ``dims`` says
  otherwise; ``coords``/``dims`` passed by the user take precedence (as in PyMC and NumPyro).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from thrifty.core.address import dotted
from thrifty.errors import ArgumentError


def _event_dims(name: str, ndim: int) -> list[str]:
    return [f"{name}_dim_{j}" for j in range(ndim)]


def site_dims(name: str, meta: tuple | None, ndim: int) -> list[str]:
    """Dimension names (beyond chain and draw) of a variable of ``ndim`` value axes."""
    kind = None if meta is None else meta[0]
    if kind == "plate":
        lead = [dotted(meta[1])]
    elif kind == "plate_chain":
        local, _ = meta[2]
        lead = [dotted(meta[1]), dotted(meta[1] + local) + "_t"]
    elif kind == "chain":
        lead = [dotted(meta[1]) + "_t"]
    else:
        lead = []
    lead = lead[:ndim]
    return lead + _event_dims(name, ndim - len(lead))


def _key_coord(keys: list):
    if all(isinstance(k, (int, np.integer)) and not isinstance(k, bool) for k in keys):
        return np.asarray(keys, dtype=np.int64)
    if all(isinstance(k, (float, np.floating)) for k in keys):
        return np.asarray(keys, dtype=float)
    return np.asarray([str(k) for k in keys])


def merge_mems(posterior: dict, meta: dict) -> tuple[dict, dict, dict]:
    """Replace the per-key variables of each memoized function by one variable with a key
    dimension; returns (variables, dims, coords) of the merged ones."""
    tables: dict = {}
    for name in list(posterior):
        m = meta.get(name)
        if m is not None and m[0] == "mem":
            tables.setdefault(m[1], []).append((m[2], name))
    dims, coords = {}, {}
    for addr, entries in tables.items():
        var = dotted(addr)
        if len({posterior[n].shape for _, n in entries}) != 1 or var in posterior:
            continue  # values of varying shapes: keep one variable per key
        try:
            entries.sort(key=lambda e: e[0])
        except TypeError:
            pass  # keys without an order: first-seen order
        arrays = [posterior.pop(n) for _, n in entries]
        posterior[var] = np.stack(arrays, axis=2)
        dims[var] = [f"{var}_key", *_event_dims(var, arrays[0].ndim - 2)]
        coords[f"{var}_key"] = _key_coord([k for k, _ in entries])
    return posterior, dims, coords


def variable_dims(groups: dict[str, dict], meta: dict, sampled: set[str],
                  extra: dict[str, list[str]]) -> dict[str, list[str]]:
    """Dims of every variable of ``groups``: from ``extra`` when given there (observations,
    merged mem tables), else from where the variable lives (``meta``)."""
    dims: dict = {}
    for g, variables in groups.items():
        lead = 2 if g in sampled else 0
        for name, arr in variables.items():
            if name in dims:
                continue
            ndim = np.ndim(arr) - lead
            given = extra.get(name)
            if given is not None:
                dims[name] = list(given)[:ndim] + _event_dims(name, ndim - len(given))
            else:
                dims[name] = site_dims(name, meta.get(name), ndim)
    return dims


SAMPLED = {"posterior", "prior", "sample_stats", "log_likelihood", "posterior_predictive",
           "prior_predictive"}


def numeric(arr: np.ndarray) -> tuple[np.ndarray | None, str]:
    """The array as ArviZ can hold it (booleans as int8), or None and why not."""
    kind = arr.dtype.kind
    if kind == "b":
        return arr.astype(np.int8), ""
    if kind not in "iuf":
        return None, ("values of varying shapes or types" if kind == "O" else f"dtype {arr.dtype}")
    return arr, ""


def _check_coords_dims(coords, dims) -> None:
    """``coords`` is ``{dimension: values}`` and ``dims`` ``{variable: [dimension, ...]}``."""
    if coords is not None and not isinstance(coords, Mapping):
        raise ArgumentError(f"to_arviz: coords must be a dict {{dimension: values}}, got "
                            f"{type(coords).__name__} {coords!r}")
    if dims is None:
        return
    if not isinstance(dims, Mapping):
        raise ArgumentError(f"to_arviz: dims must be a dict {{variable: [dimension, ...]}}, "
                            f"got {type(dims).__name__} {dims!r}")
    for name, ds in dims.items():
        if isinstance(ds, str) or not isinstance(ds, (list, tuple)) or not all(
            isinstance(d, str) for d in ds
        ):
            raise ArgumentError(f"to_arviz: dims[{name!r}] must be a list of dimension names, "
                                f"got {type(ds).__name__} {ds!r}")


def _check_sizes(groups: dict, all_dims: dict, dims: Mapping, coords: Mapping) -> None:
    """``dims`` that give a variable more dimensions than its value has axes, and ``coords``
    of another length than their dimension: an ArgumentError naming them (xarray's error
    names neither the argument nor the variable)."""
    sizes: dict = {}
    for g, variables in groups.items():
        lead = 2 if g in SAMPLED else 0
        for name, arr in variables.items():
            shape = np.shape(arr)[lead:]
            if len(dims.get(name, ())) > len(shape):
                raise ArgumentError(
                    f"to_arviz: dims[{name!r}] names {len(dims[name])} dimensions, but the "
                    f"values of {name!r} have {len(shape)} axes (shape {shape})")
            for d, n in zip(all_dims[name], shape):
                sizes.setdefault(d, {})[n] = name
    for k, v in coords.items():
        if k in sizes and np.ndim(v) == 1 and len(v) not in sizes[k]:
            n, name = next(iter(sizes[k].items()))
            raise ArgumentError(f"to_arviz: coords[{k!r}] has {len(v)} values, but the "
                                f"dimension {k!r} has {n} (in {name!r})")


def to_arviz_groups(groups: dict[str, dict], meta: dict, obs_dims: dict,
                    coords: dict | None = None, dims: dict | None = None,
                    chain_ids=None, prior_meta: dict | None = None):
    """An ArviZ ``DataTree`` (``InferenceData`` on 0.2x) of ``{group: {name: array}}`` with the
    dimension names of the module docstring.  ``meta`` says where the posterior's variables
    live, ``prior_meta`` the prior's (default ``meta``): each group's memoized functions are
    merged by its own draws, and hold the keys those draws have as coordinates (a prior
    simulation of a CRP mixture opens other tables than the posterior's draws)."""
    from thrifty.diagnostics._arviz import from_groups, merge

    _check_coords_dims(coords, dims)
    extra: dict = dict(obs_dims)
    all_coords: dict = {}
    prior_coords: dict = {}  # the prior's mem keys: its own coordinates
    for g, m, out in (("posterior", meta, all_coords),
                      ("prior", meta if prior_meta is None else prior_meta, prior_coords)):
        if groups.get(g):
            merged, mdims, mcoords = merge_mems(dict(groups[g]), m)
            groups[g] = merged
            extra.update(mdims)
            out.update(mcoords)
    names = {n for variables in groups.values() for n in variables}
    unknown = [n for n in (dims or {}) if n not in names]
    if unknown:
        raise ArgumentError(
            f"to_arviz: dims names {', '.join(map(repr, unknown))}, not a variable of the data; "
            f"variables: {', '.join(sorted(names))} (variables left out are listed in "
            "result.notes)")
    extra.update(dims or {})
    all_dims = variable_dims(groups, meta, SAMPLED, extra)
    _check_sizes(groups, all_dims, dims or {}, coords or {})
    if chain_ids is not None:
        all_coords["chain"] = np.asarray(chain_ids, dtype=np.int64)
    all_coords.update(coords or {})
    used = {d for ds in all_dims.values() for d in ds}
    user_coords = {k: v for k, v in (coords or {}).items() if k not in ("chain", "draw")}
    for k in coords or {}:
        if k not in used and k not in ("chain", "draw"):
            raise ArgumentError(
                f"to_arviz: coords names the dimension {k!r}, which no variable has; "
                f"dimensions: {', '.join(sorted(used | {'chain', 'draw'}))} (name a variable's "
                "dimensions with dims={variable: [dimension, ...]})")
    all_coords = {k: v for k, v in all_coords.items() if k in used or k in ("chain", "draw")}
    prior_side = {g: groups.pop(g) for g in ("prior", "prior_predictive") if g in groups}
    data = from_groups(groups, coords=all_coords, dims=all_dims)
    if prior_side:  # its own chain and draw coordinates, and mem keys
        pc = {k: v for k, v in all_coords.items() if k not in ("chain", "draw")}
        pc.update({k: v for k, v in prior_coords.items() if k in used})
        pc.update(user_coords)
        data = merge(data, from_groups(prior_side, coords=pc, dims=all_dims))
    return data
