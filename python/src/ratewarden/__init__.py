"""ratewarden: a distributed rate limiter. One C++ core, an in-process or Redis store, shared limits across processes.

>>> import ratewarden
>>> login = ratewarden.Limiter("5/minute")               # memory:// by default; "redis://host:6379" to share
>>> login.hit("alice")
Decision(allowed=True, limit=5, remaining=4, reset_after=60.0, retry_after=0.0, used=1, policy_index=0)
"""

from ._errors import Error, InvalidArgumentError, StoreError
from ._limiter import Limiter, open_store
from ._lists import KeyList
from ._native import Decision, Policy, Store, StoreStats, TestClock, version
from ._pacing import Paced, RateLimitTimeout

__version__: str = version()

__all__ = [
    "Decision",
    "Error",
    "InvalidArgumentError",
    "KeyList",
    "Limiter",
    "Paced",
    "Policy",
    "RateLimitTimeout",
    "Store",
    "StoreError",
    "StoreStats",
    "TestClock",
    "__version__",
    "open_store",
]
