"""The hybrid modes against issue 15's targets, from Python, in one run (docs/hybrid.md):

- one abusive key flooding a "10/minute" limit on Redis, with 1 and 8 threads: denials/s of ?mode=local_first
  against the memory store (target: within 2x, i.e. a ratio >= 0.5) and against ?mode=exact (target >= 20x);
- ?mode=async: allowed hits/s on a key with a huge limit, against the memory store (target: within 2x);
- an HTTP flood of denials: the Flask app of bench/python/flask_app.py under gunicorn (threaded workers) and wrk, its
  "/denied" route (every request refused) on Redis in local_first against the same app in exact (requests/s; the
  issue sets no number), and on the memory store for reference. Needs gunicorn, Flask and wrk (BENCH_HTTP=0: skip).

Each figure is the median over ROUNDS interleaved rounds (every measure once per round, side by side) of SECONDS of
calls; ratios are medians of the per-round ratios. Starts its own redis-server (tests/servers/launch.py) unless given
a Redis URL.

    python -P bench/python/hybrid.py [redis://host:port]      # BENCH_ROUNDS=5 BENCH_SECONDS=1
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Optional

import ratewarden

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/servers.py
from servers import RedisServer, raise_priority  # noqa: E402

ROUNDS = int(os.environ.get("BENCH_ROUNDS", "5"))
SECONDS = float(os.environ.get("BENCH_SECONDS", "1"))
ABUSED = "10/minute"
HUGE = "1000000000/minute"


@contextmanager
def redis_server() -> Iterator[str]:
    """A throwaway redis-server (tests/servers/launch.py: gone with this process, however it ends), at a higher CPU
    priority when allowed, standing in for a Redis host of its own, as bench/python/run.sh does."""
    with RedisServer() as server:
        raise_priority(server.pid)
        yield server.url


def warm(store: ratewarden.Store) -> ratewarden.Store:
    """A hybrid store's knowledge is used once its reset log has been read (stats().sync_lag >= 0)."""
    ratewarden.Limiter("1/hour", store, prefix="warm").peek("warm-up")
    while store.stats().sync_lag < 0:
        time.sleep(0.001)
    return store


def rate(call: Callable[[str], object], key: str, threads: int, count: Callable[[object], bool]) -> float:
    """Counted calls per second over SECONDS, `threads` threads calling `call(key)` back to back."""
    totals = [0] * threads
    start = threading.Barrier(threads + 1)
    stop = [0.0]

    def work(i: int) -> None:
        n = 0
        start.wait()
        end = stop[0]
        while time.perf_counter() < end:
            for _ in range(100):
                if count(call(key)):
                    n += 1
        totals[i] = n

    workers = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
    for w in workers:
        w.start()
    t0 = time.perf_counter()
    stop[0] = t0 + SECONDS
    start.wait()
    for w in workers:
        w.join()
    return sum(totals) / (time.perf_counter() - t0)


def denied(d: object) -> bool:
    return not d


def allowed(d: object) -> bool:
    return bool(d)


