"""A Python worker of the soak (bench/soak/soak.py), on the installed package:

    worker.py sync|async|fork NAME URL...

sync: the plain calls (hit, allow, peek, reset, hit_many, reserve) in a loop over every store; async: their asyncio
forms (ahit, apeek, areset, ahit_many, areserve), a batch of them in flight at once per store; fork: the sync loop,
after forking two children that keep running it for the whole soak and, every 2 s, a short-lived child that runs it
for 20 rounds and exits (its status is checked). Store errors (a store being restarted) are counted; anything else
is a failure that ends the process. Once a second each process writes one JSON line to stdout: its pid, name, calls
made, store errors and the memory store's figures. SIGTERM ends the loop and the process, with status 0.
"""
from __future__ import annotations

import asyncio
import ctypes
import json
import os
import signal
import sys
import time
from typing import Any, Callable, Dict, List

import ratewarden

POLICY = "1000 per 10 seconds"  # gcra (reserve needs it); a key's state lives for the period
HOT_KEYS = 16  # keys every worker of every runtime hits: contention across processes
FRESH_COST = 1000  # the whole quota: that key's state then lives for the whole period, till evicted or expired
PAUSE = float(os.environ.get("RW_SOAK_PAUSE_MS", "5")) / 1000  # between rounds: a steady load, not a busy loop


class Worker:
    def __init__(self, name: str, urls: List[str]) -> None:
        self.name = name
        self.limiters = [ratewarden.Limiter(POLICY, url, algorithm="gcra", prefix="soak") for url in urls]
        self.memory = [lim.store for url, lim in zip(urls, self.limiters) if url.startswith("memory://")]
        self.round = 0
        self.calls = 0
        self.store_errors = 0
        self.stopping = False
        self.last_report = 0.0
        self.extra: Dict[str, Any] = {}  # more figures for the report line

    def keys(self) -> Dict[str, Any]:
        """This round's keys: a hot one, and fresh ones from a stream of distinct keys (the memory store's
        max_keys bound keeps them in check; Redis and PostgreSQL expire them)."""
        self.round += 1
        n = self.round
        return {"hot": f"hot-{n % HOT_KEYS}", "fresh": [f"{self.name}-{os.getpid()}-{n}-{i}" for i in range(3)]}

    def call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        self.calls += 1
        try:
            fn(*args, **kwargs)
        except ratewarden.StoreError:
            self.store_errors += 1

    def sync_round(self) -> None:
        k = self.keys()
        for lim in self.limiters:
            self.call(lim.hit, k["hot"])
            self.call(lim.allow, k["fresh"][0], FRESH_COST)
            self.call(lim.peek, k["hot"])
            self.call(lim.hit_many, [k["hot"], *k["fresh"]])
            self.call(lim.reserve, k["hot"], max_wait=0)
            self.call(lim.reset, k["fresh"][1])

    async def async_round(self) -> None:
        k = self.keys()
        calls = []
        for lim in self.limiters:
            calls += [lim.ahit(k["hot"]), lim.ahit(k["fresh"][0], FRESH_COST), lim.apeek(k["hot"]),
                      lim.ahit_many([k["hot"], *k["fresh"]]), lim.areserve(k["hot"], max_wait=0),
                      lim.areset(k["fresh"][1])]
        self.calls += len(calls)
        for result in await asyncio.gather(*calls, return_exceptions=True):
            if isinstance(result, ratewarden.StoreError):
                self.store_errors += 1
            elif isinstance(result, BaseException):
                raise result

    def report(self, final: bool = False) -> None:
        now = time.monotonic()
        if not final and now - self.last_report < 1:
            return
        self.last_report = now
        line: Dict[str, Any] = {"pid": os.getpid(), "name": self.name, "calls": self.calls,
                                "store_errors": self.store_errors}
        if self.memory:
            stats = self.memory[0].stats()
            line.update(memory_keys=stats.keys, memory_evictions=stats.evictions)
        line.update(self.extra)
        if final:
            line["done"] = True
        os.write(1, (json.dumps(line) + "\n").encode())  # one write: lines of forked children never interleave

    def stop(self, *_: Any) -> None:
        self.stopping = True


def run_sync(worker: Worker, each_round: Callable[[], None] = lambda: None) -> None:
    while not worker.stopping:
        worker.sync_round()
        each_round()
        worker.report()
        time.sleep(PAUSE)


async def run_async(worker: Worker) -> None:
    while not worker.stopping:
        await worker.async_round()
        worker.report()
        await asyncio.sleep(PAUSE)


def die_with_parent() -> None:
    ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: a child never outlives the fork worker


def run_fork(worker: Worker) -> None:
    """Two children forked after the limiters were used, working as long as the parent; a short-lived child every
    2 s, reaped (a child that fails fails the parent)."""
    worker.sync_round()  # connections open, the core's I/O thread running: what a fork must cope with
    parent = os.getpid()
    for i in range(2):
        if os.fork() == 0:
            die_with_parent()
            if os.getppid() != parent:
                os._exit(1)
            worker.name = f"{worker.name}-child{i}"
            worker.calls = worker.store_errors = 0
            run_sync(worker)
            worker.report(final=True)
            os._exit(0)
    short: Dict[str, Any] = {"pid": 0, "started": time.monotonic()}

    def each_round() -> None:
        if short["pid"]:
            pid, status = os.waitpid(short["pid"], os.WNOHANG)
            if pid == 0:
                return
            if os.waitstatus_to_exitcode(status) != 0:
                raise SystemExit(f"{worker.name}: a short-lived child ended with status {status}")
            short["pid"] = 0
        if time.monotonic() - short["started"] >= 2:
            short["started"] = time.monotonic()
            worker.extra["forks"] = worker.extra.get("forks", 0) + 1
            pid = os.fork()
            if pid == 0:
                die_with_parent()
                for _ in range(20):
                    worker.sync_round()
                os._exit(0)
            short["pid"] = pid

    run_sync(worker, each_round)
    if short["pid"]:
        os.waitpid(short["pid"], 0)
    for _ in range(2):
        pid, status = os.wait()
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"{worker.name}: child {pid} ended with status {status}")


def main() -> None:
    mode, name, *urls = sys.argv[1:]
    worker = Worker(name, urls)
    signal.signal(signal.SIGTERM, worker.stop)
    if mode == "sync":
        run_sync(worker)
    elif mode == "async":
        asyncio.run(run_async(worker))
    elif mode == "fork":
        run_fork(worker)
    else:
        raise SystemExit(f"worker.py: unknown mode {mode!r}")
    worker.report(final=True)


if __name__ == "__main__":
    main()
