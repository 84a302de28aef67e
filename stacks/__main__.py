"""`pulumi up` for one blueprint: stack config `gpustack:blueprint` names it, relative to this directory."""

from pathlib import Path

import pulumi

from gpustack.deploy import GpuCluster, GpuClusterArgs

config = pulumi.Config("gpustack")
# Relative to this file, not the working directory or pulumi.get_root_directory(): the same under mocks.
blueprint = Path(__file__).resolve().parent / config.require("blueprint")
cluster = GpuCluster(
    "gpustack",
    GpuClusterArgs(
        blueprint,
        own_node_taints=config.get_bool("ownNodeTaints") or False,
        retain_node_labels_on_delete=config.get_bool("retainNodeLabels") is not False,
        object_field_manager=config.get("objectFieldManager") or None,
        await_workloads=config.get_bool("awaitWorkloads") is not False,
    ),
)
for key, value in cluster.outputs.items():
    pulumi.export(key, value)
