"""GpuCluster under Pulumi mocks: it registers exactly what `gpustack compile` writes, in a safe order.

No Pulumi CLI, plugin or cluster: `pulumi.runtime.set_mocks` records every registration. ConfigGroup and
Chart are remote components, so the mocks see their inputs (the objects, the chart values) and no
children. A recording monitor also keeps each RegisterResource request, for parents, dependencies,
providers and retain-on-delete, which MockResourceArgs does not carry. Mocks are set before any
resource is created, with a fresh event loop, root stack and config per test (see the research notes).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml
from builders import sourceless
from conftest import BLUEPRINTS, CASES, shipped_examples
from pulumi.runtime.mocks import MockMonitor
from pulumi.runtime.settings import reset_options

from gpustack.codes import MIG_LAYOUT_IMPOSSIBLE
from gpustack.compile import compile_blueprint
from gpustack.compile.nodes import FAMILY as NODES_FAMILY
from gpustack.compile.nodes import TAINTS_FAMILY
from gpustack.deploy import (
    FIELD_MANAGER_ANNOTATION,
    PATCH_FORCE_ANNOTATION,
    TYPE,
    BlueprintError,
    GpuCluster,
    GpuClusterArgs,
    deploy_plan,
    group_of,
)
from gpustack.outputs import KUSTOMIZATION, render_files
from gpustack.validation import validate_path

EXAMPLES = shipped_examples()
CONFIG_GROUP = "kubernetes:yaml/v2:ConfigGroup"
CHART = "kubernetes:helm.sh/v4:Chart"
RELEASE = "kubernetes:helm.sh/v3:Release"
NODE_PATCH = "kubernetes:core/v1:NodePatch"
NAMESPACE = "kubernetes:core/v1:Namespace"
PULUMI_ANNOTATIONS = {FIELD_MANAGER_ANNOTATION: "gpustack", PATCH_FORCE_ANNOTATION: "true"}


@dataclass
class Registration:
    """One RegisterResource call: what the mocks saw plus the options only the request carries."""

    type: str
    name: str
    urn: str
    inputs: dict[str, Any]
    parent: str
    dependencies: set[str]
    provider: str
    providers: dict[str, str]
    retain_on_delete: bool


class RecordingMocks(pulumi.runtime.Mocks):
    def __init__(self) -> None:
        self.inputs: dict[tuple[str, str], dict[str, Any]] = {}

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        self.inputs[(args.typ, args.name)] = args.inputs
        return (f"{args.name}-id" if args.custom else None), dict(args.inputs)

    def call(self, args: pulumi.runtime.MockCallArgs) -> dict[str, Any]:
        return {}


class RecordingMonitor(MockMonitor):
    def __init__(self, mocks: RecordingMocks) -> None:
        super().__init__(mocks)
        self.requests: list[Any] = []
        self.reads: list[Any] = []

    def RegisterResource(self, request: Any) -> Any:  # the gRPC method's name
        self.requests.append(request)
        try:
            return super().RegisterResource(request)
        finally:
            _close_thread_loop()

    def ReadResource(self, request: Any) -> Any:  # `Resource.get`: GpuCluster reads each Node before patching it
        self.reads.append(request)
        try:
            return super().ReadResource(request)
        finally:
            _close_thread_loop()


def _close_thread_loop() -> None:
    # The mock monitor runs in executor threads and gives each one an event loop it never closes;
    # close it here, or its garbage collection warns (an error under this suite's filterwarnings).
    if threading.current_thread() is not threading.main_thread():
        with contextlib.suppress(RuntimeError):  # no loop: the Stack registration makes none
            asyncio.get_event_loop().close()
        asyncio.set_event_loop(None)


@dataclass
class Harness:
    mocks: RecordingMocks
    monitor: RecordingMonitor
    warnings: list[str] = field(default_factory=list)

    def run(self, program: Callable[[], object]) -> None:
        """Run the program in the mock runtime and wait for every registration to finish."""

        def body() -> None:
            program()

        pulumi.runtime.test(body)()

    def registrations(self) -> list[Registration]:
        out = []
        for request in self.monitor.requests:
            if request.type == "pulumi:pulumi:Stack":
                continue
            out.append(
                Registration(
                    type=request.type,
                    name=request.name,
                    urn=self.monitor.make_urn(request.parent, request.type, request.name),
                    inputs=self.mocks.inputs[(request.type, request.name)],
                    parent=request.parent,
                    dependencies=set(request.dependencies),
                    provider=request.provider,
                    providers=dict(request.providers),
                    retain_on_delete=request.retainOnDelete,
                )
            )
        return out

    def of_type(self, type_: str) -> list[Registration]:
        return [r for r in self.registrations() if r.type == type_]

    def named(self, name: str) -> Registration:
        (found,) = [r for r in self.registrations() if r.name == name]
        return found


def start_harness(monkeypatch: pytest.MonkeyPatch) -> Iterator[Harness]:
    """Mocks in place before any resource exists; fresh loop, root stack and config (shared with test_stack)."""
    asyncio.set_event_loop(asyncio.new_event_loop())  # an earlier test may have closed or replaced the loop
    reset_options(project="gpustack", stack="test", root_directory=str(BLUEPRINTS.parent / "stacks"))
    pulumi.runtime.set_all_config({})  # config is process-global
    mocks = RecordingMocks()
    monitor = RecordingMonitor(mocks)
    pulumi.runtime.set_mocks(mocks, project="gpustack", stack="test", preview=False, monitor=monitor)
    h = Harness(mocks, monitor)
    monkeypatch.setattr(pulumi.log, "warn", lambda message, *args, **kwargs: h.warnings.append(message))
    yield h
    asyncio.get_event_loop().close()
    asyncio.set_event_loop(None)  # later tests get no closed loop


@pytest.fixture
def harness(monkeypatch: pytest.MonkeyPatch) -> Iterator[Harness]:
    yield from start_harness(monkeypatch)


def cluster(harness: Harness, blueprint: Any = EXAMPLES[0], **options: Any) -> None:
    harness.run(lambda: GpuCluster("gs", GpuClusterArgs(blueprint, **options)))


def key(obj: dict[str, Any]) -> tuple[str, str, str, str]:
    meta = obj["metadata"]
    return (obj["apiVersion"], obj["kind"], meta.get("namespace") or "", meta["name"])


def compiled_objects(blueprint: Path, *, with_taints: bool) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The objects `gpustack compile` writes that an apply takes: the kustomization's files, parsed back
    from YAML, plus nodes/taints.yaml when gpustack owns taints. Node label and taint patches of one
    node are merged, as one NodePatch carries both."""
    plan = compile_blueprint(sourceless(validate_path(blueprint).blueprint))  # type: ignore[arg-type]
    files = render_files(plan)
    wanted = list(yaml.safe_load(files[KUSTOMIZATION])["resources"])
    # Node label patches are not in the kustomization (applying a missing Node creates it): Pulumi patches them.
    wanted += sorted({m.file for m in plan.objects if m.family == NODES_FAMILY})
    if with_taints:
        wanted += sorted({m.file for m in plan.objects if m.family == TAINTS_FAMILY})
    objects: list[dict[str, Any]] = []
    nodes: dict[str, dict[str, Any]] = {}
    for file in wanted:
        for doc in yaml.safe_load_all(files[file]):
            if doc is None:
                continue
            if doc["kind"] != "Node":
                objects.append(doc)
                continue
            node = nodes.setdefault(doc["metadata"]["name"], {"apiVersion": "v1", "kind": "Node", "metadata": {}})
            node["metadata"].update(doc["metadata"])
            if "spec" in doc:
                node["spec"] = doc["spec"]
    return objects + list(nodes.values()), files


