"""ratewarden: a distributed rate limiter. One C++ core, an in-process or Redis store, shared limits across processes.

>>> import ratewarden
>>> login = ratewarden.Limiter("5/minute")               # memory:// by default; "redis://host:6379" to share
>>> login.hit("alice")
Decision(allowed=True, limit=5, remaining=4, reset_after=60.0, retry_after=0.0, used=1, policy_index=0)

Figures and events (docs/python.md, "Metrics and events"): ``Limiter.stats()``, ``Store.stats()``,
``limiter_stats()``, ``store_stats()``, ``metric_families()`` (``ratewarden.prometheus`` and
``ratewarden.opentelemetry`` export them), and ``on_event(callback)``; the events are logged on the ``ratewarden``
logger too.
"""

from ._errors import Error, InvalidArgumentError, StoreError
from ._events import Event, off_event, on_event
from ._limiter import Limiter, open_store
from ._lists import KeyList
from ._native import (Decision, LimiterStats, MetricFamily, Policy, Store, StoreStats, TestClock, limiter_stats,
                      metric_families, prometheus_text, store_stats, version)
from ._pacing import Paced, RateLimitTimeout

__version__: str = version()

__all__ = [
    "Decision",
    "Error",
    "Event",
    "InvalidArgumentError",
    "KeyList",
    "Limiter",
    "LimiterStats",
    "MetricFamily",
    "Paced",
    "Policy",
    "RateLimitTimeout",
    "Store",
    "StoreError",
    "StoreStats",
    "TestClock",
    "__version__",
    "limiter_stats",
    "metric_families",
    "off_event",
    "on_event",
    "open_store",
    "prometheus_text",
    "store_stats",
]
