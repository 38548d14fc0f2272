#!/usr/bin/env python3
"""A login flood with Redis killed in the middle, seen through the figures a real app serves (issue 36).

Starts a redis-server on a free port (tests/servers/launch.py, through bench/servers.py: it dies with this process
however it ends) and the Flask app of login_app.py under gunicorn with 2 workers, each serving its own ratewarden
figures on a port of its own (gunicorn_conf.py). Then, for --duration seconds:

- a few legitimate users log in (each --user-rate a second, the right password) and an attacker floods the same
  route for one username (--attack-rate a second, over 4 connections, wrong passwords); every client opens a new
  connection each 10 requests, so that the requests of every client reach both workers;
- every --interval seconds, both workers' /metrics are scraped and their figures summed into one row;
- at --down-at, redis-server is SIGKILLed; --down-for seconds later it is started again on the same port.

Writes OUT.csv (one row per scrape: cumulative figures, plus what the load generator had seen by then) and OUT.json
(the run's settings, when Redis went down and came back, the totals and whether they add up), then draws OUT.png with
chart.py. Every series of the chart comes from these two files. With the default OUT (docs/img/redis-outage), chart.py
also writes the chart's caption in docs/observability.md.
"""
from __future__ import annotations

import argparse
import csv
import ctypes
import datetime
import http.client
import json
import os
import platform
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Dict, List, Optional, Tuple
from urllib.parse import urlencode

from prometheus_client.parser import text_string_to_metric_families

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from servers import RedisServer, free_ports, wait_listening  # noqa: E402  (tests/servers/launch.py's redis-server)

DEFAULT_OUT = ROOT / "docs" / "img" / "redis-outage"
PR_SET_PDEATHSIG = 1
LIBC = ctypes.CDLL(None)
WORKERS = 2
ATTACKER_CONNECTIONS = 4
USERS = ["alice", "bob", "carol"]
ATTACKED = "admin"
RECONNECT_EVERY = 10  # a new connection every 10 requests: each lands on either worker, as the kernel hands it out

# One row of the CSV: cumulative values at the scrape, summed over the workers (and over stores and limiters: the app
# has one of each), then the load generator's cumulative counts of the responses it had received by then.
COLUMNS = ["t_s", "redis_up", "workers_scraped",
           "decisions_allowed", "decisions_denied", "fallback_decisions",
           "store_errors_unavailable", "store_errors_timeout", "store_errors_error",
           "circuit_open", "circuit_openings",
           "store_calls_ok", "store_calls_ok_seconds", "store_calls_unavailable", "store_calls_unavailable_seconds",
           "store_calls_timeout", "store_calls_timeout_seconds", "store_calls_error", "store_calls_error_seconds",
           "sent", "users_passed", "users_429", "attacker_passed", "attacker_429", "answered_other", "no_answer"]
FIGURES = COLUMNS[3:19]


def log(message: str) -> None:
    print(f"outage.py: {message}", file=sys.stderr, flush=True)


def die_with_parent(parent: int) -> None:
    """In gunicorn's master between fork and exec: SIGKILL when this driver dies, however (its workers then exit,
    seeing their master gone)."""
    LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    os.setsid()
    if os.getppid() != parent:
        os._exit(1)


def figures(text: str) -> Dict[str, float]:
    """The FIGURES of one worker's /metrics text."""
    out = dict.fromkeys(FIGURES, 0.0)
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == "ratewarden_decisions_total":
                out[f"decisions_{s.labels['outcome']}"] += s.value
            elif s.name == "ratewarden_fallback_decisions_total":
                out["fallback_decisions"] += s.value
            elif s.name == "ratewarden_store_errors_total":
                out[f"store_errors_{s.labels['kind']}"] += s.value
            elif s.name == "ratewarden_circuit_open":
                out["circuit_open"] += s.value
            elif s.name == "ratewarden_circuit_openings_total":
                out["circuit_openings"] += s.value
            elif s.name == "ratewarden_store_call_duration_seconds_count":
                out[f"store_calls_{s.labels['outcome']}"] += s.value
            elif s.name == "ratewarden_store_call_duration_seconds_sum":
                out[f"store_calls_{s.labels['outcome']}_seconds"] += s.value
    return out


