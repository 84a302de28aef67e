"""What compile produces: plain-data Kubernetes objects, Helm releases and text artefacts, in apply order, and what
apply needs of each node pool (its nodes' labels, taints and MIG config; a cloud pool's provider node pool).

Like Terraform's plans package: apply reads the plan and never derives it again. Deploy, registration, rollout,
drift and review read the pools here, so none of them reaches into a compile family (pyproject.toml's
`apply-reads-the-plan` contract).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, TypeVar

from gpustack.diagnostic import Diagnostic

Object = dict[str, Any]
T = TypeVar("T")

# The output families of the Node patches: a node's labels, and (kept out of the kustomization) its taints.
NODES_FAMILY = "nodes"
NODE_TAINTS_FAMILY = "node-taints"


@dataclass(frozen=True, slots=True)
class Manifest:
    """One Kubernetes object and the file (relative to the output directory) it is written to.

    Slots, not a `__dict__`: a plan holds one per object (23,500 at many-pools 10x, 20,000 of them node patches), and
    an instance with a dict took half as much memory again (0.75 MB at that size).
    """

    family: str  # output family: namespaces, cluster, device-plugin, mig, nodes, tenants, workloads, ...
    file: str
    obj: Object
    _key: str | None = field(default=None, init=False, repr=False, compare=False)  # `key`, once asked for

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

    @property
    def key(self) -> str:
        """apiVersion/kind/namespace/name: unique within a plan.

        Worked out once (review asks for it many times per object; an object is not changed once in a Manifest)."""
        key = self._key
        if key is None:
            obj = self.obj
            metadata = obj["metadata"]
            key = f"{obj['apiVersion']}/{obj['kind']}/{metadata.get('namespace') or ''}/{metadata['name']}"
            object.__setattr__(self, "_key", key)  # a cache beside the fields, as cached_property would keep it
        return key


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
class NodeTaint:
    """A taint gpustack puts on a pool's nodes (fits `taints.TaintLike`)."""

    key: str
    value: str | None
    effect: str


@dataclass(frozen=True)
class PoolNodes:
    """What gpustack sets on every node of one pool, derived once by compile (the Node patches carry the same).

    `labels` is read-only: every Node patch of the pool shares the one mapping (10,000 nodes held 15 MB of copies),
    so nothing may change it once compiled, and the type says so.
    """

    pool: str
    nodes: tuple[str, ...]  # a static pool's nodes; () for a selector pool, whose provider makes them
    selector: str | None  # how a selector pool's nodes are found (a label selector, in words); None: static
    labels: Mapping[str, str]  # gpustack's keys first, then the pool's own labels
    taints: tuple[NodeTaint, ...]  # blueprint order
    mig_config: str | None  # the nvidia.com/mig.config value; None where no MIG manager acts


# The resource each provider's node pool is, in Pulumi's words (Karpenter's is a Kubernetes object).
NODE_POOL_RESOURCES = {
    "gke": "gcp.container.NodePool",
    "eks": "aws.eks.NodeGroup",
    "aks": "azure-native.containerservice.AgentPool",
    "karpenter": "karpenter.sh/v1 NodePool",
}


@dataclass(frozen=True)
class NodePoolSpec:
    """One provider node pool: its Pulumi inputs (argument names as pulumi-gcp/aws/azure-native spell them in
    Python; for Karpenter, the NodePool object) and the file `gpustack compile` writes for it."""

    pool: str
    provider: str
    args: Object
    file: str
    document: Object

    @property
    def resource(self) -> str:
        return NODE_POOL_RESOURCES[self.provider]


@dataclass(frozen=True)
class Plan:
    blueprint: str
    objects: tuple[Manifest, ...]
    releases: tuple[HelmRelease, ...]
    artifacts: tuple[Artifact, ...]
    diagnostics: tuple[Diagnostic, ...] = field(default=())  # warnings to show; an error here means do not write
    prerequisites: tuple[Prerequisite, ...] = field(default=())
    pools: tuple[PoolNodes, ...] = field(default=())  # every node pool, in blueprint order
    node_pools: tuple[NodePoolSpec, ...] = field(default=())  # the cloud pools' provider node pools, blueprint order

    def pool(self, name: str) -> PoolNodes | None:
        return self._pools.get(name)

    @cached_property
    def _pools(self) -> dict[str, PoolNodes]:
        return {pool.pool: pool for pool in self.pools}

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
    pools: list[PoolNodes] = field(default_factory=list)
    node_pools: list[NodePoolSpec] = field(default_factory=list)


# --- parts shared within one compile --------------------------------------------------------------------------------
# One compile's parts by what determines each, and its texts; None outside `sharing_parts` (nothing is shared).
_PARTS: ContextVar[tuple[dict[Hashable, Any], dict[str, str]] | None] = ContextVar("gpustack_plan_parts", default=None)


@contextmanager
def sharing_parts() -> Iterator[None]:
    """Inside (one compile_blueprint run): `shared_part` and `shared_text` hand out one object per value; the parts
    are forgotten when it ends."""
    token = _PARTS.set(({}, {}))
    try:
        yield
    finally:
        _PARTS.reset(token)


def shared_part(key: Hashable, build: Callable[[], T]) -> T:
    """The part built for `key` earlier in this compile, else `build()`, remembered for the rest of it.

    Why: most of compile's memory at fleet size is small dicts that many objects repeat (a tenant's admission policy
    declares the same variables and matches the same kinds as every other tenant's: 12,500 variables of 2,000
    distinct values in 502 policies at many-pools 10x). One object per distinct part keeps `compile -d -`'s peak
    within a small multiple of its stream. A shared part is plain data like every plan object: the YAML writer writes
    it out in full wherever it appears (never an alias), marshal compares it without back-references (review), and it
    is safe only because nothing changes an object once it is built (`tests/test_registration.py` checks writing,
    reviewing and registering leave every object as compile made it, `tests/test_compile_memory.py` compiling and
    simulating; a builder that adds to a part copies it).
    `key` must determine the part exactly: callers key it by the very strings it is made of. Share only what repeats:
    each distinct key is kept until the compile ends.

    Fallback: outside `sharing_parts` (a builder called by a check, a test, a tool) every call builds a fresh part.
    """
    shared = _PARTS.get()
    if shared is None:
        return build()
    parts = shared[0]
    try:
        part: T = parts[key]
    except KeyError:
        part = parts[key] = build()
    return part


def shared_text(text: str) -> str:
    """The text equal to `text` seen earlier in this compile, else `text` (remembered): a string many objects build
    alike (the CEL message of a rule every tenant's policy holds) is then held once. As `shared_part`; outside
    `sharing_parts`, `text` itself."""
    shared = _PARTS.get()
    return text if shared is None else shared[1].setdefault(text, text)
