"""The reference app's reading of the library's limit findings (neuronfleet's CloudFormationLimits): in the fleet
file's terms, with what the fleet file can change."""

from __future__ import annotations

from aws_cdk import Stack

from neuronfleet import Fleet, Problem
from neuronfleet.core.limits import LimitProblem
from neuronfleet.core.rules import CLOUDFORMATION_QUOTAS

from .fleet import fitting_partitions
from .inference_stack import InferenceStack

WHAT_GROWS = ("What grows with a fleet there: a partition's endpoints with a GPU fallback (the failover: more "
              "inference_stacks), reservations and resource groups (capacity alerts, cost collector: fewer per "
              "fleet file), endpoints with a judge (the migration report names each judge's record: about 120 bytes of "
              "its environment and 500 characters of its role's policies each; fewer judges at a time)")
"""What a fleet file changes when a function's environment or a role's inline policies outgrow their quota."""


def fleet_problems(fleet: Fleet, stacks: list[Stack], problems: list[LimitProblem]) -> list[Problem]:
    """``problems`` as the fleet file's: an inference partition over CloudFormation's resources per stack is the
    fleet's ``inference_stacks``, with the number of stacks that would fit (more stacks move endpoints between them:
    a replacement); an environment or inline policies over their quota say what grows with a fleet there; anything
    else reads as the library wrote it."""
    limit = CLOUDFORMATION_QUOTAS["resources"]
    inference = [s for s in stacks if isinstance(s, InferenceStack)]
    partitions = {s.stack_name for s in inference}
    out: list[Problem] = []
    for p in problems:
        if p.rule == "resources-per-stack" and p.value in partitions:
            fits = fitting_partitions(fleet, inference)
            out.append(Problem("inference_stacks", fleet.inference_stacks, (
                f"enough stacks that each holds at most {limit} resources: {p.value} would hold {p.measured}. "
                "More stacks move endpoints between them (a replacement): decide before the first deploy"
                + (f"; {fits} stacks would fit this fleet (its endpoints' resources counted)" if fits else
                   "; no number of stacks fits it"))))
        elif p.rule in ("lambda-environment-size", "role-inline-policy-size"):
            out.append(Problem(p.path, p.value, f"{p.allowed}. {WHAT_GROWS}"))
        else:
            out.append(p)
    return out
