"""The Limiter: a policy applied to keys through a store."""

from __future__ import annotations

import asyncio
import weakref
from typing import Iterable, List, Optional, Union

from . import _native
from ._native import Decision, Store
from ._pacing import Pacing

__all__ = ["Limiter", "open_store"]

Key = Union[str, bytes]

def open_store(url: str) -> Store:
    """The store of ``url``. A URL of a shared store (``redis://...``, ``redis+cluster://...``, ``postgres://...``)
    names a server: every call with the same URL string returns the same ``Store`` while something uses it, so the
    limiters on it share one connection pool. ``memory://...`` names no place: each call opens a new, empty store (as
    Node's ``new Limiter({store: 'memory://'})`` does). Limiters that must share a memory store's counts are given one
    ``Store``. Either way, opening by URL never changes what is counted. The rule is the core's (open_shared_store),
    which Node and the C ABI's ``rw_store_open_shared`` follow too."""
    return _native.open_shared_store(url)


class Limiter(Pacing, _native.Limiter):
    """Applies ``policy`` (``"100/minute"``, ``"10/second; 1000/hour"``) to keys through ``store``.

    ``hit``, ``allow``, ``peek``, ``refund``, ``reset``, ``hit_many``, ``reserve`` and ``cancel`` run in the core
    with the GIL released while they wait; ``ahit``, ``apeek``, ``arefund``, ``areset``, ``ahit_many``,
    ``areserve`` and ``acancel`` are their asyncio forms. A key is a ``str`` (UTF-8) or ``bytes`` of 1 to 4096 bytes.
    ``acquire``, ``aacquire`` and ``paced`` wait for a slot (``Pacing``, docs/pacing.md).

    ``name`` (1 to 200 bytes; default: the policy string) is what its decisions are counted under: ``stats()``,
    ``ratewarden.limiter_stats()`` and the ``limiter`` label of the metrics (docs/python.md, "Metrics and events").
    Limiters of one name count together; name them after what they protect, never after a key.
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
        name: Optional[str] = None,
    ) -> None:
        if isinstance(store, str):
            store = open_store(store)
        elif not isinstance(store, Store):  # one line, where the native constructor lists its overloads
            raise TypeError(f"store must be a store URL (a str) or a ratewarden.Store, got {store!r}")
        self._store = store  # keeps open_store's entry alive while a limiter uses it
        super().__init__(
            policy,
            store,
            algorithm=algorithm,
            burst=burst,
            buckets=buckets,
            prefix=prefix,
            on_store_error=on_store_error,
            name=name,
        )

    async def ahit(self, key: Key, cost: int = 1) -> Decision:
        """``hit`` for asyncio: the event loop never waits on the store (see ``docs/python.md``)."""
        if self.store.in_process:
            return self.hit(key, cost)
        loop = asyncio.get_running_loop()
        future: "asyncio.Future[Decision]" = loop.create_future()
        now = _completions(loop).hit(self, key, cost, future)  # a hybrid mode's local answer, or None
        return now if now is not None else await future

    async def apeek(self, key: Key, cost: int = 1) -> Decision:
        """``peek`` for asyncio."""
        if self.store.in_process:
            return self.peek(key, cost)
        loop = asyncio.get_running_loop()
        future: "asyncio.Future[Decision]" = loop.create_future()
        now = _completions(loop).peek(self, key, cost, future)
        return now if now is not None else await future

    async def areset(self, key: Key) -> None:
        """``reset`` for asyncio."""
        if self.store.in_process:
            return self.reset(key)
        loop = asyncio.get_running_loop()
        future: "asyncio.Future[None]" = loop.create_future()
        _completions(loop).reset(self, key, future)
        await future

    async def arefund(self, key: Key, cost: int = 1) -> Decision:
        """``refund`` for asyncio."""
        if self.store.in_process:
            return self.refund(key, cost)
        loop = asyncio.get_running_loop()
        future: "asyncio.Future[Decision]" = loop.create_future()
        _completions(loop).refund(self, key, cost, future)
        return await future

    async def areserve(self, key: Key, cost: int = 1, max_wait: Optional[float] = None) -> Decision:
        """``reserve`` for asyncio (``docs/pacing.md``)."""
        if self.store.in_process:
            return self.reserve(key, cost, max_wait)
        loop = asyncio.get_running_loop()
        future: "asyncio.Future[Decision]" = loop.create_future()
        _completions(loop).reserve(self, key, cost, max_wait, future)
        return await future

    async def acancel(self, key: Key, reservation: Decision, cost: int = 1) -> bool:
        """``cancel`` for asyncio."""
        if self.store.in_process:
            return self.cancel(key, reservation, cost)
        loop = asyncio.get_running_loop()
        future: "asyncio.Future[Decision]" = loop.create_future()
        _completions(loop).cancel(self, key, cost, reservation, future)
        return (await future).allowed

    async def ahit_many(self, keys: Iterable[Key], cost: int = 1) -> List[Decision]:
        """``hit_many`` for asyncio: one round trip (one pipeline per node) for all the keys."""
        if self.store.in_process:
            return self.hit_many(keys, cost)
        loop = asyncio.get_running_loop()
        future: "asyncio.Future[List[Decision]]" = loop.create_future()
        _completions(loop).hit_many(self, keys, cost, future)
        return await future

    def __repr__(self) -> str:
        policy = "; ".join(str(p) for p in self.policies)
        return (f"Limiter({policy!r}, store={self.store!r}, algorithm={self.algorithm!r}, prefix={self.prefix!r}, "
                f"name={self.name!r})")


# One Completions per event loop: its eventfd is the loop's reader for every asynchronous call made on it. The
# reader is what keeps it alive, so that closing the loop frees it (and its eventfd) even with calls in flight,
# whose futures would otherwise keep the loop, and a map holding it, alive.
_loops: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, weakref.ref[_native.Completions]]" = (
    weakref.WeakKeyDictionary()
)


def _completions(loop: asyncio.AbstractEventLoop) -> _native.Completions:
    ref = _loops.get(loop)
    completions = None if ref is None else ref()
    if completions is None:
        completions = _native.Completions()
        loop.add_reader(completions.fileno(), completions.drain)
        _loops[loop] = weakref.ref(completions)
    return completions
