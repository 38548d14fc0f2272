"""Figures and events (docs/python.md, "Metrics and events"): a limiter's decisions and a store's calls as counted by
the core, on the memory store and on a real redis-server that dies and comes back; the events on the ``ratewarden``
logger and to ``on_event`` callbacks, in a forked child too, and at interpreter exit; ``ratewarden.prometheus`` with a
real prometheus_client registry, its output parsed and checked by promtool; the HTTP adapters' limiter names."""

from __future__ import annotations

import itertools
import json
import logging
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Optional

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

import ratewarden
import ratewarden.prometheus
from redis_server import PostgresServer, RedisServer

CONFORMANCE = Path(__file__).resolve().parents[1] / "conformance"
_names = itertools.count()


def unique(what: str) -> str:
    """A limiter name of the test's own: names count for the whole process."""
    return f"{what}-{os.getpid()}-{next(_names)}"


def process_stats(name: str) -> ratewarden.LimiterStats:
    return next(s for s in ratewarden.limiter_stats() if s.name == name)


class Seen:
    """The events a callback got; waits for one without sleeping a fixed time."""

    def __init__(self) -> None:
        self.events: List[ratewarden.Event] = []
        self.threads: List[str] = []
        self._cv = threading.Condition()

    def __call__(self, event: ratewarden.Event) -> None:
        with self._cv:
            self.events.append(event)
            self.threads.append(threading.current_thread().name)
            self._cv.notify_all()

    def wait_for(self, kind: str, store: Optional[str] = None, timeout: float = 20) -> ratewarden.Event:
        def match() -> Optional[ratewarden.Event]:
            return next((e for e in self.events if e.kind == kind and (store is None or e.store == store)), None)

        with self._cv:
            self._cv.wait_for(lambda: match() is not None, timeout)
            found = match()
        assert found is not None, f"no {kind} event for {store} in {self.events}"
        return found


@pytest.fixture
def seen() -> Iterator[Seen]:
    s = Seen()
    stop = ratewarden.on_event(s)
    yield s
    stop()


# --- figures ----------------------------------------------------------------------------------------------------


def test_limiter_stats_on_the_memory_store() -> None:
    name = unique("login")
    limiter = ratewarden.Limiter("3/minute", name=name)
    assert limiter.name == name
    for _ in range(5):
        limiter.hit("alice")
    limiter.hit("bob", 2)
    limiter.peek("carol")  # a peek is not a decision
    limiter.hit_many(["carol", "dave"])
    assert limiter.stats() == process_stats(name)
    s = limiter.stats()
    assert (s.name, s.allowed, s.denied, s.cost, s.fallbacks) == (name, 3 + 1 + 2, 2, 3 + 2 + 2, 0)
    assert repr(s) == f"LimiterStats(name='{name}', allowed=6, denied=2, cost=7, fallbacks=0)"
    # Limiters of one name count together, and a limiter gone keeps counting in its name's figures.
    other = ratewarden.Limiter("1/minute", ratewarden.Store("memory://"), name=name)
    other.hit("x")
    other.hit("x")
    del other
    assert (process_stats(name).allowed, process_stats(name).denied) == (7, 3)
    assert limiter.stats().allowed == 6  # the limiter's own
    # Reservations are decisions too.
    paced = ratewarden.Limiter("1/second", name=unique("paced"), algorithm="gcra")
    assert paced.reserve("k", max_wait=5).allowed and paced.reserve("k", max_wait=5).allowed
    assert not paced.reserve("k", max_wait=0).allowed
    assert (paced.stats().allowed, paced.stats().denied) == (2, 1)


def test_limiter_names() -> None:
    assert ratewarden.Limiter("  10/minute; 100/hour ").name == "10/minute; 100/hour"  # the policy string
    with pytest.raises(ratewarden.InvalidArgumentError, match="1 to 200 bytes"):
        ratewarden.Limiter("1/second", name="")
    with pytest.raises(ratewarden.InvalidArgumentError, match="1 to 200 bytes"):
        ratewarden.Limiter("1/second", name="x" * 201)
    with pytest.raises(TypeError, match="name must be a str"):
        ratewarden.Limiter("1/second", name=b"bytes")  # type: ignore[arg-type]
    assert "name='n'" in repr(ratewarden.Limiter("1/second", name="n"))


