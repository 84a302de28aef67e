"""Test support: check generated objects against real Kubernetes schemas, upstream CRDs and apiserver rules.

Core kinds are validated against kubernetes-validate's bundled JSON schemas in STRICT mode (an unknown field is
an error, the way `kubectl apply --validate=strict` treats it). kubernetes-validate's own `validate()` is not used:
it re-reads the 1.8 MB definitions file on every call and stops at the first error. Instead one
`Draft202012Validator` is built per (version, apiVersion, kind), cached, and asked for every error.

CRD kinds (`*.volcano.sh`, `*.x-k8s.io`) never go to kubernetes-validate: from 1.37 on it would map a Volcano
PodGroup onto the core scheduling.k8s.io PodGroup schema and fail it. They are checked against the upstream CRD
files in ../shared/conformance/crds, converted to JSON Schema (nullable, strict additionalProperties, typed
metadata, pinned apiVersion/kind), with their `x-kubernetes-validations` CEL rules evaluated by cel-python. A
rule cel-python cannot evaluate (Kubernetes' CEL libraries such as quantity() are missing) is reported as
"not evaluated", never counted as passing.

The bundled schemas carry no enums and none of the apiserver's Go validation, so `apiserver_errors` adds the
rules gpustack's output depends on: names, label syntax, namespace scope, toleration and node-selector
operators, and extended resources (requests == limits, whole numbers).

Public API: `core_errors`, `crd_errors`, `validate_any`, `apiserver_errors`, `bundled_versions`,
`newest_version`, `needs_crd`, `crds_available`, `skip_without_crds`, `crd_file_for`. Each returns human-readable
error strings `Kind/name $.json.path: message`, all of them, sorted; an empty list means valid.

Without the CRD folder (a plain clone), `validate_any` and `crd_errors` skip the calling test when an object needs a
CRD, saying which folder is missing, so no test fails for want of upstream data (with CI set, conftest refuses the
run instead).
"""

from __future__ import annotations

import contextlib
import copy
import functools
import json
import re
from collections.abc import Iterator, Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import celpy
import jsonschema
import pytest
import yaml
from celpy import celtypes
from celpy.evaluation import CELEvalError
from conftest import CONFORMANCE, CONFORMANCE_FOLDER, missing_reference
from referencing import Registry, Resource

CRD_DIR = CONFORMANCE / "crds"
# API groups served by CRDs gpustack targets; objects in these groups are validated against CRD files only.
CRD_GROUP_SUFFIXES = (".volcano.sh", ".x-k8s.io", ".run.ai", "kai.scheduler")

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS_1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
WHOLE_NUMBER = re.compile(r"^\+?[0-9]+$")

# Scope of the core kinds gpustack (or its helpers) emit. Kinds not listed get no scope check.
CLUSTER_SCOPED = frozenset(
    {
        "Namespace",
        "Node",
        "PriorityClass",
        "RuntimeClass",
        "DeviceClass",
        "ClusterRole",
        "ClusterRoleBinding",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
        "MutatingAdmissionPolicy",
        "MutatingAdmissionPolicyBinding",
        "CustomResourceDefinition",
        "StorageClass",
        "PersistentVolume",
    }
)
NAMESPACED = frozenset(
    {
        "Pod",
        "Deployment",
        "StatefulSet",
        "DaemonSet",
        "ReplicaSet",
        "Job",
        "CronJob",
        "Service",
        "ConfigMap",
        "Secret",
        "ServiceAccount",
        "ResourceQuota",
        "LimitRange",
        "Role",
        "RoleBinding",
        "NetworkPolicy",
        "PodDisruptionBudget",
        "ResourceClaimTemplate",
    }
)
# Where each workload kind keeps its pod specs.
POD_SPEC_PATHS: dict[str, tuple[tuple[str | int, ...], ...]] = {
    "Pod": (("spec",),),
    "Deployment": (("spec", "template", "spec"),),
    "StatefulSet": (("spec", "template", "spec"),),
    "DaemonSet": (("spec", "template", "spec"),),
    "ReplicaSet": (("spec", "template", "spec"),),
    "Job": (("spec", "template", "spec"),),
    "CronJob": (("spec", "jobTemplate", "spec", "template", "spec"),),
}
NATIVE_RESOURCES = frozenset({"cpu", "memory", "ephemeral-storage", "storage"})
TOLERATION_OPERATORS = frozenset({"Equal", "Exists"})
TAINT_EFFECTS = frozenset({"NoSchedule", "PreferNoSchedule", "NoExecute"})
SELECTOR_OPERATORS = frozenset({"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"})

