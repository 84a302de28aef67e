"""The controllers a compiled workload kind needs that no other family installs: JobSet and LeaderWorkerSet.

A JobSet or a LeaderWorkerSet is a custom resource: `kubectl apply -k` fails on it ("no matches for kind") unless its
CRD is installed, and nothing runs its pods unless its controller is. Each is a pinned Helm release, added to the Plan
only when a compiled object (a generated workload or a rendered template) is of its kind, so the README's chart step,
Pulumi's release stage (before the custom workloads) and the rollout install it like the Kueue or Volcano release.

Both charts are OCI artifacts on registry.k8s.io, installed into the namespace their projects' guides name:
- JobSet: `helm install jobset oci://registry.k8s.io/jobset/charts/jobset --version $VERSION --create-namespace
  --namespace=jobset-system` (kubernetes-sigs/jobset site/content/en/docs/installation/_index.md); the chart's version
  is the release tag without its `v` (its release checklist: `helm show chart ... --version ${VERSION/#v/}`); v0.10.1
  is the release KAI Scheduler's JobSet integration deploys (NVIDIA/KAI-Scheduler hack/third_party_integrations).
- LeaderWorkerSet: `helm install lws oci://registry.k8s.io/lws/charts/lws --version=0.8.0 --namespace lws-system
  --create-namespace` (kubernetes-sigs/lws site/content/en/docs/installation/_index.md, v0.8.0).
Both make their own webhook certificate (internal cert management), so neither needs Helm hooks. Kueue (v0.8 and
later) enables its JobSet and LeaderWorkerSet integrations when their CRDs appear after it started (kueue #2574), so
the charts' order among themselves does not matter.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from gpustack.plan import HelmRelease, Manifest


@dataclass(frozen=True)
class Controller:
    """A controller gpustack installs for the kinds of one API group."""

    group: str
    kinds: tuple[str, ...]
    release: str
    chart: str
    repository: str
    version: str
    namespace: str

    @property
    def values_file(self) -> str:
        return f"{self.release}/values.yaml"

    def helm_release(self) -> HelmRelease:
        # The chart's defaults: one controller replica with its webhook, as the projects' install guides run it.
        return HelmRelease(
            name=self.release,
            chart=self.chart,
            repository=self.repository,
            version=self.version,
            namespace=self.namespace,
            values={},
            values_file=self.values_file,
        )


JOBSET = Controller(
    group="jobset.x-k8s.io",
    kinds=("JobSet",),
    release="jobset",
    chart="jobset",
    repository="oci://registry.k8s.io/jobset/charts",
    version="0.10.1",
    namespace="jobset-system",
)
LEADER_WORKER_SET = Controller(
    group="leaderworkerset.x-k8s.io",
    kinds=("LeaderWorkerSet",),
    release="lws",
    chart="lws",
    repository="oci://registry.k8s.io/lws/charts",
    version="0.8.0",
    namespace="lws-system",
)
CONTROLLERS: tuple[Controller, ...] = (JOBSET, LEADER_WORKER_SET)


def _group(api_version: object) -> str:
    return str(api_version).rpartition("/")[0]


def needed_controllers(objects: Iterable[Manifest]) -> list[Controller]:
    """The controllers whose kinds some object is, in CONTROLLERS order."""
    used = {(_group(m.obj.get("apiVersion")), m.kind) for m in objects}
    return [c for c in CONTROLLERS if any((c.group, kind) in used for kind in c.kinds)]


def controller_releases(objects: Iterable[Manifest]) -> list[HelmRelease]:
    """The Helm releases of the controllers the objects need (none when no object is of their kinds)."""
    return [controller.helm_release() for controller in needed_controllers(objects)]
