"""Redis failing under load: killed (SIGKILL: connections cut, then refused) or hung (SIGSTOP: nothing answers) while
gRPC and HTTP callers keep calling. For each `on_store_error` every call answers as that setting says — `allow`: OK
with `RateLimit-Skipped`; `deny`: OVER_LIMIT; `raise`: gRPC UNAVAILABLE, HTTP 503 — and within the store's timeout;
once Redis is back on the same port, the answers are the normal ones again, without a restart of the service."""

from __future__ import annotations

import http.client
import json
import threading
import time
from typing import List, Tuple

import grpc
import pytest
from conftest import RedisServer, descriptor, drain_cleanly, rls_pb2, wait_for

OK, OVER = rls_pb2.RateLimitResponse.OK, rls_pb2.RateLimitResponse.OVER_LIMIT
TIMEOUT_S = 0.3  # the store's: ?timeout=300ms&connect_timeout=300ms
# What a busy machine may add to it: the client's and the server's scheduling, gRPC and HTTP on both sides. A call
# that waited for Redis past its timeout (a hang) takes the client's whole deadline, 10 s.
SLACK_S = 1.5
LIMIT = 1_000_000  # never reached: a normal answer is OK with the limit
GRPC_CALLERS, HTTP_CALLERS = 12, 4

CONFIG = """\
    domain: edge
    on_store_error: {setting}
    descriptors:
      - key: client
        rate_limit:
          unit: hour
          requests_per_unit: {limit}
    """

# The answer each setting gives while the store fails.
FAILED = {"allow": "skipped-ok", "deny": "skipped-over", "raise": "unavailable"}
SKIPPED = {"store-unavailable", "store-timeout"}


def classify_grpc(call) -> str:
    try:
        r = call()
    except grpc.RpcError as error:
        if error.code() == grpc.StatusCode.UNAVAILABLE and "the store failed" in error.details():
            return "unavailable"
        return f"grpc {error.code()}: {error.details()}"
    headers = {h.key: h.value for h in r.response_headers_to_add}
    (s,) = r.statuses
    if "RateLimit-Skipped" in headers:
        if headers["RateLimit-Skipped"] not in SKIPPED:
            return f"skipped {headers['RateLimit-Skipped']}"
        return {OK: "skipped-ok", OVER: "skipped-over"}.get(r.overall_code, f"skipped, code {r.overall_code}")
    if r.overall_code == OK and s.current_limit.requests_per_unit == LIMIT and headers["RateLimit-Limit"] == str(LIMIT):
        return "normal"
    return f"unexpected answer {r}"


def classify_http(connection: http.client.HTTPConnection, body: bytes) -> str:
    connection.request("POST", "/json", body=body, headers={"Content-Type": "application/json"})
    response = connection.getresponse()
    text = response.read().decode()
    if response.status == 503 and "the store failed" in text:
        return "unavailable"
    if response.status not in (200, 429):
        return f"http {response.status}: {text}"
    answer = json.loads(text)
    headers = {h["key"]: h["value"] for h in answer.get("responseHeadersToAdd", [])}
    if "RateLimit-Skipped" in headers:
        if headers["RateLimit-Skipped"] not in SKIPPED:
            return f"skipped {headers['RateLimit-Skipped']}"
        return {(200, "OK"): "skipped-ok", (429, "OVER_LIMIT"): "skipped-over"}.get(
            (response.status, answer["overallCode"]), f"skipped, http {response.status} {text}")
    if response.status == 200 and answer["statuses"][0]["currentLimit"]["requestsPerUnit"] == LIMIT:
        return "normal"
    return f"unexpected answer {response.status} {text}"