Object = Mapping[str, Any]
Where = tuple[str | int, ...]


# --- shared formatting --------------------------------------------------------------------------------------------


def _json_path(path: Where) -> str:
    out = "$"
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", part):
            out += f".{part}"
        else:
            out += f"[{part!r}]"
    return out


def _who(obj: Object) -> str:
    metadata = obj.get("metadata") if isinstance(obj, Mapping) else None
    name = metadata.get("name") if isinstance(metadata, Mapping) else None
    kind = obj.get("kind") if isinstance(obj, Mapping) else None
    return f"{kind or '<no kind>'}/{name or '<no name>'}"


def _error(obj: Object, path: Where, message: str) -> str:
    return f"{_who(obj)} {_json_path(path)}: {message}"


def _split_api_version(obj: Object) -> tuple[str, str] | None:
    api_version = obj.get("apiVersion") if isinstance(obj, Mapping) else None
    if not isinstance(api_version, str) or not isinstance(obj.get("kind"), str):
        return None
    group, _, version = api_version.rpartition("/")
    return group, version


def _is_crd_group(group: str) -> bool:
    return group.endswith(CRD_GROUP_SUFFIXES)


def needs_crd(obj: Object) -> bool:
    """Whether `obj` is served by a CRD (Volcano, Kueue, JobSet, LeaderWorkerSet...), so only its CRD file checks it."""
    parsed = _split_api_version(obj)
    return parsed is not None and _is_crd_group(parsed[0])


# --- core kinds: kubernetes-validate's bundled schemas --------------------------------------------------------------


def _schema_root() -> Path:
    return Path(str(resources.files("kubernetes_validate") / "kubernetes-json-schema"))


def _minor(version: str) -> tuple[int, int]:
    major, minor = version.lstrip("v").split(".")[:2]
    return int(major), int(minor)


@functools.cache
def bundled_versions() -> tuple[str, ...]:
    """Kubernetes minor versions ("1.31") with strict schemas bundled, oldest first."""
    found = {
        ".".join(map(str, _minor(entry.name.split("-")[0])))
        for entry in _schema_root().iterdir()
        if entry.name.endswith("-local-strict")
    }
    return tuple(sorted(found, key=_minor))


def newest_version() -> str:
    return bundled_versions()[-1]


def _schema_dir(version: str) -> Path | str:
    """The strict schema directory for `version` (newest bundled one not newer), or why there is none."""
    try:
        wanted = _minor(version)
    except ValueError:
        return f"'{version}' is not a Kubernetes version like 1.31"
    candidates = [v for v in bundled_versions() if _minor(v) <= wanted]
    if wanted > _minor(newest_version()):
        return f"Kubernetes {version} is newer than the newest bundled schemas ({newest_version()})"
    if not candidates:
        return f"Kubernetes {version} is older than the oldest bundled schemas ({bundled_versions()[0]})"
    return _schema_root() / f"v{candidates[-1]}.0-local-strict"


@functools.cache
def _definitions(schema_dir: Path) -> Registry:
    contents = json.loads((schema_dir / "_definitions.json").read_text())
    return Registry().with_resource(contents["$id"], Resource.from_contents(contents))


@functools.cache
def _core_validator(schema_dir: Path, group: str, version: str, kind: str) -> jsonschema.Draft202012Validator | None:
    prefix = f"{group.split('.')[0]}-" if group else ""
    path = schema_dir / f"{kind.lower()}-{prefix}{version}.json"
    if not path.is_file():
        return None
    schema = json.loads(path.read_text())
    # The file name drops the group's domain, so `scheduling.volcano.sh/v1beta1 PodGroup` would land on the core
    # `scheduling.k8s.io` PodGroup: only accept a schema that declares exactly this group/version/kind.
    gvks = schema.get("x-kubernetes-group-version-kind", [])
    if {"group": group, "version": version, "kind": kind} not in gvks:
        return None
    return jsonschema.Draft202012Validator(schema, registry=_definitions(schema_dir))


def _schema_errors(obj: Object, validator: jsonschema.Draft202012Validator) -> list[str]:
    errors = [_error(obj, tuple(e.absolute_path), e.message) for e in validator.iter_errors(obj)]
    return sorted(set(errors))


