"""The C ABI through Python's ctypes alone (no pybind11): proof that the header is usable as documented."""
import ctypes
import os

import pytest

lib = ctypes.CDLL(os.environ["RW_LIBRARY"])


class Decision(ctypes.Structure):
    _fields_ = [("allowed", ctypes.c_int), ("limit", ctypes.c_int64), ("remaining", ctypes.c_int64),
                ("reset_after_us", ctypes.c_int64), ("retry_after_us", ctypes.c_int64), ("used", ctypes.c_int64)]


class DecisionV2(ctypes.Structure):
    _fields_ = Decision._fields_ + [("policy_index", ctypes.c_int32)]


HIT_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int, ctypes.POINTER(Decision), ctypes.c_char_p)
lib.rw_version.restype = ctypes.c_char_p
lib.rw_status_str.restype = ctypes.c_char_p
lib.rw_options_create.restype = ctypes.c_void_p
lib.rw_store_open.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_void_p)]
lib.rw_store_close.argtypes = [ctypes.c_void_p]
lib.rw_options_destroy.argtypes = [ctypes.c_void_p]
lib.rw_options_set_algorithm.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
lib.rw_options_set_burst.argtypes = [ctypes.c_void_p, ctypes.c_int64]
lib.rw_limiter_create.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p),
                                  ctypes.POINTER(ctypes.c_void_p)]
lib.rw_limiter_destroy.argtypes = [ctypes.c_void_p]
lib.rw_hit.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_int64, ctypes.POINTER(Decision),
                       ctypes.POINTER(ctypes.c_void_p)]
lib.rw_peek.argtypes = lib.rw_hit.argtypes
lib.rw_hit_v2.argtypes = lib.rw_hit.argtypes[:4] + [ctypes.POINTER(DecisionV2), ctypes.POINTER(ctypes.c_void_p)]
lib.rw_hit_async.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_int64, HIT_CALLBACK,
                             ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)]
lib.rw_free.argtypes = [ctypes.c_void_p]


class Error(Exception):
    pass


def check(status, err):
    if status != 0:
        message = ctypes.cast(err, ctypes.c_char_p).value.decode()
        lib.rw_free(err)
        raise Error(f"{lib.rw_status_str(status).decode()}: {message}")


def make_limiter(policy, algorithm="fixed_window", burst=None):
    store, limiter, err = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
    check(lib.rw_store_open(b"memory://", ctypes.byref(store), ctypes.byref(err)), err)
    options = lib.rw_options_create()
    lib.rw_options_set_algorithm(options, algorithm.encode())
    if burst is not None:
        lib.rw_options_set_burst(options, burst)
    try:
        check(lib.rw_limiter_create(store, policy.encode(), options, ctypes.byref(limiter), ctypes.byref(err)), err)
    finally:
        lib.rw_options_destroy(options)
        lib.rw_store_close(store)  # the limiter keeps the store alive
    return limiter


def hit(limiter, key: bytes, cost=1):
    d, err = Decision(), ctypes.c_void_p()
    check(lib.rw_hit(limiter, key, len(key), cost, ctypes.byref(d), ctypes.byref(err)), err)
    return d


def test_version():
    assert lib.rw_version().decode().count(".") == 2
    assert lib.rw_version_number() >= 100


def test_login_scenario_with_binary_keys():
    limiter = make_limiter("5/minute")
    key = b"login:\x00alice"
    results = [hit(limiter, key) for _ in range(6)]
    assert [r.allowed for r in results] == [1, 1, 1, 1, 1, 0]
    assert [r.remaining for r in results[:5]] == [4, 3, 2, 1, 0]
    assert 59_000_000 < results[5].retry_after_us <= 60_000_000
    assert hit(limiter, b"login:").allowed == 1  # stops at NUL? no: another key
    lib.rw_limiter_destroy(limiter)


def test_gcra_burst_and_peek():
    limiter = make_limiter("10/second", "gcra", burst=3)
    assert [hit(limiter, b"k").allowed for _ in range(4)] == [1, 1, 1, 0]
    d, err = Decision(), ctypes.c_void_p()
    check(lib.rw_peek(limiter, b"k", 1, 1, ctypes.byref(d), ctypes.byref(err)), err)
    assert d.allowed == 0 and d.limit == 3 and d.retry_after_us > 0
    lib.rw_limiter_destroy(limiter)


def test_v2_decisions_name_their_policy():
    limiter = make_limiter("3/minute; 2 per 10 seconds")
    d, err = DecisionV2(), ctypes.c_void_p()
    check(lib.rw_hit_v2(limiter, b"k", 1, 1, ctypes.byref(d), ctypes.byref(err)), err)
    assert (d.allowed, d.limit, d.remaining, d.policy_index) == (1, 2, 1, 1)  # "2 per 10 seconds" has less left
    lib.rw_limiter_destroy(limiter)


def test_errors_are_status_codes_with_messages():
    with pytest.raises(Error, match=r'invalid argument: invalid rate limit "10/fortnight"'):
        make_limiter("10/fortnight")
    limiter = make_limiter("3/minute")
    with pytest.raises(Error, match="cost must be between 1 and 3"):
        hit(limiter, b"k", cost=0)
    with pytest.raises(Error, match="key is empty"):
        hit(limiter, b"")
    lib.rw_limiter_destroy(limiter)


def test_async_hits_call_back_once_each():
    import threading
    limiter = make_limiter("5/minute")
    done = threading.Semaphore(0)
    seen = []

    @HIT_CALLBACK
    def on_hit(user_data, status, decision, errmsg):
        seen.append((status, decision.contents.allowed))
        done.release()

    for _ in range(8):
        check(lib.rw_hit_async(limiter, b"async", 5, 1, on_hit, None, None), None)
    for _ in range(8):
        assert done.acquire(timeout=5)
    assert sorted(seen) == [(0, 0)] * 3 + [(0, 1)] * 5
    lib.rw_limiter_destroy(limiter)
