"""What CloudFormation, Lambda and IAM would refuse, checked at synth for any app: a CDK validation plugin.

``CloudFormationLimits(app)`` (one line, before ``app.synth()``) makes synth fail, before anything is deployed, on a
stack with more resources than CloudFormation takes, a template over its size quota, a function whose environment
exceeds Lambda's 4 KB, or a role whose inline policies exceed IAM's 10,240 characters. Each refusal reads
``<field>: got <value>; allowed: <what is allowed>`` (:class:`~neuronfleet.core.problems.Problem`), in CDK's error or
validation report and in :attr:`CloudFormationLimits.problems`.

Two hooks, both CDK's own, neither an Aspect (Node.js would call an Aspect back for every construct of the app):
- the resources per stack are counted on the construct tree by a validation of the app (``node.add_validation``: one
  call after CDK's prepare, metadata resources included, before any template is written), because aws-cdk-lib
  refuses a stack over its own ``@aws-cdk/core:stackResourceLimit`` (500) while writing the template, with its own
  wording, so a check of the written templates would never see that stack;
- everything else is read from the written templates by a policy validation plugin
  (``Validations.of(app).add_plugins``, aws-cdk-lib's ``IPolicyValidationPlugin``; the older ``App(
  policy_validation_beta1=...)`` interface is deprecated in aws-cdk-lib 2.275.0): a template's size, a function's
  environment once its tokens are rendered, the policies CDK merges at synth exist only there.
The limits are data with their sources, in :mod:`neuronfleet.core.rules`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, cast

import jsii
from aws_cdk import (
    CfnResource,
    IPolicyValidationContext,
    IPolicyValidationPlugin,
    PolicyValidationPluginReport,
    PolicyViolatingResource,
    PolicyViolation,
    Stack,
    Validations,
)
from constructs import IConstruct, IValidation

from .problems import Problem
from .rules import (
    CLOUDFORMATION_QUOTAS,
    EC2_USER_DATA_BYTES,
    IAM_ROLE_INLINE_POLICY_CHARS,
    LAMBDA_ENVIRONMENT_BYTES,
    REFERENCE_CHARS,
    TOKEN_ESTIMATE_CHARS,
)

__all__ = ["LIMITS_PLUGIN", "RULES", "CloudFormationLimits", "LimitProblem", "assembly_problems", "resource_problems",
           "template_problems"]

LIMITS_PLUGIN = "neuronfleet-limits"
"""The plugin's name in CDK's validation report; a finding is acknowledged as ``neuronfleet-limits::<rule>``."""

RULES = {
    "resources-per-stack": "CloudFormation's resources per stack",
    "template-size": "CloudFormation's template size",
    "lambda-environment-size": "Lambda's environment variables per function",
    "role-inline-policy-size": "IAM's inline policies per role",
    "ec2-user-data-size": "EC2's user data per instance or launch template",
}
"""Rule id -> the quota it checks (the quotas' figures and sources: :mod:`neuronfleet.core.rules`)."""


@dataclass(frozen=True)
class LimitProblem(Problem):
    """A :class:`Problem` with the rule it breaks (:data:`RULES`) and where: the template's resource (logical id)
    and property path, when one resource is at fault."""

    rule: str = "resources-per-stack"
    logical_id: str | None = None
    location: str | None = None
    measured: int | None = None
    """What was counted (resources, bytes, characters)."""


Exports = Mapping[str, tuple[Any, Mapping[str, Any]]]
"""Export name -> (the exported value, the exporting template's resources): what an Fn::ImportValue deploys as."""


def assembly_exports(templates: Iterable[Mapping[str, Any]]) -> Exports:
    """Every export the templates define by a literal name (CDK's cross-stack references are)."""
    out: dict[str, tuple[Any, Mapping[str, Any]]] = {}
    for template in templates:
        for output in template.get("Outputs", {}).values():
            name = output.get("Export", {}).get("Name") if isinstance(output, dict) else None
            if isinstance(name, str):
                out[name] = (output.get("Value"), template.get("Resources", {}))
    return out


def template_problems(stack_name: str, template: dict[str, Any], exports: Exports | None = None) -> list[LimitProblem]:
    """What CloudFormation, Lambda or IAM would refuse in a synthesised template: more resources than a stack may
    hold, a template over CloudFormation's size quota, a function whose environment exceeds Lambda's 4 KB, a role
    whose inline policies exceed IAM's 10,240 characters (cfn-lint counts only literal strings). A reference is
    sized as the longest value AWS allows for what it refers to (``REFERENCE_CHARS``: a resource of this template,
    a pseudo parameter, or through ``exports`` another stack's export), else at ``TOKEN_ESTIMATE_CHARS``."""
    problems = []
    resources = template.get("Resources", {})
    context = _Context(resources, exports or {})
    limit = CLOUDFORMATION_QUOTAS["resources"]
    if len(resources) > limit:
        problems.append(LimitProblem("stacks", stack_name, f"at most {limit} resources per stack; it would hold "
                                                           f"{len(resources)}", rule="resources-per-stack",
                                     measured=len(resources)))
    size = len(json.dumps(template, separators=(",", ":")))
    if size > CLOUDFORMATION_QUOTAS["template_bytes"]:
        problems.append(LimitProblem("stacks", stack_name, f"a template of at most "
                                     f"{CLOUDFORMATION_QUOTAS['template_bytes']:,} bytes; it would be {size:,}",
                                     rule="template-size"))
    for logical, res in resources.items():
        if res.get("Type") != "AWS::Lambda::Function":
            continue
        variables = res.get("Properties", {}).get("Environment", {}).get("Variables", {})
        sizes = {k: _deployed_length(v, context) for k, v in variables.items()}
        total = sum(len(k) + n for k, n in sizes.items())
        if total > LAMBDA_ENVIRONMENT_BYTES:
            biggest = sorted(variables, key=lambda k: -sizes[k])[:3]
            problems.append(LimitProblem(f"{stack_name}.{logical}", f"{total:,} bytes of environment", (
                f"at most {LAMBDA_ENVIRONMENT_BYTES:,} bytes (Lambda's quota); the largest variables: "
                + ", ".join(f"{k} ({sizes[k]:,})" for k in biggest)),
                rule="lambda-environment-size", logical_id=logical, location="Properties/Environment/Variables"))
    for logical, res in resources.items():
        user_data = _user_data(res)
        if user_data is None:
            continue
        raw = _deployed_length(user_data["Fn::Base64"], context) if _is_base64(user_data) else \
            _deployed_length(user_data, context) * 3 // 4  # already base64 text: what it decodes to
        if raw > EC2_USER_DATA_BYTES:
            problems.append(LimitProblem(f"{stack_name}.{logical}", f"{raw:,} bytes of user data", (
                f"at most {EC2_USER_DATA_BYTES:,} bytes, raw, before base64 (EC2's limit); move files out of the "
                "user data (an S3 asset the instance fetches)"), rule="ec2-user-data-size", logical_id=logical,
                location=_USER_DATA_PATHS[res["Type"]]))
    for role, size in sorted(_inline_policy_sizes(template, context).items()):
        if size > IAM_ROLE_INLINE_POLICY_CHARS:
            problems.append(LimitProblem(f"{stack_name}.{role}", f"{size:,} characters of inline policies", (
                f"at most {IAM_ROLE_INLINE_POLICY_CHARS:,} (IAM's limit for one role's inline policies)"),
                rule="role-inline-policy-size", logical_id=role, location="Properties/Policies"))
    return problems


def assembly_problems(directory: str | Path) -> list[LimitProblem]:
    """:func:`template_problems` of every stack a cloud assembly holds, read from its directory (manifest.json and the
    template files) rather than through jsii, which would send megabytes of JSON over the kernel's pipe again."""
    root = Path(directory)
    templates = {name: json.loads(path.read_text()) for name, path in _stack_templates(root)}
    exports = assembly_exports(templates.values())
    return [p for name, template in templates.items() for p in template_problems(name, template, exports)]


def resource_problems(scope: IConstruct) -> list[LimitProblem]:
    """Stacks under ``scope`` (an App or Stage) with more resources than CloudFormation takes, counted on the
    construct tree (a nested stack's resources are its own; its AWS::CloudFormation::Stack counts in its parent)."""
    stacks = [cast(Stack, c) for c in scope.node.find_all() if _is_stack(type(c))]
    totals = {s: sum(_is_resource(type(c)) for c in s.node.find_all()) for s in stacks}
    limit = CLOUDFORMATION_QUOTAS["resources"]
    problems = []
    for stack in stacks:
        if totals[stack] <= limit:  # its own resources are at most these: no more round trips
            continue
        own = totals[stack] - sum(totals[n] for n in stack.node.children if n in totals)
        if own > limit:
            problems.append(LimitProblem("stacks", stack.stack_name, f"at most {limit} resources per stack; it would "
                                                                     f"hold {own}", rule="resources-per-stack",
                                         measured=own))
    return problems


@cache
def _is_resource(kind: type) -> bool:
    """issubclass once per class: isinstance on jsii proxies walks ABC subclass checks for every node."""
    return issubclass(kind, CfnResource)


@cache
def _is_stack(kind: type) -> bool:
    return issubclass(kind, Stack)


@jsii.implements(IPolicyValidationPlugin)
class CloudFormationLimits:
    """CloudFormation's, Lambda's and IAM's limits checked at synth: ``CloudFormationLimits(app)``, once, before
    ``app.synth()``.

    Synth then fails when a stack or template breaks a quota, each finding described as ``<field>: got <value>;
    allowed: ...`` (a stack over the resources quota stops synth before any template is written; the others fail
    CDK's validation report); :attr:`problems` holds the same findings for an app that prints its own message.
    Acknowledge a template finding on purpose with ``Validations.of(stack).acknowledge(Acknowledgment(
    id="neuronfleet-limits::<rule>", reason=...))`` (rules: :data:`RULES`)."""

    def __init__(self, scope: IConstruct) -> None:
        self.problems: list[LimitProblem] = []
        """What the last synth found (empty before synth and when everything fits)."""
        scope.node.add_validation(_ResourceCount(self, scope))
        Validations.of(scope).add_plugins(self)

    @property
    def name(self) -> str:
        return LIMITS_PLUGIN

    @property
    def version(self) -> str:
        return "1.0.0"

    @property
    def rule_ids(self) -> list[str]:
        return list(RULES)

    def validate(self, context: IPolicyValidationContext) -> PolicyValidationPluginReport:
        paths = [Path(p) for p in context.template_paths]
        names = dict(_stack_templates(paths[0].parent)) if paths else {}
        by_path = {path.resolve(): name for name, path in names.items()}
        violations = []
        every = {p.resolve(): p for p in [*names.values(), *paths]}  # the assembly's stacks: what imports name
        templates = {resolved: json.loads(p.read_text()) for resolved, p in every.items()}
        exports = assembly_exports(templates.values())
        for path in paths:
            template = templates[path.resolve()]
            first = next(iter(template.get("Resources", {})), None)
            for problem in template_problems(by_path.get(path.resolve(), _stem(path)), template, exports):
                self.problems.append(problem)
                logical = problem.logical_id or first
                violations.append(PolicyViolation(
                    rule_name=problem.rule, description=str(problem), severity="error",
                    fix=f"{RULES[problem.rule]}: see neuronfleet.core.rules for the figure and its source",
                    violating_resources=[PolicyViolatingResource(
                        resource_logical_id=logical, template_path=str(path),
                        locations=[problem.location or "Resources"])] if logical else []))
        return PolicyValidationPluginReport(success=not violations, violations=violations)


@jsii.implements(IValidation)
class _ResourceCount:
    """The resources-per-stack check, as a validation of the app (CDK calls it once, after prepare)."""

    def __init__(self, limits: CloudFormationLimits, scope: IConstruct) -> None:
        self.limits, self.scope = limits, scope

    def validate(self) -> list[str]:
        problems = resource_problems(self.scope)
        self.limits.problems[:] = problems
        return [str(p) for p in problems]


def _stack_templates(root: Path) -> list[tuple[str, Path]]:
    """(stack name, template path) of every stack in the cloud assembly at ``root`` (its manifest.json)."""
    manifest = root / "manifest.json"
    if not manifest.is_file():
        return [(_stem(p), p) for p in sorted(root.glob("*.template.json"))]
    out = []
    for artifact_id, artifact in json.loads(manifest.read_text()).get("artifacts", {}).items():
        if artifact.get("type") == "aws:cloudformation:stack":
            properties = artifact.get("properties", {})
            out.append((properties.get("stackName", artifact_id), root / properties["templateFile"]))
    return out


def _stem(path: Path) -> str:
    return path.name.removesuffix(".template.json")


_REFERENCES = ("Ref", "Fn::GetAtt", "Fn::ImportValue", "Fn::Select", "Fn::Sub")
"""Intrinsics whose deployed value is estimated (``REFERENCE_CHARS``, else ``TOKEN_ESTIMATE_CHARS``)."""


@dataclass(frozen=True)
class _Context:
    resources: Mapping[str, Any]
    """The template's resources (what a Ref or Fn::GetAtt names)."""
    exports: Exports
    depth: int = 0


_NO_CONTEXT = _Context({}, {})


def _reference_length(fn: str, arg: Any, context: _Context) -> int:
    """The longest value a reference can deploy as: what ``REFERENCE_CHARS`` knows of its target, else
    ``TOKEN_ESTIMATE_CHARS``."""
    known: int | None = None
    if fn == "Ref" and isinstance(arg, str):
        kind = context.resources.get(arg, {}).get("Type") if arg in context.resources else arg
        known = REFERENCE_CHARS.get((str(kind), "Ref"))
    elif fn == "Fn::GetAtt":
        logical, attribute = arg.partition(".")[::2] if isinstance(arg, str) else [*arg, None, None][:2]
        kind = context.resources.get(logical, {}).get("Type") if isinstance(logical, str) else None
        known = REFERENCE_CHARS.get((str(kind), str(attribute)))
    elif fn == "Fn::ImportValue" and isinstance(arg, str) and arg in context.exports and context.depth < 3:
        value, resources = context.exports[arg]
        return _deployed_length(value, _Context(resources, context.exports, context.depth + 1))
    return TOKEN_ESTIMATE_CHARS if known is None else known


def _inline_policy_sizes(template: dict[str, Any], context: _Context = _NO_CONTEXT) -> dict[str, int]:
    """Role (logical id) -> the estimated size of its inline policies (its own ``Policies`` and the AWS::IAM::Policy
    resources attached to it in this template), as compact JSON with references at their estimated length."""
    sizes: dict[str, int] = {}
    resources = template.get("Resources", {})
    for logical, res in resources.items():
        props = res.get("Properties", {})
        if res.get("Type") == "AWS::IAM::Role":
            sizes[logical] = sizes.get(logical, 0) + sum(_compact_length(p.get("PolicyDocument", {}), context)
                                                         for p in props.get("Policies", []))
        elif res.get("Type") == "AWS::IAM::Policy":
            for role in props.get("Roles", []):
                if isinstance(role, dict) and role.get("Ref") in resources:
                    sizes[role["Ref"]] = sizes.get(role["Ref"], 0) + _compact_length(props.get("PolicyDocument", {}),
                                                                                     context)
    return sizes


def _compact_length(document: Any, context: _Context = _NO_CONTEXT) -> int:
    """Characters of ``document`` as compact JSON once deployed (IAM does not count whitespace)."""
    def deployed(value: Any) -> Any:
        if isinstance(value, dict) and len(value) == 1 and next(iter(value)) in (*_REFERENCES, "Fn::Join"):
            return "x" * _deployed_length(value, context)
        if isinstance(value, dict):
            return {k: deployed(v) for k, v in value.items()}
        if isinstance(value, list):
            return [deployed(v) for v in value]
        return value
    return len(json.dumps(deployed(document), separators=(",", ":")))


_USER_DATA_PATHS = {"AWS::EC2::LaunchTemplate": "Properties/LaunchTemplateData/UserData",
                    "AWS::EC2::Instance": "Properties/UserData"}


def _user_data(resource: Mapping[str, Any]) -> Any:
    props = resource.get("Properties", {}) if isinstance(resource, Mapping) else {}
    if resource.get("Type") == "AWS::EC2::LaunchTemplate":
        return props.get("LaunchTemplateData", {}).get("UserData")
    if resource.get("Type") == "AWS::EC2::Instance":
        return props.get("UserData")
    return None


def _is_base64(value: Any) -> bool:
    return isinstance(value, dict) and len(value) == 1 and "Fn::Base64" in value


def _deployed_length(value: Any, context: _Context = _NO_CONTEXT) -> int:
    """The length a template value is estimated to have once deployed (references at their longest; Fn::Base64 as
    the base64 text of its argument)."""
    if isinstance(value, str):
        return len(value)
    if _is_base64(value):
        return 4 * math.ceil(_deployed_length(value["Fn::Base64"], context) / 3)
    if isinstance(value, dict) and "Fn::Join" in value:
        sep, parts = value["Fn::Join"]
        return len(sep) * max(len(parts) - 1, 0) + sum(_deployed_length(p, context) for p in parts)
    if isinstance(value, dict) and len(value) == 1 and next(iter(value)) in _REFERENCES:
        ((fn, arg),) = value.items()
        return _reference_length(fn, arg, context)
    return len(json.dumps(value))
