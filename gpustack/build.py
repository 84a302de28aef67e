"""Shape-checked blueprint data -> typed `Blueprint`, with gpustack's defaults applied.

Runs only on data the JSON Schema accepted, so it trusts types and required fields. Every default is the schema's
`default` for the field (`gpustack.defaults`): none is written here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpustack import defaults as d
from gpustack.defaults import value_or_default as get
from gpustack.diagnostic import JsonPath
from gpustack.model import (
    AUTO_LAYOUT,
    UNLIMITED,
    Allocation,
    Blueprint,
    ClaimShare,
    ClaimSharing,
    CloudPool,
    DevicePlugin,
    DevicePluginFlags,
    DraSettings,
    EnvRef,
    GpuClaim,
    GpuNeed,
    GpuOperator,
    GpuRef,
    HamiSettings,
    HamiSharing,
    KueueCohort,
    KueueSettings,
    KueueTenant,
    LabelRequirement,
    MigGroup,
    MigManager,
    MigSharing,
    MigStrategy,
    Nccl,
    NodePool,
    NodeResources,
    NodeSelector,
    Preference,
    Replication,
    Scheduler,
    Serve,
    Sharing,
    SharingStrategy,
    Stack,
    Taint,
    Tenant,
    Topology,
    VolcanoSettings,
    VolcanoTenant,
    Workload,
    WorkloadKind,
)
from gpustack.names import CLOUD_POOL_LABELS
from gpustack.taints import cloud_taints, gke_arm

Data = Mapping[str, Any]


def build_blueprint(data: Data, source: str = "<blueprint>") -> Blueprint:
    spec = data["spec"]
    return Blueprint(
        name=data["metadata"]["name"],
        description=data["metadata"].get("description"),
        kubernetes_version=spec["kubernetes"]["version"],
        device_plugin=_device_plugin(spec.get("devicePlugin", {})),
        mig_manager=_mig_manager(spec.get("migManager", {})),
        pools=tuple(_pool(p, ("spec", "nodePools", i)) for i, p in enumerate(spec["nodePools"])),
        tenants=tuple(_tenant(t, ("spec", "tenants", i)) for i, t in enumerate(get(spec, d.SPEC, "tenants"))),
        workloads=tuple(_workload(w, ("spec", "workloads", i)) for i, w in enumerate(get(spec, d.SPEC, "workloads"))),
        source=source,
        hami=_hami(spec.get("hami", {})),
        kueue=_kueue(spec.get("kueue", {})),
        volcano=_volcano(spec.get("volcano", {})),
        dra=_dra(spec.get("dra", {})),
        stack=Stack(get(spec, d.SPEC, "stack")),
        gpu_operator=_gpu_operator(spec.get("gpuOperator", {})),
    )


def _dra(data: Data) -> DraSettings:
    return DraSettings(
        api_version=data.get("apiVersion"),
        chart_version=get(data, d.DRA, "chartVersion"),
        namespace=get(data, d.DRA, "namespace"),
        nvidia_driver_root=get(data, d.DRA, "nvidiaDriverRoot"),
    )


def _gpu_operator(data: Data) -> GpuOperator:
    return GpuOperator(
        chart_version=get(data, d.GPU_OPERATOR, "chartVersion"),
        repository=get(data, d.GPU_OPERATOR, "repository"),
        namespace=get(data, d.GPU_OPERATOR, "namespace"),
        release_name=get(data, d.GPU_OPERATOR, "releaseName"),
        driver=data.get("driver"),
        toolkit=data.get("toolkit"),
        nfd=get(data, d.GPU_OPERATOR, "nfd"),
    )


def _kueue(data: Data) -> KueueSettings:
    return KueueSettings(
        api_version=get(data, d.KUEUE, "apiVersion"),
        chart_version=get(data, d.KUEUE, "chartVersion"),
        namespace=get(data, d.KUEUE, "namespace"),
    )


def _volcano(data: Data) -> VolcanoSettings:
    return VolcanoSettings(
        binpack=get(data, d.VOLCANO, "binpack"),
        chart_version=get(data, d.VOLCANO, "chartVersion"),
        namespace=get(data, d.VOLCANO, "namespace"),
    )


def _hami(data: Data) -> HamiSettings:
    return HamiSettings(
        chart_version=get(data, d.HAMI_RELEASE, "chartVersion"),
        repository=get(data, d.HAMI_RELEASE, "repository"),
        namespace=get(data, d.HAMI_RELEASE, "namespace"),
        scheduler_name=get(data, d.HAMI_RELEASE, "schedulerName"),
    )


def _flags(data: Data) -> DevicePluginFlags:
    strategy = data.get("deviceListStrategy")
    return DevicePluginFlags(
        fail_on_init_error=data.get("failOnInitError"),
        nvidia_driver_root=data.get("nvidiaDriverRoot"),
        pass_device_specs=data.get("passDeviceSpecs"),
        device_list_strategy=None if strategy is None else tuple([strategy] if isinstance(strategy, str) else strategy),
        device_id_strategy=data.get("deviceIDStrategy"),
    )


def _device_plugin(data: Data) -> DevicePlugin:
    return DevicePlugin(
        chart_version=get(data, d.DEVICE_PLUGIN, "chartVersion"),
        repository=get(data, d.DEVICE_PLUGIN, "repository"),
        namespace=get(data, d.DEVICE_PLUGIN, "namespace"),
        release_name=get(data, d.DEVICE_PLUGIN, "releaseName"),
        gfd=get(data, d.DEVICE_PLUGIN, "gfd"),
        flags=_flags(data.get("flags", {})),
    )


def _mig_manager(data: Data) -> MigManager:
    return MigManager(
        namespace=get(data, d.MIG_MANAGER, "namespace"),
        config_map=get(data, d.MIG_MANAGER, "configMap"),
    )


def _pairs(data: Mapping[str, Any] | None) -> tuple[tuple[str, Any], ...]:
    return tuple((data or {}).items())


def _pool(data: Data, path: JsonPath) -> NodePool:
    resources = data.get("nodeResources")
    topology = data.get("topology")
    return NodePool(
        name=data["name"],
        gpu=GpuRef(model=data["gpu"]["model"], count=data["gpu"]["count"], path=(*path, "gpu"))
        if "gpu" in data
        else None,
        nodes=tuple(data.get("nodes", ())),
        labels=_pairs(data.get("labels")),
        taints=_taints(data, path),
        sharing=_sharing(get(data, d.NODE_POOL, "sharing"), (*path, "sharing")),
        topology=None
        if topology is None
        else Topology(topology["policy"], get(topology, d.TOPOLOGY, "scope"), (*path, "topology")),
        flags=_flags(data.get("devicePlugin", {}).get("flags", {})),
        config_name=data.get("devicePlugin", {}).get("configName"),
        node_resources=None
        if resources is None
        else NodeResources(_text(resources.get("cpu")), resources.get("memory")),
        description=data.get("description"),
        path=path,
        allocation=Allocation(get(data, d.NODE_POOL, "allocation")),
        max_pods=data.get("maxPods"),
        cordoned=tuple(data.get("cordoned", ())),
        selector=_pool_selector(data, path),
        count=data.get("count"),
        min_nodes=data.get("minNodes"),
        max_nodes=data.get("maxNodes"),
        cloud=None if "cloud" not in data else _cloud(data["cloud"], (*path, "cloud")),
    )


def _taints(data: Data, path: JsonPath) -> tuple[Taint, ...]:
    """The pool's taints, then those its cloud puts on the nodes by itself (not written twice)."""
    own = [
        Taint(t["key"], t.get("value"), t["effect"], (*path, "taints", i)) for i, t in enumerate(data.get("taints", []))
    ]
    cloud = data.get("cloud")
    if cloud is None:
        return tuple(own)
    written = {(t.key, t.effect) for t in own}
    model = data["gpu"].get("model") if isinstance(data.get("gpu"), dict) else None
    arm = cloud["provider"] == "gke" and gke_arm(cloud.get("machineType"), model)
    added = cloud_taints(cloud["provider"], "gpu" in data, bool(cloud.get("spot")), arm)
    by_cloud = [
        Taint(k, v, e, (*path, "cloud", "provider"), by_cloud=True) for k, v, e in added if (k, e) not in written
    ]
    return (*own, *by_cloud)


