"""What compile produces: plain-data Kubernetes objects, Helm releases and text artefacts, in apply order."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from gpustack.diagnostic import Diagnostic

Object = dict[str, Any]


@dataclass(frozen=True)
class Manifest:
    """One Kubernetes object and the file (relative to the output directory) it is written to."""

    family: str  # output family: namespaces, cluster, device-plugin, mig, nodes, tenants, workloads, ...
    file: str
    obj: Object

    @property
    def kind(self) -> str:
        return str(self.obj["kind"])

    @property
    def name(self) -> str:
        return str(self.obj["metadata"]["name"])

    @property
    def namespace(self) -> str | None:
        namespace = self.obj["metadata"].get("namespace")
        return None if namespace is None else str(namespace)

    @cached_property  # asked for many times per object by review; an object is not changed once in a Manifest
    def key(self) -> str:
        """apiVersion/kind/namespace/name: unique within a plan."""
        obj = self.obj
        metadata = obj["metadata"]
        return f"{obj['apiVersion']}/{obj['kind']}/{metadata.get('namespace') or ''}/{metadata['name']}"


OCI_SCHEME = "oci://"


@dataclass(frozen=True)
class HelmRelease:
    name: str
    chart: str
    repository: str  # an HTTP(S) chart repository, or an OCI registry path (oci://...) that holds the chart
    version: str
    namespace: str
    values: Object
    values_file: str  # where `gpustack compile` writes the values, relative to the output directory
    needs_hooks: bool = False
    """The chart cannot install without its Helm hooks (`helm.sh/hook` resources): e.g. a pre-install job that
    generates the admission webhook's certificate. `helm upgrade --install` runs hooks; Pulumi's helm/v4 Chart
    skips them (pulumi-kubernetes #3284), so deploy.py installs such a release as a helm/v3 Release, which runs
    Helm itself. Not written to any compiled file."""

    skip_openapi_validation: bool = False
    """Helm must not validate the rendered objects against the cluster's OpenAPI schema: the GPU Operator chart's
    CRD-upgrade hook needs `--disable-openapi-validation` on `helm upgrade` (its values.yaml, operator.upgradeCRD)."""

    @property
    def oci(self) -> bool:
        """The chart is an OCI artifact: helm and Pulumi take its full reference, with no repository to add."""
        return self.repository.startswith(OCI_SCHEME)

    @property
    def chart_ref(self) -> str:
        """What `helm install` and Pulumi's Chart take as the chart: `oci://registry/path/chart` for an OCI chart,
        else the chart's name in `repository`."""
        return f"{self.repository.rstrip('/')}/{self.chart}" if self.oci else self.chart


@dataclass(frozen=True)
class Artifact:
    """A text file that is not a Kubernetes object: a script, a kubelet config fragment, notes."""

    path: str
    text: str
    description: str


@dataclass(frozen=True)
class Prerequisite:
    """A namespace the output puts objects in without creating it: what must already run there, in words."""

    namespace: str
    reason: str


@dataclass(frozen=True)
class Plan:
    blueprint: str
    objects: tuple[Manifest, ...]
    releases: tuple[HelmRelease, ...]
    artifacts: tuple[Artifact, ...]
    diagnostics: tuple[Diagnostic, ...] = field(default=())  # warnings to show; an error here means do not write
    prerequisites: tuple[Prerequisite, ...] = field(default=())

    def by_family(self, family: str) -> tuple[Manifest, ...]:
        return tuple(m for m in self.objects if m.family == family)

    def find(self, kind: str, name: str, namespace: str | None = None) -> Manifest | None:
        return next(
            (m for m in self.objects if m.kind == kind and m.name == name and m.namespace == namespace),
            None,
        )


@dataclass
class FamilyOutput:
    """What one output family contributes; compile merges them into a Plan."""

    objects: list[Manifest] = field(default_factory=list)
    releases: list[HelmRelease] = field(default_factory=list)
    artifacts: list[Artifact] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    prerequisites: list[Prerequisite] = field(default_factory=list)
