"""Kubernetes RBAC, evaluated offline: may this subject do this request, given these Roles, ClusterRoles and bindings?

A small pure function over plain manifests (the dicts the kit applies), so tests can ask the questions the review
asked ("may the training service account patch a serving pod?", "may any ClusterRole patch pods?") of the objects the
kit writes, without a cluster. It follows the API server's own RBAC authorizer, rule by rule:

- ``plugin/pkg/auth/authorizer/rbac/rbac.go`` (kubernetes/kubernetes @ 01aa0f3f6052c9866dcb69054d8924fa8c96e3cb):
  ``RuleAllows``: a resource request is allowed by a rule when its verb, API group, resource (``resource/subresource``
  combined) and name all match;
- ``pkg/apis/rbac/v1/evaluation_helpers.go`` (@ 6732d913237bd282d81fe99df860938c5d60480a): ``VerbMatches`` and
  ``APIGroupMatches`` (``*`` or equal), ``ResourceMatches`` (``*``, the combined resource, or ``*/<subresource>``),
  ``ResourceNameMatches`` (an empty ``resourceNames`` matches every name; otherwise the request's name must be listed,
  so a request that carries no name, such as ``create``, ``deletecollection``, or a ``list``/``watch`` without a
  ``metadata.name`` field selector, never matches a rule with ``resourceNames``);
- ``pkg/registry/rbac/validation/rule.go`` (@ 2821f1617e3ce4f4ee17f6d0c770e2abbb5147a5): ``VisitRulesFor``: every
  ClusterRoleBinding, then the RoleBindings of the request's namespace (none for a cluster-scoped request); a
  RoleBinding grants its Role or ClusterRole's rules in its own namespace only; ``appliesToUser``: a User subject by
  name, a Group by the user's groups, a ServiceAccount by ``system:serviceaccount:<ns>:<name>``, its namespace
  defaulting to the binding's.

Non-resource URLs, aggregated ClusterRoles and impersonation are outside it (the kit writes none). RBAC grants only
(there are no deny rules: Kubernetes docs, "Using RBAC Authorization", Role and ClusterRole): a request no rule allows
is refused.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Request", "Subject", "allowed", "allowing_rules", "service_account"]

RBAC_API = "rbac.authorization.k8s.io/v1"
SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"
SERVICE_ACCOUNTS_GROUP = "system:serviceaccounts"


@dataclass(frozen=True)
class Subject:
    """Who asks: a user name and its groups (as the authenticator gives them)."""

    name: str
    groups: tuple[str, ...] = ()


def service_account(namespace: str, name: str) -> Subject:
    """A service account as the API server authenticates it: its user name and the groups every service account,
    and every one of its namespace, belongs to (Kubernetes docs, "Using RBAC Authorization", Referring to subjects)."""
    return Subject(f"{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}",
                   (SERVICE_ACCOUNTS_GROUP, f"{SERVICE_ACCOUNTS_GROUP}:{namespace}", "system:authenticated"))


@dataclass(frozen=True)
class Request:
    """A resource request: ``verb`` (get, list, watch, create, update, patch, delete, deletecollection, ...),
    ``resource`` as in the URL (``pods``, ``deployments``), ``api_group`` ("" for the core group), ``subresource``
    (``scale``, ``log``), ``namespace`` ("" for a cluster-scoped resource or a request across namespaces) and ``name``
    ("" when the request names no object: create, deletecollection, list or watch without a name field selector)."""

    verb: str
    resource: str
    api_group: str = ""
    namespace: str = ""
    name: str = ""
    subresource: str = ""

    @property
    def combined_resource(self) -> str:
        return f"{self.resource}/{self.subresource}" if self.subresource else self.resource


@dataclass(frozen=True)
class _Source:
    binding: str
    rule: Mapping[str, Any]


@dataclass
class _Objects:
    roles: dict[tuple[str, str], Mapping[str, Any]] = field(default_factory=dict)
    cluster_roles: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    role_bindings: list[Mapping[str, Any]] = field(default_factory=list)
    cluster_role_bindings: list[Mapping[str, Any]] = field(default_factory=list)


def _objects(manifests: Iterable[Mapping[str, Any]]) -> _Objects:
    out = _Objects()
    for obj in manifests:
        if not isinstance(obj, Mapping) or obj.get("apiVersion") != RBAC_API:
            continue
        kind, meta = obj.get("kind"), obj.get("metadata") or {}
        name, namespace = str(meta.get("name", "")), str(meta.get("namespace", ""))
        if kind == "Role":
            out.roles[(namespace or "default", name)] = obj
        elif kind == "ClusterRole":
            out.cluster_roles[name] = obj
        elif kind == "RoleBinding":
            out.role_bindings.append(obj)
        elif kind == "ClusterRoleBinding":
            out.cluster_role_bindings.append(obj)
    return out


def _matches(values: Sequence[str] | None, wanted: str, wildcard: str = "*") -> bool:
    return any(v in (wildcard, wanted) for v in values or ())


def _resource_matches(rule: Mapping[str, Any], request: Request) -> bool:
    for resource in rule.get("resources") or ():
        if resource in ("*", request.combined_resource):
            return True
        if request.subresource and resource == f"*/{request.subresource}":
            return True
    return False


def rule_allows(rule: Mapping[str, Any], request: Request) -> bool:
    """``RuleAllows`` for a resource request."""
    names = rule.get("resourceNames") or ()
    return (_matches(rule.get("verbs"), request.verb)
            and _matches(rule.get("apiGroups"), request.api_group)
            and _resource_matches(rule, request)
            and (not names or request.name in names))


def _applies(subject: Subject, subjects: Sequence[Mapping[str, Any]] | None, namespace: str) -> bool:
    for s in subjects or ():
        kind, name = s.get("kind"), s.get("name")
        if kind == "User" and subject.name == name:
            return True
        if kind == "Group" and name in subject.groups:
            return True
        if kind == "ServiceAccount":
            sa_namespace = s.get("namespace") or namespace
            if sa_namespace and subject.name == f"{SERVICE_ACCOUNT_PREFIX}{sa_namespace}:{name}":
                return True
    return False


def _role_rules(objects: _Objects, ref: Mapping[str, Any], namespace: str) -> Sequence[Mapping[str, Any]]:
    kind, name = ref.get("kind"), str(ref.get("name", ""))
    if kind == "Role":
        role = objects.roles.get((namespace, name)) if namespace else None
    elif kind == "ClusterRole":
        role = objects.cluster_roles.get(name)
    else:
        role = None
    return list((role or {}).get("rules") or ())


def allowing_rules(manifests: Iterable[Mapping[str, Any]], subject: Subject, request: Request) -> list[_Source]:
    """Every (binding, rule) that allows ``request`` for ``subject``: the evidence, for a message."""
    objects = _objects(manifests)
    out = []
    for binding in objects.cluster_role_bindings:
        if _applies(subject, binding.get("subjects"), ""):
            for rule in _role_rules(objects, binding.get("roleRef") or {}, ""):
                if rule_allows(rule, request):
                    out.append(_Source(f"ClusterRoleBinding/{binding['metadata']['name']}", rule))
    if request.namespace:
        for binding in objects.role_bindings:
            meta = binding.get("metadata") or {}
            if (meta.get("namespace") or "default") != request.namespace:
                continue
            if _applies(subject, binding.get("subjects"), request.namespace):
                for rule in _role_rules(objects, binding.get("roleRef") or {}, request.namespace):
                    if rule_allows(rule, request):
                        out.append(_Source(f"RoleBinding/{request.namespace}/{meta.get('name')}", rule))
    return out


def allowed(manifests: Iterable[Mapping[str, Any]], subject: Subject, request: Request) -> bool:
    """Whether the RBAC objects among ``manifests`` allow ``subject`` to make ``request``."""
    return bool(allowing_rules(manifests, subject, request))
