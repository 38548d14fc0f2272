#!/usr/bin/env python3
"""One hot key on the PostgreSQL store: how long a hit takes when many callers want the same row (issue 33, part 5).

    contention.py LIBRATEWARDEN_SO [--processes 4] [--threads 4] [--calls 120] [--policy 300/day]
                  [--timeouts 250ms,10s] [--options mode=local_first] [--cold] [--rounds 3] [--hog N]

PROCESSES processes of THREADS threads each (Python threads calling the C ABI through ctypes, which lets go of the GIL
during a call: the calls of one process are concurrent, as in a threaded WSGI server) hit ONE key, CALLS times per
thread, on a real PostgreSQL started by tests/servers/launch.py. Every process has a store of its own (the default
pool: up to 8 connections), opened and warmed up (each thread hits a key of its own, so that the connections are
open) before the callers start together on the hot key; with --cold, not warmed up: the first hits open the
connections (connecting and preparing the statements count against the call's timeout), as in processes that have
just started. Each round runs once per store timeout in TIMEOUTS, on a
fresh key: with a long timeout the latencies are what the row lock costs (no call is cut short); with the default
one, the errors are what a user sees. OPTIONS are added to every store URL (e.g. mode=local_first).

Printed per timeout: the calls, allowed, denied and errors (by status), and the latency of a hit in ms (p50, p90, p99,
max), for all the calls and separately for the first ones (while the limit still allows: every hit writes the row)
and the denials (each still locks the row). Latency is measured around rw_hit in the calling thread, so on a busy
machine it includes the wait for the GIL afterwards: the errors are the store's own verdict.

--hog N runs `stress-ng --cpu N` (Debian's stress-ng) beside the measurement, started and killed by this script: the
busy machine of the issue, made repeatable (the machines here have 2 cores).
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Dict, List

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))  # bench/servers.py: the tests' servers
from servers import PostgresServer  # noqa: E402


class Decision(ctypes.Structure):
    _fields_ = [("allowed", ctypes.c_int), ("limit", ctypes.c_int64), ("remaining", ctypes.c_int64),
                ("reset_after_us", ctypes.c_int64), ("retry_after_us", ctypes.c_int64), ("used", ctypes.c_int64)]


def load(path: str) -> ctypes.CDLL:
    lib = ctypes.CDLL(path)
    lib.rw_store_open.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_void_p)]
    lib.rw_store_close.argtypes = [ctypes.c_void_p]
    lib.rw_limiter_create.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p,
                                      ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_void_p)]
    lib.rw_limiter_destroy.argtypes = [ctypes.c_void_p]
    lib.rw_hit.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_int64,
                           ctypes.POINTER(Decision), ctypes.POINTER(ctypes.c_void_p)]
    lib.rw_free.argtypes = [ctypes.c_void_p]
    return lib


def worker(args: argparse.Namespace) -> int:
    """One process: opens its store, warms up, says "ready", waits for "go" on stdin, hits, prints its records."""
    lib = load(args.library)
    store, limiter, err = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
    if lib.rw_store_open(args.url.encode(), ctypes.byref(store), ctypes.byref(err)) != 0 or \
            lib.rw_limiter_create(store, args.policy.encode(), None, ctypes.byref(limiter), ctypes.byref(err)) != 0:
        print(json.dumps({"error": ctypes.cast(err, ctypes.c_char_p).value.decode()}), flush=True)
        return 1

    def hit(key: bytes) -> tuple:
        d, e = Decision(), ctypes.c_void_p()
        t0 = time.perf_counter_ns()
        status = lib.rw_hit(limiter, key, len(key), 1, ctypes.byref(d), ctypes.byref(e))
        ns = time.perf_counter_ns() - t0
        message = ""
        if status != 0:
            message = (ctypes.cast(e, ctypes.c_char_p).value or b"").decode(errors="replace")
            lib.rw_free(e)
        return status, d.allowed, ns, message

    def warm(t: int) -> None:
        for _ in range(5):
            hit(f"warm-{os.getpid()}-{t}".encode())

    warmers = [threading.Thread(target=warm, args=(t,)) for t in range(0 if args.cold else args.threads)]
    for w in warmers:
        w.start()
    for w in warmers:
        w.join()
    records: List[tuple] = []
    lock = threading.Lock()
    go = threading.Event()

    def call(t: int) -> None:
        mine = []
        go.wait()
        key = args.key.encode()
        for _ in range(args.calls):
            mine.append(hit(key))
        with lock:
            records.extend(mine)

    callers = [threading.Thread(target=call, args=(t,)) for t in range(args.threads)]
    for c in callers:
        c.start()
    print("ready", flush=True)
    sys.stdin.readline()
    go.set()
    for c in callers:
        c.join()
    print(json.dumps({"records": records}), flush=True)
    lib.rw_limiter_destroy(limiter)
    lib.rw_store_close(store)
    return 0


def percentile(sorted_ms: List[float], p: float) -> float:
    if not sorted_ms:
        return float("nan")
    return sorted_ms[min(len(sorted_ms) - 1, int(round(p / 100 * (len(sorted_ms) - 1))))]


def summary(ms: List[float]) -> str:
    s = sorted(ms)
    if not s:
        return "-"
    return (f"p50 {percentile(s, 50):7.1f}  p90 {percentile(s, 90):7.1f}  p99 {percentile(s, 99):7.1f}  "
            f"max {s[-1]:7.1f}")


def run_round(args: argparse.Namespace, url: str) -> Dict[str, object]:
    key = "hot-" + uuid.uuid4().hex[:12]
    procs = [subprocess.Popen([sys.executable, __file__, args.library, "--worker", "--url", url, "--key", key,
                               "--threads", str(args.threads), "--calls", str(args.calls), "--policy", args.policy]
                              + (["--cold"] if args.cold else []),
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) for _ in range(args.processes)]
    for p in procs:
        line = p.stdout.readline()  # type: ignore[union-attr]
        if line.strip() != "ready":
            raise SystemExit(f"a worker failed: {line.strip()}")
    started = time.monotonic()
    for p in procs:
        p.stdin.write("go\n")  # type: ignore[union-attr]
        p.stdin.flush()  # type: ignore[union-attr]
    records: List[list] = []
    for p in procs:
        out = json.loads(p.stdout.readline())  # type: ignore[union-attr]
        p.wait()
        records.extend(out["records"])
    return {"records": records, "seconds": time.monotonic() - started}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("library", help="libratewarden.so (the C ABI)")
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--calls", type=int, default=120, help="hits per thread")
    parser.add_argument("--policy", default="300/day")
    parser.add_argument("--timeouts", default="250ms,10s", help="store timeouts (?timeout=), one run each per round")
    parser.add_argument("--options", default="", help="more store URL options, e.g. mode=local_first")
    parser.add_argument("--cold", action="store_true", help="no warm-up: the first hits open the connections")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--hog", type=int, default=0, help="run stress-ng --cpu N beside the measurement")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--key", help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.library = str(Path(args.library).resolve())
    if args.worker:
        return worker(args)

    if args.hog and not shutil.which("stress-ng"):
        print("--hog needs stress-ng (apt-get install stress-ng)", file=sys.stderr)
        return 1
    try:
        server = PostgresServer()  # gone with this process, however it ends
    except RuntimeError as error:
        print(error, file=sys.stderr)
        return 1
    base = server.url
    hog = None
    if args.hog:
        hog = subprocess.Popen(["stress-ng", "--cpu", str(args.hog), "--quiet"], stdin=subprocess.DEVNULL)
    try:
        timeouts = args.timeouts.split(",")
        results: Dict[str, List[Dict[str, object]]] = {t: [] for t in timeouts}
        for _ in range(args.rounds):
            for t in timeouts:  # interleaved: both settings see the same machine
                options = f"&{args.options}" if args.options else ""
                results[t].append(run_round(args, f"{base}?timeout={t}&connect_timeout=10s{options}"))
        load = os.getloadavg()
    finally:
        if hog:
            hog.send_signal(signal.SIGTERM)
            hog.wait()
        server.close()

    total = args.processes * args.threads * args.calls
    print(f"{args.processes} processes x {args.threads} threads x {args.calls} hits on one key, {args.policy}, "
          f"{args.rounds} rounds; options: {args.options or '-'}; {'cold' if args.cold else 'warm'} connections; {os.cpu_count()} cores; stress-ng --cpu {args.hog}; load average at the end "
          f"{load[0]:.1f}")
    for t in timeouts:
        print(f"\ntimeout={t}")
        every, allowed_ms, denied_ms = [], [], []
        for i, r in enumerate(results[t], 1):
            recs = r["records"]
            assert len(recs) == total  # type: ignore[arg-type]
            ok = [x for x in recs if x[0] == 0]  # type: ignore[union-attr]
            errors: Dict[int, int] = {}
            for x in recs:  # type: ignore[union-attr]
                if x[0] != 0:
                    errors[x[0]] = errors.get(x[0], 0) + 1
            n_allowed = sum(1 for x in ok if x[1])
            ms = [x[2] / 1e6 for x in recs]  # type: ignore[union-attr]
            every += ms
            allowed_ms += [x[2] / 1e6 for x in ok if x[1]]
            denied_ms += [x[2] / 1e6 for x in ok if not x[1]]
            named = ", ".join(f"{n} {'timeout' if code == 3 else f'status {code}'}" for code, n in sorted(errors.items()))
            for m in sorted({x[3] for x in recs if x[0] != 0 and x[0] != 3}):  # type: ignore[union-attr]
                print(f"  (an error other than a timeout: {m})")
            print(f"  round {i}: {total} calls in {r['seconds']:.1f} s: {n_allowed} allowed, {len(ok) - n_allowed} "
                  f"denied, {sum(errors.values())} errors{' (' + named + ')' if named else ''} "
                  f"({100 * sum(errors.values()) / total:.1f}%); {summary(ms)}")
        print(f"  all rounds, ms:  every hit   {summary(every)}")
        print(f"                   allowed     {summary(allowed_ms)}")
        print(f"                   denied      {summary(denied_ms)}")
        p99s = [percentile(sorted(x[2] / 1e6 for x in r["records"]), 99) for r in results[t]]  # type: ignore
        print(f"  median of the rounds' p99: {statistics.median(p99s):.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