def _pool_selector(data: Data, path: JsonPath) -> NodeSelector | None:
    # A cloud pool without a selector is selected by its provider's node-pool label: gpustack names the provider's
    # pool after the blueprint's, so the label's value is the pool's name.
    if "selector" in data:
        return _selector(data["selector"], (*path, "selector"))
    if "cloud" in data:
        label = CLOUD_POOL_LABELS[data["cloud"]["provider"]]
        return NodeSelector(((label, data["name"]),), (), (*path, "cloud", "provider"))
    return None


def _cloud(data: Data, path: JsonPath) -> CloudPool:
    return CloudPool(
        provider=data["provider"],
        machine_type=data.get("machineType"),
        zones=tuple(data.get("zones", ())),
        spot=get(data, d.CLOUD, "spot"),
        disk_gb=data.get("diskGb"),
        disk_type=data.get("diskType"),
        node_class=get(data, d.CLOUD, "nodeClass"),
        path=path,
        image_type=data.get("imageType"),
    )


def _selector(data: Data, path: JsonPath) -> NodeSelector:
    return NodeSelector(
        match_labels=_pairs(data.get("matchLabels")),
        match_expressions=tuple(
            LabelRequirement(e["key"], e["operator"], tuple(e.get("values", ())))
            for e in data.get("matchExpressions", [])
        ),
        path=path,
    )


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def _sharing(data: Data, path: JsonPath) -> Sharing:
    strategy = SharingStrategy(data["strategy"])
    replication = None
    if strategy in (SharingStrategy.TIME_SLICING, SharingStrategy.MPS):
        key = "timeSlicing" if strategy is SharingStrategy.TIME_SLICING else "mps"
        replication = _replication(data[key], (*path, key))
    # A mig block beside MPS is kept so the MPS-with-MIG check can name it.
    mig = _mig(data["mig"], (*path, "mig")) if "mig" in data else None
    hami = None
    if strategy is SharingStrategy.HAMI:
        block = data.get("hami", {})
        hami = HamiSharing(
            split_count=get(block, d.HAMI_SHARING, "splitCount"),
            memory_scaling=float(get(block, d.HAMI_SHARING, "memoryScaling")),
            core_scaling=float(get(block, d.HAMI_SHARING, "coreScaling")),
            path=(*path, "hami"),
        )
    return Sharing(strategy=strategy, replication=replication, mig=mig, hami=hami, path=path)


