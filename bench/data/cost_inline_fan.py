# Red team (cost: trusted-side CPU; SHOULD be accepted, and it is, but slowly).
# A correct, honestly rematerialized block (the reference), plus
# - a helper call that is small as text but huge once the analysis inlines it: igamma lowers to
#   ~280 StableHLO ops; three of them in one jitted helper, called through two levels of jitted
#   helpers that each call the level below 3 times (~8,000 inlined ops from ~120 KB; 18 x 18
#   gives ~260,000, under the 300,000 cap, but then stage B's shape refinement, which inlines
#   too, runs out of the submission's own time); it runs on a zero-size slice of y (not of the
#   product, so main's rule does not count its ops as candidates), so XLA folds it away and the
#   program stays fast to compile and run;
# - a while loop whose 60 carries form a shift register holding x, x@W1 and the tanh, so each
#   bit-set propagation of the analysis needs ~60 passes over all inlined ops to settle.
# The int(x.shape[0]) makes the shape-polymorphic export fail, so stage A exports one program
# per input signature (3 in run mode, 12 in submit mode), and each is analyzed on its own.
# Measured in-process (2 shared cores, load ~10): the rule takes ~1 s per program at fan 2
# (3,350 inlined ops), ~13 s at fan 8 (51,000 ops; 12 programs in submit mode), against ~0.01 s
# for the reference; with the 18 x 18 fan ~120-150 s per program. Time = inlined ops x ~60
# passes x ~7 propagations; only stage B's limits on the submission bound the inlined ops.
# Same on main's reworked rule (92b91fe). Grading end to end on this loaded machine: accepted
# at fan 3 in submit mode once (71 s total, ~49 s of it the rule), stage B TLE other times.
import jax
import jax.numpy as jnp

DS = jax.checkpoint_policies.dots_saveable
N_SHIFT = 60


def _block(p, x):
    return x + jnp.tanh(x @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"]


_ckpt = jax.checkpoint(_block, policy=DS)


@jax.jit
def _f0(v):
    for _ in range(3):
        v = jax.lax.igamma(v, v)
    return v


def _fan(inner, n=10):
    @jax.jit
    def f(v):
        for _ in range(n):
            v = inner(v)
        return v
    return f


_f2 = _fan(_fan(_f0, 3), 3)


def _shift(seed):
    def body(_, c):
        return (c[0],) + c[:-1]
    init = (seed,) + tuple(jnp.zeros_like(seed) for _ in range(N_SHIFT))
    return jax.lax.fori_loop(0, 2, body, init)[-1]


def solve(params, x, y):
    int(x.shape[0])  # concrete shapes only: one program per input signature, each analyzed
    def loss_fn(p):
        return jnp.mean((_ckpt(p, x) - y) ** 2)

    loss, grads = jax.value_and_grad(loss_fn)(params)
    z = x @ params["w1"] + params["b1"]
    seed = jnp.concatenate([x.ravel(), z.ravel(), jnp.tanh(z).ravel()])
    last = _shift(seed)
    junk = jnp.sum(_f2(y.ravel()[:0]))  # zero-size: exactly 0.0
    loss = loss + 0.0 * jnp.sum(last) + junk
    return {"loss": loss, "grads": grads}
