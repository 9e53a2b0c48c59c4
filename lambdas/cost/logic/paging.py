"""Bounded pagination: every paginated read of the cost monitors follows its next-page token through one
:class:`PageGuard`, which stops a token seen before (a loop: the same pages again, each billed) and a page count
over the cap, with an error naming the operation, the token and what the pages cost."""

from __future__ import annotations

from decimal import Decimal
from typing import Any


class PagingError(RuntimeError):
    """Pagination stopped: a token repeated, a token that is not a string, or more pages than the cap."""


class PageGuard:
    """Counts the pages of one paginated read and checks each next-page token before it is followed.

    ``cap``: the most pages the read may take; ``usd_per_page``: what each page costs (named in the error)."""

    def __init__(self, what: str, *, cap: int, usd_per_page: Decimal = Decimal(0)) -> None:
        if cap < 1:
            raise ValueError(f"cap: got {cap}; allowed: 1 or more pages")
        self.what, self.cap, self.usd_per_page = what, cap, usd_per_page
        self.pages = 0
        self._seen: set[str] = set()

    def page(self) -> None:
        """One page was read."""
        self.pages += 1

    def _cost(self) -> str:
        return f" (${self.usd_per_page * self.pages:.2f} at ${self.usd_per_page} a page)" if self.usd_per_page else ""

    def follow(self, token: Any) -> str:
        """``token`` (a page's next-page token) if it may be followed; else PagingError."""
        if not isinstance(token, str):
            raise PagingError(f"{self.what}: next-page token got {token!r} after page {self.pages}; allowed: a string "
                              "token; stopped")
        if token in self._seen:
            raise PagingError(f"{self.what}: next-page token {token!r} repeated after page {self.pages}{self._cost()}: "
                              "the service answered a page it had already given; stopped before reading it again")
        if self.pages >= self.cap:
            raise PagingError(f"{self.what}: stopped at the cap of {self.cap} pages{self._cost()} with more to read "
                              f"(next-page token {token!r}); raise the cap if this much data is expected")
        self._seen.add(token)
        return token