def _replication(block: Data, path: JsonPath) -> Replication:
    return Replication(
        replicas=block["replicas"],
        rename_by_default=get(block, d.REPLICATED_SHARING, "renameByDefault"),
        fail_requests_greater_than_one=get(block, d.REPLICATED_SHARING, "failRequestsGreaterThanOne"),
        path=path,
    )


def _mig_time_slicing(block: Data, path: JsonPath) -> Replication:
    """mig.timeSlicing: one count for every instance, or (a mapping) a count per profile and for `whole` GPUs."""
    replicas = block["replicas"]
    if not isinstance(replicas, dict):
        return _replication(block, path)
    per_profile = tuple((str(profile), int(count)) for profile, count in replicas.items())
    return Replication(
        replicas=max(count for _, count in per_profile),
        rename_by_default=get(block, d.MIG_TIME_SLICING, "renameByDefault"),
        fail_requests_greater_than_one=get(block, d.MIG_TIME_SLICING, "failRequestsGreaterThanOne"),
        path=path,
        per_profile=per_profile,
    )


def _mig(data: Data, path: JsonPath) -> MigSharing:
    auto = False
    if "groups" in data:
        groups = tuple(_mig_group(g, (*path, "groups", i)) for i, g in enumerate(data["groups"]))
    else:
        auto = data["layout"] == AUTO_LAYOUT
        groups = (MigGroup(None, () if auto else _pairs(data["layout"]), (*path, "layout")),)
    time_slicing = _mig_time_slicing(data["timeSlicing"], (*path, "timeSlicing")) if "timeSlicing" in data else None
    return MigSharing(
        strategy=MigStrategy(data["strategy"]),
        groups=groups,
        path=path,
        time_slicing=time_slicing,
        auto=auto,
        config_name=data.get("configName"),
    )


def _mig_group(data: Data, path: JsonPath) -> MigGroup:
    if data.get("whole") is True:
        return MigGroup(tuple(data["devices"]), (), path, whole=True)
    return MigGroup(tuple(data["devices"]), _pairs(data["layout"]), (*path, "layout"))


def _amounts(data: Mapping[str, Any] | None) -> tuple[tuple[str, tuple[tuple[str, int], ...]], ...]:
    # A quota's `unlimited` pool is an entry without amounts here; `Tenant.unlimited` tells it from a closed `{}`.
    return tuple((pool, () if items == UNLIMITED else _pairs(items)) for pool, items in (data or {}).items())


