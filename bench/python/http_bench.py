"""Time per request of one Flask app under gunicorn and wrk, over HTTP on 127.0.0.1: ratewarden (memory store and
Redis) against the bare app, for allowed requests and for denied ones (a limit already used up for the key), with
gunicorn's sync workers and its threaded workers; Flask-Limiter's allowed requests as a reference.

All servers run at once. Each round visits every server class in turn and, within it, measures the bare app, then
every case, then the bare app again; a case's ratio for the round is its time per request (1 / requests per second)
over the mean of the two bare measures around it. Prints, as JSON lines for report.py, each case's median ratio over
the rounds with their spread, its target (issue 21: ratewarden adds at most 5% on the memory store and 15% on
Redis), the median requests/s and the median CPU time gunicorn's processes spent per request (read from /proc).

BENCH_ROUNDS (default 7), BENCH_SECONDS per measure (default 1), BENCH_ONLY (a regular expression: only the
matching "server.case"s; the bare app of their servers is always measured).
"""

from __future__ import annotations

import json
import os
import re
import socket
import statistics
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Dict, List, NamedTuple, Optional, Tuple

REDIS = sys.argv[1]
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "7"))
SECONDS = os.environ.get("BENCH_SECONDS", "1")  # wrk takes whole seconds
ONLY = os.environ.get("BENCH_ONLY", "")

# gunicorn's sync workers (2 x cores + 1, one request at a time each, no keep-alive), and threaded workers.
SERVERS = {
    "sync": ["-w", "5"],
    "gthread": ["-w", "2", "-k", "gthread", "--threads", "4"],
}
# An app: BENCH_VARIANT and BENCH_STORE of flask_app.py.
APPS = {
    "bare": ("bare", "memory://"),
    "ratewarden.memory": ("ratewarden", "memory://"),
    "ratewarden.redis": ("ratewarden", REDIS),
    "flask-limiter.memory": ("flask-limiter", "memory://"),
    "flask-limiter.redis": ("flask-limiter", REDIS),
}


class Case(NamedTuple):
    app: str
    traffic: str  # "allowed" (the route "/") or "denied" ("/denied", every request refused)
    target: Optional[float]  # the most time per request it may take, as a multiple of the bare app's

    @property
    def name(self) -> str:
        return f"{self.app}.{self.traffic}"

    @property
    def path(self) -> str:
        return "/" if self.traffic == "allowed" else "/denied"


CASES = [
    Case("ratewarden.memory", "allowed", 1.05),
    Case("ratewarden.memory", "denied", 1.05),
    Case("ratewarden.redis", "allowed", 1.15),
    Case("ratewarden.redis", "denied", 1.15),
    Case("flask-limiter.memory", "allowed", None),
    Case("flask-limiter.redis", "allowed", None),
]


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


def get(port: int, path: str) -> Tuple[int, Dict[str, str]]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as response:
            return response.status, dict(response.headers)
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers)


def check_answers(port: int, case: Case) -> None:
    """The case measures what it says: allowed requests get a 200 with the fields, denied ones a 429 with
    Retry-After."""
    status, headers = get(port, case.path)
    limited = {k.lower() for k in headers} & {"ratelimit", "x-ratelimit-limit"}
    if case.traffic == "allowed" and (status != 200 or not limited):
        raise SystemExit(f"{case.name}: expected a 200 with rate-limit fields, got {status} {headers}")
    if case.traffic == "denied" and (status != 429 or "Retry-After" not in headers):
        raise SystemExit(f"{case.name}: expected a 429 with Retry-After, got {status} {headers}")


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