def core_errors(obj: Object, version: str) -> list[str]:
    """Every error of a core-kind object against the strict Kubernetes `version` schema."""
    parsed = _split_api_version(obj)
    if parsed is None:
        return [_error(obj, (), "apiVersion and kind must be strings")]
    group, api = parsed
    if _is_crd_group(group):
        return [_error(obj, ("apiVersion",), f"{obj['apiVersion']} is served by a CRD: validate it with crd_errors")]
    schema_dir = _schema_dir(version)
    if isinstance(schema_dir, str):
        return [_error(obj, (), schema_dir)]
    validator = _core_validator(schema_dir, group, api, obj["kind"])
    if validator is None:
        return [
            _error(
                obj, ("kind",), f"unknown kind: no Kubernetes {version} schema for {obj['apiVersion']} {obj['kind']}"
            )
        ]
    return _schema_errors(obj, validator)


# --- CRD kinds: upstream CRD files, converted, plus their CEL rules ------------------------------------------------


def crds_available() -> bool:
    return CRD_DIR.is_dir()


def skip_without_crds() -> None:
    """Skip the calling test when the shared conformance CRDs are not beside the repository."""
    if not crds_available():
        pytest.skip(
            missing_reference(
                "The custom resource definitions of Kueue, Volcano, JobSet, LeaderWorkerSet and the GPU Operator",
                "the objects gpustack writes for them against their real schemas",
                f"{CONFORMANCE_FOLDER}/crds",
            )
        )


def _crd_path(crd_file: str | Path) -> Path:
    path = Path(crd_file)
    return path if path.is_absolute() or path.exists() else CRD_DIR / path


@functools.cache
def _load_crd(path: Path) -> dict[str, Any]:
    return yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


@functools.cache
def _crd_index() -> dict[tuple[str, str], Path]:
    """(group, kind) -> CRD file, for every CRD in the shared conformance directory."""
    index: dict[tuple[str, str], Path] = {}
    if crds_available():
        for path in sorted(CRD_DIR.glob("*.yaml")):
            crd = _load_crd(path)
            index[(crd["spec"]["group"], crd["spec"]["names"]["kind"])] = path
    return index


def crd_file_for(api_version: str, kind: str) -> Path | None:
    group = api_version.rpartition("/")[0]
    return _crd_index().get((group, kind))


_METADATA_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["name"],
    "properties": {
        "name": {"type": "string", "maxLength": 253},
        "generateName": {"type": "string"},
        "namespace": {"type": "string", "maxLength": 63},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
        "finalizers": {"type": "array", "items": {"type": "string"}},
        "ownerReferences": {"type": "array", "items": {"type": "object"}},
        "uid": {"type": "string"},
        "resourceVersion": {"type": "string"},
        "generation": {"type": "integer"},
        "creationTimestamp": {"type": ["string", "null"]},
        "deletionTimestamp": {"type": ["string", "null"]},
        "deletionGracePeriodSeconds": {"type": "integer"},
        "managedFields": {"type": "array"},
        "selfLink": {"type": "string"},
    },
    "additionalProperties": False,
}


def _convert(node: Mapping[str, Any]) -> dict[str, Any]:
    """One OpenAPI v3 (structural) schema node as a strict JSON Schema 2020-12 node."""
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "properties":
            out[key] = {name: _convert(child) for name, child in value.items()}
        elif key in ("items", "not") and isinstance(value, Mapping):
            out[key] = _convert(value)
        elif key == "additionalProperties":
            out[key] = _convert(value) if isinstance(value, Mapping) else value
        elif key in ("anyOf", "allOf", "oneOf"):
            out[key] = [_convert(child) for child in value]
        elif key in ("exclusiveMinimum", "exclusiveMaximum") and isinstance(value, bool):
            # OpenAPI 3.0 spells exclusive bounds as a flag beside minimum/maximum; 2020-12 wants the number.
            bound = "minimum" if key == "exclusiveMinimum" else "maximum"
            if value and bound in node:
                out[key] = node[bound]
        elif key == "nullable" or key.startswith("x-kubernetes-"):
            continue
        else:
            out[key] = value
    if node.get("exclusiveMinimum") is True:
        out.pop("minimum", None)
    if node.get("exclusiveMaximum") is True:
        out.pop("maximum", None)
    if node.get("x-kubernetes-int-or-string") and "anyOf" not in node and "type" not in node:
        out["type"] = ["integer", "string"]
    if node.get("x-kubernetes-list-type") == "set":
        out["uniqueItems"] = True
    preserve = node.get("x-kubernetes-preserve-unknown-fields") is True
    if not preserve and "additionalProperties" not in node and ("properties" in node or node.get("type") == "object"):
        # Strict: the apiserver prunes (or, with --validate=strict, rejects) fields the schema does not name; an
        # object schema with no properties at all keeps nothing.
        out["additionalProperties"] = False
    if node.get("nullable") is True:
        if isinstance(out.get("type"), str):
            out["type"] = [out["type"], "null"]
        elif "type" not in out:
            out = {"anyOf": [out, {"type": "null"}]}
    return out


