"""Per-token rate limiting: a token bucket per bearer token, in memory.

In memory is enough for one server process; the limit resets on restart, which only ever errs
on the side of letting requests through.
"""

from __future__ import annotations

import math
import threading
import time


class RateLimiter:
    """`per_minute` requests per key per minute, with bursts up to `per_minute`."""

    def __init__(self, per_minute: int) -> None:
        self.per_minute = per_minute
        self._rate = per_minute / 60.0  # tokens per second
        self._buckets: dict[str, tuple[float, float]] = {}  # key -> (tokens, last refill)
        self._lock = threading.Lock()

    def acquire(self, key: str) -> float:
        """Take one token for `key`. Returns 0 if allowed, else the seconds until one is
        available (the Retry-After)."""
        if self.per_minute <= 0:
            return 0.0
        now = time.monotonic()
        with self._lock:
            tokens, last = self._buckets.get(key, (float(self.per_minute), now))
            tokens = min(float(self.per_minute), tokens + (now - last) * self._rate)
            if tokens >= 1.0:
                self._buckets[key] = (tokens - 1.0, now)
                return 0.0
            self._buckets[key] = (tokens, now)
            return (1.0 - tokens) / self._rate

    @staticmethod
    def retry_after_header(wait: float) -> str:
        return str(max(1, math.ceil(wait)))
