"""Pacing outbound calls (docs/pacing.md): a partner API allows 10 requests per second, and every caller -- threads,
asyncio tasks, other processes on the same Redis -- waits its turn instead of being refused.

    python examples/python/pacing.py [store URL]     # memory:// by default; redis://... paces every process on it
"""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from typing import List

import ratewarden

store = sys.argv[1] if len(sys.argv) > 1 else "memory://"
partner = ratewarden.Limiter("10/second", store, algorithm="gcra", burst=1, prefix="example-pacing")
sent: List[float] = []  # when each call left: the partner would see these


@partner.paced("partner-api")
def call_partner(order: int) -> None:  # a thread sleeps until its slot (the GIL released)
    sent.append(time.monotonic())


@partner.paced("partner-api")
async def acall_partner(order: int) -> None:  # a task waits on a timer of the loop
    sent.append(time.monotonic())


async def tasks() -> None:
    await asyncio.gather(*(acall_partner(i) for i in range(10)))


def main() -> None:
    threads = [threading.Thread(target=call_partner, args=(i,)) for i in range(10)]
    for t in threads:
        t.start()
    asyncio.run(tasks())
    for t in threads:
        t.join()
    print(f"{len(sent)} calls from 10 threads and 10 tasks: the last one {max(sent) - min(sent):.1f} s after the first "
          "(one every 100 ms)")

    # A call that cannot wait: with timeout=0 it goes only if a slot is free now; else RateLimitTimeout, at once,
    # and nothing is charged.
    try:
        with partner.paced("partner-api", timeout=0):
            print("sent")
    except ratewarden.RateLimitTimeout as e:
        print(f"gave up: the next slot is {e.retry_after * 1000:.0f} ms away")


if __name__ == "__main__":
    main()
