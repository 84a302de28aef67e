"""Test support: decide admission requests with ValidatingAdmissionPolicies, evaluating their CEL with cel-python.

It follows the API server (k8s.io/apiserver/pkg/admission/plugin/policy/validating) for what gpustack emits:

- a (policy, binding) pair applies when the policy's `matchConstraints` and the binding's `matchResources` both match
  the request: resource rules (group, version, resource, operation; `*` allowed) and namespace/object label
  selectors (matchLabels; In, NotIn, Exists, DoesNotExist);
- `matchConditions` are all evaluated: any false skips the policy; otherwise an error is a failure;
- `variables` are evaluated lazily, once, when first referred to, and may only refer to variables declared before
  them; an error surfaces in the expression that refers to the variable;
- each validation must return a bool; on false, the message is `messageExpression` when it evaluates to a non-empty
  single-line string, else `message`, else "failed expression: ..."; denials read as the API server words them;
- `validationActions: [Deny]` denies, Warn and Audit only report; an error is a failure, which `failurePolicy: Fail`
  turns into a denial.

Activation: `object`, `oldObject` (null on CREATE), `request` (kind, resource, name, namespace, operation, userInfo,
dryRun), `params` (null: no paramKind), `namespaceObject`, `variables`. `authorizer` is not provided.

cel-python lacks the Kubernetes CEL libraries (quantity(), isSorted(), string join, optional types, ...). An expression
it cannot parse or evaluate is reported in `Verdict.not_evaluated` with the reason, NEVER counted as passing: the
request is then neither admitted nor denied by that policy, and tests assert that list is empty. Anything in a policy
or binding this module does not implement (paramKind, excludeResourceRules, ...) raises NotImplementedError rather
than being ignored.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import celpy
from celpy import celtypes
from celpy.evaluation import CELEvalError

Object = Mapping[str, Any]
Field = tuple[str, str]  # (policy name, field path such as spec.validations[1].messageExpression)

# (apiVersion, kind) -> (group, version, resource) for every kind the corpus sends.
RESOURCES: dict[tuple[str, str], tuple[str, str, str]] = {
    ("v1", "Pod"): ("", "v1", "pods"),
    ("v1", "ReplicationController"): ("", "v1", "replicationcontrollers"),
    ("apps/v1", "Deployment"): ("apps", "v1", "deployments"),
    ("apps/v1", "StatefulSet"): ("apps", "v1", "statefulsets"),
    ("apps/v1", "ReplicaSet"): ("apps", "v1", "replicasets"),
    ("apps/v1", "DaemonSet"): ("apps", "v1", "daemonsets"),
    ("batch/v1", "Job"): ("batch", "v1", "jobs"),
    ("batch/v1", "CronJob"): ("batch", "v1", "cronjobs"),
    ("batch.volcano.sh/v1alpha1", "Job"): ("batch.volcano.sh", "v1alpha1", "jobs"),
    ("scheduling.volcano.sh/v1beta1", "PodGroup"): ("scheduling.volcano.sh", "v1beta1", "podgroups"),
    ("scheduling.run.ai/v2alpha2", "PodGroup"): ("scheduling.run.ai", "v2alpha2", "podgroups"),
    ("jobset.x-k8s.io/v1alpha2", "JobSet"): ("jobset.x-k8s.io", "v1alpha2", "jobsets"),
    ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet"): ("leaderworkerset.x-k8s.io", "v1", "leaderworkersets"),
    **{
        (f"resource.k8s.io/{version}", kind): ("resource.k8s.io", version, resource)
        for version in ("v1", "v1beta2", "v1beta1")
        for kind, resource in (("ResourceClaim", "resourceclaims"), ("ResourceClaimTemplate", "resourceclaimtemplates"))
    },
}
POLICY_KEYS = frozenset({"failurePolicy", "matchConstraints", "matchConditions", "variables", "validations"})
MATCH_KEYS = frozenset({"resourceRules", "namespaceSelector", "objectSelector", "matchPolicy"})
BINDING_KEYS = frozenset({"policyName", "validationActions", "matchResources"})


@dataclass(frozen=True)
class Request:
    """One admission request: the object as the API server has it after mutation and defaulting."""

    operation: str  # CREATE or UPDATE
    object: Object
    namespace: Object  # the Namespace object the request is in
    old_object: Object | None = None
    username: str = "tenant-user"

    @property
    def resource(self) -> tuple[str, str, str]:
        key = (str(self.object["apiVersion"]), str(self.object["kind"]))
        if key not in RESOURCES:
            raise NotImplementedError(f"no resource known for {key}")
        return RESOURCES[key]

    def attributes(self) -> dict[str, Any]:
        """The CEL `request` variable (admission.k8s.io/v1 AdmissionRequest, the fields policies read)."""
        group, version, resource = self.resource
        kind = {"group": group, "version": version, "kind": self.object["kind"]}
        return {
            "uid": "00000000-0000-0000-0000-000000000000",
            "kind": kind,
            "resource": {"group": group, "version": version, "resource": resource},
            "requestKind": kind,
            "requestResource": {"group": group, "version": version, "resource": resource},
            "name": self.object["metadata"].get("name", ""),
            "namespace": self.namespace["metadata"]["name"],
            "operation": self.operation,
            "userInfo": {"username": self.username, "groups": ["system:authenticated"]},
            "dryRun": False,
        }


@dataclass
class Verdict:
    denials: list[str] = field(default_factory=list)  # as the API server words them, in evaluation order
    warnings: list[str] = field(default_factory=list)
    not_evaluated: list[str] = field(default_factory=list)  # "policy field: why"; must stay empty
    evaluated: list[Field] = field(default_factory=list)  # every expression evaluated, with repeats

    @property
    def admitted(self) -> bool:
        return not self.denials and not self.not_evaluated


class NotEvaluated(Exception):
    """An expression cel-python could not evaluate (or that returned the wrong type)."""


@functools.cache
def _program(expression: str) -> celpy.Runner | str:
    try:
        environment = celpy.Environment()
        return environment.program(environment.compile(expression))
    except Exception as error:  # a parse error: the expression is not evaluated, not false
        return f"{type(error).__name__}: {_first_line(error)}"


_UNSET = object()


@functools.cache
def _literal(expression: str) -> Any:
    """The value of an expression that names nothing (no identifier: a literal list or map), else _UNSET.

    Such an expression evaluates to the same value every time; evaluating it once keeps cel-python's slow
    interpreter from rebuilding the same per-tenant tables for every request.
    """
    program = _program(expression)
    if isinstance(program, str) or any(token.type == "IDENT" for token in program.ast.scan_values(lambda _: True)):
        return _UNSET
    try:
        value = program.evaluate({})
    except Exception:  # evaluated again in place, where the error is reported
        return _UNSET
    return _UNSET if isinstance(value, CELEvalError) else value


def _first_line(error: BaseException) -> str:
    text = str(error.args[0]) if error.args else str(error)
    return text.split(" (in activation")[0].splitlines()[0] if text else type(error).__name__


class _Scope:
    """Evaluates one policy's expressions for one request, with its variables lazily computed and memoised."""

    def __init__(self, policy: str, variables: Sequence[Mapping[str, str]], base: dict[str, Any], verdict: Verdict):
        self.policy = policy
        self.declared = [(str(v["name"]), str(v["expression"])) for v in variables]
        self.base = base
        self.verdict = verdict
        self.values: dict[str, Any] = {}

    def evaluate(self, field_path: str, expression: str, visible: int | None = None) -> Any:
        """The value, or NotEvaluated. `visible`: how many variables the expression may see (all by default)."""
        self.verdict.evaluated.append((self.policy, field_path))
        program = _program(expression)
        if isinstance(program, str):
            raise NotEvaluated(program)
        literal = _literal(expression)
        if literal is not _UNSET:
            return literal
        activation = dict(self.base)
        activation["variables"] = _LazyVariables(self, len(self.declared) if visible is None else visible)
        try:
            result = program.evaluate(activation)
        except CELEvalError as error:
            raise NotEvaluated(_first_line(error)) from None
        except NotEvaluated:
            raise
        except Exception as error:  # cel-python bug or unsupported feature: still not a pass
            raise NotEvaluated(f"{type(error).__name__}: {_first_line(error)}") from None
        if isinstance(result, CELEvalError):
            raise NotEvaluated(_first_line(result))
        return result

    def variable(self, name: str, visible: int) -> Any:
        names = [declared for declared, _ in self.declared[:visible]]
        if name not in names:
            return CELEvalError(f"undefined variable {name!r} (declared before: {names})", KeyError, None)
        if name not in self.values:
            index = names.index(name)
            try:
                self.values[name] = self.evaluate(f"spec.variables[{index}].expression", self.declared[index][1], index)
            except NotEvaluated as error:
                self.values[name] = CELEvalError(f"variables.{name}: {error}", ValueError, None)
        return self.values[name]


