"""Blueprint records flattened to the field names a blueprint author writes, for field-by-field changes.

Flattening the typed model (defaults applied) rather than the YAML means an omitted default and the
same value written out compare equal, and the names match the format, not Python attributes.
"""

from __future__ import annotations

import hashlib
from typing import Any

from gpustack.model import (
    UNLIMITED,
    Allocation,
    Blueprint,
    DevicePluginFlags,
    NodePool,
    Sharing,
    SharingStrategy,
    Tenant,
    Workload,
)
from gpustack.selection import describe_selection
from gpustack.taints import taint_text

Fields = dict[str, Any]  # field name -> a JSON-compatible value (str, int, float, bool, list, dict)

_FLAG_NAMES: dict[str, str] = {
    "fail_on_init_error": "failOnInitError",
    "nvidia_driver_root": "nvidiaDriverRoot",
    "pass_device_specs": "passDeviceSpecs",
    "device_list_strategy": "deviceListStrategy",
    "device_id_strategy": "deviceIDStrategy",
}


def _put(fields: Fields, name: str, value: Any) -> None:
    """Record a field unless it is unset, so an absent optional and a missing one read alike."""
    if value is None:
        return
    fields[name] = list(value) if isinstance(value, tuple) else value


def _flags(fields: Fields, prefix: str, flags: DevicePluginFlags) -> None:
    for attribute, name in _FLAG_NAMES.items():
        _put(fields, f"{prefix}.{name}", getattr(flags, attribute))


def cluster_fields(blueprint: Blueprint) -> Fields:
    fields: Fields = {}
    _put(fields, "metadata.name", blueprint.name)
    _put(fields, "metadata.description", blueprint.description)
    _put(fields, "kubernetes.version", blueprint.kubernetes_version)
    _put(fields, "stack", str(blueprint.stack))
    operator = blueprint.gpu_operator
    _put(fields, "gpuOperator.chartVersion", operator.chart_version)
    _put(fields, "gpuOperator.repository", operator.repository)
    _put(fields, "gpuOperator.namespace", operator.namespace)
    _put(fields, "gpuOperator.driver", operator.driver)
    _put(fields, "gpuOperator.toolkit", operator.toolkit)
    _put(fields, "gpuOperator.nfd", operator.nfd)
    plugin = blueprint.device_plugin
    _put(fields, "devicePlugin.chartVersion", plugin.chart_version)
    _put(fields, "devicePlugin.repository", plugin.repository)
    _put(fields, "devicePlugin.namespace", plugin.namespace)
    _put(fields, "devicePlugin.gfd", plugin.gfd)
    _flags(fields, "devicePlugin.flags", plugin.flags)
    _put(fields, "migManager.namespace", blueprint.mig_manager.namespace)
    _put(fields, "migManager.configMap", blueprint.mig_manager.config_map)
    _put(fields, "hami.chartVersion", blueprint.hami.chart_version)
    _put(fields, "hami.repository", blueprint.hami.repository)
    _put(fields, "hami.namespace", blueprint.hami.namespace)
    _put(fields, "hami.schedulerName", blueprint.hami.scheduler_name)
    _put(fields, "kueue.apiVersion", blueprint.kueue.api_version)
    _put(fields, "volcano.binpack", blueprint.volcano.binpack)
    if any(pool.allocation is Allocation.DRA for pool in blueprint.pools):
        _put(fields, "dra.apiVersion", blueprint.dra.api_version)
        _put(fields, "dra.chartVersion", blueprint.dra.chart_version)
        _put(fields, "dra.namespace", blueprint.dra.namespace)
        _put(fields, "dra.nvidiaDriverRoot", blueprint.dra.nvidia_driver_root)
    return fields