def registered_objects(harness: Harness) -> list[dict[str, Any]]:
    """The objects GpuCluster hands to Kubernetes: ConfigGroup objs and NodePatch inputs, minus the
    two pulumi-kubernetes annotations that set the patch's field manager and force."""
    objects = [obj for group in harness.of_type(CONFIG_GROUP) for obj in group.inputs["objs"]]
    for patch in harness.of_type(NODE_PATCH):
        inputs = patch.inputs
        assert inputs["metadata"]["annotations"] == PULUMI_ANNOTATIONS
        node = {
            "apiVersion": inputs["apiVersion"],
            "kind": inputs["kind"],
            "metadata": {k: v for k, v in inputs["metadata"].items() if k != "annotations"},
        }
        if "spec" in inputs:
            node["spec"] = inputs["spec"]
        objects.append(node)
    return objects


@pytest.mark.parametrize("blueprint", EXAMPLES, ids=lambda p: p.stem)
def test_registers_exactly_what_compile_writes(harness: Harness, blueprint: Path) -> None:
    cluster(harness, blueprint)
    expected, files = compiled_objects(blueprint, with_taints=False)
    assert sorted(registered_objects(harness), key=key) == sorted(expected, key=key)
    # Every Helm values file becomes one Chart (a v3 Release where the chart needs its hooks) with exactly
    # those values and the release's coordinates.
    plan = compile_blueprint(sourceless(validate_path(blueprint).blueprint))  # type: ignore[arg-type]
    charts = {c.inputs["name"]: c.inputs for c in harness.of_type(CHART)}
    releases = {c.inputs["name"]: c.inputs for c in harness.of_type(RELEASE)}
    assert set(charts) == {r.name for r in plan.releases if not r.needs_hooks}
    assert charts or releases
    assert set(releases) == {r.name for r in plan.releases if r.needs_hooks}
    for release in plan.releases:
        chart = releases[release.name] if release.needs_hooks else charts[release.name]
        assert chart["values"] == yaml.safe_load(files[release.values_file])
        assert chart["version"] == release.version and chart["namespace"] == release.namespace
        if release.oci:
            # An OCI chart (Kueue's) is named by its full oci:// reference, with no repository to add.
            assert chart["chart"] == f"{release.repository}/{release.chart}" and chart["chart"].startswith("oci://")
            assert "repositoryOpts" not in chart
        else:
            assert chart["chart"] == release.chart
            assert chart["repositoryOpts"] == {"repo": release.repository}
        # Every chart waits for its resources to be ready, as the README's `helm --wait` does: the custom
        # resources after it meet served CRDs and webhooks.
        assert not chart.get("skipAwait")
        if release.needs_hooks:
            # Stage 0 made the namespace; Helm waits for the release (hooks included) as `helm --wait` would.
            assert "createNamespace" not in chart and "skipAwait" not in chart
            # The GPU Operator's CRD-upgrade hook needs it, as the README's `helm upgrade` has it.
            assert chart.get("disableOpenapiValidation", False) == release.skip_openapi_validation
    # Every example that has Kueue tenants installs Kueue from its OCI chart.
    kueue = [r for r in plan.releases if r.name == "kueue"]
    assert all(r.oci and r.version == "0.19.2" for r in kueue)
    # Only the charts whose webhook certificates (or, for KAI, its kai-config Config) come from hook jobs are Helm
    # releases.
    assert {r.name for r in plan.releases if r.needs_hooks} <= {"volcano", "hami", "gpu-operator", "kai-scheduler"}


