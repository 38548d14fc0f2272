#!/usr/bin/env python3
"""HTTP checks of bench/server/rounds.sh, on either server's HTTP port (both answer /healthcheck and POST /json).

    probe.py ready PORT PID              waits (10 s at most) for 200 from /healthcheck while process PID lives
    probe.py expect PORT KEY VALUE CODE  one request of domain "bench" with one descriptor (KEY, VALUE): its
                                         overallCode must be CODE (OK, OVER_LIMIT)
Exits 0 when so, else 1 with the reason on stderr. Standard library only.
"""
from __future__ import annotations

import json
import os
import sys
import time
import urllib.error
import urllib.request


def ready(port: str, pid: int) -> str:
    for _ in range(100):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthcheck", timeout=1) as answer:
                if answer.status == 200:
                    return ""
        except OSError:
            pass
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return f"process {pid} exited"
        time.sleep(0.1)
    return f"no 200 from http://127.0.0.1:{port}/healthcheck within 10 s"


def expect(port: str, key: str, value: str, code: str) -> str:
    body = json.dumps({"domain": "bench", "descriptors": [{"entries": [{"key": key, "value": value}]}]}).encode()
    request = urllib.request.Request(f"http://127.0.0.1:{port}/json", body, {"content-type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=5) as answer:
            text = answer.read()
    except urllib.error.HTTPError as e:  # 429: over the limit
        text = e.read()
    got = json.loads(text).get("overallCode")
    return "" if got == code else f"{key}={value} answered {text.decode(errors='replace')}, not {code}"


def main(argv: list) -> int:
    error = ready(argv[1], int(argv[2])) if argv[0] == "ready" else expect(*argv[1:5])
    if error:
        print(f"probe.py: {error}", file=sys.stderr)
    return 1 if error else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
