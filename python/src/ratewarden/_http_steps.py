"""The drivers of the HTTP layer's sans-I/O steps: the check of a request (``Gate._steps``), its list lookups and
its refunds are written once, as generators, and ``run`` drives them with synchronous calls, ``arun`` on the event
loop."""

from __future__ import annotations

from typing import Any, Generator, Tuple

__all__ = ["AWAIT", "Steps", "arun", "run"]

# Steps: a generator that yields what it needs done and is sent the result (or thrown the error). A step is a
# store call (sync function, async function or None where the sync one answers at once, arguments) or an awaitable
# of the user's to await (AWAIT, None, awaitable), which only steps made for ``arun`` yield.
Steps = Generator[Tuple[Any, Any, Any], Any, Any]
AWAIT: Any = None


def run(steps: Steps) -> Any:
    """Drives ``steps`` with synchronous calls; their value."""
    try:
        step = next(steps)
        while True:
            step = _resume(steps, step)
    except StopIteration as stop:
        return stop.value


async def arun(steps: Steps) -> Any:
    """Drives ``steps`` on the event loop: a store call through its async function (the sync one when that
    answers at once), a user's awaitable awaited."""
    try:
        step = next(steps)
        while True:
            if step[1] is None and step[0] is not AWAIT:
                step = _resume(steps, step)
                continue
            try:
                result = await (step[2] if step[0] is AWAIT else step[1](*step[2]))
            except Exception as error:
                step = steps.throw(error)
            else:
                step = steps.send(result)
    except StopIteration as stop:
        return stop.value


def _resume(steps: Steps, step: Tuple[Any, Any, Any]) -> Tuple[Any, Any, Any]:
    """Makes ``step``'s synchronous call and resumes ``steps`` with its result, or its error: the next step."""
    try:
        result = step[0](*step[2])
    except Exception as error:
        return steps.throw(error)
    return steps.send(result)
