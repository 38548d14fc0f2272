"""A plain function limiter: at most 3 text messages per phone number per minute, and a batch job throttled to
20 calls per second with a burst of 5 (GCRA).

    python examples/python/function_limiter.py [store URL]     # memory:// by default; redis://... to share
"""

from __future__ import annotations

import sys
import time

import ratewarden

store = sys.argv[1] if len(sys.argv) > 1 else "memory://"
sms = ratewarden.Limiter("3/minute", store, prefix="sms")
api = ratewarden.Limiter("20/second", store, algorithm="gcra", burst=5, prefix="api")


def send_sms(number: str, text: str) -> str:
    decision = sms.hit(number)
    if not decision:
        return f"refused: retry in {decision.retry_after:.0f} s"
    return f"sent ({decision.remaining} left this minute)"


def call_api() -> None:
    while not api.allow("batch"):  # the boolean fast path
        time.sleep(api.peek("batch").retry_after)


if __name__ == "__main__":
    for _ in range(4):
        print("+33600000001:", send_sms("+33600000001", "hello"))
    start = time.perf_counter()
    for _ in range(45):
        call_api()
    print(f"45 API calls at 20/s with a burst of 5: {time.perf_counter() - start:.2f} s")
