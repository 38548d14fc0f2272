"""The limiter a user would write by hand instead of an adapter, shared by the bench apps' ``hand`` variant: the view
calls ``ratewarden.Limiter`` itself with the client's address and answers with the same fields as the adapters (and
the floor), or a 429 with Retry-After — no options, no skip, no error policy: the few lines our adapters must beat.
"""

from typing import Dict, Tuple

import ratewarden

BODY_429 = "429 Too Many Requests\n"


class Hand:
    def __init__(self, policy: str, name: str, limit: int, window_s: int, store: str) -> None:
        self.limiter = ratewarden.Limiter(policy, store=store, prefix=f"bench-hand-{name}")
        self.name = f'"{name}"'
        self.policy = f"{self.name};q={limit};w={window_s}"

    def answer(self, d: ratewarden.Decision) -> Tuple[int, str, Dict[str, str]]:
        """Status, body and fields of the response to a request decided ``d``."""
        if d.allowed:
            return 200, "hello\n", {"RateLimit-Policy": self.policy,
                                    "RateLimit": f"{self.name};r={d.remaining};t={-(-d.reset_after_us // 1_000_000)}"}
        wait = str(-(-d.retry_after_us // 1_000_000))
        return 429, BODY_429, {"RateLimit-Policy": self.policy, "RateLimit": f"{self.name};r=0;t={wait}",
                               "Retry-After": wait}


def hands(store: str) -> Tuple[Hand, Hand]:
    """The limits of ``/`` and ``/denied``, as the apps' other variants have them."""
    return Hand("1000000000/minute", "hello", 1000000000, 60, store), Hand("1/day", "denied", 1, 86400, store)