def _tenant(data: Data, path: JsonPath) -> Tenant:
    kueue = data.get("kueue")
    volcano = data.get("volcano")
    return Tenant(
        name=data["name"],
        namespaces=tuple(data["namespaces"]),
        pools=tuple(data["pools"]),
        priority=get(data, d.TENANT, "priority"),
        scheduler=Scheduler(get(data, d.TENANT, "scheduler")),
        quota=_amounts(data.get("quota")),
        unlimited=tuple(pool for pool, items in (data.get("quota") or {}).items() if items == UNLIMITED),
        path=path,
        kueue=None if kueue is None else _kueue_tenant(kueue, (*path, "kueue")),
        kai=None if data.get("kai") is None else _kueue_tenant(data["kai"], (*path, "kai")),
        volcano=None
        if volcano is None
        else VolcanoTenant(
            weight=get(volcano, d.TENANT_VOLCANO, "weight"),
            reclaimable=get(volcano, d.TENANT_VOLCANO, "reclaimable"),
            path=(*path, "volcano"),
        ),
    )


def _kueue_tenant(data: Data, path: JsonPath) -> KueueTenant:
    cohort = data.get("cohort")
    return KueueTenant(
        cohort=None
        if cohort is None
        else KueueCohort(
            name=cohort["name"],
            borrowing_limit=_amounts(cohort.get("borrowingLimit")),
            lending_limit=_amounts(cohort.get("lendingLimit")),
            path=(*path, "cohort"),
        ),
        path=path,
    )


def _workload(data: Data, path: JsonPath) -> Workload:
    kind = WorkloadKind(data["kind"])
    gpu = data["gpu"]
    resources = data.get("resources", {})
    serve = data.get("serve")
    nccl = data.get("nccl")
    return Workload(
        name=data["name"],
        tenant=data["tenant"],
        pool=data["pool"],
        kind=kind,
        namespace=data.get("namespace"),
        replicas=get(data, d.WORKLOAD, "replicas"),
        workers=data.get("workers") if kind in (WorkloadKind.VOLCANO_JOB, WorkloadKind.JOB_SET) else None,
        image=data["image"],
        command=tuple(data.get("command", ())),
        args=tuple(data.get("args", ())),
        env=tuple((name, _env_value(value)) for name, value in data.get("env", {}).items()),
        gpu=GpuNeed(
            count=get(gpu, d.WORKLOAD_GPU, "count"),
            profile=gpu.get("profile"),
            memory=gpu.get("memory"),
            path=(*path, "gpu"),
            cores=gpu.get("cores"),
            shareable=get(gpu, d.WORKLOAD_GPU, "shareable"),
            claim=_claim(gpu["claim"], (*path, "gpu", "claim")) if "claim" in gpu else None,
        ),
        cpu=_text(resources.get("cpu")),
        memory=resources.get("memory"),
        serve=None
        if serve is None
        else Serve(serve["port"], get(serve, d.SERVE, "path"), get(serve, d.SERVE, "startupSeconds")),
        prefer=tuple(Preference(p["weight"], _pairs(p["labels"])) for p in data.get("prefer", [])),
        nccl=None
        if nccl is None
        else Nccl(nccl.get("socketIfname"), nccl.get("ibDisable"), nccl.get("debug"), nccl.get("p2pLevel")),
        template=data.get("template"),
        path=path,
        size=data.get("size") if kind is WorkloadKind.LEADER_WORKER_SET else None,
        ephemeral_storage=resources.get("ephemeralStorage"),
        shm_size=data.get("shmSize"),
    )


def _claim(data: Data, path: JsonPath) -> GpuClaim:
    sharing = data.get("sharing")
    return GpuClaim(
        share=ClaimShare(get(data, d.WORKLOAD_CLAIM, "share")),
        path=path,
        sharing=None
        if sharing is None
        else ClaimSharing(
            strategy=sharing["strategy"],
            path=(*path, "sharing"),
            interval=sharing.get("interval"),
            active_thread_percentage=sharing.get("activeThreadPercentage"),
            pinned_memory_limit=sharing.get("pinnedMemoryLimit"),
        ),
    )


def _env_value(value: str | Data) -> str | EnvRef:
    if isinstance(value, str):
        return value
    ((kind, ref),) = value["valueFrom"].items()  # the schema allows exactly one source
    return EnvRef(kind, ref["name"], ref["key"], ref.get("optional"))