class Load:
    """The load generator: legitimate users and an attacker, each connection paced on a fixed schedule (a late
    request is sent at once, never in a burst to catch up). Every response is recorded as (time, who, status);
    status -1: no answer (the connection failed)."""

    def __init__(self, port: int, t0: float, user_rate: float, attack_rate: float) -> None:
        self.port, self.t0 = port, t0
        self.stopping = threading.Event()
        self.records: List[Tuple[float, str, int]] = []
        self.sent = 0
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self.client, args=(user, "right", user_rate, "users"), daemon=True)
                        for user in USERS]
        self.threads += [threading.Thread(target=self.client, daemon=True,
                                          args=(ATTACKED, "guess", attack_rate / ATTACKER_CONNECTIONS, "attacker"))
                         for _ in range(ATTACKER_CONNECTIONS)]

    def start(self) -> None:
        for t in self.threads:
            t.start()

    def stop(self) -> None:
        self.stopping.set()
        for t in self.threads:
            t.join(30)

    def client(self, username: str, password: str, rate: float, who: str) -> None:
        interval = 1 / rate
        next_at = time.monotonic() + random.uniform(0, interval)  # the connections out of step
        conn: Optional[http.client.HTTPConnection] = None
        n = 0
        while not self.stopping.is_set():
            delay = next_at - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            next_at = max(next_at + interval, time.monotonic())
            body = urlencode({"username": username, "password": f"{password}{n if password != 'right' else ''}"})
            n += 1
            with self.lock:
                self.sent += 1
            status = -1
            try:
                if conn is None:
                    conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
                conn.request("POST", "/login", body=body,
                             headers={"Content-Type": "application/x-www-form-urlencoded"})
                response = conn.getresponse()
                response.read()
                status = response.status
                if n % RECONNECT_EVERY == 0 or response.getheader("Connection", "").lower() == "close":
                    conn.close()
                    conn = None
            except (OSError, http.client.HTTPException):
                if conn is not None:
                    conn.close()
                conn = None
            self.records.append((time.monotonic() - self.t0, who, status))

    def counts_until(self, t: float) -> Dict[str, int]:
        """What had been answered by time t (since t0)."""
        out = {"users_passed": 0, "users_429": 0, "attacker_passed": 0, "attacker_429": 0, "answered_other": 0,
               "no_answer": 0}
        for when, who, status in list(self.records):
            if when > t:
                continue
            if status in (200, 401):  # past the limit: the view answered
                out[f"{who}_passed"] += 1
            elif status == 429:
                out[f"{who}_429"] += 1
            elif status == -1:
                out["no_answer"] += 1
            else:
                out["answered_other"] += 1
        return out


class Scraper:
    """Scrapes every worker's port each `interval` seconds, on a fixed schedule; each row sums the workers' figures
    (a worker that did not answer in time counts with its last figures, and workers_scraped says so)."""

    def __init__(self, ports: List[int], t0: float, interval: float, redis_up: threading.Event, load: Load) -> None:
        self.ports, self.t0, self.interval, self.redis_up, self.load = ports, t0, interval, redis_up, load
        self.last: Dict[int, Dict[str, float]] = {p: dict.fromkeys(FIGURES, 0.0) for p in ports}
        self.rows: List[Dict[str, float]] = []
        self.stopping = threading.Event()
        self.failures = 0
        self.error: Optional[BaseException] = None
        self.thread = threading.Thread(target=self.run, daemon=True)

    def scrape_once(self) -> None:
        scraped = 0
        started = time.monotonic()
        for port in self.ports:
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=self.interval)
                conn.request("GET", "/metrics")
                response = conn.getresponse()
                text = response.read().decode()
                conn.close()
                if response.status == 200:
                    self.last[port] = figures(text)
                    scraped += 1
            except (OSError, http.client.HTTPException):
                pass
        self.failures += len(self.ports) - scraped
        t = (started + time.monotonic()) / 2 - self.t0
        row: Dict[str, float] = {"t_s": round(t, 3), "redis_up": int(self.redis_up.is_set()),
                                 "workers_scraped": scraped}
        for name in FIGURES:
            row[name] = sum(self.last[p][name] for p in self.ports)
        row["sent"] = self.load.sent
        row.update(self.load.counts_until(t))
        self.rows.append(row)

    def run(self) -> None:
        next_at = time.monotonic()
        try:
            while not self.stopping.is_set():
                self.scrape_once()
                next_at += self.interval
                self.stopping.wait(max(0.0, next_at - time.monotonic()))
        except BaseException as error:  # raised again by stop()
            self.error = error

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.stopping.set()
        self.thread.join(30)
        if self.error is not None:
            raise self.error


