"""The demo: the Flask and the Express login examples on loopback, 5 attempts per username per minute.

    python examples/demo.py              # each app on its own embedded memory store: two separate limits
    python examples/demo.py --redis URL  # both apps on one Redis: one limit, whichever app the attempt reaches

Starts both servers (examples/python/login.py with this Python, examples/node/login.js with node), sends each
login attempt over HTTP and prints a table of status codes, RateLimit / Retry-After fields and timings."""
from __future__ import annotations

import argparse
import http.client
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator, List, Tuple
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port: int, proc: subprocess.Popen[bytes], name: str) -> None:
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                sys.exit(f"demo: the {name} example did not start")
            time.sleep(0.05)


class App:
    def __init__(self, name: str, command: List[str], port: int, field: str, env: dict) -> None:
        self.name, self.port, self.field = name, port, field
        self.proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_listening(port, self.proc, name)

    def attempt(self, user: str) -> Tuple[int, str, str, float]:
        start = time.perf_counter()
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
        conn.request("POST", "/login", urlencode({self.field: user, "password": "guess"}),
                     {"Content-Type": "application/x-www-form-urlencoded"})
        response = conn.getresponse()
        response.read()
        conn.close()
        ms = (time.perf_counter() - start) * 1000
        ratelimit = ", ".join(response.headers.get_all("RateLimit") or ["-"])  # one field or several
        return response.status, ratelimit, response.headers.get("Retry-After", "-"), ms

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


def attempts(apps: List[App], shared: bool) -> Iterator[Tuple[App, str]]:
    users = ["alice"] * 6 + ["bob"]
    if shared:  # one limit: alternate between the apps
        for i, user in enumerate(users):
            yield apps[i % len(apps)], user
    else:  # two limits: a full burst to each app
        for app in apps:
            for user in users:
                yield app, user


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--redis", metavar="URL", help="share one limit through this Redis")
    args = parser.parse_args()
    store = args.redis or "memory://"
    flask_port, express_port = free_port(), free_port()
    env = dict(os.environ, PORT=str(express_port), HOST="127.0.0.1", RATEWARDEN_STORE=store)
    apps = [
        App("Flask", [sys.executable, "examples/python/login.py", "--store", store, "--port", str(flask_port)],
            flask_port, "username", env),
        App("Express", ["node", "examples/node/login.js"], express_port, "user", env),
    ]
    try:
        where = f"one Redis ({store}): one limit for both apps" if args.redis else "each app's memory store"
        print(f"5 login attempts per username per minute, on {where}")
        row = "{:<8} {:<8} {:<6} {:<7} {:<52} {:<12} {:>6}"
        print(row.format("attempt", "app", "user", "status", "RateLimit", "Retry-After", "ms"))
        for n, (app, user) in enumerate(attempts(apps, bool(args.redis)), start=1):
            status, ratelimit, retry, ms = app.attempt(user)
            print(row.format(n, app.name, user, status, ratelimit, retry, f"{ms:.1f}"))
    finally:
        for app in apps:
            app.stop()


if __name__ == "__main__":
    main()
