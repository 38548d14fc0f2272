"""The core's events — a store that failed or recovered, a circuit that opened or closed, a fork, live keys evicted, a
lease that expired — on the ``ratewarden`` logger and to the callbacks of ``on_event``.

The core rate-limits them (one a second per kind and store at most, the others counted in the next one's
``suppressed``) and delivers them on its callback thread; importing ``ratewarden`` installs the handler below there,
which takes the GIL, logs the event (``WARNING`` for failures, openings and evictions, ``INFO`` for the others) and
calls each callback in the order they were registered. A callback must return soon: events wait for it. Interpreter
exit removes the handler (python/native/events.cpp)."""

from __future__ import annotations

import logging
import threading
from typing import Any, Callable, Tuple

from . import _native
from ._native import Event

__all__ = ["Event", "off_event", "on_event"]

log = logging.getLogger("ratewarden")

EventCallback = Callable[[Event], Any]

_lock = threading.Lock()
_callbacks: Tuple[EventCallback, ...] = ()  # replaced, never changed in place: _dispatch reads it without the lock


def on_event(callback: EventCallback) -> Callable[[], None]:
    """Calls ``callback(event)`` with each event (a ``ratewarden.Event``: ``kind``, ``store``, ``message``,
    ``suppressed``, ``warning``) on the core's callback thread, until the function returned is called (or
    ``off_event(callback)``). An exception it raises is logged and goes no further. It must not block: the events
    after it wait."""
    global _callbacks
    if not callable(callback):
        raise TypeError(f"callback must be a function of the event, got {callback!r}")
    with _lock:
        _callbacks = (*_callbacks, callback)
    return lambda: off_event(callback)


def off_event(callback: EventCallback) -> bool:
    """Stops calling ``callback`` (the first registration of it that is left); False when it was not registered."""
    global _callbacks
    with _lock:
        callbacks = list(_callbacks)
        for i, c in enumerate(callbacks):
            if c is callback or c == callback:
                del callbacks[i]
                _callbacks = tuple(callbacks)
                return True
    return False


def describe(event: Event) -> str:
    """The event's log line: ``ratewarden: store failed (redis://host:6379): calls fail: ... (3 more like it
    suppressed)``."""
    line = f"ratewarden: {event.kind.replace('_', ' ')}"
    if event.store:
        line += f" ({event.store})"
    line += f": {event.message}"
    if event.suppressed:
        line += f" ({event.suppressed} more like it suppressed)"
    return line


def _dispatch(event: Event) -> None:
    level = logging.WARNING if event.warning else logging.INFO
    if log.isEnabledFor(level):
        log.log(level, "%s", describe(event), extra={"ratewarden_event": event})
    for callback in _callbacks:
        try:
            callback(event)
        except Exception:
            log.exception("ratewarden: an event callback (%r) raised", callback)


_native.set_event_handler(_dispatch)
