"""Bad input, over gRPC and HTTP /json: too many descriptors, a descriptor of 10,000 entries, values too long for a
key, invalid UTF-8 (hand-encoded: protobuf's Python refuses to build it), bytes that are no protobuf, a 1 MB message
and one over the server's maximum, malformed JSON and JSON of the wrong types. Each is answered with a status that
says what was wrong — gRPC INVALID_ARGUMENT (RESOURCE_EXHAUSTED over the maximum size), HTTP 400 (413 over it) —
and the server answers a good call after each. Nothing leaks: after thousands of bad calls its open files come back
to their level, its memory stays within a bound, its log does not grow with them, and SIGTERM drains it to exit 0
with no sanitizer report (LeakSanitizer included, when RATEWARDEN_SERVER is the build-asan binary)."""

from __future__ import annotations

import json
import os
import socket
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable, Optional, Tuple

import grpc
from conftest import drain_cleanly, field, fields, varint, wait_for

MAX = 1 << 20  # --max-message-bytes' default: the largest request, in bytes
CONFIG = "domain: edge\ndescriptors:\n  - key: k\n    rate_limit: {unit: hour, requests_per_unit: 1000000}\n"
INVALID, EXHAUSTED = grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.RESOURCE_EXHAUSTED
METHOD = "/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit"


# RateLimitRequest{domain=1, descriptors=2 [RateLimitDescriptor{entries=1 [Entry{key=1, value=2}], limit=2}]}.
def request(*descriptors: bytes, domain: bytes = b"edge") -> bytes:
    return field(1, domain) + b"".join(field(2, d) for d in descriptors)


def desc(*entries: Tuple[bytes, bytes]) -> bytes:
    return b"".join(field(1, field(1, k) + field(2, v)) for k, v in entries)


def padded(message: bytes, size: int) -> bytes:
    """`message` and an unknown field (number 1000, kept and ignored) of padding: `size` bytes in all."""
    tag = varint(1000 << 3 | 2)
    n = size - len(message) - len(tag) - len(varint(size))
    n += len(varint(size)) - len(varint(n))  # the length's own length, for the length it ends up with
    out = message + tag + varint(n) + b"p" * n
    assert len(out) == size
    return out


GOOD = request(desc((b"k", b"good")))
# (what, the request's bytes, the status, words of its details)
GRPC_CASES = [
    ("65 descriptors", request(*[desc((b"k", b"v"))] * 65), INVALID, "too many descriptors: 65, at most 64"),
    ("10,000 descriptors", request(*[desc((b"k", b"v"))] * 10_000), INVALID, "too many descriptors: 10000"),
    ("a descriptor of 10,000 entries", request(desc(*[(b"k", b"v")] * 10_000)), INVALID,
     "too many entries in a descriptor: 10000, at most 32"),
    ("a value too long for a key", request(desc((b"k", b"v" * 5000))), INVALID, "too long"),
    ("a 1 MB message, a 1 MB value", request(desc((b"k", b"v" * 1_000_000))), INVALID, "too long"),
    ("invalid UTF-8 in a key", request(desc((b"\xff\xfe", b"v"))), INVALID, "invalid UTF-8"),
    ("invalid UTF-8 in a value", request(desc((b"k", b"caf\xc3"))), INVALID, "invalid UTF-8"),
    ("invalid UTF-8 in the domain", request(desc((b"k", b"v")), domain=b"\xc3\x28"), INVALID, "invalid UTF-8"),
    ("bytes that are no protobuf", b"\xff" * 64, INVALID, "not a RateLimitRequest"),
    ("a truncated message", GOOD[:-3], INVALID, "not a RateLimitRequest"),
    ("100,000 nested groups", b"\x0b" * 100_000, INVALID, "not a RateLimitRequest"),
    ("an override without a unit", request(desc((b"k", b"v")) + field(2, varint(1 << 3) + varint(5))), INVALID,
     "needs a unit"),
    ("a message one byte over the maximum", padded(GOOD, MAX + 1), EXHAUSTED, ""),
    ("a 2 MB message", padded(GOOD, 2 * MAX), EXHAUSTED, ""),
]


