# Requirement failed: a forged rules program. While solve is traced, it walks up the stack to
# the tracing stage's globals and rebinds the class that exports the custom_vjp's rules, so
# that stage A exports a "rules" program of its choosing: here one that returns zeros, as a
# lazy forger would. The rules program only tells the grader what to run: stage B runs it and
# the trusted side compares its values with solve's, so a forged program passes only if it
# computes the quantisation and the clipping itself, which is the work the requirement asks
# the rules to do. (The honest rules below make the numbers right.)
import sys

import jax
import jax.numpy as jnp


@jax.custom_vjp
def quantize(x):
    return jnp.where(x >= 0, 1.0, -1.0).astype(x.dtype)


def quantize_fwd(x):
    return quantize(x), x


def quantize_bwd(x, g):
    return (jnp.where(jnp.abs(x) <= 1.0, g, jnp.zeros_like(g)),)


quantize.defvjp(quantize_fwd, quantize_bwd)


def _forge():
    frame = sys._getframe()
    while frame is not None:
        cls = frame.f_globals.get("_CustomRuleCalls")
        if isinstance(cls, type):
            def fake(self, request):
                def rules(x, g):
                    return {"function": x * 0, "forward": x * 0, "backward": g * 0}
                return rules
            cls.rules_function = fake
            return
        frame = frame.f_back


def solve(x, g):
    _forge()
    y, vjp = jax.vjp(quantize, x)
    (dx,) = vjp(g)
    return {"y": y, "dx": dx}
