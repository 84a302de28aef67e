"""One Pulumi stack per cluster of a gpustack fleet, driven by Pulumi's Automation API.

    python examples/pulumi-fleet/fleet_stacks.py blueprints/fleet/fleet.yaml preview
    python examples/pulumi-fleet/fleet_stacks.py blueprints/fleet/fleet.yaml up [--cluster train-eu]

Each cluster of the fleet file gets the stack named after it, in project `gpustack-FLEET`, whose program is a
`GpuCluster` of the cluster's resolved blueprint (the base with its overlay, exactly what `gpustack fleet compile`
compiles) and whose Kubernetes provider uses the kubeconfig context named after the cluster. State lives wherever
`pulumi login` points (Pulumi Cloud, S3, a local folder) and the engine is Pulumi's own CLI: gpustack adds neither.
An invalid fleet or cluster stops before any stack is touched. Needs `pip install 'gpustack[pulumi]'` and the
`pulumi` CLI; docs/fleet.md#provisioning-with-pulumi.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterator

import pulumi
from pulumi import automation as auto

from gpustack.deploy import CloudCluster, GpuCluster, GpuClusterArgs
from gpustack.escapes import printable
from gpustack.fleet.reading import read_fleet
from gpustack.fleet.resolve import ResolvedCluster, resolve_cluster
from gpustack.model import Blueprint
from gpustack.report import format_text

ACTIONS = ("preview", "up", "refresh", "destroy")


class InvalidFleet(Exception):
    """The fleet file, or one of its clusters, is invalid: the diagnostics, as `gpustack fleet compile` prints them."""


def resolved_clusters(fleet_file: str) -> list[ResolvedCluster]:
    """Every cluster's blueprint, resolved and validated; InvalidFleet when any is not."""
    read = read_fleet(fleet_file)
    if not read.ok or read.fleet is None or read.document is None:
        raise InvalidFleet(format_text(list(read.diagnostics)))
    resolved = [resolve_cluster(read.fleet, read.document, cluster) for cluster in read.fleet.clusters]
    problems = [d for cluster in resolved if not cluster.ok for d in cluster.diagnostics]
    if problems:
        raise InvalidFleet(format_text(problems))
    return resolved


def cluster_program(name: str, blueprint: Blueprint) -> Callable[[], None]:
    """The Pulumi program of one cluster's stack: its GpuCluster, and its outputs exported."""

    def program() -> None:
        # The fleet's clusters are GKE clusters of the same name: their node pools join them (pulumi-gcp's NodePool
        # requires the cluster; its location defaults to the provider's).
        cluster = GpuCluster(name, GpuClusterArgs(blueprint, cloud=CloudCluster(cluster=name)))
        for key, value in cluster.outputs.items():
            pulumi.export(key, value)

    return program


def fleet_stacks(fleet_file: str, only: str | None = None) -> Iterator[tuple[str, auto.Stack]]:
    """(cluster, its stack) for every cluster of the fleet (or only one), in the fleet's order."""
    read = read_fleet(fleet_file)
    assert read.fleet is not None
    project = f"gpustack-{read.fleet.name}"
    for cluster in resolved_clusters(fleet_file):
        if only is not None and cluster.name != only:
            continue
        blueprint = cluster.validation.blueprint
        assert blueprint is not None
        stack = auto.create_or_select_stack(
            stack_name=cluster.name, project_name=project, program=cluster_program(cluster.name, blueprint)
        )
        stack.set_config("kubernetes:context", auto.ConfigValue(value=cluster.name))
        yield cluster.name, stack


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("fleet")
    parser.add_argument("action", choices=ACTIONS)
    parser.add_argument("--cluster", help="only this cluster's stack")
    args = parser.parse_args(argv)
    try:
        stacks = list(fleet_stacks(args.fleet, args.cluster))
    except InvalidFleet as invalid:
        print(printable(str(invalid), keep_newlines=True), file=sys.stderr)
        return 1
    for name, stack in stacks:  # one cluster at a time: a failure stops before the next cluster is touched
        print(f"== {args.action} {name}")
        getattr(stack, args.action)(on_output=print)
    return 0


if __name__ == "__main__":
    sys.exit(main())
