"""Waiting for one's turn: acquire, aacquire and paced, over the core's reservations (docs/pacing.md).

A reservation charges the store now for a slot that may lie in the future and says how long to wait for it; these
helpers only sleep that long (``time.sleep`` releases the GIL, ``asyncio.sleep`` is a timer of the loop): no
polling, no retry. Callers in every process are served in the order their reservations reach the store.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
import time
from typing import TYPE_CHECKING, Any, Callable, Optional, Set, TypeVar, Union

from ._errors import Error, InvalidArgumentError
from ._native import Decision

if TYPE_CHECKING:
    from ._limiter import Limiter

__all__ = ["Paced", "RateLimitTimeout"]

Key = Union[str, bytes]
KeyArg = Union[Key, Callable[..., Key]]
F = TypeVar("F", bound=Callable[..., Any])

_log = logging.getLogger("ratewarden")


class RateLimitTimeout(Error, TimeoutError):
    """The wait for a slot would be longer than the timeout: raised at once, and nothing was charged.

    ``decision`` is the refusal (``retry_after``: the wait that would have been needed), ``timeout`` the limit that
    was given, in seconds. Also a ``TimeoutError``. (A limiter with ``on_store_error="deny"`` raises it too, with
    ``timeout`` None, when the store fails: its answer is then a refusal.)
    """

    decision: Decision
    timeout: Optional[float]

    def __init__(self, key: Key, decision: Decision, timeout: Optional[float]) -> None:
        wait = f"waiting for {key!r} would take {decision.retry_after:.3f} s"
        super().__init__(f"{wait}, more than the timeout of {timeout:g} s" if timeout is not None else
                         f"{wait}: the store failed and on_store_error is 'deny'", "rate_limit_timeout")
        self.decision = decision
        self.timeout = timeout

    @property
    def retry_after(self) -> float:
        return self.decision.retry_after


def _max_wait(timeout: Optional[float]) -> Optional[float]:
    """The reservation's max_wait: None (no bound) or seconds >= 0."""
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise TypeError(f"timeout must be None or a number of seconds, not {type(timeout).__name__}")
    if not timeout >= 0:
        raise InvalidArgumentError(f"timeout must be None or a number of seconds >= 0, not {timeout!r}")
    return float(timeout)


def _fallbacks(limiter: "Limiter", timeout: Optional[float]) -> int:
    """With on_store_error "deny" and a timeout, a refusal is the timeout's or the store's: the limiter's fallbacks
    (the decisions made because the store failed) counted before the reservation tell which; 0 when there is nothing
    to tell apart. (They count under the limiter's name: a fallback of another call of that name meanwhile would
    blame the store for a real timeout.)"""
    return limiter.stats().fallbacks if timeout is not None and limiter.on_store_error == "deny" else 0


def _refused_by(limiter: "Limiter", timeout: Optional[float], fallbacks: int) -> Optional[float]:
    """The timeout a refusal is blamed on: None when the store failed (on_store_error "deny" refused)."""
    if timeout is not None and limiter.on_store_error == "deny" and limiter.stats().fallbacks > fallbacks:
        return None
    return timeout


# Tasks giving back the slot of a reservation whose caller was cancelled before it learnt the answer: held here
# until they end (the loop keeps only weak references to tasks).
_giving_back: Set["asyncio.Task[Any]"] = set()


def _in_background(coroutine: Any) -> "asyncio.Task[Any]":
    task = asyncio.ensure_future(coroutine)
    _giving_back.add(task)
    task.add_done_callback(_giving_back.discard)
    return task


async def _give_back(limiter: "Limiter", key: Key, decision: Decision, cost: int) -> None:
    if not decision.ticket:  # a slot that cannot be given back (several policies): no round trip
        return
    try:
        await limiter.acancel(key, decision, cost)
    except Exception as error:  # the slot stays spent: the caller's cancellation matters more than this failure
        _log.warning("ratewarden: the slot of a cancelled wait for %r was not given back: %s", key, error)


def _give_back_when_known(limiter: "Limiter", key: Key, cost: int, reserving: "asyncio.Future[Decision]") -> None:
    if reserving.cancelled() or reserving.exception() is not None:
        return
    decision = reserving.result()
    if decision.allowed:
        _in_background(_give_back(limiter, key, decision, cost))


