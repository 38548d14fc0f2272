"""The seed scenario: a Flask login route limited to 5 attempts per username per minute.

    python examples/python/login.py                          # serves on 127.0.0.1:5000, memory store
    python examples/python/login.py --store redis://127.0.0.1:6379   # one limit for every process on that Redis
    python examples/python/login.py --demo                   # serves on a free port, sends 7 attempts, prints them
"""

from __future__ import annotations

import argparse
import http.client
import logging
import threading
from urllib.parse import urlencode

from flask import Flask, request
from werkzeug.serving import make_server

from ratewarden.flask import RateLimiter

def create_app(store: str = "memory://") -> Flask:
    app = Flask(__name__)
    app.config["RATEWARDEN_STORE"] = store
    limiter = RateLimiter(app)  # the key defaults to the client address; this route keys by username

    @app.post("/login")
    @limiter.limit("5/minute", key=lambda: request.form["username"])
    def login() -> str:
        return "checked\n"  # a real app would check the password here

    return app


def demo(app: Flask) -> None:
    """Serves the app on a free loopback port and prints 7 login attempts with their rate-limit headers."""
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # the table replaces the access log
    server = make_server("127.0.0.1", 0, app, threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    row = "{:<8} {:<6} {:<7} {:<20} {}"
    print(row.format("attempt", "user", "status", "RateLimit", "Retry-After"))
    policy = ""
    for n, user in enumerate(["alice"] * 6 + ["bob"], start=1):
        conn = http.client.HTTPConnection("127.0.0.1", server.server_port, timeout=5)
        conn.request("POST", "/login", urlencode({"username": user, "password": "guess"}),
                     {"Content-Type": "application/x-www-form-urlencoded"})
        response = conn.getresponse()
        response.read()
        conn.close()
        policy = response.headers.get("RateLimit-Policy", "")
        print(row.format(n, user, response.status, response.headers.get("RateLimit", "-"),
                         response.headers.get("Retry-After", "-")))
    print(f"RateLimit-Policy: {policy}")
    server.shutdown()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", default="memory://", help="store URL (default: memory://)")
    parser.add_argument("--port", type=int, default=5000)
    parser.add_argument("--demo", action="store_true", help="send 7 attempts and print them, then exit")
    args = parser.parse_args()
    if args.demo:
        demo(create_app(args.store))
    else:
        create_app(args.store).run("127.0.0.1", args.port, threaded=True)
