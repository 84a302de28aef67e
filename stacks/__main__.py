"""`pulumi up` for one blueprint: stack config `gpustack:blueprint` names it, relative to this directory."""

from pathlib import Path

import pulumi

from gpustack.deploy import CloudCluster, GpuCluster, GpuClusterArgs

config = pulumi.Config("gpustack")
# Relative to this file, not the working directory or pulumi.get_root_directory(): the same under mocks.
blueprint = Path(__file__).resolve().parent / config.require("blueprint")
# Cloud pools: the cluster they join (gpustack:cloud, an object; see docs/cloud.md). Absent: Karpenter pools only.
cloud = config.get_object("cloud") or {}
cluster = GpuCluster(
    "gpustack",
    GpuClusterArgs(
        blueprint,
        own_node_taints=config.get_bool("ownNodeTaints") or False,
        retain_node_labels_on_delete=config.get_bool("retainNodeLabels") is not False,
        object_field_manager=config.get("objectFieldManager") or None,
        await_workloads=config.get_bool("awaitWorkloads") is not False,
        cloud=CloudCluster(
            cluster=cloud.get("cluster"),
            location=cloud.get("location"),
            project=cloud.get("project"),
            node_role_arn=cloud.get("nodeRoleArn"),
            subnet_ids=cloud.get("subnetIds"),
            resource_group_name=cloud.get("resourceGroupName"),
        ),
    ),
)
for key, value in cluster.outputs.items():
    pulumi.export(key, value)