def _sharing(fields: Fields, sharing: Sharing) -> None:
    _put(fields, "sharing.strategy", str(sharing.strategy))
    if sharing.replication is not None:
        block = "sharing.mps" if sharing.strategy is SharingStrategy.MPS else "sharing.timeSlicing"
        _put(fields, f"{block}.replicas", sharing.replication.replicas)
        _put(fields, f"{block}.renameByDefault", sharing.replication.rename_by_default)
        _put(fields, f"{block}.failRequestsGreaterThanOne", sharing.replication.fail_requests_greater_than_one)
    if sharing.mig is not None:
        _put(fields, "sharing.mig.strategy", str(sharing.mig.strategy))
        groups = sharing.mig.groups
        if sharing.mig.auto:
            _put(fields, "sharing.mig.layout", "auto")  # as written: gpustack recommend's to choose
        elif len(groups) == 1 and groups[0].devices is None:
            _put(fields, "sharing.mig.layout", dict(groups[0].layout))
        else:
            for index, group in enumerate(groups):
                _put(fields, f"sharing.mig.groups[{index}].devices", group.devices)
                if group.whole:
                    _put(fields, f"sharing.mig.groups[{index}].whole", True)
                else:
                    _put(fields, f"sharing.mig.groups[{index}].layout", dict(group.layout))
        sliced = sharing.mig.time_slicing
        if sliced is not None:
            # A count per profile reads as the mapping written, so a changed count shows as that profile's change.
            replicas = dict(sliced.per_profile) if sliced.per_profile else sliced.replicas
            _put(fields, "sharing.mig.timeSlicing.replicas", replicas)
            _put(fields, "sharing.mig.timeSlicing.renameByDefault", sliced.rename_by_default)
            _put(fields, "sharing.mig.timeSlicing.failRequestsGreaterThanOne", sliced.fail_requests_greater_than_one)
    if sharing.hami is not None:
        _put(fields, "sharing.hami.splitCount", sharing.hami.split_count)
        _put(fields, "sharing.hami.memoryScaling", sharing.hami.memory_scaling)
        _put(fields, "sharing.hami.coreScaling", sharing.hami.core_scaling)


def pool_fields(pool: NodePool) -> Fields:
    fields: Fields = {}
    _put(fields, "description", pool.description)
    if pool.gpu is not None:
        _put(fields, "gpu.model", pool.gpu.model)
        _put(fields, "gpu.count", pool.gpu.count)
    _put(fields, "nodes", pool.nodes or None)
    _put(fields, "selector", describe_selection(pool) if pool.selector is not None else None)
    _put(fields, "count", pool.count)
    _put(fields, "minNodes", pool.min_nodes)
    _put(fields, "maxNodes", pool.max_nodes)
    for key, value in pool.labels:
        _put(fields, f"labels.{key}", value)
    _put(fields, "taints", [taint_text(t) for t in pool.taints] or None)
    _sharing(fields, pool.sharing)
    if pool.allocation is Allocation.DRA:  # the default stays unlisted, so older reviews read as before
        _put(fields, "allocation", str(pool.allocation))
    if pool.topology is not None:
        _put(fields, "topology.policy", pool.topology.policy)
        _put(fields, "topology.scope", pool.topology.scope)
    _flags(fields, "devicePlugin.flags", pool.flags)
    if pool.node_resources is not None:
        _put(fields, "nodeResources.cpu", pool.node_resources.cpu)
        _put(fields, "nodeResources.memory", pool.node_resources.memory)
    _cloud(fields, pool)
    return fields


def _cloud(fields: Fields, pool: NodePool) -> None:
    """The provider node pool as written (a machine type left out stays out: gpustack picks it, and a change of the
    pick shows in the manifest diff and in cloud-pool-replaced)."""
    cloud = pool.cloud
    if cloud is None:
        return
    _put(fields, "cloud.provider", cloud.provider)
    _put(fields, "cloud.machineType", cloud.machine_type)
    _put(fields, "cloud.zones", cloud.zones or None)
    _put(fields, "cloud.spot", cloud.spot)
    _put(fields, "cloud.diskGb", cloud.disk_gb)
    _put(fields, "cloud.diskType", cloud.disk_type)
    if cloud.provider == "karpenter":  # the only provider that reads it; elsewhere its default is noise
        _put(fields, "cloud.nodeClass", cloud.node_class)