class Pacing:
    """The waiting half of ``Limiter`` (a mixin: ``reserve``, ``cancel``, ``areserve`` and ``acancel`` come from
    the native limiter and ``_limiter.Limiter``)."""

    def acquire(self: "Limiter", key: Key, cost: int = 1, timeout: Optional[float] = None) -> Decision:
        """Waits for a slot of ``cost`` for ``key``, then returns its reservation (``wait``: how long it slept).

        Sleeps with the GIL released. Raises ``RateLimitTimeout`` at once, charging nothing, when the wait would be
        longer than ``timeout`` seconds (``None``: no limit; ``0``: only a slot free now). An exception raised
        during the sleep (``KeyboardInterrupt``, a signal handler's) gives the slot back if no later reservation
        was charged on the key meanwhile (``Limiter.cancel``), then propagates."""
        max_wait = _max_wait(timeout)
        fallbacks = _fallbacks(self, timeout)
        decision = self.reserve(key, cost, max_wait=max_wait)
        if not decision.allowed:
            raise RateLimitTimeout(key, decision, _refused_by(self, timeout, fallbacks))
        if decision.wait_us > 0:
            try:
                time.sleep(decision.wait)
            except BaseException:
                try:
                    if decision.ticket:
                        self.cancel(key, decision, cost)
                except Exception as error:  # the interruption matters more: it propagates, the slot stays spent
                    _log.warning("ratewarden: the slot of an interrupted wait for %r was not given back: %s", key,
                                 error)
                raise
        return decision

    async def aacquire(self: "Limiter", key: Key, cost: int = 1, timeout: Optional[float] = None) -> Decision:
        """``acquire`` for asyncio: the wait is a timer of the loop.

        A task cancelled while it waits gives its slot back before the ``CancelledError`` propagates (the slot
        stays spent when a later reservation was charged on the key meanwhile: docs/pacing.md). One cancelled while
        the store answers gives the slot back as soon as the answer comes."""
        max_wait = _max_wait(timeout)
        fallbacks = _fallbacks(self, timeout)
        if self.store.in_process:  # answered at once: no await before the decision
            decision = await self.areserve(key, cost, max_wait=max_wait)
        else:
            reserving = asyncio.ensure_future(self.areserve(key, cost, max_wait=max_wait))
            try:
                decision = await asyncio.shield(reserving)
            except asyncio.CancelledError:
                reserving.add_done_callback(functools.partial(_give_back_when_known, self, key, cost))
                raise
        if not decision.allowed:
            raise RateLimitTimeout(key, decision, _refused_by(self, timeout, fallbacks))
        if decision.wait_us > 0:
            try:
                await asyncio.sleep(decision.wait)
            except asyncio.CancelledError:
                giving_back = _in_background(_give_back(self, key, decision, cost))
                try:
                    await asyncio.shield(giving_back)  # the slot is back when the cancellation reaches the caller
                except asyncio.CancelledError:
                    pass  # cancelled again: the slot is given back anyway, in the background
                raise
        return decision

    def paced(self: "Limiter", key: KeyArg, cost: int = 1, timeout: Optional[float] = None) -> "Paced":
        """A decorator (of a function or a coroutine function) and a context manager (``with`` and ``async with``)
        that acquire a slot of ``cost`` for ``key`` before the call or the block. As a decorator, ``key`` may be a
        function of the call's arguments. Raises ``RateLimitTimeout`` as ``acquire`` does."""
        _max_wait(timeout)  # a bad timeout fails here, not at the first call
        return Paced(self, key, cost, timeout)


class Paced:
    """What ``Limiter.paced`` returns. It holds no state between uses: one object may pace many calls and blocks at
    once, in many threads and tasks. Entering it returns the reservation's ``Decision``."""

    def __init__(self, limiter: "Limiter", key: KeyArg, cost: int, timeout: Optional[float]) -> None:
        self.limiter = limiter
        self.key = key
        self.cost = cost
        self.timeout = timeout

    def _block_key(self) -> Key:
        if callable(self.key):
            raise InvalidArgumentError("a key function needs the arguments of a call: use it as a decorator, or give "
                                       "`with` a key")
        return self.key

    def _call_key(self, args: Any, kwargs: Any) -> Key:
        return self.key(*args, **kwargs) if callable(self.key) else self.key

    def __enter__(self) -> Decision:
        return self.limiter.acquire(self._block_key(), self.cost, self.timeout)

    def __exit__(self, *exc: Any) -> None:
        return None

    async def __aenter__(self) -> Decision:
        return await self.limiter.aacquire(self._block_key(), self.cost, self.timeout)

    async def __aexit__(self, *exc: Any) -> None:
        return None

    def __call__(self, function: F) -> F:
        if inspect.iscoroutinefunction(function):
            @functools.wraps(function)
            async def paced_coroutine(*args: Any, **kwargs: Any) -> Any:
                await self.limiter.aacquire(self._call_key(args, kwargs), self.cost, self.timeout)
                return await function(*args, **kwargs)
            return paced_coroutine  # type: ignore[return-value]

        @functools.wraps(function)
        def paced_function(*args: Any, **kwargs: Any) -> Any:
            self.limiter.acquire(self._call_key(args, kwargs), self.cost, self.timeout)
            return function(*args, **kwargs)
        return paced_function  # type: ignore[return-value]

    def __repr__(self) -> str:
        return f"Paced({self.limiter!r}, key={self.key!r}, cost={self.cost}, timeout={self.timeout})"
