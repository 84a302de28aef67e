"""CEL text and the objects it goes into: literals, messages, and the ValidatingAdmissionPolicy and its binding.

Expressions stay within portable CEL (no Kubernetes extension libraries, no optional types, no trailing commas), so
the tests evaluate every one of them with cel-python. The policy and binding shapes are the same for every policy
gpustack writes to keep pods in their lane: fail closed, Deny, matched on every kind that carries pod specs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gpustack.names import MANAGED_BY
from gpustack.plan import Object, shared_part, shared_text

API_VERSION = "admissionregistration.k8s.io/v1"
# Set by the API server on every namespace since 1.21 and immutable: a selector on it cannot be forged.
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
REASON = "Forbidden"
OPERATIONS = ["CREATE", "UPDATE"]
# Every kind whose objects carry pod specs, and Volcano's PodGroups, which carry the queue and priority every
# Volcano-scheduled pod runs under (queue_rules.py). Pods are the guarantee; the others fail early and clearly.
RESOURCE_RULES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("", "v1", ("pods", "replicationcontrollers")),
    ("apps", "v1", ("daemonsets", "deployments", "replicasets", "statefulsets")),
    ("batch", "v1", ("cronjobs", "jobs")),
    ("batch.volcano.sh", "v1alpha1", ("jobs",)),
    ("scheduling.volcano.sh", "v1beta1", ("podgroups",)),
    ("jobset.x-k8s.io", "v1alpha2", ("jobsets",)),
    ("leaderworkerset.x-k8s.io", "v1", ("leaderworkersets",)),
)

# An UPDATE that leaves `spec` alone (a controller removing its finalizer, a label change) is never refused, so objects
# admitted under an older blueprint can still be cleaned up; one that changes the spec is checked like a CREATE.
CREATED_OR_SPEC_CHANGED = "request.operation == 'CREATE' || object.spec != oldObject.spec"


# --- CEL literals ---------------------------------------------------------------------------------------------------


def quote_cel(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace("'", "\\'")
    return f"'{escaped}'"


def quote_cel_list(items: Iterable[str]) -> str:
    return "[" + ", ".join(quote_cel(item) for item in items) + "]"


def write_cel_records(records: Sequence[Mapping[str, str]]) -> str:
    """A list of string-to-string maps, one per line: homogeneous, so any CEL type checker accepts it."""
    if not records:
        return "[]"
    # No trailing comma: the CEL grammar allows one, but not every implementation (cel-python) does.
    lines = [
        "  {" + ", ".join(f"{quote_cel(k)}: {quote_cel(v)}" for k, v in record.items()) + "}" for record in records
    ]
    return "[\n" + ",\n".join(lines) + "\n]"


@dataclass(frozen=True)
class Cel:
    """A CEL expression inside a message; every other part of a message is literal text."""

    expression: str


def build_message(*parts: str | Cel) -> str:
    """A messageExpression: literal text and CEL expressions concatenated, the text quoted for CEL."""
    merged: list[str | Cel] = []
    for part in parts:
        last = merged[-1] if merged else None
        if isinstance(part, str) and isinstance(last, str):
            merged[-1] = last + part  # one literal, not 'a' + 'b'
        else:
            merged.append(part)
    return " + ".join(part.expression if isinstance(part, Cel) else quote_cel(part) for part in merged)


def count_more(variable: str, one: str, many: str) -> str:
    """A CEL suffix that counts the findings after the first one, which the message names."""
    count = f"size(variables.{variable}) - 1"
    return (
        f"(size(variables.{variable}) > 1 ? ' (and ' + string({count}) + ' more '"
        f" + ({count} == 1 ? {quote_cel(one)} : {quote_cel(many)}) + ')' : '')"
    )


# --- objects --------------------------------------------------------------------------------------------------------


# Every policy and binding repeats its labels, match constraints and conditions, and a tenant's policy the variables
# and CEL messages of every other tenant's but for its grants: within a compile each distinct part is one object
# (`plan.shared_part`: 502 policies held 12,500 variable mappings of 2,000 distinct values at many-pools 10x).


def build_metadata(name: str) -> dict[str, Any]:
    return {"name": name, "labels": shared_part("cel.labels", lambda: dict(MANAGED_BY))}


def build_match_constraints() -> dict[str, Any]:
    """Every kind that carries pod specs: one object within a compile (a policy that matches more kinds,
    add_podgroup_rule, is given match constraints of its own)."""
    return shared_part("cel.matchConstraints", _match_constraints)


def _match_constraints() -> dict[str, Any]:
    return {
        "resourceRules": [
            {"apiGroups": [group], "apiVersions": [version], "operations": list(OPERATIONS), "resources": list(names)}
            for group, version, names in RESOURCE_RULES
        ]
    }


def _match_conditions() -> list[dict[str, str]]:
    return [{"name": "created-or-spec-changed", "expression": CREATED_OR_SPEC_CHANGED}]


def declare(name: str, expression: str) -> dict[str, str]:
    return shared_part(("cel.declare", name, expression), lambda: {"name": name, "expression": expression})


def build_validation(expression: str, message: str, message_expression: str) -> dict[str, str]:
    # A rule's message names its tenant, its CEL message does not: only the latter repeats across policies.
    return {
        "expression": expression,
        "message": message,
        "messageExpression": shared_text(message_expression),
        "reason": REASON,
    }


def build_policy(name: str, variables: list[dict[str, str]], validations: list[dict[str, str]]) -> Object:
    return {
        "apiVersion": API_VERSION,
        "kind": "ValidatingAdmissionPolicy",
        "metadata": build_metadata(name),
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": build_match_constraints(),
            "matchConditions": shared_part("cel.matchConditions", _match_conditions),
            "variables": variables,
            "validations": validations,
        },
    }


def build_binding(name: str, selector: dict[str, Any]) -> Object:
    return {
        "apiVersion": API_VERSION,
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": build_metadata(name),
        "spec": {
            "policyName": name,
            "validationActions": ["Deny"],
            "matchResources": {"namespaceSelector": selector},
        },
    }


def select_names(operator: str, names: Iterable[str], key: str = NAMESPACE_NAME_LABEL) -> dict[str, Any]:
    return {"key": key, "operator": operator, "values": sorted(set(names))}
