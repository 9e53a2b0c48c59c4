"""How verify finds a deployed function's role, and judges IAM's policy simulator on it. Pure: the reads come in.

**Finding the function.** The fleet's Lambda functions are the ones carrying the fleet's tag (``neuronfleet:fleet``,
which the kit puts on every resource: Resource Groups Tagging API), and among them the one whose ``Handler`` is the
kit's entry point (``capacity_lifecycle.handler.handler``). Why not the stack names or the logical ids: the stacks'
split and the constructs' ids change as the kit is refactored, and CDK generates the function and role names from
them; the handler is the code's own module path, which the kit's Lambda bundles and their tests hold
(tests/unit/test_verify_checks.py checks that every handler named here is one a construct deploys). The tag scopes
it to this fleet when several fleets share an account. The role is the function's own ``Role`` (ListFunctions).

**Judging the simulation.** IAM's SimulatePrincipalPolicy evaluates the role's identity policies for an action on a
resource with the context given (the resource's tags as ``aws:ResourceTag/...`` entries: the simulator does not read
a resource's real tags). A right bound as the kit means is ``allowed`` where it should be and not ``allowed``
(``implicitDeny`` or ``explicitDeny``) where it should not.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .outcomes import Finding, broken, holds, not_yet

LIFECYCLE_HANDLER = "capacity_lifecycle.handler.handler"
FAILOVER_HANDLER = "failover.handler.handler"
COPIER_HANDLER = "hub_staging.handler.handler"
HANDLERS = (LIFECYCLE_HANDLER, FAILOVER_HANDLER, COPIER_HANDLER)
"""The entry points verify looks functions up by (a test holds each to a construct that deploys it)."""


def with_handler(functions: Sequence[Mapping[str, Any]], handler: str) -> list[Mapping[str, Any]]:
    """The functions (ListFunctions' configurations) whose Handler is ``handler``."""
    return [f for f in functions if f.get("Handler") == handler]


def no_function(handler: str, stack: str) -> Finding:
    return not_yet(f"no function of the fleet has the handler {handler}",
                   f"run again after {stack} is deployed (the function carries the fleet's tag neuronfleet:fleet)")


def deployed(reads: Any, handler: str, stack: str, check: Any) -> list[Mapping[str, Any]] | Finding:
    """The fleet's functions with ``handler`` (a read), or the finding when there are none or the read failed."""
    from ..preflight.checks import Failed
    from .registry import unreadable

    functions = reads.functions()
    if isinstance(functions, Failed):
        return unreadable(functions, check)
    return with_handler(functions, handler) or no_function(handler, stack)


def arn_parts(arn: str) -> tuple[str, str]:
    """(partition, account) of an ARN (``arn:<partition>:<service>:<region>:<account>:...``)."""
    parts = arn.split(":")
    if len(parts) < 6 or parts[0] != "arn":
        raise ValueError(f"ARN: got {arn!r}; allowed: arn:<partition>:<service>:<region>:<account>:<resource>")
    return parts[1], parts[4]


def _decisions(results: Sequence[Mapping[str, Any]]) -> list[str]:
    return [f"{r.get('EvalActionName')} on {r.get('EvalResourceName')}: {r.get('EvalDecision')}" for r in results]


def bound_right(allowed: Sequence[Mapping[str, Any]], refused: Sequence[Mapping[str, Any]], *, role: str,
                right: str, breaks: str, widens: str) -> Finding:
    """``allowed``: the simulator's results where the role must be allowed (the fleet's own resource, its tag);
    ``refused``: where it must not be (another tag, another resource). ``breaks``: what fails when an allowed one is
    denied; ``widens``: what the role could do when a refused one is allowed."""
    if not allowed:
        raise ValueError("allowed: got no simulation result; allowed: the results of the wanted resources")
    denied = [r for r in allowed if r.get("EvalDecision") != "allowed"]
    if denied:
        missing = sorted({k for r in denied for k in r.get("MissingContextValues") or ()})
        return broken(f"{role}: {'; '.join(_decisions(denied))}"
                      + (f" (context keys the policy asks and the simulation lacked: {', '.join(missing)})"
                         if missing else ""),
                      f"{breaks}. Compare the role's policy with {right} (docs/security.md) and redeploy; report it "
                      "with this line if the policy is the kit's")
    widened = [r for r in refused if r.get("EvalDecision") == "allowed"]
    if widened:
        return broken(f"{role}: {'; '.join(_decisions(widened))} (expected implicitDeny)",
                      f"{widens}. Find the statement that allows it (aws iam simulate-principal-policy ... shows "
                      "MatchedStatements) and remove it")
    return holds(f"{role}: {'; '.join(_decisions(allowed))}; "
                 + ("; ".join(_decisions(refused)) if refused else "nothing else simulated"))


def simulate_pair(reads: Any, role: str, actions: Sequence[str], resource: str, own: Mapping[str, str],
                  other: Mapping[str, str]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]] | Any:
    """The simulator's results for ``resource`` with the ``own`` context and with the ``other`` one (a read, not a
    judge: the first Failed answer is returned as it is)."""
    allowed = reads.simulate(role, actions, [resource], own)
    if not isinstance(allowed, list):
        return allowed
    refused = reads.simulate(role, actions, [resource], other)
    return refused if not isinstance(refused, list) else (allowed, refused)
