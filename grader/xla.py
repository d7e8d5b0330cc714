"""XLA compile flags for stage B, probed once per process.

Compiling dominates a grade (one XLA compile per input shape). With the CPU fusion emitters off
and backend optimisation at level 0, compiles are ~3-10x faster and results stay equal to float32
rounding (measured <= 2.4e-7). Older jaxlibs abort on flags they do not know, so the flags are
probed in a throwaway process before use.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from functools import cache

CANDIDATES = (
    "--xla_cpu_use_fusion_emitters=false --xla_backend_optimization_level=0",
    "--xla_backend_optimization_level=0",
)
_lock = threading.Lock()


def _works(flags: str) -> bool:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "JAX_PLATFORMS": "cpu",
        "XLA_FLAGS": flags,
        "HOME": "/tmp",
    }
    try:
        proc = subprocess.run(
            [sys.executable, "-I", "-c", "import jax; jax.numpy.zeros(2).block_until_ready()"],
            env=env,
            capture_output=True,
            timeout=120,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.returncode == 0


@cache
def _probe() -> str:
    if os.environ.get("JAXJUDGE_XLA_FLAGS") is not None:
        return os.environ["JAXJUDGE_XLA_FLAGS"]
    for flags in CANDIDATES:
        if _works(flags):
            return flags
    return ""


def fast_compile_flags() -> str:
    """XLA_FLAGS for the trusted execution stage ('' when none is supported)."""
    with _lock:
        return _probe()