@pytest.mark.parametrize(("blueprint", "hooked"), [("volcano", "volcano"), ("hami", "hami"), ("kueue", None)])
def test_charts_that_need_hooks_are_helm_releases(harness: Harness, blueprint: str, hooked: str | None) -> None:
    # helm/v4 Chart skips `helm.sh/hook` resources (pulumi-kubernetes #3284): Volcano's and HAMi's webhook
    # certificate jobs would never run. A v3 Release runs Helm itself, hooks included.
    path = BLUEPRINTS / f"{blueprint}.yaml"
    cluster(harness, path)
    _, files = compiled_objects(path, with_taints=False)
    plan = compile_blueprint(sourceless(validate_path(path).blueprint))  # type: ignore[arg-type]
    # The GPU Operator too: its chart upgrades its CRDs in a pre-upgrade hook Job.
    operator = {"gpu-operator"} if any(r.name == "gpu-operator" for r in plan.releases) else set()
    assert {r.inputs["name"] for r in harness.of_type(RELEASE)} == ({hooked} if hooked else set()) | operator
    plugin = "nvidia-device-plugin" if not operator else "gpu-operator"
    assert plugin in {c.inputs["name"] for c in [*harness.of_type(CHART), *harness.of_type(RELEASE)]}
    if hooked is None:
        assert "kueue" in {c.inputs["name"] for c in harness.of_type(CHART)}
        return
    (release,) = [r for r in plan.releases if r.name == hooked]
    registered = harness.named(f"gs-{hooked}")
    assert registered.type == RELEASE
    assert registered.inputs["values"] == release.values == yaml.safe_load(files[release.values_file])
    assert registered.inputs["chart"] == release.chart and registered.inputs["version"] == release.version
    assert registered.inputs["namespace"] == release.namespace
    assert registered.inputs["repositoryOpts"] == {"repo": release.repository}


