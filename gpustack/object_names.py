"""Kubernetes' own syntax for object names, label keys and values and annotation keys (N1), applied to what a
workload template renders, before anything is written.

A rendered name travels: into file names, the README, `gpustack diff` and the rollout script's step descriptions.
The API server would refuse a name with a line break, a quote or `$(...)` anyway; refusing it at compile time means
no such byte is ever in the plan. The rules are the API server's (k8s.io/apimachinery/pkg/util/validation):

- DNS-1123 subdomain: lowercase letters, digits, '-' and '.', a letter or digit at each end, at most 253 characters
  (most kinds: ConfigMap, Pod, PersistentVolumeClaim, Deployment, StatefulSet, custom resources).
- DNS-1123 label: the same without '.', at most 63.
- DNS-1035 label: a DNS-1123 label that starts with a letter (Service; a JobSet, whose name starts the names of its
  Jobs, Services and pods, which JobSet's webhook checks as DNS-1035 labels).

Where a controller puts the name into a label value or another object's name, the shorter limit it needs applies
(a batch Job's `job-name` label: 63; a CronJob's Jobs add 11 characters: 52), as the API server checks for CronJob.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

from gpustack.plan import Object
from gpustack.template_kinds import at, every_metadata, kind_of, pod_templates

_LABEL_1123 = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_LABEL = re.compile(_LABEL_1123)
DNS1123_SUBDOMAIN = re.compile(rf"{_LABEL_1123}(\.{_LABEL_1123})*")
DNS1035_LABEL = re.compile("[a-z]([-a-z0-9]*[a-z0-9])?")
QUALIFIED_NAME = re.compile("([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
LABEL_VALUE = re.compile("(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
LABEL_MAX = 63
SUBDOMAIN_MAX = 253
ANNOTATIONS_MAX_BYTES = 256 * 1024  # all of one object's annotations together (TotalAnnotationSizeLimitB)


class NameRule(NamedTuple):
    pattern: re.Pattern[str]
    words: str  # what the pattern allows, for the message
    longest: int
    why: str = ""  # where a limit shorter than the pattern's own comes from


SUBDOMAIN = NameRule(
    DNS1123_SUBDOMAIN,
    "a DNS-1123 subdomain: lowercase letters, digits, '-' and '.', starting and ending with a letter or digit",
    SUBDOMAIN_MAX,
)
LABEL_1123 = NameRule(
    DNS1123_LABEL, "a DNS-1123 label: lowercase letters, digits and '-', starting and ending with a letter or digit", 63
)
LABEL_1035 = NameRule(
    DNS1035_LABEL, "a DNS-1035 label: lowercase letters, digits and '-', starting with a letter, ending with either", 63
)
NAME_RULES: dict[tuple[str, str], NameRule] = {
    ("v1", "Service"): LABEL_1035,
    ("jobset.x-k8s.io/v1alpha2", "JobSet"): LABEL_1035._replace(why="its Jobs and pods are named after it"),
    ("batch.volcano.sh/v1alpha1", "Job"): LABEL_1123._replace(why="its pods and Service are named after it"),
    ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet"): LABEL_1123._replace(why="its pods are named after it"),
    ("batch/v1", "Job"): SUBDOMAIN._replace(longest=63, why="the Job controller labels its pods with it"),
    ("batch/v1", "CronJob"): SUBDOMAIN._replace(longest=52, why="its Jobs add an 11-character suffix"),
}
NAME_HINT = (
    "name the object with lowercase letters, digits and '-' (gpustack names a workload's objects after the "
    "workload, `{{ workload.name }}`)"
)
LABEL_HINT = (
    "a key is an optional DNS subdomain prefix and '/', then at most 63 letters, digits, '-', '_' or '.'; "
    "a label value is at most 63 of those, starting and ending with a letter or digit; quote numbers and booleans"
)


def shown(value: Any) -> str:
    """A value as a message may print it: quoted, line breaks and control characters escaped, long text cut."""
    if not isinstance(value, str):
        return shown(repr(value))[1:-1]  # 3, True, None: as written, without quotes
    return repr(value if len(value) <= 64 else value[:61] + "...")


def name_rule(obj: Object) -> NameRule:
    return NAME_RULES.get(kind_of(obj), SUBDOMAIN)


def name_fault(name: str, rule: NameRule, *, prefix: bool = False) -> str | None:
    """Why `name` breaks the rule, or None. A generateName prefix may end in '-' (the API server appends to it)."""
    checked = name[:-1] + "a" if prefix and name.endswith("-") else name
    if len(name) > rule.longest:
        because = f" ({rule.why})" if rule.why else ""
        return f"is {len(name)} characters, more than the {rule.longest} allowed{because}"
    if rule.pattern.fullmatch(checked) is None:
        return f"is not {rule.words}"
    return None


def name_problems(obj: Object) -> list[tuple[str, str]]:
    """metadata.name and metadata.generateName against the rule of the object's kind."""
    metadata = obj.get("metadata")
    metadata = metadata if isinstance(metadata, dict) else {}
    rule = name_rule(obj)
    problems = []
    for field_name in ("name", "generateName"):
        if field_name not in metadata:
            continue
        value = metadata[field_name]
        if not isinstance(value, str):
            problems.append((f"metadata.{field_name} {shown(value)} is not a string", NAME_HINT))
            continue
        fault = name_fault(value, rule, prefix=field_name == "generateName")
        if fault is not None:
            problems.append((f"metadata.{field_name} {shown(value)} {fault}", NAME_HINT))
    return problems


