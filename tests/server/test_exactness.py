"""One limit, exactly, across server processes: two ratewarden-server processes on one store (one Redis, then the
3-master cluster), 50 callers at once on a descriptor limited to 100 per minute: each epoch minute admits exactly
min(100, the calls counted in it) — never one more, never one less — whichever server is asked."""

from __future__ import annotations

import threading
import time
from collections import Counter
from typing import List, Tuple

import pytest
from conftest import descriptor, rls_pb2

OK, OVER = rls_pb2.RateLimitResponse.OK, rls_pb2.RateLimitResponse.OVER_LIMIT
CALLERS, CALLS_EACH, LIMIT, WINDOW_S = 50, 5, 100, 60

API = f"""\
    domain: api
    descriptors:
      - key: client
        rate_limit:
          unit: minute
          requests_per_unit: {LIMIT}
    """


def window_end(sent: float, answered: float, until_reset_s: int) -> int:
    """The end of the epoch window a call was counted in. The server read its clock (whole seconds) between `sent`
    and `answered`, and says how long that window still had: its end is the one multiple of the window in
    [floor(sent) + reset, floor(answered) + reset] (one, while a call takes less than a window)."""
    first, last = int(sent) + until_reset_s, int(answered) + until_reset_s
    ends = [t for t in range(first, last + 1) if t % WINDOW_S == 0]
    assert len(ends) == 1, (sent, answered, until_reset_s)
    return ends[0]


@pytest.fixture(params=["redis", "cluster"])
def store_url(request) -> str:
    return request.getfixturevalue(request.param).url


def test_two_servers_admit_exactly_100_per_window_to_50_concurrent_callers(config_dir, start, store_url):
    config = config_dir({"api.yaml": API})
    servers = [start(config, store_url), start(config, store_url)]
    client = f"c{time.time_ns()}"  # a fresh counter: the store is the session's
    answers: List[Tuple[int, int]] = []  # (window end, code)
    errors: List[BaseException] = []
    lock = threading.Lock()
    together = threading.Barrier(CALLERS)

    def caller(i: int) -> None:
        server = servers[i % 2]
        try:
            together.wait(timeout=60)
            for _ in range(CALLS_EACH):
                sent = time.time()
                r = server.call("api", descriptor(("client", client)))
                answered = time.time()
                (s,) = r.statuses
                assert s.code == r.overall_code and s.current_limit.requests_per_unit == LIMIT
                with lock:
                    answers.append((window_end(sent, answered, s.duration_until_reset.seconds), s.code))
        except BaseException as error:  # noqa: BLE001 - reported below
            with lock:
                errors.append(error)

    threads = [threading.Thread(target=caller, args=(i,)) for i in range(CALLERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(answers) == CALLERS * CALLS_EACH
    per_window = {}
    for end, code in answers:
        per_window.setdefault(end, Counter())[code] += 1
    for end, codes in per_window.items():
        assert set(codes) <= {OK, OVER}
        calls = codes[OK] + codes[OVER]
        assert codes[OK] == min(LIMIT, calls), f"window ending {end}: {codes[OK]} admitted of {calls} calls"
    # 250 calls in at most two windows (a window's end crossed mid-test): at least one was over the limit.
    assert any(codes[OVER] > 0 for codes in per_window.values())
