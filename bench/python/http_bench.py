"""Requests/s of one Flask app under gunicorn and wrk: bare, with ratewarden, with Flask-Limiter, each limiter on
the memory store and on Redis. All servers run at once and wrk visits them in turn, round after round, so that the
machine's noise falls on every variant alike. Prints, as JSON lines, the median requests/s and the median CPU time
gunicorn's processes spent per request (less sensitive than requests/s to other load on the machine)."""

from __future__ import annotations

import json
import os
import re
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Tuple

REDIS = sys.argv[1]
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))
SECONDS = os.environ.get("BENCH_SECONDS", "4")
ONLY = os.environ.get("BENCH_ONLY", "")  # a regular expression: run only the matching "server.variant"s
VARIANTS = {
    "bare": ("bare", "memory://"),
    "ratewarden.memory": ("ratewarden", "memory://"),
    "ratewarden.redis": ("ratewarden", REDIS),
    "flask-limiter.memory": ("flask-limiter", "memory://"),
    "flask-limiter.redis": ("flask-limiter", REDIS),
}
# gunicorn's default sync workers (2 x cores + 1, one request at a time each), and threaded workers.
SERVERS = {
    "sync": ["-w", "5"],
    "gthread": ["-w", "2", "-k", "gthread", "--threads", "4"],
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(port: int) -> None:
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise SystemExit(f"gunicorn did not listen on {port}")
            time.sleep(0.1)


def tree_cpu_s(pid: int) -> float:
    """CPU seconds (user + system) used so far by a process and its children: gunicorn's master and workers."""
    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if stat.parent.name == str(pid) or fields[1] == str(pid):  # fields[1]: the parent's pid
            total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / os.sysconf("SC_CLK_TCK")


def wrk(port: int, seconds: str) -> Tuple[float, int]:
    """Requests/s and the number of requests."""
    out = subprocess.run(
        ["wrk", "-t1", "-c16", f"-d{seconds}s", f"http://127.0.0.1:{port}/"], capture_output=True, text=True, check=True
    ).stdout
    if "Non-2xx" in out:
        raise SystemExit(f"refused or failed requests in the benchmark:\n{out}")
    rate = re.search(r"Requests/sec:\s+([\d.]+)", out)
    count = re.search(r"(\d+) requests in", out)
    assert rate and count, out
    return float(rate.group(1)), int(count.group(1))


def main() -> None:
    servers: Dict[str, Tuple[int, int]] = {}  # name: (port, gunicorn's pid)
    processes: List[subprocess.Popen[bytes]] = []
    try:
        for server, options in SERVERS.items():
            for name, (variant, store) in VARIANTS.items():
                if not re.search(ONLY, f"{server}.{name}"):
                    continue
                port = free_port()
                env = {**os.environ, "BENCH_VARIANT": variant, "BENCH_STORE": store}
                processes.append(subprocess.Popen(
                    [sys.executable, "-m", "gunicorn", *options, "-b", f"127.0.0.1:{port}",
                     "--chdir", str(Path(__file__).parent), "flask_app:app"],
                    env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                ))
                servers[f"{server}.{name}"] = (port, processes[-1].pid)
        for port, _ in servers.values():
            wait_for(port)
            wrk(port, "1")  # warm-up: imports, connections, scripts
        rates: Dict[str, List[float]] = {name: [] for name in servers}
        cpu: Dict[str, List[float]] = {name: [] for name in servers}
        for _ in range(ROUNDS):
            for name, (port, pid) in servers.items():
                before = tree_cpu_s(pid)
                rate, count = wrk(port, SECONDS)
                rates[name].append(rate)
                cpu[name].append((tree_cpu_s(pid) - before) / count * 1e6)
        for name in servers:
            print(json.dumps({"name": f"http.{name}", "rps": statistics.median(rates[name]),
                              "cpu_us": statistics.median(cpu[name])}), flush=True)
    finally:
        for p in processes:
            p.terminate()
        for p in processes:
            p.wait()


if __name__ == "__main__":
    main()
