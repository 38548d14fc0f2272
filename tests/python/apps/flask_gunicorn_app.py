"""The Flask app of tests/python/test_adapters.py, served by gunicorn. RW_TEST_STORE, RW_TEST_PREFIX,
RW_TEST_OPTIONS (JSON: more options). The routes are asgi_app.py's."""

import json
import os
import time

from flask import Flask, g, request

from ratewarden import KeyList, keys
from ratewarden.flask import RateLimiter

app = Flask(__name__)


@app.before_request  # registered before the limiter's, so that it runs first
def header_user():  # authentication as a test needs it: X-User names the user (flask.g.user)
    g.user = request.headers.get("X-User")


options = json.loads(os.environ.get("RW_TEST_OPTIONS", "{}"))
if os.environ.get("RW_CUSTOM_REFUSAL"):  # the refusal option as a function
    options["refusal"] = lambda req, refusal: ({"policy": refusal.name, "wait": refusal.retry_after}, 429)
for _list in ("allow_list", "deny_list"):  # given by name: the KeyList of that name on the store
    if _list in options:
        options[_list] = KeyList(options[_list], os.environ["RW_TEST_STORE"])
limiter = RateLimiter(app, store=os.environ["RW_TEST_STORE"], prefix=os.environ["RW_TEST_PREFIX"], **options)


@app.post("/login")
@limiter.limit("5/minute", key=keys.form("username"))
def login():
    return "welcome"


@app.get("/items")
@limiter.limit("3/minute")
def items():
    return "items"


@app.get("/user/<int:n>")
@limiter.limit("2/minute", key=lambda: request.view_args["n"])
def user(n):
    return f"user {n}"


@app.get("/twice")
@limiter.limit("2/minute")
@limiter.limit("2/minute")
def twice():
    return "twice"


@app.get("/s1")
@limiter.shared_limit("3/minute", "search")
def s1():
    return "s1"


@app.get("/s2")
@limiter.shared_limit("3/minute", "search")
def s2():
    return "s2"


@app.get("/api")
@limiter.limit("100000/minute", key=keys.header("X-API-Key"))
def api():
    return "api"


@app.get("/free")
def free():
    return "free"


@app.get("/health")
@limiter.exempt
def health():
    return "ok"


@app.get("/me")
@limiter.limit("2/minute", key=keys.first(keys.user(), keys.address()))
def me():
    return "me"


@app.get("/pair")
@limiter.limit("1/minute", key=keys.combine(keys.header("X-A"), keys.address()))
def pair():
    return "pair"


@app.post("/signin")
@limiter.limit("3/minute", key=keys.form("username"), count_when="failure")  # = lambda status: status >= 400
def signin():
    if request.headers.get("X-Slow"):  # the answer takes 0.6 s (a test stops the store meanwhile)
        time.sleep(0.6)
    return "welcome", 200 if request.form.get("password") == "right" else 401
