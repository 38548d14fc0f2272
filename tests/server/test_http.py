"""The HTTP listener: /json as envoyproxy/ratelimit answers it, /healthcheck, /metrics (checked by promtool), HTTP/1.1's
finer points (bare LF, Expect: 100-continue, HEAD), requests it must refuse without harm, and draining at SIGTERM."""

from __future__ import annotations

import http.client
import json
import re
import signal
import socket
import subprocess

from conftest import RedisServer, descriptor, fresh_window, rls_pb2, wait_for

EDGE = "domain: edge\ndescriptors:\n  - key: remote_address\n    rate_limit: {unit: minute, requests_per_unit: 2}\n"
REQUEST = json.dumps({"domain": "edge", "descriptors": [{"entries": [{"key": "remote_address", "value": "j"}]}]})


def test_json_answers_200_then_429_in_proto3_json(config_dir, start):
    fresh_window()
    server = start(config_dir({"edge.yaml": EDGE}))
    answers = [server.http("POST", "/json", REQUEST.encode()) for _ in range(3)]
    assert [a[0] for a in answers] == [200, 200, 429]
    assert answers[0][1] == "application/json"
    first, last = json.loads(answers[0][2]), json.loads(answers[2][2])
    assert first["overallCode"] == "OK" and last["overallCode"] == "OVER_LIMIT"
    status = first["statuses"][0]
    assert status["currentLimit"] == {"requestsPerUnit": 2, "unit": "MINUTE"}
    assert status["limitRemaining"] == 1 and status["durationUntilReset"].endswith("s")
    assert "limitRemaining" not in last["statuses"][0]  # 0: left out, as proto3 JSON does
    # The same counter over gRPC.
    assert server.call("edge", descriptor(("remote_address", "j"))).overall_code == 2
    # Field names in either form; bad JSON and unknown fields: 400.
    snake = '{"domain": "edge", "descriptors": [{"entries": [{"key": "remote_address", "value": "k"}]}], "hits_addend": 1}'
    assert server.http("POST", "/json", snake.encode())[0] == 200
    assert server.http("POST", "/json", b"{not json")[0] == 400
    assert server.http("POST", "/json", b'{"domain": "edge", "colour": 1}')[0] == 400
    status, _, body = server.http("POST", "/json", b'{"domain": "edge"}')
    assert status == 400 and "descriptor list must not be empty" in body


def test_healthcheck_and_metrics(config_dir, start):
    fresh_window()
    server = start(config_dir({"edge.yaml": EDGE}))
    assert server.http("GET", "/healthcheck")[:3:2] == (200, "OK")
    for _ in range(3):
        server.call("edge", descriptor(("remote_address", "m")))
    status, content_type, text = server.http("GET", "/metrics")
    assert status == 200 and content_type.startswith("text/plain; version=0.0.4")
    assert 'ratewarden_decisions_total{limiter="edge.remote_address",outcome="allowed"} 2\n' in text
    assert 'ratewarden_decisions_total{limiter="edge.remote_address",outcome="denied"} 1\n' in text
    assert 'ratewarden_server_request_duration_seconds_count{outcome="over_limit"} 1\n' in text
    assert 'ratewarden_server_config_loads_total{result="success"} 1\n' in text
    check = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True, timeout=30)
    assert check.returncode == 0 and check.stdout + check.stderr == "", check.stdout + check.stderr
    assert server.http("GET", "/nothing")[0] == 404
    assert server.http("DELETE", "/metrics")[0] == 405


def test_healthcheck_fails_while_the_stores_circuit_is_open(config_dir, start):
    server = start(config_dir({"edge.yaml": EDGE}),
                   "redis://127.0.0.1:1?timeout=100ms&connect_timeout=100ms&circuit_failures=1&circuit_backoff=60s")
    assert server.http("GET", "/healthcheck")[0] == 200
    status, _, body = server.http("POST", "/json", REQUEST.encode())
    assert status == 503 and "store" in body
    assert server.http("GET", "/healthcheck")[0] == 500


def raw(port: int, data: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)
        out = b""
        while chunk := s.recv(65536):
            out += chunk
        return out


def test_bad_http_is_refused_and_the_server_stays(config_dir, start):
    server = start(config_dir({"edge.yaml": EDGE}), "memory://", "--max-message-bytes", "4096")
    assert raw(server.http_port, b"GET /healthcheck HTTP/1.1\r\nX: " + b"a" * 20000 + b"\r\n\r\n").startswith(
        b"HTTP/1.1 431")
    assert raw(server.http_port, b"POST /json HTTP/1.1\r\nContent-Length: 5000\r\n\r\n").startswith(b"HTTP/1.1 413")
    assert raw(server.http_port, b"POST /json HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n").startswith(
        b"HTTP/1.1 411")
    assert raw(server.http_port, b"hello\r\n\r\n").startswith(b"HTTP/1.1 400")
    # Two requests pipelined on one connection: two answers, in order.
    two = raw(server.http_port, b"GET /healthcheck HTTP/1.1\r\n\r\nGET /nothing HTTP/1.1\r\nConnection: close\r\n\r\n")
    assert two.startswith(b"HTTP/1.1 200") and b"HTTP/1.1 404" in two
    assert server.http("GET", "/healthcheck")[0] == 200
    # A length that is not a number, or two that differ: 400 (RFC 9112 §6.3), as is every such message's end.
    assert raw(server.http_port, b"POST /json HTTP/1.1\r\nContent-Length: 3x\r\n\r\n" + REQUEST.encode()).startswith(
        b"HTTP/1.1 400")
    assert raw(server.http_port, b"POST /json HTTP/1.1\r\nContent-Length: -1\r\n\r\n").startswith(b"HTTP/1.1 400")
    both = b"POST /json HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: %d\r\n\r\n" % len(REQUEST) + REQUEST.encode()
    assert raw(server.http_port, both).startswith(b"HTTP/1.1 400")
    same = b"POST /json HTTP/1.1\r\nContent-Length: %d\r\nContent-Length: %d\r\n\r\n" % (len(REQUEST), len(REQUEST))
    assert raw(server.http_port, same + REQUEST.encode()).startswith(b"HTTP/1.1 200")
    assert server.http("GET", "/healthcheck")[0] == 200


