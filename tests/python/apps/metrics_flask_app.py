"""The Flask app of tests/python/test_metrics_http.py, for gunicorn --preload with metrics_gunicorn_conf.py (each
worker serves its own figures: ratewarden.prometheus.start_worker_server). RW_TEST_STORE (a shared store),
RW_TEST_PREFIX. /items/<int:n>: 10/minute for everyone (one key), so that the limit refuses exactly what exceeds it
whichever worker answers."""

import os

from flask import Flask

import ratewarden
from ratewarden.flask import RateLimiter

URL = os.environ["RW_TEST_STORE"]
PREFIX = os.environ["RW_TEST_PREFIX"]

# A call in the master before it forks (--preload): each worker opens its own connections (fork_detected).
ratewarden.Limiter("1000/minute", URL, prefix=PREFIX, name="warm-up").hit("master")

app = Flask(__name__)
limiter = RateLimiter(app, store=URL, prefix=PREFIX)


@app.get("/items/<int:n>")
@limiter.limit("10/minute", key=lambda: "everyone")
def items(n):
    return f"item {n} (pid {os.getpid()})"