def test_owning_taints_applies_the_taint_patches_too(harness: Harness) -> None:
    blueprint = BLUEPRINTS / "seed-article.yaml"
    cluster(harness, blueprint, own_node_taints=True)
    expected, _ = compiled_objects(blueprint, with_taints=True)
    assert sorted(registered_objects(harness), key=key) == sorted(expected, key=key)
    assert all("taints" in p.inputs["spec"] for p in harness.of_type(NODE_PATCH))


def test_node_patches_carry_the_compiled_labels_and_no_taints_by_default(harness: Harness) -> None:
    blueprint = BLUEPRINTS / "multi-tenant.yaml"
    cluster(harness, blueprint)
    plan = compile_blueprint(sourceless(validate_path(blueprint).blueprint))  # type: ignore[arg-type]
    labels = {m.name: m.obj["metadata"]["labels"] for m in plan.by_family("nodes")}
    patches = harness.of_type(NODE_PATCH)
    assert {p.inputs["metadata"]["name"]: p.inputs["metadata"]["labels"] for p in patches} == labels
    assert plan.by_family(TAINTS_FAMILY), "the example has taints, so leaving them out is a choice"
    for patch in patches:
        assert "spec" not in patch.inputs  # spec.taints left alone: other managers' taints survive
        assert patch.name == f"gs-node-{patch.inputs['metadata']['name']}"
        assert patch.retain_on_delete  # pulumi destroy leaves the labels on the live nodes


def test_node_labels_can_be_released_on_delete(harness: Harness) -> None:
    cluster(harness, retain_node_labels_on_delete=False)
    assert not any(p.retain_on_delete for p in harness.of_type(NODE_PATCH))


def test_every_child_has_the_component_as_parent(harness: Harness) -> None:
    cluster(harness, BLUEPRINTS / "seed-article.yaml")
    (component,) = harness.of_type(TYPE)
    children = [r for r in harness.registrations() if r.type != TYPE]
    # Volcano's chart and the GPU Operator's need their hooks, so both are v3 Releases.
    assert {r.type for r in children} == {CONFIG_GROUP, RELEASE, NODE_PATCH, NAMESPACE}
    assert all(r.parent == component.urn for r in children)


def test_stages_wait_for_what_they_need(harness: Harness) -> None:
    cluster(harness, BLUEPRINTS / "seed-article.yaml")
    by_urn = {r.urn: r.name for r in harness.registrations()}

    def deps(name: str) -> set[str]:
        # A read (Node.get) is not a registration: it is named by the last part of its URN.
        return {by_urn.get(u, u.rpartition("::")[2]) for u in harness.named(name).dependencies}

    nodes = {r.name for r in harness.of_type(NODE_PATCH)}
    # The seed blueprint's Volcano tenant brings the Volcano chart, and its namespace.
    # The GPU Operator's namespace is one of the Plan's (labelled for privileged pods).
    namespaces = {"gs-namespaces", "gs-namespace-volcano-system"}
    assert all(deps(namespace) == set() for namespace in namespaces)
    assert deps("gs-cluster") == deps("gs-tenancy") == namespaces
    # Node labels name the MIG config, which the GPU Operator looks up at once: the ConfigMap comes first.
    # Each patch waits for a read of its Node, which fails on a node that does not exist (a patch would create it).
    assert all(deps(node) == namespaces | {"gs-cluster", "gs-tenancy", f"{node}-exists"} for node in nodes)
    assert harness.named("gs-gpu-operator").type == RELEASE  # its CRD upgrade runs in a hook job
    assert deps("gs-gpu-operator") == namespaces | {"gs-cluster", "gs-tenancy"} | nodes
    assert harness.named("gs-volcano").type == RELEASE  # its webhook certificate comes from a hook job
    assert deps("gs-volcano") == namespaces | {"gs-cluster", "gs-tenancy"} | nodes
    charts_done = namespaces | {"gs-cluster", "gs-tenancy", "gs-gpu-operator", "gs-volcano"} | nodes
    # The Volcano Queue after the charts (Volcano's brings its CRDs), the workloads (and the Volcano Job) after it.
    assert deps("gs-custom-resources") == charts_done
    everything_before = charts_done | {"gs-custom-resources"}
    assert deps("gs-workloads") == everything_before
    assert deps("gs-custom-workloads") == everything_before
    queues = harness.named("gs-custom-resources").inputs["objs"]
    assert [(o["apiVersion"], o["kind"]) for o in queues] == [("scheduling.volcano.sh/v1beta1", "Queue")]
    volcano = harness.named("gs-custom-workloads").inputs["objs"]
    assert [o["apiVersion"] for o in volcano] == ["batch.volcano.sh/v1alpha1"]