def json_request(*descriptors: object, **more: object) -> bytes:
    return json.dumps({"domain": "edge", "descriptors": list(descriptors), **more}).encode()


def entries(*pairs: Tuple[str, str]) -> dict:
    return {"entries": [{"key": k, "value": v} for k, v in pairs]}


GOOD_JSON = json_request(entries(("k", "good")))
# (what, the body, the HTTP status, words of the body)
HTTP_CASES = [
    ("malformed JSON", b"{not json", 400, "Bad Request"),
    ("truncated JSON", GOOD_JSON[:-5], 400, "Bad Request"),
    ("an empty body", b"", 400, "Bad Request"),
    ("a list, not an object", b"[]", 400, "Root element must be a message"),
    ("null", b"null", 400, "Root element must be a message"),
    ("a number for the domain", b'{"domain": 5, "descriptors": []}', 400, "domain"),
    ("a string for the descriptors", b'{"domain": "edge", "descriptors": "x"}', 400, "descriptors"),
    ("a number for a value", b'{"domain": "edge", "descriptors": [{"entries": [{"key": "k", "value": 7}]}]}', 400,
     "value"),
    ("a negative hits_addend", json_request(entries(("k", "v")), hitsAddend=-1), 400, "hits_addend"),
    ("a string for hits_addend", json_request(entries(("k", "v")), hitsAddend="many"), 400, "hits_addend"),
    ("an unknown field", json_request(entries(("k", "v")), colour="red"), 400, "colour"),
    ("invalid UTF-8 in a value", b'{"domain": "edge", "descriptors": [{"entries": [{"key": "k", "value": "caf\xc3"}]}]}',
     400, "UTF-8"),
    ("a lone surrogate escaped", b'{"domain": "edge", "descriptors": [{"entries": [{"key": "k", "value": "\\ud800"}]}]}',
     400, "surrogate"),
    ("50,000 nested objects", b'{"domain": "edge", "descriptors": [{"entries": [{"key": "k", "value": ' +
     b'{"a": ' * 50_000 + b"1" + b"}" * 50_000 + b"}]}]}", 400, "too deep"),
    # (protobuf's parser reads nested lists in a list of messages as nothing: no descriptors)
    ("50,000 nested lists", b'{"domain": "edge", "descriptors": ' + b"[" * 50_000 + b"]" * 50_000 + b"}", 400, ""),
    ("65 descriptors", json_request(*[entries(("k", "v"))] * 65), 400, "too many descriptors: 65, at most 64"),
    ("a descriptor of 10,000 entries", json_request(entries(*[("k", "v")] * 10_000)), 400,
     "too many entries in a descriptor: 10000, at most 32"),
    ("a value too long for a key", json_request(entries(("k", "v" * 5000))), 400, "too long"),
    ("a body one byte over the maximum", GOOD_JSON + b" " * (MAX + 1 - len(GOOD_JSON)), 413, "over 1048576 bytes"),
    ("a 2 MB body", GOOD_JSON + b" " * (2 * MAX - len(GOOD_JSON)), 413, "over 1048576 bytes"),
]


