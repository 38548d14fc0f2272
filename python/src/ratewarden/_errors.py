"""The exceptions every ratewarden call raises (the native module raises these same classes)."""

from __future__ import annotations

__all__ = ["Error", "InvalidArgumentError", "StoreError"]


class Error(Exception):
    """Base class of ratewarden's errors.

    ``code`` names the core's error code: ``"invalid_argument"``, ``"store_unavailable"``, ``"store_timeout"``,
    ``"store_error"`` or ``"internal"``; or ``"rate_limit_timeout"`` (``RateLimitTimeout``: a wait for a slot that
    would exceed its timeout).
    """

    code: str

    def __init__(self, message: str, code: str = "internal") -> None:
        super().__init__(message)
        self.code = code


class InvalidArgumentError(Error, ValueError):
    """A bad policy string, key, cost, option or store URL. Also a ``ValueError``."""

    def __init__(self, message: str, code: str = "invalid_argument") -> None:
        super().__init__(message, code)


class StoreError(Error):
    """The store failed (refused, timed out, answered with an error): the call has no decision."""

    def __init__(self, message: str, code: str = "store_error") -> None:
        super().__init__(message, code)