def test_lines_ending_in_a_bare_lf_are_read(config_dir, start):
    server = start(config_dir({"edge.yaml": EDGE}))
    assert raw(server.http_port, b"GET /healthcheck HTTP/1.1\nConnection: close\n\n").startswith(b"HTTP/1.1 200")
    answer = raw(server.http_port, b"POST /json HTTP/1.1\nContent-Length: %d\n\n" % len(REQUEST) + REQUEST.encode())
    assert answer.startswith(b"HTTP/1.1 200") and b'"overallCode":"OK"' in answer
    mixed = raw(server.http_port, b"GET /healthcheck HTTP/1.1\r\nX: y\n\r\nGET /nothing HTTP/1.1\n\n")
    assert mixed.startswith(b"HTTP/1.1 200") and b"HTTP/1.1 404" in mixed


def test_expect_100_continue_is_answered_before_the_body(config_dir, start):
    server = start(config_dir({"edge.yaml": EDGE}), "memory://", "--max-message-bytes", "4096")
    with socket.create_connection(("127.0.0.1", server.http_port), timeout=10) as s:
        s.sendall(b"POST /json HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: %d\r\n\r\n" % len(REQUEST))
        interim = b""
        while not interim.endswith(b"\r\n\r\n"):  # the client's timeout bounds it
            interim += s.recv(1)
        assert interim == b"HTTP/1.1 100 Continue\r\n\r\n"
        s.sendall(REQUEST.encode())
        s.shutdown(socket.SHUT_WR)
        answer = b""
        while chunk := s.recv(65536):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 200") and b'"overallCode":"OK"' in answer and b"100 Continue" not in answer
    # A body refused for its length is refused at once, without a 100 Continue.
    refused = raw(server.http_port, b"POST /json HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 5000\r\n\r\n")
    assert refused.startswith(b"HTTP/1.1 413")


def test_head_answers_as_get_without_the_body(config_dir, start):
    server = start(config_dir({"edge.yaml": EDGE}))
    for path in (b"/healthcheck", b"/metrics"):
        get = raw(server.http_port, b"GET %s HTTP/1.1\r\nConnection: close\r\n\r\n" % path)
        head = raw(server.http_port, b"HEAD %s HTTP/1.1\r\nConnection: close\r\n\r\n" % path)
        header, body = get.split(b"\r\n\r\n", 1)
        assert head.startswith(b"HTTP/1.1 200") and head.endswith(b"\r\n\r\n"), head
        length = int(re.search(rb"Content-Length: (\d+)", head).group(1))
        assert length > 0 and head.count(b"\r\n\r\n") == 1
        if path == b"/healthcheck":
            assert (head, length) == (header + b"\r\n\r\n", len(body))
    # Pipelined after a HEAD: the next answer has its body.
    two = raw(server.http_port,
              b"HEAD /healthcheck HTTP/1.1\r\n\r\nGET /healthcheck HTTP/1.1\r\nConnection: close\r\n\r\n")
    assert two.endswith(b"\r\n\r\nOK") and two.count(b"HTTP/1.1 200") == 2


def test_sigterm_answers_the_json_calls_in_flight_before_closing(config_dir, start):
    with RedisServer() as redis:
        server = start(config_dir({"edge.yaml": EDGE}), f"{redis.url}?timeout=60s", "--drain-timeout-ms", "60000")
        assert server.call("edge", descriptor(("remote_address", "warm"))).overall_code == rls_pb2.RateLimitResponse.OK
        connection = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=60)
        redis.stop()  # SIGSTOP: the next call waits for it
        try:
            connection.request("POST", "/json", body=REQUEST.encode(), headers={"Content-Type": "application/json"})
            wait_for(lambda: in_flight(server) == 1, "the /json call waiting for the store")
            server.process.send_signal(signal.SIGTERM)
            wait_for(lambda: refused(server.http_port), "the HTTP listener refusing new connections")
            assert server.process.poll() is None  # still waiting for the call in flight
        finally:
            redis.cont()
        response = connection.getresponse()
        assert response.status == 200 and json.loads(response.read())["overallCode"] == "OK"
        assert response.getheader("Connection") == "close"
        connection.close()
        assert server.process.wait(timeout=60) == 0


def in_flight(server) -> int:
    text = server.http("GET", "/metrics")[2]
    return int(re.search(r"^ratewarden_server_requests_in_flight (\d+)$", text, re.M).group(1))


def refused(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=10).close()
        return False
    except ConnectionRefusedError:
        return True