@functools.cache
def _crd_version(path: Path, group: str, version: str, kind: str) -> dict[str, Any] | str:
    crd = _load_crd(path)
    spec = crd["spec"]
    if spec["group"] != group or spec["names"]["kind"] != kind:
        return f"{path.name} defines {spec['group']} {spec['names']['kind']}, not {group} {kind}"
    for entry in spec["versions"]:
        if entry["name"] == version:
            if not entry.get("served", False):
                return f"{group}/{version} {kind} is not served by {path.name}"
            return entry
    served = ", ".join(v["name"] for v in spec["versions"] if v.get("served"))
    return f"{path.name} has no version {version} of {kind} (served: {served})"


@functools.cache
def _crd_validator(path: Path, group: str, version: str, kind: str) -> jsonschema.Draft202012Validator:
    entry = _crd_version(path, group, version, kind)
    assert isinstance(entry, dict)
    schema = _convert(entry["schema"]["openAPIV3Schema"])
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema.setdefault("properties", {})
    schema["properties"]["apiVersion"] = {"const": f"{group}/{version}"}
    schema["properties"]["kind"] = {"const": kind}
    schema["properties"]["metadata"] = copy.deepcopy(_METADATA_SCHEMA)
    schema["required"] = sorted({*schema.get("required", []), "apiVersion", "kind", "metadata"})
    schema["additionalProperties"] = False
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@functools.cache
def _cel_program(rule: str) -> celpy.Runner | str:
    try:
        env = celpy.Environment()
        return env.program(env.compile(rule))
    except Exception as error:  # a parse error is a rule we cannot evaluate, not a failure of the object
        return _short(error)


def _short(error: BaseException) -> str:
    text = str(error.args[0]) if error.args else str(error)
    return f"{type(error).__name__}: {text.split(' (in activation')[0]}"


def _evaluate(rule: str, value: Any) -> bool | str:
    """True/False, or why the rule could not be evaluated."""
    program = _cel_program(rule)
    if isinstance(program, str):
        return program
    try:
        result = program.evaluate({"self": celpy.json_to_cel(value)})
    except Exception as error:
        return _short(error)
    if isinstance(result, CELEvalError):
        return _short(result)
    if isinstance(result, celtypes.BoolType):
        return bool(result)
    return f"rule returned {type(result).__name__}, not a bool"


def _cel_rule_errors(obj: Object, rule: Mapping[str, Any], value: Any, path: Where) -> Iterator[str]:
    text = rule["rule"]
    if re.search(r"\boldSelf\b", text):
        return  # a transition rule: the apiserver evaluates it only on update, never on create
    where = (*path, *[p for p in str(rule.get("fieldPath", "")).split(".") if p])
    outcome = _evaluate(text, value)
    if outcome is True:
        return
    if outcome is False:
        message = rule.get("message")
        if "messageExpression" in rule:
            program = _cel_program(rule["messageExpression"])
            if not isinstance(program, str):
                with contextlib.suppress(Exception):  # fall back to the static message
                    message = str(program.evaluate({"self": celpy.json_to_cel(value)}))
        yield _error(obj, where, f"{message or 'failed rule: ' + text} (CEL rule)")
        return
    yield _error(obj, where, f"CEL rule not evaluated ({outcome}): {text}")