def test_memory_store_stats() -> None:
    clock = ratewarden.TestClock(1_000_000)
    store = ratewarden.Store("memory://?max_keys=10", test_clock=clock)
    limiter = ratewarden.Limiter("1/second", store)
    for i in range(10):
        limiter.hit(f"a{i}")
    clock.now_us += 2_000_000  # every one expired
    for i in range(10):
        limiter.hit(f"b{i}")
    for i in range(25):
        limiter.hit(f"c{i}")  # live ones must go
    s = store.stats()
    assert (s.name, s.network, s.hybrid) == ("memory://?max_keys=10&shards=1", False, False)
    assert (s.keys, s.max_keys, s.expired_drops, s.evictions) == (10, 10, 10, 25)
    assert s.calls == {"ok": 0, "timeout": 0, "unavailable": 0, "error": 0}  # memory calls are not timed
    assert (s.circuits_open, s.circuit_openings, s.connections_open, s.pool_size, s.sweeps) == (0, 0, 0, 0, 0)
    assert s == store.stats() and s != ratewarden.Store("memory://?max_keys=10").stats()
    assert any(t.name == s.name for t in ratewarden.store_stats())


def test_limiter_and_store_stats_on_redis(redis: RedisServer) -> None:
    store = ratewarden.Store(redis.url + "?pool=2")  # a store of its own: its figures count from here
    name = unique("redis-login")
    limiter = ratewarden.Limiter("3/minute", store, prefix=name, name=name)
    for _ in range(5):
        limiter.hit("alice")
    assert limiter.stats() == process_stats(name)
    assert (limiter.stats().allowed, limiter.stats().denied, limiter.stats().cost) == (3, 2, 3)
    s = store.stats()
    assert (s.name, s.network, s.hybrid) == (store.url, True, False) and "pool=2" in s.name
    assert s.calls == {"ok": 5, "timeout": 0, "unavailable": 0, "error": 0}  # denials are answers too
    ok = s.durations["ok"]
    assert ok.count == 5 and sum(n for _, n in ok.buckets) == 5 and ok.sum > 0
    assert [b for b, _ in ok.buckets] == [*ratewarden._native.DURATION_BUCKETS, float("inf")]
    assert 1 <= s.connections_open <= 2 and s.circuits_open == 0
    assert (s.keys, s.max_keys) == (0, 0)  # the keys are on the server
    hybrid = ratewarden.Store(redis.url + "?mode=local_first")
    ratewarden.Limiter("1/minute", hybrid, prefix=name).hit("k")
    h = hybrid.stats()
    assert (h.network, h.hybrid) == (True, True) and h.store_calls >= 1 and h.calls["ok"] >= 1


def test_postgres_store_stats(postgres: PostgresServer) -> None:
    store = ratewarden.Store(postgres.url + "?timeout=5s&pool=3")
    name = unique("pg")
    limiter = ratewarden.Limiter("2/minute", store, prefix=name, name=name)
    assert [limiter.hit("k").allowed for _ in range(3)] == [True, True, False]
    s = store.stats()
    assert (s.network, s.pool_size, s.calls["ok"]) == (True, 3, 3) and s.connections_open >= 1
    families = {f.name: f for f in ratewarden.metric_families()}
    assert ({"store": store.url}, 3.0) in families["ratewarden_postgres_pool_size"].samples
    assert any(labels == {"store": store.url} for labels, _ in families["ratewarden_postgres_sweeps_total"].samples)


