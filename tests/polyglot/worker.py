"""One member of the polyglot fleet, in Python: `hit URL ALGORITHM POLICY KEY N` prints how many of N hits were
allowed; `peek URL ALGORITHM POLICY KEY` prints what remains."""
import sys

import ratewarden

mode, url, algorithm, policy, key = sys.argv[1:6]
limiter = ratewarden.Limiter(policy, store=url, algorithm=algorithm)
if mode == "hit":
    print(sum(1 for _ in range(int(sys.argv[6])) if limiter.hit(key).allowed))
else:
    print(limiter.peek(key).remaining)