def _list_map_errors(obj: Object, schema: Mapping[str, Any], value: list[Any], path: Where) -> Iterator[str]:
    keys = schema.get("x-kubernetes-list-map-keys") or []
    seen: dict[tuple[Any, ...], int] = {}
    for index, item in enumerate(value):
        if not isinstance(item, Mapping):
            continue
        key = tuple(json.dumps(item.get(k), sort_keys=True) for k in keys)
        if key in seen:
            names = ", ".join(f"{k}={item.get(k)!r}" for k in keys)
            yield _error(obj, (*path, index), f"duplicate entry ({names}); first at index {seen[key]}")
        seen.setdefault(key, index)


def _structural_errors(obj: Object, schema: Mapping[str, Any], value: Any, path: Where) -> Iterator[str]:
    """CEL rules and list-map keys, evaluated wherever the object has a value (the apiserver's rule scoping)."""
    if not isinstance(schema, Mapping) or value is None:
        return
    for rule in schema.get("x-kubernetes-validations", ()):
        yield from _cel_rule_errors(obj, rule, value, path)
    if isinstance(value, list):
        if schema.get("x-kubernetes-list-type") == "map":
            yield from _list_map_errors(obj, schema, value, path)
        items = schema.get("items")
        if isinstance(items, Mapping):
            for index, item in enumerate(value):
                yield from _structural_errors(obj, items, item, (*path, index))
    elif isinstance(value, Mapping):
        properties = schema.get("properties", {})
        extra = schema.get("additionalProperties")
        for key, child in value.items():
            if key in properties:
                yield from _structural_errors(obj, properties[key], child, (*path, key))
            elif isinstance(extra, Mapping):
                yield from _structural_errors(obj, extra, child, (*path, key))


def _scope_errors(obj: Object, namespaced: bool) -> list[str]:
    metadata = obj.get("metadata")
    if not isinstance(metadata, Mapping):
        return []
    if namespaced and not metadata.get("namespace"):
        return [_error(obj, ("metadata",), f"{obj['kind']} is namespaced: set metadata.namespace")]
    if not namespaced and "namespace" in metadata:
        return [_error(obj, ("metadata", "namespace"), f"{obj['kind']} is cluster-scoped: it has no namespace")]
    return []


def crd_errors(obj: Object, crd_file: str | Path) -> list[str]:
    """Every error of `obj` against an upstream CRD (a file name in ../shared/conformance/crds, or a path)."""
    parsed = _split_api_version(obj)
    if parsed is None:
        return [_error(obj, (), "apiVersion and kind must be strings")]
    path = _crd_path(crd_file)
    if path.is_relative_to(CRD_DIR):
        skip_without_crds()  # a file named in the CRD folder, which a plain clone does not have
    if not path.is_file():
        return [_error(obj, (), f"CRD file {path} not found")]
    group, version = parsed
    entry = _crd_version(path, group, version, obj["kind"])
    if isinstance(entry, str):
        return [_error(obj, ("apiVersion",), entry)]
    errors = _schema_errors(obj, _crd_validator(path, group, version, obj["kind"]))
    errors += _structural_errors(obj, entry["schema"]["openAPIV3Schema"], obj, ())
    errors += _scope_errors(obj, _load_crd(path)["spec"]["scope"] == "Namespaced")
    return sorted(set(errors))


# --- rules the apiserver enforces in Go, which no schema carries -----------------------------------------------------


def _get(obj: Any, path: Where) -> Any:
    for part in path:
        if isinstance(part, int):
            if not isinstance(obj, list) or part >= len(obj):
                return None
            obj = obj[part]
        else:
            if not isinstance(obj, Mapping):
                return None
            obj = obj.get(part)
    return obj


def _is_qualified_name(key: str) -> bool:
    prefix, _, name = key.rpartition("/")
    if prefix and (len(prefix) > 253 or not DNS_SUBDOMAIN.match(prefix)):
        return False
    return len(name) <= 63 and bool(QUALIFIED_NAME.match(name))