def test_fallbacks_and_events_when_redis_dies_and_comes_back(own_redis: RedisServer, seen: Seen,
                                                              caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="ratewarden")
    url = own_redis.url + "?timeout=200ms&connect_timeout=200ms&pool=2&circuit_failures=2&circuit_backoff=50ms"
    store = ratewarden.Store(url)
    name = unique("fail-open")
    limiter = ratewarden.Limiter("100/minute", store, on_store_error="allow", name=name)
    for _ in range(3):
        assert limiter.hit("k").allowed
    own_redis.kill()
    for _ in range(5):
        assert limiter.hit("k").allowed  # on_store_error="allow"
    assert (limiter.stats().allowed, limiter.stats().fallbacks) == (8, 5)
    s = store.stats()
    assert s.calls["unavailable"] + s.calls["timeout"] == 5 and s.calls["ok"] == 3
    assert (s.circuits_open, s.circuit_openings, s.connections_open) == (1, 1, 0)

    failed = seen.wait_for("store_failed", store.url)
    assert failed.warning and failed.message.startswith("calls fail: ")
    assert seen.wait_for("circuit_opened", store.url).warning
    assert threading.main_thread().name not in seen.threads  # the core's callback thread

    own_redis.start()
    deadline = time.monotonic() + 10
    while store.stats().circuits_open and time.monotonic() < deadline:
        limiter.hit("k")
        time.sleep(0.01)
    assert store.stats().circuits_open == 0
    recovered = seen.wait_for("store_recovered", store.url)
    assert not recovered.warning and recovered.message == "the store answers again"
    seen.wait_for("circuit_closed", store.url)
    kinds = [e.kind for e in seen.events if e.store == store.url]
    assert kinds.index("store_failed") < kinds.index("store_recovered")

    # The same events on the "ratewarden" logger: failures as warnings, recoveries as information.
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and not any("store recovered" in r.getMessage() for r in caplog.records):
        time.sleep(0.01)
    lines = {r.getMessage(): r for r in caplog.records if r.name == "ratewarden"}
    down = [m for m in lines if m.startswith(f"ratewarden: store failed ({store.url}): calls fail: ")]
    up = [m for m in lines if m == f"ratewarden: store recovered ({store.url}): the store answers again"]
    assert down and up, list(lines)
    assert lines[down[0]].levelno == logging.WARNING and lines[up[0]].levelno == logging.INFO
    assert lines[down[0]].ratewarden_event.kind == "store_failed"  # type: ignore[attr-defined]


def test_callbacks_come_and_go_and_one_that_raises_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="ratewarden")
    first, last = Seen(), Seen()

    def broken(event: ratewarden.Event) -> None:
        raise RuntimeError("a broken callback")

    stops = [ratewarden.on_event(first), ratewarden.on_event(broken), ratewarden.on_event(last)]
    try:
        store = ratewarden.Store(f"memory://?max_keys={1000 + next(_names)}")  # a store name, and an event, its own
        limiter = ratewarden.Limiter("1/hour", store)
        for i in range(store.stats().max_keys + 5):
            limiter.hit(f"k{i}")
        event = last.wait_for("live_evictions", store.url)  # after the one that raised
        assert first.wait_for("live_evictions", store.url) is not None
        assert event.warning and "raise max_keys" in event.message and event.suppressed == 0
        assert repr(event).startswith("Event(kind='live_evictions', store='memory://?max_keys=")
    finally:
        for stop in stops:
            stop()
    assert not ratewarden.off_event(broken)  # already gone
    errors = [r for r in caplog.records if r.getMessage().startswith("ratewarden: an event callback")]
    assert errors and errors[0].exc_info is not None and "a broken callback" in str(errors[0].exc_info[1])
    with pytest.raises(TypeError):
        ratewarden.on_event("not a function")  # type: ignore[arg-type]


