"""The Limiter: a policy applied to keys through a store."""

from __future__ import annotations

import asyncio
import threading
import weakref
from typing import Optional, Union

from . import _native
from ._native import Decision, Store

__all__ = ["Limiter", "open_store"]

Key = Union[str, bytes]

_stores: "weakref.WeakValueDictionary[str, Store]" = weakref.WeakValueDictionary()
_stores_lock = threading.Lock()


def open_store(url: str) -> Store:
    """The store for ``url`` (``memory://...``, ``redis://...``), shared by every limiter opened on the same URL
    while one of them is alive: limiters with the same store, prefix and policy share their counts, in one process as
    across processes on Redis, and a Redis URL gets one connection pool, not one per limiter."""
    with _stores_lock:
        store = _stores.get(url)
        if store is None:
            store = Store(url)
            _stores[url] = store
        return store


class Limiter(_native.Limiter):
    """Applies ``policy`` (``"100/minute"``, ``"10/second; 1000/hour"``) to keys through ``store``.

    ``hit``, ``allow``, ``peek``, ``reset`` and ``hit_many`` run in the core with the GIL released; ``ahit`` is their
    asyncio form. A key is a ``str`` (UTF-8) or ``bytes`` of 1 to 4096 bytes.
    """

    def __init__(
        self,
        policy: str,
        store: Union[str, Store] = "memory://",
        *,
        algorithm: str = "fixed_window",
        burst: Optional[int] = None,
        buckets: Optional[int] = None,
        prefix: Optional[str] = None,
        on_store_error: str = "raise",
    ) -> None:
        if isinstance(store, str):
            store = open_store(store)
        self._store = store  # keeps open_store's entry alive while a limiter uses it
        super().__init__(
            policy,
            store,
            algorithm=algorithm,
            burst=burst,
            buckets=buckets,
            prefix=prefix,
            on_store_error=on_store_error,
        )

    async def ahit(self, key: Key, cost: int = 1) -> Decision:
        """``hit`` for asyncio: a network store's call runs on the core's thread pool, so the event loop never
        waits on it; the memory store answers at once (it never waits on I/O)."""
        if self.store.in_process:
            return self.hit(key, cost)
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Decision] = loop.create_future()

        def done(decision: Optional[Decision], error: Optional[BaseException]) -> None:
            try:
                loop.call_soon_threadsafe(_settle, future, decision, error)
            except RuntimeError:  # the loop was closed while the call was in flight: nobody is waiting
                pass

        self.hit_async(key, cost, done)
        return await future

    def __repr__(self) -> str:
        policy = "; ".join(str(p) for p in self.policies)
        return f"Limiter({policy!r}, store={self.store!r}, algorithm={self.algorithm!r}, prefix={self.prefix!r})"


def _settle(future: "asyncio.Future[Decision]", decision: Optional[Decision], error: Optional[BaseException]) -> None:
    if future.done():  # cancelled while the call was in flight
        return
    if error is not None:
        future.set_exception(error)
    else:
        assert decision is not None
        future.set_result(decision)