def main() -> None:
    with (nullcontext(sys.argv[1]) if len(sys.argv) > 1 else redis_server()) as url:
        stores = {
            "memory": ratewarden.Store("memory://"),
            "exact": ratewarden.Store(url),
            "local_first": warm(ratewarden.Store(f"{url}?mode=local_first")),
            "async": warm(ratewarden.Store(f"{url}?mode=async")),
        }
        abused = {name: ratewarden.Limiter(ABUSED, s, prefix=f"bench-{name}") for name, s in stores.items()}
        huge = {name: ratewarden.Limiter(HUGE, stores[name], prefix=f"bench-{name}") for name in ("memory", "async")}
        for name, limiter in abused.items():  # the abusive key has used its 10: every call from now on is denied
            limiter.reset("abuser")
            for _ in range(11):
                limiter.hit("abuser")
        for limiter in huge.values():  # async: the first calls go to the store; leases follow within a sync
            deadline = time.monotonic() + 0.3
            while time.monotonic() < deadline:
                limiter.hit("hot")

        measures: Dict[str, Callable[[], float]] = {}
        for threads in (1, 8):
            for name in ("memory", "exact", "local_first"):
                measures[f"deny.{name}.{threads}"] = (
                    lambda lim=abused[name], t=threads: rate(lim.hit, "abuser", t, denied))
            for name in ("memory", "async"):
                measures[f"allow.{name}.{threads}"] = (
                    lambda lim=huge[name], t=threads: rate(lim.hit, "hot", t, allowed))
        results: Dict[str, List[float]] = {k: [] for k in measures}
        print(f"running {ROUNDS} interleaved rounds of {len(measures)} measures x {SECONDS:g} s...", file=sys.stderr)
        for _ in range(ROUNDS):
            for name, measure in measures.items():
                results[name].append(measure())

        rows = []
        for threads in (1, 8):
            t = f"{threads} thread{'s' * (threads > 1)}"
            rows.append(row(f"denials/s, {t}: local_first vs memory", results, f"deny.local_first.{threads}",
                            f"deny.memory.{threads}", 0.5))
            rows.append(row(f"denials/s, {t}: local_first vs exact", results, f"deny.local_first.{threads}",
                            f"deny.exact.{threads}", 20.0))
            rows.append(row(f"denials/s, {t}: exact vs memory (for reference)", results, f"deny.exact.{threads}",
                            f"deny.memory.{threads}", None))
            rows.append(row(f"allowed/s, {t}: async vs memory", results, f"allow.async.{threads}",
                            f"allow.memory.{threads}", 0.5))
        if os.environ.get("BENCH_HTTP", "1") != "0":
            rows += http_flood(url)
        print_table(rows)
        s, a = stores["local_first"].stats(), stores["async"].stats()
        print(f"\nlocal_first: {s.local_denials} local denials, {s.store_calls} store calls, {s.sync_batches} sync "
              f"batches; async: {a.local_allows} local admissions, {a.store_calls} store calls, {a.sync_batches} "
              f"sync batches")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wrk_denied(port: int) -> float:
    """Requests/s of wrk on "/denied" for SECONDS (whole seconds); every answer must be a refusal (socket errors,
    which are no answers, are reported on stderr)."""
    out = subprocess.run(["wrk", "-t1", "-c16", f"-d{max(1, round(SECONDS))}s", f"http://127.0.0.1:{port}/denied"],
                         capture_output=True, text=True, check=True).stdout
    count = int(re.search(r"(\d+) requests in", out).group(1))  # type: ignore[union-attr]
    refused = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if not refused or int(refused.group(1)) != count:
        raise SystemExit(f"an allowed answer in the flood of denials:\n{out}")
    errors = re.search(r"Socket errors: .*", out)
    if errors:  # timeouts of a loaded machine: not answers, so not counted; said, not hidden
        print(f"port {port}: {errors.group(0)}", file=sys.stderr)
    return float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]


def http_flood(url: str) -> List[List[str]]:
    """gunicorn (2 threaded workers of 4 threads, as http_bench.py's gthread server) serving flask_app.py with
    ratewarden on each store; wrk floods "/denied" on each in turn, ROUNDS interleaved rounds."""
    if shutil.which("wrk") is None:
        return [["HTTP flood: skipped (wrk is not installed)", "", "", "", "", "MISS"]]
    stores = {"memory": "memory://", "exact": url, "local_first": f"{url}?mode=local_first"}
    servers: Dict[str, int] = {}
    procs: List[subprocess.Popen] = []
    try:
        for name, store in stores.items():
            port = free_port()
            env = {**os.environ, "BENCH_VARIANT": "ratewarden", "BENCH_STORE": store}
            procs.append(subprocess.Popen(
                [sys.executable, "-m", "gunicorn", "-w", "2", "-k", "gthread", "--threads", "4", "-b",
                 f"127.0.0.1:{port}", "--chdir", str(Path(__file__).parent), "flask_app:app"],
                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            servers[name] = port
        for port in servers.values():
            deadline = time.monotonic() + 30
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise SystemExit(f"gunicorn did not listen on {port}")
                    time.sleep(0.1)
            for _ in range(4):  # each answer waits for a worker to be up; the denials must be refusals
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{port}/denied", timeout=30)
                    raise SystemExit(f"{port}/denied: a request was allowed")
                except urllib.error.HTTPError as error:
                    if error.code != 429:
                        raise
            wrk_denied(port)  # warm-up: imports, connections, scripts, and each worker's first (store) denial
        results: Dict[str, List[float]] = {name: [] for name in servers}
        print(f"HTTP flood: {ROUNDS} interleaved rounds of {len(servers)} servers...", file=sys.stderr)
        for _ in range(ROUNDS):
            for name, port in servers.items():
                results[name].append(wrk_denied(port))
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait()
    r = {f"http.{k}": v for k, v in results.items()}
    return [row("HTTP denials/s, Flask: local_first vs exact", r, "http.local_first", "http.exact", None),
            row("HTTP denials/s, Flask: local_first vs memory", r, "http.local_first", "http.memory", None)]


def row(what: str, results: Dict[str, List[float]], ours: str, base: str, target: Optional[float]) -> List[str]:
    ratio = statistics.median(o / b for o, b in zip(results[ours], results[base]))
    verdict = "" if target is None else ("ok" if ratio >= target else "MISS")
    return [what, f"{statistics.median(results[ours]) / 1000:,.1f}k/s", f"{statistics.median(results[base]) / 1000:,.1f}k/s",
            f"{ratio:.2f}x", "" if target is None else f">= {target:g}x", verdict]


def print_table(rows: List[List[str]]) -> None:
    header = ["figure", "ours", "baseline", "ratio", "target", ""]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    for r in [header, *rows]:
        print("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip())


if __name__ == "__main__":
    main()
