# Wrong answer: sums exp(score) block by block without subtracting a running maximum. Scores of
# a few hundred overflow exp to inf (inf / inf = NaN), and very negative scores underflow to
# 0 / 0 = NaN.
import jax
import jax.numpy as jnp


def solve(q, k, v):
    t, d = q.shape
    qs = q / jnp.sqrt(jnp.float32(d))

    def step(carry, block):
        l, acc = carry
        kj, vj = block
        p = jnp.exp(qs @ kj.T)
        return (l + p.sum(axis=1), acc + p @ vj), None

    init = (jnp.zeros((t,)), jnp.zeros((t, d)))
    (l, acc), _ = jax.lax.scan(step, init, (k.reshape(-1, 4, d), v.reshape(-1, 4, d)))
    return {"out": acc / l[:, None]}