def _metadata_errors(obj: Object) -> Iterator[str]:
    metadata = obj.get("metadata")
    if not isinstance(metadata, Mapping):
        yield _error(obj, ("metadata",), "metadata is required")
        return
    name = metadata.get("name")
    kind = obj.get("kind")
    if isinstance(name, str):
        # Services and Namespaces become DNS names; everything else is a DNS subdomain.
        pattern, limit, what = {
            "Service": (DNS_1035_LABEL, 63, "a DNS-1035 label"),
            "Namespace": (DNS_LABEL, 63, "a DNS-1123 label"),
        }.get(str(kind), (DNS_SUBDOMAIN, 253, "a DNS-1123 subdomain"))
        if len(name) > limit or not pattern.match(name):
            yield _error(obj, ("metadata", "name"), f"{name!r} is not {what}")
    namespace = metadata.get("namespace")
    if isinstance(namespace, str) and (len(namespace) > 63 or not DNS_LABEL.match(namespace)):
        yield _error(obj, ("metadata", "namespace"), f"{namespace!r} is not a DNS-1123 label")
    yield from _label_errors(obj, ("metadata", "labels"), metadata.get("labels"))


def _label_errors(obj: Object, path: Where, labels: Any) -> Iterator[str]:
    if not isinstance(labels, Mapping):
        return
    for key, value in labels.items():
        if not isinstance(key, str) or not _is_qualified_name(key):
            yield _error(obj, (*path, str(key)), f"label key {key!r} is not a qualified name")
        if not isinstance(value, str):
            yield _error(obj, (*path, str(key)), f"label value {value!r} must be a string")
        elif len(value) > 63 or not LABEL_VALUE.match(value):
            yield _error(obj, (*path, str(key)), f"label value {value!r} is not a valid label value")


def _pod_spec_paths(obj: Object) -> list[Where]:
    kind = str(obj.get("kind"))
    group = (_split_api_version(obj) or ("", ""))[0]
    if group == "batch.volcano.sh" and kind == "Job":
        tasks = _get(obj, ("spec", "tasks"))
        return [("spec", "tasks", i, "template", "spec") for i in range(len(tasks) if isinstance(tasks, list) else 0)]
    if _is_crd_group(group):
        return []
    return [path for path in POD_SPEC_PATHS.get(kind, ()) if isinstance(_get(obj, path), Mapping)]


def _toleration_errors(obj: Object, path: Where, tolerations: Any) -> Iterator[str]:
    for index, toleration in enumerate(tolerations if isinstance(tolerations, list) else ()):
        where = (*path, index)
        if not isinstance(toleration, Mapping):
            continue
        operator = toleration.get("operator", "Equal")
        if operator not in TOLERATION_OPERATORS:
            yield _error(obj, (*where, "operator"), f"unsupported operator {operator!r} (Equal or Exists)")
        effect = toleration.get("effect", "")
        if effect and effect not in TAINT_EFFECTS:
            yield _error(obj, (*where, "effect"), f"unsupported effect {effect!r} ({', '.join(sorted(TAINT_EFFECTS))})")
        if operator == "Exists" and toleration.get("value"):
            yield _error(obj, (*where, "value"), "value must be empty when operator is Exists")
        if not toleration.get("key") and operator != "Exists":
            yield _error(obj, (*where, "operator"), "operator must be Exists when key is empty")


def _expression_errors(obj: Object, path: Where, expressions: Any) -> Iterator[str]:
    for index, expression in enumerate(expressions if isinstance(expressions, list) else ()):
        if not isinstance(expression, Mapping):
            continue
        where = (*path, index)
        operator = expression.get("operator")
        values = expression.get("values") or []
        if operator not in SELECTOR_OPERATORS:
            yield _error(obj, (*where, "operator"), f"unsupported operator {operator!r}")
        elif operator in ("In", "NotIn") and not values:
            yield _error(obj, (*where, "values"), f"operator {operator} needs at least one value")
        elif operator in ("Exists", "DoesNotExist") and values:
            yield _error(obj, (*where, "values"), f"operator {operator} takes no values")
        if isinstance(expression.get("key"), str) and not _is_qualified_name(expression["key"]):
            yield _error(obj, (*where, "key"), f"{expression['key']!r} is not a qualified label key")


def _affinity_errors(obj: Object, path: Where, affinity: Any) -> Iterator[str]:
    node = _get(affinity, ("nodeAffinity",))
    if not isinstance(node, Mapping):
        return
    base = (*path, "nodeAffinity")
    required = _get(node, ("requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms"))
    for index, term in enumerate(required if isinstance(required, list) else ()):
        where = (*base, "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms", index)
        yield from _expression_errors(obj, (*where, "matchExpressions"), _get(term, ("matchExpressions",)))
    preferred = node.get("preferredDuringSchedulingIgnoredDuringExecution")
    for index, term in enumerate(preferred if isinstance(preferred, list) else ()):
        where = (*base, "preferredDuringSchedulingIgnoredDuringExecution", index)
        weight = _get(term, ("weight",))
        if not isinstance(weight, int) or not 1 <= weight <= 100:
            yield _error(obj, (*where, "weight"), f"weight {weight!r} must be in 1..100")
        yield from _expression_errors(
            obj, (*where, "preference", "matchExpressions"), _get(term, ("preference", "matchExpressions"))
        )