def wrk(port: int, path: str, seconds: str, refused: bool) -> Tuple[float, int]:
    """Requests/s and the number of requests; every answer must be a success, or (``refused``) none."""
    out = subprocess.run(
        ["wrk", "-t1", "-c16", f"-d{seconds}s", f"http://127.0.0.1:{port}{path}"],
        capture_output=True, text=True, check=True,
    ).stdout
    rate = re.search(r"Requests/sec:\s+([\d.]+)", out)
    count = re.search(r"(\d+) requests in", out)
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    assert rate and count, out
    failed = int(errors.group(1)) if errors else 0
    if failed != (int(count.group(1)) if refused else 0) or "Socket errors" in out:
        raise SystemExit(f"{path}: {'allowed' if refused else 'refused'} or failed requests in the benchmark:\n{out}")
    return float(rate.group(1)), int(count.group(1))


class Measure:
    """One server's requests/s and CPU µs per request, round by round."""

    def __init__(self) -> None:
        self.rps: List[float] = []
        self.cpu_us: List[float] = []

    def take(self, port: int, pid: int, path: str, refused: bool) -> None:
        before = tree_cpu_s(pid)
        rate, count = wrk(port, path, SECONDS, refused)
        self.rps.append(rate)
        self.cpu_us.append((tree_cpu_s(pid) - before) / count * 1e6)


def main() -> None:
    servers: Dict[str, Tuple[int, int]] = {}  # "server.app": (port, gunicorn's pid)
    cases = {s: [c for c in CASES if re.search(ONLY, f"{s}.{c.name}")] for s in SERVERS}
    processes: List[subprocess.Popen[bytes]] = []
    try:
        for server, options in SERVERS.items():
            if not cases[server]:
                continue
            for app in ["bare", *dict.fromkeys(c.app for c in cases[server])]:
                variant, store = APPS[app]
                port = free_port()
                env = {**os.environ, "BENCH_VARIANT": variant, "BENCH_STORE": store}
                processes.append(subprocess.Popen(
                    [sys.executable, "-m", "gunicorn", *options, "-b", f"127.0.0.1:{port}",
                     "--chdir", str(Path(__file__).parent), "flask_app:app"],
                    env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                ))
                servers[f"{server}.{app}"] = (port, processes[-1].pid)
        for port, _ in servers.values():
            wait_for(port)
        for server in SERVERS:
            for case in cases[server]:
                port = servers[f"{server}.{case.app}"][0]
                check_answers(port, case)
                wrk(port, case.path, "1", case.traffic == "denied")  # warm-up: imports, connections, scripts
        bare: Dict[str, Tuple[Measure, Measure]] = {s: (Measure(), Measure()) for s in SERVERS if cases[s]}
        measures = {(s, c.name): Measure() for s in SERVERS for c in cases[s]}
        for _ in range(ROUNDS):
            for server, (before, after) in bare.items():
                port, pid = servers[f"{server}.bare"]
                before.take(port, pid, "/", False)
                for case in cases[server]:
                    measures[server, case.name].take(*servers[f"{server}.{case.app}"], case.path,
                                                     case.traffic == "denied")
                after.take(port, pid, "/", False)
        for server, (before, after) in bare.items():
            bare_rps = [(a + b) / 2 for a, b in zip(before.rps, after.rps)]
            bare_cpu = [(a + b) / 2 for a, b in zip(before.cpu_us, after.cpu_us)]
            print(json.dumps({"name": f"http.{server}.bare", "rps": statistics.median(bare_rps),
                              "cpu_us": statistics.median(bare_cpu)}), flush=True)
            for case in cases[server]:
                m = measures[server, case.name]
                ratios = sorted(b / r for b, r in zip(bare_rps, m.rps))  # time per request over the bare app's
                print(json.dumps({
                    "name": f"http.{server}.{case.name}", "rps": statistics.median(m.rps),
                    "cpu_us": statistics.median(m.cpu_us), "time_ratio": statistics.median(ratios),
                    "time_ratio_min": ratios[0], "time_ratio_max": ratios[-1],
                    "cpu_ratio": statistics.median(c / b for b, c in zip(bare_cpu, m.cpu_us)),
                    "target": case.target,
                }), flush=True)
    finally:
        for p in processes:
            p.terminate()
        for p in processes:
            p.wait()


if __name__ == "__main__":
    main()