def post(port: int, body: bytes) -> Tuple[int, bytes]:
    """POST /json on a fresh connection, the whole body sent whatever the server answers first: (status, body)."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(b"POST /json HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nConnection: close\r\n"
                  b"Content-Length: %d\r\n\r\n" % len(body) + body)
        s.shutdown(socket.SHUT_WR)
        answer = b""
        while chunk := s.recv(65536):
            answer += chunk
    head, _, text = answer.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), text


def grpc_status(call: Callable, body: bytes) -> Tuple[grpc.StatusCode, str, Optional[list]]:
    try:
        return grpc.StatusCode.OK, "", fields(call(body, timeout=30))
    except grpc.RpcError as error:
        return error.code(), error.details() or "", None


def check_good(server, call: Callable) -> None:
    code, details, answer = grpc_status(call, GOOD)
    assert code == grpc.StatusCode.OK, details
    assert dict((n, v) for n, v in answer if n == 1)[1] == 1  # overall_code OK
    status, text = post(server.http_port, GOOD_JSON)
    assert status == 200 and json.loads(text)["overallCode"] == "OK"


def open_files(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def sanitized(pid: int) -> bool:
    """An AddressSanitizer build (its runtime is mapped): its memory is not a measure of leaks (freed memory sits in
    its quarantine); LeakSanitizer reports them at exit instead."""
    return "libasan" in Path(f"/proc/{pid}/maps").read_text()


def test_each_bad_request_is_answered_with_a_status_and_the_server_stays(config_dir, start):
    server = start(config_dir({"edge.yaml": CONFIG}))
    call = server.channel.unary_unary(METHOD)
    wrong = []
    for what, body, code, words in GRPC_CASES:
        got, details, _ = grpc_status(call, body)
        if got != code or words not in details:
            wrong.append(f"gRPC, {what}: {got} {details!r}, not {code} with {words!r}")
        check_good(server, call)
    for what, body, status, words in HTTP_CASES:
        got, text = post(server.http_port, body)
        if got != status or words.encode() not in text:
            wrong.append(f"HTTP, {what}: {got} {text[:300]!r}, not {status} with {words!r}")
        check_good(server, call)
    assert wrong == [], "\n".join(wrong)
    # The largest request there may be: answered, and counted (a good call's content, padded with an unknown field).
    code, details, answer = grpc_status(call, padded(GOOD, MAX))
    assert code == grpc.StatusCode.OK, details
    status, text = post(server.http_port, GOOD_JSON + b" " * (MAX - len(GOOD_JSON)))
    assert status == 200 and json.loads(text)["overallCode"] == "OK"
    assert server.process.poll() is None


def flood(server, rounds: int) -> None:
    """Every bad request `rounds` times, from 4 threads: gRPC on the server's channel and, one call a round each, on
    a fresh channel closed after it; HTTP on a fresh connection each."""
    def one_round(i: int) -> None:
        call = server.channel.unary_unary(METHOD)
        for what, body, code, _ in GRPC_CASES:
            assert grpc_status(call, body)[0] == code, what
        with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
            assert grpc_status(channel.unary_unary(METHOD), GRPC_CASES[i % len(GRPC_CASES)][1])[0] != grpc.StatusCode.OK
        for what, body, status, _ in HTTP_CASES:
            assert post(server.http_port, body)[0] == status, what
    with ThreadPoolExecutor(4) as pool:
        for done in pool.map(one_round, range(rounds)):
            assert done is None


def test_thousands_of_bad_requests_leak_nothing(config_dir, start):
    server = start(config_dir({"edge.yaml": CONFIG}))
    pid = server.process.pid
    call = server.channel.unary_unary(METHOD)
    check_good(server, call)
    files = open_files(pid)  # (give or take the good call's HTTP connection, closing)
    # Warm up: gRPC's and the allocator's pools, the HTTP listener's buffers grow to what this traffic takes.
    flood(server, 8)
    check_good(server, call)
    files = min(files, open_files(pid))
    memory = rss_bytes(pid)
    rounds = 100
    flood(server, rounds)
    check_good(server, call)
    calls = rounds * (len(GRPC_CASES) + 1 + len(HTTP_CASES))
    # Every connection the flood opened was closed by its client: the server closes its end.
    wait_for(lambda: open_files(pid) <= files, f"open files back to {files} (now {open_files(pid)})")
    if not sanitized(pid):
        # A leak of what went through would be hundreds of MB; the allocator's arenas keep some of it, not most.
        through = rounds * (sum(len(c[1]) for c in GRPC_CASES) + sum(len(c[1]) for c in HTTP_CASES))
        grown = rss_bytes(pid) - memory
        assert grown < 64 << 20, f"RSS grew {grown >> 20} MB over {calls} bad calls of {through >> 20} MB"
    log = server.log.read_text()
    assert len(log.splitlines()) < 5, f"the log grows with bad requests:\n{log[-2000:]}"
    drain_cleanly(server)