def tenant_fields(tenant: Tenant) -> Fields:
    fields: Fields = {}
    _put(fields, "namespaces", tenant.namespaces)
    _put(fields, "pools", tenant.pools)
    _put(fields, "priority", tenant.priority)
    _put(fields, "scheduler", str(tenant.scheduler))
    for pool, items in tenant.quota:
        if tenant.unlimited_on(pool):
            _put(fields, f"quota.{pool}", UNLIMITED)
        for resource, amount in items:
            _put(fields, f"quota.{pool}.{resource}", amount)
    cohort = tenant.cohort
    if cohort is not None:
        _put(fields, "kueue.cohort.name", cohort.name)
        for name, amounts in (("borrowingLimit", cohort.borrowing_limit), ("lendingLimit", cohort.lending_limit)):
            for pool, items in amounts:
                for resource, amount in items:
                    _put(fields, f"kueue.cohort.{name}.{pool}.{resource}", amount)
    if tenant.volcano is not None:
        _put(fields, "volcano.weight", tenant.volcano.weight)
        _put(fields, "volcano.reclaimable", tenant.volcano.reclaimable)
    return fields


def workload_fields(workload: Workload, blueprint: Blueprint) -> Fields:
    fields: Fields = {}
    tenant = blueprint.tenant(workload.tenant)
    # The effective namespace: writing out the default (the tenant's first namespace) is no change.
    namespace = workload.namespace or (tenant.namespaces[0] if tenant is not None else None)
    for name, value in (("tenant", workload.tenant), ("pool", workload.pool), ("namespace", namespace)):
        _put(fields, name, value)
    for name in ("replicas", "workers", "image"):
        _put(fields, name, getattr(workload, name))
    _put(fields, "kind", str(workload.kind))
    _put(fields, "command", workload.command or None)
    _put(fields, "args", workload.args or None)
    for key, env_value in workload.env:
        _put(fields, f"env.{key}", str(env_value))  # a Secret's key reads "from Secret hf-token, key token"
    _put(fields, "gpu.count", workload.gpu.count)
    _put(fields, "gpu.profile", workload.gpu.profile)
    _put(fields, "gpu.memory", workload.gpu.memory)
    _put(fields, "gpu.cores", workload.gpu.cores)
    _put(fields, "resources.cpu", workload.cpu)
    _put(fields, "resources.memory", workload.memory)
    _put(fields, "resources.ephemeralStorage", workload.ephemeral_storage)
    _put(fields, "shmSize", workload.shm_size)
    if workload.serve is not None:
        _put(fields, "serve.port", workload.serve.port)
        _put(fields, "serve.path", workload.serve.path)
        _put(fields, "serve.startupSeconds", workload.serve.startup_seconds)
    _put(fields, "prefer", [f"{p.weight}: {dict(p.labels)}" for p in workload.prefer] or None)
    if workload.nccl is not None:
        nccl = workload.nccl
        values: tuple[tuple[str, str | bool | None], ...] = (
            ("socketIfname", nccl.socket_ifname),
            ("ibDisable", nccl.ib_disable),
            ("debug", nccl.debug),
            ("p2pLevel", nccl.p2p_level),
        )
        for name, setting in values:
            _put(fields, f"nccl.{name}", setting)
    _put(fields, "template", workload.template)
    if workload.template is not None:
        text = blueprint.template_text(workload.template)
        # The path alone hides an edited template; a short digest shows that its contents changed.
        if text is not None:
            _put(fields, "template (contents)", "sha256:" + hashlib.sha256(text.encode()).hexdigest()[:12])
    return fields