EVENT_LINE = re.compile(r"^(\d+\.\d+) (\d+) (\w+) ratewarden: (?:ratewarden: )?(\S[^(]*?) \((.*)$")


def events(server_log: str, t0_unix: float) -> List[Dict[str, object]]:
    """The 'ratewarden' logger's lines of the workers (login_app.py's format), on the run's time line."""
    out: List[Dict[str, object]] = []
    for line in server_log.splitlines():
        m = EVENT_LINE.match(line)
        if m:
            out.append({"t_s": round(float(m[1]) - t0_unix, 3), "pid": int(m[2]), "level": m[3], "event": m[4],
                        "message": m[4] + " (" + m[5]})
    return out


def sleep_until(t0: float, t: float) -> None:
    delay = t0 + t - time.monotonic()
    if delay > 0:
        time.sleep(delay)


def versions() -> Dict[str, str]:
    import ratewarden

    redis = subprocess.run(["redis-server", "--version"], capture_output=True, text=True).stdout.split()
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--", "core", "python", "bench",
                            "CMakeLists.txt", "pyproject.toml"], capture_output=True, text=True).stdout.strip()
    if commit and dirty:
        commit += " with uncommitted changes"
    return {"ratewarden": getattr(ratewarden, "__version__", "?"), "tree": commit or "?",
            "redis_server": next((w.split("=")[1] for w in redis if w.startswith("v=")), "?"),
            "python": platform.python_version(), "cpus": str(os.cpu_count())}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--duration", type=float, default=40, help="seconds of load (default 40)")
    parser.add_argument("--down-at", type=float, default=15, help="when redis-server is killed (default 15 s)")
    parser.add_argument("--down-for", type=float, default=10, help="for how long (default 10 s)")
    parser.add_argument("--interval", type=float, default=0.5, help="seconds between scrapes (default 0.5)")
    parser.add_argument("--user-rate", type=float, default=1, help="logins a second of each user (default 1)")
    parser.add_argument("--attack-rate", type=float, default=100, help="attacker requests a second (default 100)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT,
                        help="OUT.csv, OUT.json, OUT.png (default docs/img/redis-outage)")
    parser.add_argument("--no-chart", action="store_true", help="write the CSV and JSON only")
    args = parser.parse_args()
    if not 0 < args.down_at < args.down_at + args.down_for < args.duration:
        parser.error("Redis must go down and come back during the load: 0 < down-at < down-at + down-for < duration")
    out = args.out.resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # the clean-up below runs

    app_port, metrics_port = free_ports(1), free_ports(WORKERS)
    with RedisServer() as redis, tempfile.TemporaryDirectory(prefix="rw-obs-") as tmp:
        log(f"redis-server on port {redis.port}; Flask under gunicorn ({WORKERS} workers) on port {app_port}, "
            f"their figures on ports {metrics_port}-{metrics_port + WORKERS - 1}")
        server_log = Path(tmp) / "gunicorn.log"
        env = {**os.environ, "PYTHONPATH": str(HERE), "OBS_STORE": redis.url, "OBS_PREFIX": f"obs{os.getpid()}",
               "OBS_METRICS_PORT": str(metrics_port)}
        cmd = [sys.executable, "-m", "gunicorn", "-w", str(WORKERS), "-k", "gthread", "--threads", "4",
               "-c", "gunicorn_conf.py", "-b", f"127.0.0.1:{app_port}", "--log-level", "info", "login_app:app"]
        parent = os.getpid()
        with server_log.open("wb") as sink:
            gunicorn = subprocess.Popen(cmd, cwd=HERE, env=env, stdout=sink, stderr=subprocess.STDOUT,
                                        preexec_fn=lambda: die_with_parent(parent))
        try:
            for port in [app_port, *range(metrics_port, metrics_port + WORKERS)]:
                wait_listening(port, gunicorn, server_log, "gunicorn")
            redis_up = threading.Event()
            redis_up.set()
            t0, t0_unix = time.monotonic(), time.time()
            load = Load(app_port, t0, args.user_rate, args.attack_rate)
            scraper = Scraper(list(range(metrics_port, metrics_port + WORKERS)), t0, args.interval, redis_up, load)
            scraper.start()
            load.start()
            log(f"flooding /login for {args.duration:g} s: {len(USERS)} users at {args.user_rate:g}/s each, an "
                f"attacker at {args.attack_rate:g}/s; Redis killed at {args.down_at:g} s for {args.down_for:g} s")
            sleep_until(t0, args.down_at)
            redis.kill()
            redis_up.clear()
            killed_at = time.monotonic() - t0
            log(f"t={killed_at:.2f} s: redis-server killed")
            sleep_until(t0, args.down_at + args.down_for)
            restart_at = time.monotonic() - t0
            redis.start()  # the same port; returns once it answers PING
            back_at = time.monotonic() - t0
            redis_up.set()
            log(f"t={back_at:.2f} s: redis-server answers again")
            sleep_until(t0, args.duration)
            load.stop()
            stopped_at = time.monotonic() - t0
            time.sleep(args.interval * 3)  # the last responses counted in the figures
            scraper.stop()
            scraper.scrape_once()  # the final totals, after the load
        finally:
            try:
                os.killpg(gunicorn.pid, signal.SIGTERM)
                gunicorn.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(gunicorn.pid, signal.SIGKILL)
                gunicorn.wait()
            except ProcessLookupError:
                pass
            gunicorn_log = server_log.read_text(errors="replace")

    rows = scraper.rows
    with open(f"{out}.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        for row in rows:
            writer.writerow({k: (f"{v:.6g}" if isinstance(v, float) and not v.is_integer() else int(v))
                             for k, v in row.items()})

    final = rows[-1]
    answered = {k: int(final[k]) for k in COLUMNS[COLUMNS.index("sent") + 1:]}
    passed = answered["users_passed"] + answered["attacker_passed"]
    by_who: Dict[str, Dict[str, int]] = {}
    for _, who, status in load.records:
        by_who.setdefault(who, {}).setdefault(str(status), 0)
        by_who[who][str(status)] += 1
    decided = int(final["decisions_allowed"] + final["decisions_denied"])
    store_errors = int(final["store_errors_unavailable"] + final["store_errors_timeout"] + final["store_errors_error"])
    meta = {
        "generated_by": "bench/observability/run.sh (outage.py)",
        "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M"),
        "versions": versions(),
        "settings": {"duration_s": args.duration, "scrape_interval_s": args.interval, "workers": WORKERS,
                     "route": "POST /login", "limit": "5/second per username (keys.form('username'))",
                     "on_store_error": "deny", "users": USERS, "user_rate_per_s": args.user_rate,
                     "attacked_username": ATTACKED, "attack_rate_per_s": args.attack_rate,
                     "attacker_connections": ATTACKER_CONNECTIONS},
        "redis": {"killed_at_s": round(killed_at, 3), "restart_at_s": round(restart_at, 3),
                  "answers_again_at_s": round(back_at, 3)},
        "load_stopped_at_s": round(stopped_at, 3),
        "totals": {"requests_sent": load.sent, "responses": answered, "by_client": by_who,
                   "decisions_allowed": int(final["decisions_allowed"]),
                   "decisions_denied": int(final["decisions_denied"]),
                   "fallback_decisions": int(final["fallback_decisions"]),
                   "store_errors": store_errors, "circuit_openings": int(final["circuit_openings"]),
                   "scrapes": len(rows), "worker_scrapes_missed": scraper.failures,
                   "by_worker": [{k: int(v) for k, v in scraper.last[p].items() if not k.endswith("seconds")}
                                 for p in scraper.ports]},
        "checks": {
            "allowed_plus_denied": decided,
            "requests_sent": load.sent,
            "allowed_equals_passed_responses": int(final["decisions_allowed"]) == passed,
            "decisions_equal_requests": decided == load.sent,
        },
        "events": events(gunicorn_log, t0_unix),
        "server_log_other": [line for line in gunicorn_log.splitlines()
                             if "[INFO]" not in line and not EVENT_LINE.match(line)][:20],
    }
    Path(f"{out}.json").write_text(json.dumps(meta, indent=2) + "\n")
    log(f"wrote {out}.csv ({len(rows)} scrapes) and {out}.json")
    log(f"requests sent {load.sent}; responses {answered}; decisions allowed {meta['totals']['decisions_allowed']} + "
        f"denied {meta['totals']['decisions_denied']} = {decided}; store errors {store_errors}")
    if not args.no_chart:
        doc = ["--doc", str(ROOT / "docs" / "observability.md")] if out == DEFAULT_OUT else []
        return subprocess.call([sys.executable, str(HERE / "chart.py"), str(out), *doc])
    return 0


if __name__ == "__main__":
    sys.exit(main())