def test_events_in_a_forked_child(own_redis: RedisServer, seen: Seen) -> None:
    """A child forked after the parent used Redis: its first call opens its own connections (fork_detected), and
    the event reaches the child's callbacks and logger, on the child's own callback thread."""
    store = ratewarden.Store(own_redis.url)
    limiter = ratewarden.Limiter("100/minute", store, prefix=unique("fork"))
    assert limiter.hit("parent")
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report what it saw through the pipe, then leave at once
        code = 1
        try:
            got: List[str] = []
            done = threading.Event()
            logged: List[str] = []

            class Catch(logging.Handler):
                def emit(self, record: logging.LogRecord) -> None:
                    logged.append(record.getMessage())

            logging.getLogger("ratewarden").addHandler(Catch())
            logging.getLogger("ratewarden").setLevel(logging.INFO)  # fork_detected is information
            ratewarden.on_event(lambda e: (got.append(f"{e.kind} {e.message}"), done.set()))
            limiter.hit("child")
            done.wait(10)
            time.sleep(0.05)
            os.write(write, json.dumps({"got": got, "logged": logged, "pid": os.getpid()}).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    with os.fdopen(read) as r:
        report = json.loads(r.read() or "{}")
    assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
    assert any(g.startswith(f"fork_detected process {pid}, forked") for g in report["got"]), report
    assert any("fork detected" in line and str(pid) in line for line in report["logged"]), report
    assert not [e for e in seen.events if e.kind == "fork_detected" and str(pid) in e.message]  # the child's own


_EXIT_WHILE_EVENTS_FIRE = textwrap.dedent("""
    import sys, threading, time
    import ratewarden

    started, got = threading.Event(), []

    def slow(event):  # a callback that takes its time: events queue up behind it
        started.set()
        got.append(event)
        time.sleep(float(sys.argv[2]))
        if sys.argv[3:]:
            with open(sys.argv[3], "a") as out:
                out.write("done\\n")

    ratewarden.on_event(slow)
    # Events from every thread of the core: the memory stores' evictions (from the caller's thread), and a store
    # whose server is gone (from the I/O thread: failures, circuits opening again and again).
    stores = [ratewarden.Store(f"memory://?max_keys={n}") for n in range(1, 101)]
    limiters = [ratewarden.Limiter("1/hour", s) for s in stores]
    dead = ratewarden.Limiter("1/hour", sys.argv[1] + "?timeout=50ms&connect_timeout=50ms&circuit_backoff=10ms",
                              on_store_error="allow")

    def flood(chosen):
        i = 0
        while True:
            for limiter in chosen:
                limiter.hit(f"k{i}")
            i += 1

    threading.Thread(target=flood, args=(limiters,), daemon=True).start()
    threading.Thread(target=flood, args=([dead],), daemon=True).start()
    started.wait(10)
    print("exiting with", len(got), "events", flush=True)
""")


@pytest.mark.parametrize("callback_s", [0.0, 0.001, 0.3])
def test_interpreter_exit_while_events_fire(callback_s: float, tmp_path: Path) -> None:
    """The interpreter exits while events keep coming, on the core's threads, and one may be in a callback: no
    crash, no hang, and a callback under way is let finish (the handler is removed at exit)."""
    from redis_server import free_port

    dead_url = f"redis://127.0.0.1:{free_port()}"  # nothing listens there
    script = tmp_path / "exit.py"
    script.write_text(_EXIT_WHILE_EVENTS_FIRE)
    marker = tmp_path / "done"
    for attempt in range(4):
        args = [sys.executable, str(script), dead_url, str(callback_s)] + ([str(marker)] if callback_s > 0.1 else [])
        start = time.monotonic()
        done = subprocess.run(args, capture_output=True, text=True, timeout=60)
        elapsed = time.monotonic() - start
        assert done.returncode == 0, (attempt, done.returncode, done.stdout, done.stderr)
        assert "exiting with" in done.stdout
        for bad in ("Fatal Python error", "terminate called", "Segmentation", "Traceback"):
            assert bad not in done.stderr, (attempt, done.stderr)
        assert elapsed < 20, elapsed
    if callback_s > 0.1:  # each run's callback, started before the exit, finished
        assert marker.read_text().count("done") >= 4


# --- ratewarden.prometheus -------------------------------------------------------------------------------------


def promtool(text: str) -> str:
    """What ``promtool check metrics`` (Debian's prometheus package, installed by scripts/setup.sh) says of
    ``text``: nothing when it is fine."""
    done = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    return (done.stdout + done.stderr).strip()


def scraped(text: str) -> Dict[str, Dict[str, float]]:
    """Prometheus text as {sample name: {sorted labels as text: value}}."""
    out: Dict[str, Dict[str, float]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels = ",".join(f"{k}={v}" for k, v in sorted(sample.labels.items()))
            out.setdefault(sample.name, {})[labels] = sample.value
    return out


def test_prometheus_collector(redis: RedisServer) -> None:
    registry = CollectorRegistry()
    collector = ratewarden.prometheus.register(registry)
    assert ratewarden.prometheus.register(registry) is collector  # once per registry
    name = unique('login "quoted"\nline')
    memory = ratewarden.Limiter("2/minute", name=name)
    for _ in range(5):
        memory.hit("k")
    store = ratewarden.Store(redis.url + "?pool=3")
    shared = ratewarden.Limiter("4/minute", store, prefix=unique("prom"), name=name)
    for _ in range(7):
        shared.hit("k")

    text = generate_latest(registry).decode()
    assert promtool(text) == ""
    m = scraped(text)
    label = f"limiter={name}"
    assert m["ratewarden_decisions_total"][f"{label},outcome=allowed"] == 2 + 4
    assert m["ratewarden_decisions_total"][f"{label},outcome=denied"] == 3 + 3
    assert m["ratewarden_decision_cost_total"][label] == 6
    assert m["ratewarden_fallback_decisions_total"][label] == 0
    ok = f"outcome=ok,store={store.url}"
    assert m["ratewarden_store_call_duration_seconds_count"][ok] == 7
    assert m["ratewarden_store_call_duration_seconds_bucket"][f"le=+Inf,{ok}"] == 7
    buckets = [v for k, v in m["ratewarden_store_call_duration_seconds_bucket"].items() if k.endswith(ok)]
    assert len(buckets) == len(ratewarden._native.DURATION_BUCKETS) + 1 and max(buckets) == 7
    assert m["ratewarden_store_call_duration_seconds_sum"][ok] > 0
    assert m["ratewarden_store_errors_total"][f"kind=timeout,store={store.url}"] == 0
    assert m["ratewarden_store_connections"][f"store={store.url}"] >= 1
    # The same figures as the core's own text, family by family (prometheus_client writes 1.0 where it writes 1).
    core = scraped(ratewarden.prometheus_text())
    assert promtool(ratewarden.prometheus_text()) == ""
    assert core["ratewarden_decisions_total"][f"{label},outcome=denied"] == 6
    assert set(core) == set(m)
    # The families and types the collector reads.
    families = {f.name: f for f in ratewarden.metric_families()}
    assert families["ratewarden_decisions_total"].type == "counter"
    assert families["ratewarden_memory_keys"].type == "gauge"
    histogram = families["ratewarden_store_call_duration_seconds"]
    assert histogram.type == "histogram" and not histogram.samples
    sample = next(h for h in histogram.histograms if h.labels == {"store": store.url, "outcome": "ok"})
    assert sample.count == 7 and sample.buckets[-1] == (float("inf"), 7)
    assert [n for _, n in sample.buckets] == sorted(n for _, n in sample.buckets)  # cumulative
    registry.unregister(collector)
    assert "ratewarden" not in generate_latest(registry).decode()


@pytest.mark.parametrize("limiters", [0, 1])
def test_families_of_a_fresh_process_with_a_redis_store_only(redis: RedisServer, limiters: int) -> None:
    """The families when a network store's come first or right after the limiters' (with nothing else: a process of
    its own): every outcome's histogram there, and nothing used after it was moved (the core's family builder once
    kept a reference into a vector that the next family could grow)."""
    code = textwrap.dedent(f"""
        import sys
        import ratewarden
        store = ratewarden.Store(sys.argv[1])
        if {limiters}:
            ratewarden.Limiter("1/minute", store, prefix="fresh", name="only").hit("k")
        for _ in range(3):
            families = {{f.name: f for f in ratewarden.metric_families()}}
            text = ratewarden.prometheus_text()
            del families
        families = {{f.name: f for f in ratewarden.metric_families()}}
        outcomes = [h.labels["outcome"] for h in families["ratewarden_store_call_duration_seconds"].histograms]
        print(",".join(outcomes), len(families["ratewarden_store_errors_total"].samples), "only" in text)
    """)
    done = subprocess.run([sys.executable, "-c", code, redis.url], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, (done.returncode, done.stderr)
    assert done.stdout.split() == ["ok,timeout,unavailable,error", "3", str(bool(limiters))]


def test_prometheus_without_prometheus_client() -> None:
    code = textwrap.dedent("""
        import sys
        sys.modules["prometheus_client"] = None  # as if it were not installed
        try:
            import ratewarden.prometheus
        except ImportError as error:
            print(error)
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "pip install 'ratewarden[prometheus]'" in done.stdout, done.stdout


def test_start_worker_server_takes_the_first_free_port() -> None:
    import socket
    import urllib.request

    from redis_server import free_port

    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    busy = taken.getsockname()[1]
    free = free_port()
    try:
        name = unique("served")
        ratewarden.Limiter("1/minute", name=name).hit("k")
        port = ratewarden.prometheus.start_worker_server([busy, free], addr="127.0.0.1")
        assert port == free
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
            text = response.read().decode()
        assert f'ratewarden_decisions_total{{limiter="{name}",outcome="allowed"}} 1.0' in text
        assert "python_gc" not in text  # its own registry: ratewarden's figures only
        with pytest.raises(OSError, match="every port"):
            ratewarden.prometheus.start_worker_server([busy, free], addr="127.0.0.1")
    finally:
        taken.close()


# --- the HTTP adapters' limiter names ------------------------------------------------------------------------------


def test_limiter_name_vectors() -> None:
    from ratewarden._limiter_name import limiter_name, rates_text
    from ratewarden._route_name import route_name

    vectors = json.loads((CONFORMANCE / "limiter_names.json").read_text())
    for case in vectors["cases"]:
        scope = case.get("scope")
        if scope is None:
            scope = route_name(case["template"])
            if case.get("rank", 1) > 1:
                scope += f"#{case['rank']}"
        rates = rates_text(ratewarden.Limiter(case["policy"], algorithm=case.get("algorithm", "fixed_window")).policies)
        assert limiter_name(scope, rates) == case["name"], case
        assert len(case["name"].encode()) <= 200


def test_policies_are_checked_as_limiters_check_them_without_a_limiter() -> None:
    check = ratewarden._native.check_policy
    assert [str(p) for p in check("10 per second; 1000/hour")] == ["10/1s", "1000/3600s"]
    assert check("5/minute", algorithm="gcra", burst=8)[0].burst == 8
    for policy, options in [("5/fortnight", {}), ("5/minute; 5 per 60 seconds", {}), ("0/minute", {}),
                            ("5/minute", {"algorithm": "leaky"}), ("5/minute", {"burst": 3}),
                            ("5/minute", {"algorithm": "sliding_window", "buckets": 0})]:
        with pytest.raises(ratewarden.InvalidArgumentError) as limiter_error:
            ratewarden.Limiter(policy, **options)
        with pytest.raises(ratewarden.InvalidArgumentError) as check_error:
            check(policy, **options)
        assert str(check_error.value) == str(limiter_error.value), policy
    before = len(ratewarden.limiter_stats())
    check("9 per 9 minutes")
    assert len(ratewarden.limiter_stats()) == before


def test_flask_limiters_are_named_by_route_and_rates() -> None:
    from flask import Blueprint, Flask

    from ratewarden.flask import RateLimiter

    app = Flask(__name__)
    tag = unique("app")
    limiter = RateLimiter(app, application="1000 per minute", default="50/hour", prefix=tag)
    api = Blueprint("api", __name__, url_prefix=f"/{tag}")

    @api.get("/users/<int:user_id>/login")
    @limiter.limit("2/minute")
    @limiter.limit("10 per hour")
    def login(user_id: int) -> str:
        return "ok"

    @api.get("/s1")
    @limiter.shared_limit("3 per 7 minutes", f"search-{tag}")
    def s1() -> str:
        return "ok"

    @api.get("/free")
    def free() -> str:
        return "ok"

    app.register_blueprint(api)
    client = app.test_client()
    statuses = [client.get(f"/{tag}/users/{n}/login").status_code for n in (1, 2, 3)]  # one address: one key
    statuses += [client.get(f"/{tag}/s1").status_code for _ in range(4)]
    statuses += [client.get(f"/{tag}/free").status_code for _ in range(2)]
    assert statuses == [200, 200, 429, 200, 200, 200, 429, 200, 200]
    names = {s.name: s for s in ratewarden.limiter_stats()}
    route = f"/{tag}/users/:user_id/login"
    assert (names[f"{route} 2/60s"].allowed, names[f"{route} 2/60s"].denied) == (2, 1)  # the route's, not the path's
    assert (names[f"{route}#2 10/3600s"].allowed, names[f"{route}#2 10/3600s"].denied) == (2, 0)
    assert (names[f"search-{tag} 3/420s"].allowed, names[f"search-{tag} 3/420s"].denied) == (3, 1)
    assert "3 per 7 minutes" not in names  # a limit checked where it is written leaves no limiter of its own
    assert names[f"/{tag}/free 50/3600s"].allowed == 2  # the default limit, per route
    assert not any(f"/{tag}/users/1" in n for n in names)  # never a raw path
    assert names["@app 1000/60s"].allowed >= 9  # one count for the app: every request
