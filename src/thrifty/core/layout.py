"""The layout of a trace: which sites, plates, chains and mem tables it holds, by name.

The check that plates are used as plates (:func:`thrifty.core.output.probe`) executes the
sites of the trace it is given; a site that exists only in other traces — an observation in a
branch that the initial trace did not take — is run by none of its executions.  A chain
therefore checks again each trace of a layout it has not seen (:func:`layout_key`), once per
layout; a commit that may change the layout counts it in ``trace.layout``
(:meth:`thrifty.core.run.Run.commit` and the nodes' updates), so that a chain compares keys
only after such a commit.
"""

from __future__ import annotations


def nodes_of(block, prefix: tuple = (), inside: bool = False):
    """(kind, address, node, whether inside a markov step) of every plate and chain of
    ``block``, those inside markov steps included (at their addresses ``chain + (t,) + ...``)."""
    for local, node in block.plates.items():
        yield "plate", prefix + local, node, inside
    for local, node in block.chains.items():
        yield "chain", prefix + local, node, inside
        for t in sorted(node.nested):
            yield from nodes_of(node.step_view(t), prefix + local + (t,), True)


def pattern_of(addr) -> tuple:
    """The address of a plate inside markov steps without its steps' numbers."""
    return tuple(a for a in addr if not isinstance(a, int))


def layout_key(trace) -> frozenset:
    """What :func:`~thrifty.core.output.probe`'s checks are about in ``trace``: the names of its
    top-level sites, of its plates and chains (those of the markov steps once, without the
    steps' numbers) and of their sites (a plate's observations: every name it has executed),
    and its mem tables.  A trace of another layout holds sites that a probe of this one did not
    run (an observation in a branch taken only there).  O(top-level sites + nodes, the nested
    nodes of every markov step included): computed only after a commit that counted a change.

    >>> import thrifty as th
    >>> from thrifty import dist
    >>> @th.model
    ... def m():
    ...     if th.sample("flag", dist.Bernoulli(0.5)):
    ...         th.observe("y", dist.Normal(0.0, 1.0), 1.0)
    >>> keys = {layout_key(th.simulate(m(), seed=s)) for s in range(20)}
    >>> sorted(len(k) for k in keys)  # with and without the site y
    [1, 2]
    """
    out: set = {("site", k) for k in trace.root.sites}
    for kind, addr, node, inside in nodes_of(trace.root):
        key = pattern_of(addr) if inside else addr
        out.add((kind, key))
        out.update((kind, key, local) for local in node.sites)
        if kind == "plate":  # (its observations, not kept as columns; its elements' chains)
            out.update(("plate observation", key, rel) for rel in node.obs_names)
            for local, cols in node.chains.items():
                out.update(("plate chain", key, local, rel) for rel in cols.sites)
    out.update(("mem", addr) for addr in trace.mems)
    return frozenset(out)
