"""Python in-process speed (issue 21): ratewarden's hit() and allow() on the memory store against a fixed window
written by hand with a dict (the function below, printed verbatim) and against limits' FixedWindowRateLimiter on
its MemoryStorage, on one hot key and over 10,000 keys. Interleaved rounds (BENCH_ROUNDS, default 7); each figure is
the median over the rounds of the thread CPU time per call, the bare `for` loop's time removed; each ratio is the
median of the ratios of the same round. Runs in bench/python's venv (limits installed): no arguments.

Two floors for reading the figures: a METH_FASTCALL method that returns None at once (dict.get on an empty dict) is
what any C method costs to call; allow() minus that is what the binding and the core add.
"""

from __future__ import annotations

import gc
import inspect
import os
import platform
import statistics
import time
from typing import Callable, Dict, List, Sequence, Tuple

import limits
from limits import storage, strategies

import ratewarden

LIMIT = 1_000_000_000  # every call is allowed: each one counts
PERIOD = 60.0
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "7"))
CALLS = 200_000  # per measurement (limits: a tenth)


def by_hand(key, windows={}, now=time.monotonic, limit=LIMIT, period=PERIOD):  # noqa: B006 (the dict is the state)
    t = now()
    start, count = windows.get(key, (t, 0))
    if t - start >= period:
        start, count = t, 0
    windows[key] = (start, count + (count < limit))  # a denial consumes nothing
    return count < limit


# One loop per contender, each called the way a user's code calls it.
def loop_by_hand(keys: Sequence[str]) -> None:
    for k in keys:
        by_hand(k)


def loop_hit(limiter: ratewarden.Limiter, keys: Sequence[str]) -> None:
    for k in keys:
        limiter.hit(k)


def loop_allow(limiter: ratewarden.Limiter, keys: Sequence[str]) -> None:
    for k in keys:
        limiter.allow(k)


def loop_limits(fixed: strategies.FixedWindowRateLimiter, item: limits.RateLimitItem, keys: Sequence[str]) -> None:
    for k in keys:
        fixed.hit(item, k)


def loop_noop(d: Dict[str, object], keys: Sequence[str]) -> None:
    for k in keys:
        d.get(k)


def loop_bare(keys: Sequence[str]) -> None:
    for k in keys:
        pass


def cpu_ns(run: Callable[[], None]) -> int:
    start = time.thread_time_ns()
    run()
    return time.thread_time_ns() - start


def contenders(keys: List[str]) -> Dict[str, Tuple[Callable[[], None], int]]:
    """name -> (a run of calls, the number of calls)."""
    limiter = ratewarden.Limiter(f"{LIMIT}/minute", "memory://")
    fixed = strategies.FixedWindowRateLimiter(storage.MemoryStorage())
    item = limits.parse(f"{LIMIT}/minute")
    many = keys * (CALLS // len(keys))
    few = keys * max(1, CALLS // 10 // len(keys))
    empty: Dict[str, object] = {}
    return {
        "bare": (lambda: loop_bare(many), len(many)),
        "by_hand": (lambda: loop_by_hand(many), len(many)),
        "hit": (lambda: loop_hit(limiter, many), len(many)),
        "allow": (lambda: loop_allow(limiter, many), len(many)),
        "noop": (lambda: loop_noop(empty, many), len(many)),
        "limits": (lambda: loop_limits(fixed, item, few), len(few)),
    }


def measure(cases: Dict[str, Dict[str, Tuple[Callable[[], None], int]]]) -> Dict[str, Dict[str, List[float]]]:
    """case -> contender -> ns per call in each round, the bare loop's per-iteration time removed."""
    for runs in cases.values():  # warm-up: every key exists in every store
        for run, _ in runs.values():
            run()
    out: Dict[str, Dict[str, List[float]]] = {case: {name: [] for name in runs} for case, runs in cases.items()}
    gc.collect()
    for _ in range(ROUNDS):
        for case, runs in cases.items():
            per_call = {name: cpu_ns(run) / calls for name, (run, calls) in runs.items()}
            for name, ns in per_call.items():
                out[case][name].append(ns if name == "bare" else ns - per_call["bare"])
    return out


def main() -> None:
    hot = ["alice"]
    many = [f"user{i}" for i in range(10_000)]
    results = measure({"one hot key": contenders(hot), "10,000 keys": contenders(many)})

    print(
        f"Python in-process: ratewarden {ratewarden.__version__}, limits {limits.__version__}, "
        f"{platform.python_implementation()} {platform.python_version()}; {ROUNDS} interleaved rounds, medians of "
        "thread CPU ns per call (the bare `for` loop removed); ratio = median of the per-round ratios"
    )
    print("\nThe hand-written window (by_hand):\n")
    print(inspect.getsource(by_hand))
    print("| case | keys | ours | baseline | ratio | target | |")
    print("|---|---|---|---|---|---|---|")
    rows = [
        ("ratewarden hit() / by_hand", "hit", "by_hand", "<=", 1.0),
        ("ratewarden allow() / by_hand", "allow", "by_hand", "<=", 0.6),
        ("limits FixedWindow hit / ratewarden hit()", "limits", "hit", ">=", 10.0),
    ]
    for case, got in results.items():
        for what, ours, base, op, target in rows:
            ratio = statistics.median(o / b for o, b in zip(got[ours], got[base]))
            met = ratio <= target if op == "<=" else ratio >= target
            print(
                f"| {what} | {case} | {statistics.median(got[ours]):,.1f} ns | {statistics.median(got[base]):,.1f} ns "
                f"| {ratio:.2f}x | {op} {target}x | {'met' if met else 'MISS'} |"
            )
    print("\nFloors (information):\n")
    print("| keys | bare `for` loop, per iteration | no-op METH_FASTCALL method (dict.get) | allow() "
          "| allow() - no-op |")
    print("|---|---|---|---|---|")
    for case, got in results.items():
        bare, noop, allow = (statistics.median(got[n]) for n in ("bare", "noop", "allow"))
        print(f"| {case} | {bare:.1f} ns | {noop:.1f} ns | {allow:.1f} ns | {allow - noop:.1f} ns |")


if __name__ == "__main__":
    main()
