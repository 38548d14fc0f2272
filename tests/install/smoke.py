"""Run by check_install.py with the interpreter of a fresh venv where pip installed `ratewarden[flask]` from the
local index (a binary wheel), from a folder outside the source tree: the package loads and decides on memory, on
Redis, on Redis over TLS (OpenSSL is inside the wheel) and on PostgreSQL (the system's libpq.so.5, loaded at run
time), and the Flask extension, served over real HTTP by Werkzeug, answers 429 at its limit.

    python smoke.py REDIS_URL REDISS_URL POSTGRES_URL
"""
import logging
import os
import sys
import threading
import urllib.error
import urllib.request

import ratewarden
from flask import Flask
from ratewarden.flask import RateLimiter
from werkzeug.serving import make_server

redis_url, rediss_url, postgres_url = sys.argv[1:4]
assert "site-packages" in ratewarden.__file__, ratewarden.__file__

for url in ("memory://", redis_url, rediss_url, postgres_url):  # the two Redis URLs are one server: a key each
    limiter = ratewarden.Limiter("2/minute", url, prefix=f"smoke-{os.getpid()}")
    allowed = [limiter.hit(url).allowed for _ in range(3)]
    assert allowed == [True, True, False], (url, allowed)

app = Flask(__name__)
limiter = RateLimiter(app, store=redis_url, prefix=f"smoke-flask-{os.getpid()}")


@app.get("/")
@limiter.limit("1/minute", key=lambda: "smoke-client")
def index():
    return "ok"


def status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as refused:
        return refused.code


logging.getLogger("werkzeug").setLevel(logging.WARNING)  # no line per request
server = make_server("127.0.0.1", 0, app, threaded=True)  # bound and listening on return
thread = threading.Thread(target=server.serve_forever)
thread.start()
try:
    statuses = [status(f"http://127.0.0.1:{server.server_port}/") for _ in range(2)]
finally:
    server.shutdown()
    thread.join()
assert statuses == [200, 429], statuses
print(f"ratewarden {ratewarden.__version__} on Python {sys.version.split()[0]}: memory, redis, rediss, postgres; "
      f"Flask over HTTP {statuses[0]}, {statuses[1]}")
