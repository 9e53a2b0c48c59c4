"""Fault injection for the handlers' AWS calls: a boto3 client (moto's, usually) that fails chosen calls, before the
call reaches AWS (nothing happened) or after (it took effect, and its answer was lost), with the errors botocore
raises for AWS's answers; and a topic that stops the Lambda mid-run."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError, ReadTimeoutError


class Clock:
    """A wall clock (epoch seconds) a test moves: ``clock.now += 61``."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@dataclass(frozen=True)
class Fault:
    error: BaseException
    after: bool = False
    """The call reached AWS and took effect before ``error`` (a timeout on the way back)."""


def client_error(code: str, operation: str, *, status: int = 400, client: Any = None,
                 **extra: Any) -> ClientError:
    """The error botocore raises for AWS's answer ``code`` (the client's modeled exception class when it has one,
    so ``client.exceptions.X`` catches it)."""
    response = {"Error": {"Code": code, "Message": f"injected {code}"},
                "ResponseMetadata": {"HTTPStatusCode": status}, **extra}
    cls = getattr(client.exceptions, code, ClientError) if client is not None else ClientError
    return cls(response, operation)  # type: ignore[no-any-return]


def timeout(service: str = "dynamodb") -> ReadTimeoutError:
    return ReadTimeoutError(endpoint_url=f"https://{service}.us-east-2.amazonaws.com/")


class Faulty:
    """``client`` whose n-th call (from 1) of an operation fails: ``faults[(operation, n)]``; ``before[(operation,
    n)]`` runs a function first (another run overlapping this one). ``calls`` counts calls per operation."""

    PASS_THROUGH = frozenset({"exceptions", "meta", "get_paginator", "can_paginate"})

    def __init__(self, client: Any, faults: dict[tuple[str, int], Fault] | None = None,
                 before: dict[tuple[str, int], Callable[[], Any]] | None = None) -> None:
        self._client = client
        self.faults = dict(faults or {})
        self.before = dict(before or {})
        self.calls: Counter[str] = Counter()

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._client, name)
        if name in self.PASS_THROUGH or not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] += 1
            key = (name, self.calls[name])
            if key in self.before:
                self.before[key]()
            fault = self.faults.get(key)
            if fault is None:
                return attr(*args, **kwargs)
            if fault.after:
                attr(*args, **kwargs)
            raise fault.error

        return call


class LambdaStopped(BaseException):
    """The Lambda runtime ending the invocation (timeout, crash): no ``except Exception`` sees it."""


class StoppingTopic:
    """A topic (neuronfleet_runtime.topic.Topic) whose ``stop_at``-th announcement stops the run, after SNS took it
    (``published=True``) or before."""

    def __init__(self, topic: Any, *, stop_at: int = 1, published: bool = True) -> None:
        self._topic, self._stop_at, self._published = topic, stop_at, published
        self.calls = 0

    def announce(self, subject: str, message: str) -> None:
        self.calls += 1
        if self.calls == self._stop_at:
            if self._published:
                self._topic.announce(subject, message)
            raise LambdaStopped(f"the run stopped {'after' if self._published else 'before'} publishing {subject!r}")
        self._topic.announce(subject, message)


class FailingTopic:
    """A topic whose every announcement fails with ``error``, after SNS took it when ``published``."""

    def __init__(self, topic: Any, error: BaseException, *, published: bool = False) -> None:
        self._topic, self._error, self._published = topic, error, published

    def announce(self, subject: str, message: str) -> None:
        if self._published:
            self._topic.announce(subject, message)
        raise self._error