class Load:
    """Callers calling without pause until stopped; every answer kept as (sent, answered, outcome), monotonic time."""

    def __init__(self, server) -> None:
        self.server = server
        self.answers: List[Tuple[float, float, str]] = []
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.threads = [threading.Thread(target=self.grpc_caller, args=(i,)) for i in range(GRPC_CALLERS)]
        self.threads += [threading.Thread(target=self.http_caller, args=(i,)) for i in range(HTTP_CALLERS)]
        for t in self.threads:
            t.start()

    def record(self, sent: float, outcome: str) -> None:
        with self.lock:
            self.answers.append((sent, time.monotonic(), outcome))

    def grpc_caller(self, i: int) -> None:
        request = descriptor(("client", f"g{i}"))
        while not self.stopping.is_set():
            sent = time.monotonic()
            self.record(sent, classify_grpc(lambda: self.server.call("edge", request, timeout=10)))

    def http_caller(self, i: int) -> None:
        body = json.dumps({"domain": "edge", "descriptors": [{"entries": [{"key": "client", "value": f"h{i}"}]}]})
        connection = http.client.HTTPConnection("127.0.0.1", self.server.http_port, timeout=10)
        try:
            while not self.stopping.is_set():
                sent = time.monotonic()
                try:
                    outcome = classify_http(connection, body.encode())
                except (OSError, http.client.HTTPException) as error:
                    outcome = f"http connection: {error!r}"
                    connection.close()
                self.record(sent, outcome)
        finally:
            connection.close()

    def since(self, instant: float) -> List[Tuple[float, float, str]]:
        with self.lock:
            return [a for a in self.answers if a[1] >= instant]

    def count(self, outcome: str, since: float) -> int:
        return sum(1 for a in self.since(since) if a[2] == outcome)

    def last(self, n: int) -> List[str]:
        with self.lock:
            return [a[2] for a in sorted(self.answers, key=lambda a: a[1])[-n:]]

    def stop(self) -> List[Tuple[float, float, str]]:
        self.stopping.set()
        for t in self.threads:
            t.join()
        return self.answers


@pytest.mark.parametrize("fault", ["kill", "stop"])
@pytest.mark.parametrize("setting", ["allow", "deny", "raise"])
def test_redis_failing_under_load_answers_per_on_store_error_within_the_timeout_and_recovers(
        config_dir, start, setting, fault):
    failed = FAILED[setting]
    with RedisServer() as redis:
        server = start(config_dir({"edge.yaml": CONFIG.format(setting=setting, limit=LIMIT)}),
                       f"{redis.url}?timeout={int(TIMEOUT_S * 1000)}ms&connect_timeout={int(TIMEOUT_S * 1000)}ms"
                       "&circuit_backoff=200ms")
        load = Load(server)
        try:
            began = time.monotonic()
            wait_for(lambda: load.count("normal", began) >= 50, "normal answers under load")
            broke = time.monotonic()
            redis.kill() if fault == "kill" else redis.stop()
            # Answered after the fault: the failure's answer (many, fast: the circuit opens) ...
            wait_for(lambda: load.count(failed, broke) >= 100, f"{failed} answers once Redis is {fault}ed")
            # ... also a second later: through back-offs of the circuit (200 ms) and their probes, never a hang.
            wait_for(lambda: load.count(failed, broke + 1.0) >= 10, f"{failed} answers a second after the fault")
            mended = time.monotonic()
            redis.start() if fault == "kill" else redis.cont()
            # Back to normal on the same port: the last 100 answers all normal.
            wait_for(lambda: load.count("normal", mended) >= 100 and set(load.last(100)) == {"normal"},
                     "normal answers once Redis is back")
        finally:
            answers = load.stop()
        drain_cleanly(server)  # nothing left behind by the failed calls (LeakSanitizer, in the build-asan binary)
    unexpected = [a for a in answers if a[2] not in ("normal", failed)]
    assert unexpected == [], unexpected[:5]
    assert [a for a in answers if a[2] != "normal" and a[1] < broke] == [], "failures before the fault"
    slow = sorted((round(answered - sent, 3), outcome) for sent, answered, outcome in answers
                  if answered - sent > TIMEOUT_S + SLACK_S)
    assert slow == [], f"answered after the store's {TIMEOUT_S} s timeout (+{SLACK_S} s): {slow[-5:]}"
    assert sum(1 for a in answers if a[2] == failed) >= 100
