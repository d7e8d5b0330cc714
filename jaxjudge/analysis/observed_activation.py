"""The activation requirement decided from stage B's observer (observe.observe_activations):
each activation op's result changed in a variant of its own, and which outputs moved, how far.

A backward pass that recomputes the activation (jax.checkpoint with dots_saveable) has an
activation op whose result moves the gradients and not the loss; the forward one moves both,
and a decoy neither. Split from jaxjudge.analysis.observed, which decides the loop requirements.
"""

from __future__ import annotations

from jaxjudge.analysis.observed import Observation, unseen

# The defaults of the rule's `fed_share` and `local_share` options (jaxjudge.rules.program).
# How far changing the recomputed activation must move each gradient it feeds, of the
# gradient's size: W2's gradient is h^T g, so an honest one moves wholly (0.06 to 1 on the
# remat problem's 46 tests); one read mostly from a saved copy moves by the recomputed share.
FED = 1e-2
# The share of a fed gradient's elements one element of the recomputed activation may move:
# W2's gradient h^T g moves in one row of its H (2 or more), W1's in one column; one read from
# a saved copy and rescaled by a recomputed factor (a sum over h) moves in every row.
LOCAL = 0.5


def recomputed(observations: tuple[Observation, ...], outs: list[str], primal: tuple[str, ...],
               gradients: tuple[str, ...], activation: str,
               feeds: tuple[str, ...] = (), *, fed_share: float = FED,
               local_share: float = LOCAL) -> str | None:
    """None unless the observed run shows no activation op whose result moves the gradients and
    not the primal outputs (the one recomputed for the backward pass), moving each of `feeds`
    too, by `fed_share` of its size or more (a weight gradient that needs the activation
    itself, not only its derivative: one read from a saved copy of the forward activation, plus
    0.1% of the recomputed one, is not recomputed), and at most `local_share` of its elements
    when one element of the activation changes; else what was seen."""
    def under(path: str, roots: tuple[str, ...]) -> bool:
        return any(path == r or path.startswith(r + ".") for r in roots)

    for obs in observations:
        if obs.kind != "activation":
            continue
        if (why := unseen(obs)) is not None:
            return why
        grads = [i for i, o in enumerate(outs) if under(o, gradients)]
        prim = [i for i, o in enumerate(outs) if under(o, primal)]
        fed = {f: [i for i, o in enumerate(outs) if under(o, (f,))] for f in feeds}
        kinds = []
        for k, moved in enumerate(obs.activations):
            if len(moved) != len(outs):
                return None  # not the program the paths name: the text decides
            sizes = obs.activation_sizes[k] if k < len(obs.activation_sizes) else ()
            g = sum(moved[i] for i in grads)
            p = sum(moved[i] for i in prim)
            faint = {f: max((sizes[i] for i in idx if i < len(sizes)), default=0.0)
                     for f, idx in fed.items()}
            missed = [f for f, idx in fed.items() if not sum(moved[i] for i in idx)
                      or (len(sizes) == len(outs) and faint[f] < fed_share)]
            spread = obs.activation_spread[k] if k < len(obs.activation_spread) else ()
            wide = [f for f, idx in fed.items() if len(spread) == len(outs)
                    and max((spread[i] for i in idx), default=0.0) > local_share]
            if g and not p and not missed and wide:
                kinds.append(f"the gradients, but one element of it moved "
                             f"{max(spread[i] for i in fed[wide[0]]):.0%} of {wide[0]} (a "
                             f"gradient computed from the activation moves where that element "
                             f"is used, not everywhere: a saved copy rescaled by it)")
                continue
            if g and not p and not missed:
                return None
            kinds.append("both" if g and p else "the loss only" if p else
                         (f"the gradients but {missed[0]} only by {faint[missed[0]]:.2g} of "
                          f"its size" if faint[missed[0]] else
                          f"the gradients but not {missed[0]}") if g and missed else
                         "neither")
        also = f", {', '.join(feeds)} among them," if feeds else ""
        return (f"When your program ran on test {obs.test!r}, none of its {len(kinds)} "
                f"{activation} op(s) changes your gradients{also} without changing the loss "
                f"(changing each one's result moved {', '.join(kinds) or 'nothing'}): the "
                f"backward pass does not recompute the {activation} where it needs it, it "
                f"reuses the forward one")
    return None