def test_groups_follow_kind_and_api_group_only() -> None:
    plan = compile_blueprint(sourceless(validate_path(BLUEPRINTS / "multi-tenant.yaml").blueprint))  # type: ignore[arg-type]
    groups = {(m.obj["apiVersion"], m.kind): group_of(m) for m in plan.objects if m.kind != "Node"}
    assert groups == {
        ("v1", "Namespace"): "namespaces",
        ("scheduling.k8s.io/v1", "PriorityClass"): "cluster",
        # Admission policies: built in, cluster-wide, in place before any pod they check.
        ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy"): "cluster",
        ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding"): "cluster",
        ("v1", "LimitRange"): "tenancy",
        ("v1", "ResourceQuota"): "tenancy",
        ("apps/v1", "Deployment"): "workloads",
        ("apps/v1", "StatefulSet"): "workloads",
        ("v1", "Service"): "workloads",
        ("batch/v1", "Job"): "workloads",
        # multi-tenant's vision tenant queues through Kueue: CRD-backed, so after the charts.
        ("kueue.x-k8s.io/v1beta2", "ResourceFlavor"): "custom-resources",
        ("kueue.x-k8s.io/v1beta2", "ClusterQueue"): "custom-resources",
        ("kueue.x-k8s.io/v1beta2", "LocalQueue"): "custom-resources",
    }
    queue = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "q"}}
    local_queue = {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "LocalQueue", "metadata": {"name": "q"}}
    from gpustack.plan import Manifest

    assert group_of(Manifest("volcano", "f", queue)) == "custom-resources"
    assert group_of(Manifest("kueue", "f", local_queue)) == "custom-resources"


def test_a_provider_passed_in_is_used_by_every_child(harness: Harness) -> None:
    from pulumi_kubernetes.provider import Provider

    def program() -> None:
        provider = Provider("k8s", context="gpu-cluster")
        GpuCluster("gs", GpuClusterArgs(BLUEPRINTS / "hami.yaml", provider=provider))

    harness.run(program)
    (provider,) = harness.of_type("pulumi:providers:kubernetes")
    reference = f"{provider.urn}::k8s-id"
    for child in harness.registrations():
        if child.type in (CONFIG_GROUP, CHART):
            assert child.providers == {"kubernetes": reference}, child.name
        elif child.type in (NODE_PATCH, NAMESPACE, RELEASE):  # a Release is a custom resource: `provider`
            assert child.provider == reference, child.name
    assert harness.of_type(RELEASE), "the example installs HAMi, whose chart needs hooks"


def test_adopting_kubectl_objects_only_adds_the_field_manager(harness: Harness) -> None:
    blueprint = BLUEPRINTS / "quickstart.yaml"
    cluster(harness, blueprint, object_field_manager="gpustack")
    expected, _ = compiled_objects(blueprint, with_taints=False)
    objects = [obj for group in harness.of_type(CONFIG_GROUP) for obj in group.inputs["objs"]]
    for obj in objects:
        assert obj["metadata"]["annotations"].pop(FIELD_MANAGER_ANNOTATION) == "gpustack"
        if not obj["metadata"]["annotations"]:
            del obj["metadata"]["annotations"]
    assert sorted(objects, key=key) == sorted([o for o in expected if o["kind"] != "Node"], key=key)


def test_workloads_can_skip_the_readiness_wait(harness: Harness) -> None:
    cluster(harness, BLUEPRINTS / "seed-article.yaml", await_workloads=False)
    skipped = {g.name for g in harness.of_type(CONFIG_GROUP) if g.inputs.get("skipAwait")}
    assert skipped == {"gs-workloads", "gs-custom-workloads"}