def _is_extended(resource: str) -> bool:
    return resource not in NATIVE_RESOURCES and not resource.startswith(("hugepages-", "kubernetes.io/"))


def _resource_errors(obj: Object, path: Where, resources_: Any) -> Iterator[str]:
    if not isinstance(resources_, Mapping):
        return
    requests = resources_.get("requests") or {}
    limits = resources_.get("limits") or {}
    for resource in sorted({*requests, *limits}):
        if not _is_extended(resource):
            continue
        request, limit = requests.get(resource), limits.get(resource)
        if limit is None:
            yield _error(obj, (*path, "limits"), f"{resource}: limit must be set for an extended resource")
        elif request is not None and str(request) != str(limit):
            yield _error(
                obj, (*path, "requests", resource), f"must equal its limit ({limit!r}) for an extended resource"
            )
        for where, amount in (("requests", request), ("limits", limit)):
            if amount is not None and not WHOLE_NUMBER.match(str(amount)):
                yield _error(obj, (*path, where, resource), f"{amount!r}: an extended resource must be a whole number")


def _pod_spec_errors(obj: Object, path: Where, spec: Mapping[str, Any]) -> Iterator[str]:
    yield from _toleration_errors(obj, (*path, "tolerations"), spec.get("tolerations"))
    yield from _affinity_errors(obj, (*path, "affinity"), spec.get("affinity"))
    names: set[str] = set()
    for group in ("initContainers", "containers"):
        containers = spec.get(group)
        for index, container in enumerate(containers if isinstance(containers, list) else ()):
            if not isinstance(container, Mapping):
                continue
            where = (*path, group, index)
            name = container.get("name")
            if isinstance(name, str):
                if len(name) > 63 or not DNS_LABEL.match(name):
                    yield _error(obj, (*where, "name"), f"{name!r} is not a DNS-1123 label")
                if name in names:
                    yield _error(obj, (*where, "name"), f"duplicate container name {name!r}")
                names.add(name)
            yield from _resource_errors(obj, (*where, "resources"), container.get("resources"))
    if _split_api_version(obj) == ("batch", "v1") and spec.get("restartPolicy") not in ("Never", "OnFailure"):
        yield _error(obj, (*path, "restartPolicy"), "a Job's pods must restart Never or OnFailure")


def apiserver_errors(obj: Object) -> list[str]:
    """Rules the apiserver enforces in Go code (names, labels, scope, pod specs) that no JSON schema carries."""
    errors = list(_metadata_errors(obj))
    kind = str(obj.get("kind"))
    group = (_split_api_version(obj) or ("", ""))[0]
    if not _is_crd_group(group) and kind in CLUSTER_SCOPED | NAMESPACED:
        errors += _scope_errors(obj, kind in NAMESPACED)
    for path in _pod_spec_paths(obj):
        spec = _get(obj, path)
        if isinstance(spec, Mapping):
            errors += _pod_spec_errors(obj, path, spec)
            errors += _label_errors(
                obj, (*path[:-1], "metadata", "labels"), _get(obj, (*path[:-1], "metadata", "labels"))
            )
    return sorted(set(errors))


# --- dispatch ------------------------------------------------------------------------------------------------------


def validate_any(obj: Object, version: str) -> list[str]:
    """Every error of any object gpustack may emit: CRD kinds against their CRD, core kinds against `version`."""
    parsed = _split_api_version(obj)
    if parsed is None:
        return [_error(obj, (), "apiVersion and kind must be strings")]
    group, _ = parsed
    if _is_crd_group(group):
        skip_without_crds()
        path = crd_file_for(obj["apiVersion"], obj["kind"])
        if path is None:
            return [_error(obj, ("kind",), f"unknown kind: no CRD for {group} {obj['kind']} in {CRD_DIR}")]
        errors = crd_errors(obj, path)
    else:
        errors = core_errors(obj, version)
    return sorted({*errors, *apiserver_errors(obj)})