def qualified_name_fault(key: str) -> str | None:
    """Why `key` is not a label or annotation key ([prefix/]name), or None."""
    prefix, slash, name = key.rpartition("/")
    if slash and (not prefix or len(prefix) > SUBDOMAIN_MAX or DNS1123_SUBDOMAIN.fullmatch(prefix) is None):
        return f"has prefix {shown(prefix)}, which is not a DNS-1123 subdomain"
    if len(name) > LABEL_MAX:
        return f"has a name part of {len(name)} characters, more than {LABEL_MAX}"
    if QUALIFIED_NAME.fullmatch(name) is None:
        return "is not a qualified name (letters, digits, '-', '_' and '.', starting and ending with a letter or digit)"
    return None


def label_value_fault(value: Any) -> str | None:
    if not isinstance(value, str):
        return "is not a string (quote it)"
    if len(value) > LABEL_MAX:
        return f"is {len(value)} characters, more than {LABEL_MAX}"
    if LABEL_VALUE.fullmatch(value) is None:
        return "is not a label value (letters, digits, '-', '_' and '.', starting and ending with a letter or digit)"
    return None


def _label_map_problems(where: str, labels: Any) -> list[tuple[str, str]]:
    if labels is None:
        return []
    if not isinstance(labels, dict):
        return [(f"{where} is not a mapping", LABEL_HINT)]
    problems = []
    for key, value in labels.items():
        fault = qualified_name_fault(key) if isinstance(key, str) else "is not a string"
        if fault is not None:
            problems.append((f"{where} key {shown(key)} {fault}", LABEL_HINT))
        fault = label_value_fault(value)
        if fault is not None:
            problems.append((f"{where}[{shown(key)}] value {shown(value)} {fault}", LABEL_HINT))
    return problems


def _annotation_problems(where: str, annotations: Any) -> list[tuple[str, str]]:
    if annotations is None:
        return []
    if not isinstance(annotations, dict):
        return [(f"{where} is not a mapping", LABEL_HINT)]
    problems = []
    size = 0
    for key, value in annotations.items():
        # The API server checks annotation keys in lower case: an upper-case prefix is allowed there.
        fault = qualified_name_fault(key.lower()) if isinstance(key, str) else "is not a string"
        if fault is not None:
            problems.append((f"{where} key {shown(key)} {fault}", LABEL_HINT))
        if not isinstance(value, str):
            problems.append((f"{where}[{shown(key)}] value {shown(value)} is not a string (quote it)", LABEL_HINT))
        size += len(str(key).encode()) + len(str(value).encode())
    if size > ANNOTATIONS_MAX_BYTES:
        problems.append(
            (f"{where} total {size} bytes, more than {ANNOTATIONS_MAX_BYTES}", "keep large data out of annotations")
        )
    return problems


def metadata_problems(obj: Object) -> list[tuple[str, str]]:
    """Labels and annotations of the object and of every template in it, and the label maps that select pods or
    nodes, against Kubernetes' syntax."""
    problems = []
    for where, metadata in every_metadata(obj):
        if metadata is None:
            continue
        if not isinstance(metadata, dict):
            problems.append((f"{where} is not a mapping", LABEL_HINT))
            continue
        problems += _label_map_problems(f"{where}.labels", metadata.get("labels"))
        problems += _annotation_problems(f"{where}.annotations", metadata.get("annotations"))
    spec = obj.get("spec")
    if kind_of(obj) == ("v1", "Service"):
        problems += _label_map_problems("spec.selector", at(spec, "selector"))
    else:
        problems += _label_map_problems("spec.selector.matchLabels", at(spec, "selector", "matchLabels"))
    for template in pod_templates(obj):
        problems += _label_map_problems(f"{template.spec_path}.nodeSelector", at(template.spec, "nodeSelector"))
    return problems