def test_a_validated_blueprint_object_registers_the_same(harness: Harness) -> None:
    blueprint = BLUEPRINTS / "quickstart.yaml"
    cluster(harness, validate_path(blueprint).blueprint)
    expected, _ = compiled_objects(blueprint, with_taints=False)
    assert sorted(registered_objects(harness), key=key) == sorted(expected, key=key)


def test_an_invalid_blueprint_fails_with_the_validate_text_and_registers_nothing(harness: Harness) -> None:
    case = CASES / "invalid" / "seed-a100-4x3g20gb.yaml"
    with pytest.raises(BlueprintError) as raised:
        cluster(harness, case)
    message = str(raised.value)
    assert isinstance(raised.value, pulumi.RunError)  # Pulumi prints a RunError without a traceback
    assert "seed-a100-4x3g20gb.yaml:19:19: error[GS303]" in message
    assert '19 |           layout: {"3g.20gb": 4}' in message
    assert "hint: valid layouts close to this one: {3g.40gb: 2}" in message
    assert message.endswith("error(s); nothing applied")
    assert {d.code for d in raised.value.diagnostics} >= {MIG_LAYOUT_IMPOSSIBLE}
    assert harness.registrations() == []


def test_warnings_are_logged_and_do_not_stop_the_apply(harness: Harness) -> None:
    # The shipped examples are warning-free; this case carries one warning (GS506) and nothing else.
    cluster(harness, CASES / "invalid" / "shared-resource-name.yaml")
    assert any("warning[GS506]" in w for w in harness.warnings)
    assert harness.of_type(RELEASE)  # the GPU Operator, installed all the same


def test_outputs_show_pools_capacity_and_tenant_quotas(harness: Harness) -> None:
    components: list[GpuCluster] = []
    harness.run(lambda: components.append(GpuCluster("gs", GpuClusterArgs(BLUEPRINTS / "quickstart.yaml"))))
    (component,) = components
    assert component.pools == [
        {
            "name": "l4",
            "gpu": {"model": component.pools[0]["gpu"]["model"], "perNode": 4},
            "sharing": "none",
            "nodes": ["gpu-node-1", "gpu-node-2"],
            "resources": [
                {
                    "resource": "nvidia.com/gpu",
                    "perNode": 4,
                    "nodes": 2,
                    "total": 8,
                    "isolation": "exclusive",
                    "memoryGiB": 24,
                    "sharedBy": 1,
                }
            ],
        }
    ]
    (tenant,) = component.tenants
    assert tenant["name"] == "ml" and tenant["namespaces"] == ["ml"] and tenant["pools"] == ["l4"]
    assert tenant["quotas"] == {"ml": {"requests.nvidia.com/gpu": "8"}}
    assert component.releases[0]["chart"] == "gpu-operator"
    assert component.outputs["nodes"] == ["gpu-node-1", "gpu-node-2"]


def test_deploy_plan_is_pure_data() -> None:
    blueprint = validate_path(BLUEPRINTS / "quickstart.yaml").blueprint
    assert blueprint is not None
    cut = deploy_plan(sourceless(blueprint))
    assert list(cut.groups) == ["namespaces", "cluster", "tenancy", "workloads"]
    assert cut.release_namespaces == []  # the GPU Operator's namespace is in the Plan itself
    assert [s.node for s in cut.node_patches] == ["gpu-node-1", "gpu-node-2"]
    assert all(s.taints is None for s in cut.node_patches)
    assert all(s.taints for s in deploy_plan(sourceless(blueprint), own_node_taints=True).node_patches)


def test_node_patches_never_create_nodes(harness: Harness) -> None:
    # A patch of a missing Node would create an empty one: each patch waits for a read of its Node, which fails
    # when the node does not exist. Selector pools (volcano.yaml) get no patch at all: their provider labels them.
    cluster(harness, BLUEPRINTS / "seed-article.yaml")
    patched = {p.inputs["metadata"]["name"] for p in harness.of_type(NODE_PATCH)}
    read = {(r.type, r.id) for r in harness.monitor.reads}
    assert patched and read == {("kubernetes:core/v1:Node", node) for node in patched}
    harness.monitor.requests.clear()
    cluster(harness, BLUEPRINTS / "volcano.yaml")
    assert not harness.of_type(NODE_PATCH)
