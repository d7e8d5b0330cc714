# Honest form (issue 41): parameters as a dict of groups. The flat w1/b1/w2/b2 are regrouped
# into {"hidden": {"w", "b"}, "out": {"w", "b"}}; the bf16 forward, the scaled jax.grad and the
# update all work on that nested dict (tree_map), flattened back to w1/b1/w2/b2 at the end.
import jax
import jax.numpy as jnp

LR = 1e-3


def group(p):
    return {"hidden": {"w": p["w1"], "b": p["b1"]}, "out": {"w": p["w2"], "b": p["b2"]}}


def ungroup(g):
    return {"w1": g["hidden"]["w"], "b1": g["hidden"]["b"],
            "w2": g["out"]["w"], "b2": g["out"]["b"]}


def loss_fn(groups, x, y):
    g16 = jax.tree.map(lambda a: a.astype(jnp.bfloat16), groups)
    h = jnp.tanh(x.astype(jnp.bfloat16) @ g16["hidden"]["w"] + g16["hidden"]["b"])
    pred = h @ g16["out"]["w"] + g16["out"]["b"]
    err = pred.astype(jnp.float32) - y
    return jnp.mean(err ** 2)


def solve(params, x, y, loss_scale, good_steps):
    groups = group(params)
    scaled = jax.grad(lambda g: loss_fn(g, x, y) * loss_scale)(groups)
    ok = jnp.all(jnp.array([jnp.all(jnp.isfinite(a)) for a in jax.tree.leaves(scaled)]))
    grads = jax.tree.map(lambda a: jnp.where(ok, a / loss_scale, 0.0), scaled)
    new = jax.tree.map(lambda p, g: jnp.where(ok, p - LR * g, p), groups, grads)
    steps = jnp.where(ok, good_steps + 1, 0)
    grow = steps == 4
    scale = jnp.where(ok, jnp.where(grow, loss_scale * 2, loss_scale), loss_scale / 2)
    return {"params": ungroup(new), "grads": ungroup(grads), "loss_scale": scale,
            "good_steps": jnp.where(grow, 0, steps).astype(jnp.int32)}
