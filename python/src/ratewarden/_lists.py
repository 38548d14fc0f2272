"""KeyList: a deny list or an allow list held in the store (docs/key-lists.md)."""

from __future__ import annotations

import math
import re
from typing import Union

from ._errors import InvalidArgumentError
from ._limiter import Key, Limiter, open_store
from ._native import Store

__all__ = ["KeyList"]

_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")
_MAX_DURATION = 3650 * 86400.0  # the longest period a policy takes


def _policy(duration: float) -> str:
    """One hit per `duration`, in whole ms, or whole seconds past the 10^9 a period count may be (Node's lists.js
    writes the same)."""
    ms = math.ceil(duration * 1000)
    return f"1/{ms}ms" if ms <= 10**9 else f"1/{math.ceil(ms / 1000)}s"


class KeyList:
    """Keys held in ``store``, each for ``duration`` seconds from when it was added (default: 10 years, i.e. until
    removed): every process of every runtime on the store sees an entry as soon as it is added. Node's
    ``new KeyList({ name, store, durationMs })`` with the same name and duration is the same list.

    An entry is the state of a one-hit fixed window of ``duration`` under the store's key prefix, for the key
    ``list:<name>:<key>`` (docs/key-lists.md): ``add`` starts it, ``remove`` forgets it, ``contains`` is a peek.
    """

    def __init__(self, name: str, store: Union[str, Store] = "memory://", *, duration: float = _MAX_DURATION) -> None:
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise InvalidArgumentError(f"a KeyList name is 1 to 64 letters, digits, '_', '.' or '-', got {name!r}")
        if isinstance(duration, bool) or not isinstance(duration, (int, float)) or not 0.001 <= duration <= _MAX_DURATION:
            raise InvalidArgumentError(f"duration must be from 0.001 to {_MAX_DURATION:.0f} seconds, got {duration!r}")
        if isinstance(store, str):
            store = open_store(store)
        self.name = name
        self.duration = duration
        self._head = f"list:{name}:".encode()
        self._limiter = Limiter(_policy(duration), store, algorithm="fixed_window")

    def _key(self, key: Key) -> bytes:
        if isinstance(key, str):
            key = key.encode()
        if not isinstance(key, bytes):
            raise TypeError(f"key must be str or bytes, not {type(key).__name__}")
        return self._head + key

    def add(self, key: Key) -> None:
        """Adds the key for ``duration`` from now (again from now if it was there)."""
        k = self._key(key)
        self._limiter.reset(k)
        self._limiter.hit(k)

    def remove(self, key: Key) -> None:
        self._limiter.reset(self._key(key))

    def contains(self, key: Key) -> bool:
        return not self._limiter.peek(self._key(key)).allowed

    def __contains__(self, key: Key) -> bool:
        return self.contains(key)

    def expires_in(self, key: Key) -> float:
        """Seconds until the key's entry ends; 0 when it is not in the list."""
        return self._limiter.peek(self._key(key)).retry_after

    async def aadd(self, key: Key) -> None:
        k = self._key(key)
        await self._limiter.areset(k)
        await self._limiter.ahit(k)

    async def aremove(self, key: Key) -> None:
        await self._limiter.areset(self._key(key))

    async def acontains(self, key: Key) -> bool:
        return not (await self._limiter.apeek(self._key(key))).allowed

    async def aexpires_in(self, key: Key) -> float:
        return (await self._limiter.apeek(self._key(key))).retry_after

    def __repr__(self) -> str:
        return f"KeyList({self.name!r}, store={self._limiter.store!r}, duration={self.duration!r})"
