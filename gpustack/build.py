"""Shape-checked blueprint data -> typed `Blueprint`, with gpustack's defaults applied.

Runs only on data the JSON Schema accepted, so it trusts types and required fields.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpustack.diagnostic import JsonPath
from gpustack.model import (
    DEFAULT_CHART_REPOSITORY,
    DEFAULT_CHART_VERSION,
    DEFAULT_DEVICE_PLUGIN_NAMESPACE,
    DEFAULT_DRA_CHART_VERSION,
    DEFAULT_DRA_DRIVER_ROOT,
    DEFAULT_DRA_NAMESPACE,
    DEFAULT_HAMI_CHART_REPOSITORY,
    DEFAULT_HAMI_CHART_VERSION,
    DEFAULT_HAMI_NAMESPACE,
    DEFAULT_HAMI_SCHEDULER,
    DEFAULT_KUEUE_CHART_VERSION,
    DEFAULT_KUEUE_NAMESPACE,
    DEFAULT_MIG_CONFIGMAP,
    DEFAULT_MIG_NAMESPACE,
    DEFAULT_VOLCANO_CHART_VERSION,
    DEFAULT_VOLCANO_NAMESPACE,
    DEFAULT_VOLCANO_QUEUE_WEIGHT,
    KUEUE_V1BETA2,
    Allocation,
    Blueprint,
    DevicePlugin,
    DevicePluginFlags,
    DraSettings,
    GpuNeed,
    GpuRef,
    HamiSettings,
    HamiSharing,
    KueueCohort,
    KueueSettings,
    KueueTenant,
    MigGroup,
    MigManager,
    MigSharing,
    MigStrategy,
    Nccl,
    NodePool,
    NodeResources,
    Preference,
    Replication,
    Scheduler,
    Serve,
    Sharing,
    SharingStrategy,
    Taint,
    Tenant,
    Topology,
    VolcanoSettings,
    VolcanoTenant,
    Workload,
    WorkloadKind,
)

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
        tenants=tuple(_tenant(t, ("spec", "tenants", i)) for i, t in enumerate(spec.get("tenants", []))),
        workloads=tuple(_workload(w, ("spec", "workloads", i)) for i, w in enumerate(spec.get("workloads", []))),
        source=source,
        hami=_hami(spec.get("hami", {})),
        kueue=_kueue(spec.get("kueue", {})),
        volcano=_volcano(spec.get("volcano", {})),
        dra=_dra(spec.get("dra", {})),
    )


def _dra(data: Data) -> DraSettings:
    return DraSettings(
        api_version=data.get("apiVersion"),
        chart_version=data.get("chartVersion", DEFAULT_DRA_CHART_VERSION),
        namespace=data.get("namespace", DEFAULT_DRA_NAMESPACE),
        nvidia_driver_root=data.get("nvidiaDriverRoot", DEFAULT_DRA_DRIVER_ROOT),
    )


def _kueue(data: Data) -> KueueSettings:
    return KueueSettings(
        api_version=data.get("apiVersion", KUEUE_V1BETA2),
        chart_version=data.get("chartVersion", DEFAULT_KUEUE_CHART_VERSION),
        namespace=data.get("namespace", DEFAULT_KUEUE_NAMESPACE),
    )


def _volcano(data: Data) -> VolcanoSettings:
    return VolcanoSettings(
        binpack=data.get("binpack", False),
        chart_version=data.get("chartVersion", DEFAULT_VOLCANO_CHART_VERSION),
        namespace=data.get("namespace", DEFAULT_VOLCANO_NAMESPACE),
    )


def _hami(data: Data) -> HamiSettings:
    return HamiSettings(
        chart_version=data.get("chartVersion", DEFAULT_HAMI_CHART_VERSION),
        repository=data.get("repository", DEFAULT_HAMI_CHART_REPOSITORY),
        namespace=data.get("namespace", DEFAULT_HAMI_NAMESPACE),
        scheduler_name=data.get("schedulerName", DEFAULT_HAMI_SCHEDULER),
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
        chart_version=data.get("chartVersion", DEFAULT_CHART_VERSION),
        repository=data.get("repository", DEFAULT_CHART_REPOSITORY),
        namespace=data.get("namespace", DEFAULT_DEVICE_PLUGIN_NAMESPACE),
        gfd=data.get("gfd", True),
        flags=_flags(data.get("flags", {})),
    )


def _mig_manager(data: Data) -> MigManager:
    return MigManager(
        namespace=data.get("namespace", DEFAULT_MIG_NAMESPACE),
        config_map=data.get("configMap", DEFAULT_MIG_CONFIGMAP),
    )


def _pairs(data: Mapping[str, Any] | None) -> tuple[tuple[str, Any], ...]:
    return tuple((data or {}).items())


def _pool(data: Data, path: JsonPath) -> NodePool:
    resources = data.get("nodeResources")
    topology = data.get("topology")
    return NodePool(
        name=data["name"],
        gpu=GpuRef(model=data["gpu"]["model"], count=data["gpu"]["count"], path=(*path, "gpu")),
        nodes=tuple(data["nodes"]),
        labels=_pairs(data.get("labels")),
        taints=tuple(
            Taint(t["key"], t.get("value"), t["effect"], (*path, "taints", i))
            for i, t in enumerate(data.get("taints", []))
        ),
        sharing=_sharing(data.get("sharing", {"strategy": "none"}), (*path, "sharing")),
        topology=None
        if topology is None
        else Topology(topology["policy"], topology.get("scope", "container"), (*path, "topology")),
        flags=_flags(data.get("devicePlugin", {}).get("flags", {})),
        node_resources=None
        if resources is None
        else NodeResources(_text(resources.get("cpu")), resources.get("memory")),
        description=data.get("description"),
        path=path,
        allocation=Allocation(data.get("allocation", Allocation.DEVICE_PLUGIN)),
    )


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def _sharing(data: Data, path: JsonPath) -> Sharing:
    strategy = SharingStrategy(data["strategy"])
    replication = None
    if strategy in (SharingStrategy.TIME_SLICING, SharingStrategy.MPS):
        key = "timeSlicing" if strategy is SharingStrategy.TIME_SLICING else "mps"
        block = data[key]
        replication = Replication(
            replicas=block["replicas"],
            rename_by_default=block.get("renameByDefault", False),
            fail_requests_greater_than_one=block.get("failRequestsGreaterThanOne", True),
            path=(*path, key),
        )
    # A mig block beside MPS is kept so the MPS-with-MIG check can name it.
    mig = _mig(data["mig"], (*path, "mig")) if "mig" in data else None
    hami = None
    if strategy is SharingStrategy.HAMI:
        block = data.get("hami", {})
        hami = HamiSharing(
            split_count=block.get("splitCount", 10),
            memory_scaling=float(block.get("memoryScaling", 1.0)),
            core_scaling=float(block.get("coreScaling", 1.0)),
            path=(*path, "hami"),
        )
    return Sharing(strategy=strategy, replication=replication, mig=mig, hami=hami, path=path)


def _mig(data: Data, path: JsonPath) -> MigSharing:
    if "groups" in data:
        groups = tuple(
            MigGroup(tuple(g["devices"]), _pairs(g["layout"]), (*path, "groups", i, "layout"))
            for i, g in enumerate(data["groups"])
        )
    else:
        groups = (MigGroup(None, _pairs(data["layout"]), (*path, "layout")),)
    return MigSharing(strategy=MigStrategy(data["strategy"]), groups=groups, path=path)


def _amounts(data: Mapping[str, Any] | None) -> tuple[tuple[str, tuple[tuple[str, int], ...]], ...]:
    return tuple((pool, _pairs(items)) for pool, items in (data or {}).items())


def _tenant(data: Data, path: JsonPath) -> Tenant:
    kueue = data.get("kueue")
    volcano = data.get("volcano")
    return Tenant(
        name=data["name"],
        namespaces=tuple(data["namespaces"]),
        pools=tuple(data["pools"]),
        priority=data.get("priority", "normal"),
        scheduler=Scheduler(data.get("scheduler", "default")),
        quota=_amounts(data.get("quota")),
        path=path,
        kueue=None if kueue is None else _kueue_tenant(kueue, (*path, "kueue")),
        volcano=None
        if volcano is None
        else VolcanoTenant(
            weight=volcano.get("weight", DEFAULT_VOLCANO_QUEUE_WEIGHT),
            reclaimable=volcano.get("reclaimable", True),
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
        replicas=data.get("replicas", 1),
        workers=data.get("workers") if kind is WorkloadKind.VOLCANO_JOB else None,
        image=data["image"],
        command=tuple(data.get("command", ())),
        args=tuple(data.get("args", ())),
        env=_pairs(data.get("env")),
        gpu=GpuNeed(
            count=gpu.get("count", 1),
            profile=gpu.get("profile"),
            memory=gpu.get("memory"),
            path=(*path, "gpu"),
            cores=gpu.get("cores"),
        ),
        cpu=_text(resources.get("cpu")),
        memory=resources.get("memory"),
        serve=None
        if serve is None
        else Serve(serve["port"], serve.get("path", "/health"), serve.get("startupSeconds", 600)),
        prefer=tuple(Preference(p["weight"], _pairs(p["labels"])) for p in data.get("prefer", [])),
        nccl=None
        if nccl is None
        else Nccl(nccl.get("socketIfname"), nccl.get("ibDisable"), nccl.get("debug"), nccl.get("p2pLevel")),
        template=data.get("template"),
        path=path,
    )
