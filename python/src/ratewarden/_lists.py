"""KeyList: a deny list or an allow list held in the store (docs/key-lists.md)."""

from __future__ import annotations

import math
from typing import Optional, Union

from . import _native
from ._errors import InvalidArgumentError
from ._limiter import Key, Limiter, open_store
from ._native import Store

__all__ = ["KeyList"]

_MAX_DURATION = 3650 * 86400.0  # the longest period a policy takes


class KeyList(_native.KeyList):
    """Keys held in ``store``, each for ``duration`` seconds from when it was added (default: 10 years, i.e. until
    removed): every process of every runtime on the store sees an entry as soon as it is added. Node's
    ``new KeyList({ name, store, durationMs })`` and the C ABI's ``rw_key_list_create`` with the same name and
    duration are the same list: the list is the core's, which checks the name (1 to 64 letters, digits, ``_``,
    ``.`` or ``-``) and the duration (1 ms to 3650 days).

    An entry is the state of a one-hit fixed window of ``duration`` for the key itself, under the list's own prefix
    ``<store's prefix>:list:<name>`` (docs/key-lists.md): ``add`` starts it, ``remove`` forgets it, ``contains`` is a
    peek.
    """

    def __init__(self, name: str, store: Union[str, Store] = "memory://", *, duration: float = _MAX_DURATION) -> None:
        if not isinstance(name, str):
            raise InvalidArgumentError(f"a KeyList name is a str, got {name!r}")
        if isinstance(duration, bool) or not isinstance(duration, (int, float)) or not math.isfinite(duration):
            raise InvalidArgumentError(f"duration must be a number of seconds, got {duration!r}")
        if isinstance(store, str):
            store = open_store(store)
        # Whole microseconds, rounded up; past 3650 days it is refused, whatever its size.
        super().__init__(name, store, min(math.ceil(duration * 1e6), 2**62) if duration > 0 else 0)
        self.duration = duration
        self._limiter: Optional[Limiter] = None

    def __contains__(self, key: Key) -> bool:
        return self.contains(key)

    def _async(self) -> Limiter:
        """The limiter of the asyncio forms: the list's policy and prefix on its store (the core's entries)."""
        if self._limiter is None:
            self._limiter = Limiter(
                self.policy, self.store, algorithm="fixed_window", prefix=self.prefix, name=f"list:{self.name}"
            )
        return self._limiter

    async def aadd(self, key: Key) -> None:
        await self._async().areset(key)
        await self._async().ahit(key)

    async def aremove(self, key: Key) -> None:
        await self._async().areset(key)

    async def acontains(self, key: Key) -> bool:
        return await self.aexpires_in(key) > 0  # as the core's contains

    async def aexpires_in(self, key: Key) -> float:
        return (await self._async().apeek(key)).retry_after

    def __repr__(self) -> str:
        return f"KeyList({self.name!r}, store={self.store!r}, duration={self.duration!r})"
