"""One Python member of the hybrid fleet (test_hybrid_fleet.py): `URL ALGORITHM POLICY KEY CALLERS HITS` opens the
store (a hybrid mode waits for its first read of the reset log), prints `ready`, waits for a line on stdin, then runs
CALLERS threads of HITS hits each on KEY and prints one JSON line: allowed, local_denials, local_allows, store_calls."""
import json
import sys
import threading
import time

import ratewarden

url, algorithm, policy, key = sys.argv[1:5]
callers, hits = int(sys.argv[5]), int(sys.argv[6])
store = ratewarden.Store(url)
limiter = ratewarden.Limiter(policy, store, algorithm=algorithm)
limiter.peek(f"{key}-warm-up")  # starts a hybrid store's background rounds
deadline = time.monotonic() + 10
while store.stats().sync_lag < 0 and time.monotonic() < deadline:
    time.sleep(0.001)

print("ready", flush=True)
sys.stdin.readline()
allowed = [0] * callers


def run(i: int) -> None:
    allowed[i] = sum(1 for _ in range(hits) if limiter.hit(key).allowed)


threads = [threading.Thread(target=run, args=(i,)) for i in range(callers)]
for t in threads:
    t.start()
for t in threads:
    t.join()
s = store.stats()
print(json.dumps({"allowed": sum(allowed), "local_denials": s.local_denials, "local_allows": s.local_allows,
                  "store_calls": s.store_calls}))