class _LazyVariables(celtypes.MapType):
    """`variables`, computed on first use: `variables.x` is a map lookup to cel-python."""

    def __init__(self, scope: _Scope, visible: int) -> None:
        super().__init__()
        self.scope = scope
        self.visible = visible

    def __getitem__(self, key: Any) -> Any:
        return self.scope.variable(str(key), self.visible)

    def __contains__(self, key: object) -> bool:
        return str(key) in [name for name, _ in self.scope.declared[: self.visible]]


def matches_selector(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """metav1.LabelSelector semantics; an absent or empty selector matches everything."""
    if not selector:
        return True
    unknown = set(selector) - {"matchLabels", "matchExpressions"}
    if unknown:
        raise NotImplementedError(f"label selector fields {sorted(unknown)}")
    if any(labels.get(key) != value for key, value in (selector.get("matchLabels") or {}).items()):
        return False
    for expression in selector.get("matchExpressions") or []:
        key, operator, values = expression["key"], expression["operator"], expression.get("values") or []
        if operator == "In" and not (key in labels and labels[key] in values):
            return False
        if operator == "NotIn" and key in labels and labels[key] in values:
            return False
        if operator == "Exists" and key not in labels:
            return False
        if operator == "DoesNotExist" and key in labels:
            return False
        if operator not in ("In", "NotIn", "Exists", "DoesNotExist"):
            raise NotImplementedError(f"selector operator {operator}")
    return True


def _matches_rules(rules: Sequence[Mapping[str, Any]], request: Request) -> bool:
    group, version, resource = request.resource

    def has(values: Iterable[str], value: str) -> bool:
        values = list(values)
        return "*" in values or value in values

    return any(
        has(rule.get("apiGroups", []), group)
        and has(rule.get("apiVersions", []), version)
        and has(rule.get("resources", []), resource)
        and has(rule.get("operations", []), request.operation)
        for rule in rules
    )


def matches_resources(match: Mapping[str, Any] | None, request: Request, *, rules_required: bool) -> bool:
    """A policy's matchConstraints (rules required) or a binding's matchResources (rules narrow, when given)."""
    match = match or {}
    unknown = set(match) - MATCH_KEYS
    if unknown:
        raise NotImplementedError(f"match fields {sorted(unknown)}")
    if match.get("matchPolicy", "Equivalent") != "Equivalent":
        raise NotImplementedError("matchPolicy Exact")
    rules = match.get("resourceRules")
    if rules_required and not rules:
        return False  # the API server refuses such a policy; it matches nothing
    if rules and not _matches_rules(rules, request):
        return False
    namespace_labels = request.namespace["metadata"].get("labels") or {}
    object_labels = request.object["metadata"].get("labels") or {}
    return matches_selector(match.get("namespaceSelector"), namespace_labels) and matches_selector(
        match.get("objectSelector"), object_labels
    )


def policy_expressions(policy: Object) -> list[tuple[str, str]]:
    """(field path, expression) for every CEL expression in a ValidatingAdmissionPolicy."""
    spec = policy["spec"]
    found = [
        (f"spec.matchConditions[{i}].expression", c["expression"])
        for i, c in enumerate(spec.get("matchConditions", []))
    ]
    found += [(f"spec.variables[{i}].expression", v["expression"]) for i, v in enumerate(spec.get("variables", []))]
    for i, validation in enumerate(spec.get("validations", [])):
        found.append((f"spec.validations[{i}].expression", validation["expression"]))
        if "messageExpression" in validation:
            found.append((f"spec.validations[{i}].messageExpression", validation["messageExpression"]))
    for i, annotation in enumerate(spec.get("auditAnnotations", [])):
        found.append((f"spec.auditAnnotations[{i}].valueExpression", annotation["valueExpression"]))
    return found


class Admission:
    """The policies and bindings of a plan, deciding requests the way the API server's policy plugin does."""

    def __init__(self, objects: Iterable[Object]) -> None:
        objects = list(objects)
        self.policies = {o["metadata"]["name"]: o for o in objects if o["kind"] == "ValidatingAdmissionPolicy"}
        self.bindings = sorted(
            (o for o in objects if o["kind"] == "ValidatingAdmissionPolicyBinding"), key=lambda o: o["metadata"]["name"]
        )
        for policy in self.policies.values():
            unknown = set(policy["spec"]) - POLICY_KEYS
            if unknown:
                raise NotImplementedError(f"policy {policy['metadata']['name']}: {sorted(unknown)}")
        for binding in self.bindings:
            unknown = set(binding["spec"]) - BINDING_KEYS
            if unknown:
                raise NotImplementedError(f"binding {binding['metadata']['name']}: {sorted(unknown)}")

    def expressions(self) -> set[Field]:
        return {(name, path) for name, policy in self.policies.items() for path, _ in policy_expressions(policy)}

    def review(self, request: Request) -> Verdict:
        verdict = Verdict()
        for binding in self.bindings:
            spec = binding["spec"]
            policy = self.policies.get(spec["policyName"])
            if policy is None:
                continue  # a binding to a missing policy enforces nothing
            if not matches_resources(policy["spec"].get("matchConstraints"), request, rules_required=True):
                continue
            if not matches_resources(spec.get("matchResources"), request, rules_required=False):
                continue
            self._apply(policy, binding, request, verdict)
        return verdict

    def _apply(self, policy: Object, binding: Object, request: Request, verdict: Verdict) -> None:
        name = policy["metadata"]["name"]
        spec = policy["spec"]
        base = {
            "object": celpy.json_to_cel(request.object),
            "oldObject": celpy.json_to_cel(request.old_object),
            "request": celpy.json_to_cel(request.attributes()),
            "params": None,
            "namespaceObject": celpy.json_to_cel(request.namespace),
        }
        scope = _Scope(name, spec.get("variables", []), base, verdict)
        actions = binding["spec"]["validationActions"]
        fail = spec.get("failurePolicy", "Fail") == "Fail"
        prefix = f"ValidatingAdmissionPolicy '{name}' with binding '{binding['metadata']['name']}' denied request: "

        def failure(field_path: str, why: str) -> None:
            verdict.not_evaluated.append(f"{name} {field_path}: {why}")
            if fail and "Deny" in actions:
                verdict.denials.append(f"{prefix}not evaluated ({field_path}: {why})")

        outcomes: list[bool | str] = []
        for i, condition in enumerate(spec.get("matchConditions", [])):
            path = f"spec.matchConditions[{i}].expression"
            outcomes.append(self._boolean(scope, path, condition["expression"]))
        if any(outcome is False for outcome in outcomes):
            return
        errors = [(i, o) for i, o in enumerate(outcomes) if isinstance(o, str)]
        if errors:
            for i, why in errors:
                failure(f"spec.matchConditions[{i}].expression", why)
            return
        for i, validation in enumerate(spec.get("validations", [])):
            path = f"spec.validations[{i}].expression"
            outcome = self._boolean(scope, path, validation["expression"])
            if isinstance(outcome, str):
                failure(path, outcome)
                continue
            if outcome:
                continue
            text = self._message(scope, i, validation, verdict)
            if "Deny" in actions:
                verdict.denials.append(prefix + text)
            if "Warn" in actions or "Audit" in actions:
                verdict.warnings.append(text)

    @staticmethod
    def _boolean(scope: _Scope, path: str, expression: str) -> bool | str:
        """True/False, or why it was not evaluated."""
        try:
            result = scope.evaluate(path, expression)
        except NotEvaluated as error:
            return str(error)
        if not isinstance(result, celtypes.BoolType | bool):
            return f"returned {type(result).__name__}, not a bool"
        return bool(result)

    @staticmethod
    def _message(scope: _Scope, index: int, validation: Mapping[str, str], verdict: Verdict) -> str:
        static = validation.get("message") or f"failed expression: {validation['expression'].strip()}"
        if "messageExpression" not in validation:
            return static
        path = f"spec.validations[{index}].messageExpression"
        try:
            result = scope.evaluate(path, validation["messageExpression"])
        except NotEvaluated as error:
            # The API server falls back to the static message; for the tests it is still an expression not evaluated.
            verdict.not_evaluated.append(f"{scope.policy} {path}: {error}")
            return static
        if not isinstance(result, str):
            verdict.not_evaluated.append(f"{scope.policy} {path}: returned {type(result).__name__}, not a string")
            return static
        if not result.strip() or "\n" in result:
            verdict.not_evaluated.append(f"{scope.policy} {path}: empty or multi-line message, discarded")
            return static
        return str(result)
