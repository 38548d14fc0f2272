"""Run by check_install.py with the interpreter of a fresh venv where pip installed `ratewarden[fastapi]` and
uvicorn from the local index: a FastAPI app limited by ratewarden.asgi on a real Redis, served by uvicorn over real
HTTP, answers 200 then 429.

    python smoke_asgi.py REDIS_URL
"""
import os
import sys
import threading
import time
import urllib.error
import urllib.request

import ratewarden
import uvicorn
from fastapi import FastAPI
from ratewarden.asgi import RateLimiter

app = FastAPI()
limiter = RateLimiter(app, store=sys.argv[1], prefix=f"smoke-asgi-{os.getpid()}")


@app.get("/")
@limiter.limit("1/minute", key=lambda request: "smoke-client")
async def index() -> dict:
    return {"ok": True}


def status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as refused:
        return refused.code


server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
thread = threading.Thread(target=server.run)
thread.start()
deadline = time.monotonic() + 30
while not server.started and thread.is_alive() and time.monotonic() < deadline:  # uvicorn has no started event
    time.sleep(0.01)
try:
    assert server.started, "uvicorn did not start"
    port = server.servers[0].sockets[0].getsockname()[1]
    statuses = [status(f"http://127.0.0.1:{port}/") for _ in range(2)]
finally:
    server.should_exit = True
    thread.join()
assert statuses == [200, 429], statuses
print(f"ratewarden {ratewarden.__version__} on Python {sys.version.split()[0]}: FastAPI under uvicorn "
      f"{uvicorn.__version__} over HTTP {statuses[0]}, {statuses[1]}")
