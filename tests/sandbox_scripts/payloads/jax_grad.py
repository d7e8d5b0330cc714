import jax
import jax.numpy as jnp


def loss(w, x):
    def block(w, x):
        return x + jnp.tanh(x @ w)

    f = jax.checkpoint(block, policy=jax.checkpoint_policies.dots_saveable)
    return jnp.mean(f(w, x) ** 2)


w = jnp.eye(4) * 0.5
x = jnp.ones((3, 4))
value, grad = jax.value_and_grad(loss)(w, x)
print("JAX", jax.__version__, float(value), float(grad.sum()), flush=True)
