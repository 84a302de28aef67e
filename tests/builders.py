"""Test support: valid blueprints from plain data, and their compile context."""

from __future__ import annotations

import json
from typing import Any

from gpustack.build import build_blueprint
from gpustack.catalog import load_catalog
from gpustack.compile import compile_blueprint
from gpustack.context import Context, unplaced
from gpustack.model import Blueprint
from gpustack.plan import Plan
from gpustack.validation import validate_text


def blueprint(*pools: dict, **spec: Any) -> Blueprint:
    """A blueprint from plain data, checked to be valid first: compile only ever sees valid ones.

    The standalone device-plugin stack unless `stack` says otherwise: most unit tests look at the plugin's own
    chart values; the GPU Operator stack (the format's default) has its own tests.
    """
    data = {
        "apiVersion": "gpustack.io/v1alpha1",
        "kind": "ClusterBlueprint",
        "metadata": {"name": "test"},
        "spec": {"kubernetes": {"version": "1.31"}, "stack": "device-plugin", **spec, "nodePools": list(pools)},
    }
    result = validate_text(json.dumps(data), "test.json")  # JSON is YAML, and never has anchors
    assert result.ok, [d.message for d in result.diagnostics]
    return build_blueprint(data)


def context(bp: Blueprint) -> Context:
    return sourceless(bp)


def planned(bp: Blueprint) -> tuple[Context, Plan]:
    """A blueprint built in code, with its Plan compiled from its one Context."""
    ctx = sourceless(bp)
    return ctx, compile_blueprint(ctx)


def sourceless(bp: Blueprint) -> Context:
    """The Context of a blueprint built in code: it has no text, so what it reports names JSON paths (`unplaced`)."""
    return Context(bp, load_catalog(), unplaced)


# One L4 pool, one tenant, one Deployment: the smallest blueprint that compiles every family a tenant touches.
ONE_POOL = """\
apiVersion: gpustack.io/v1alpha1
kind: ClusterBlueprint
metadata: {name: tpl}
spec:
  kubernetes: {version: "1.31"}
  nodePools:
    - name: l4
      gpu: {model: L4, count: 4}
      nodes: [gpu-node-1]
      taints: [{key: gpustack.io/pool, value: l4, effect: NoSchedule}]
  tenants:
    - {name: ml, namespaces: [ml], pools: [l4], quota: {l4: {gpu: 4}}}
  workloads:
    - name: chat
      tenant: ml
      pool: l4
      kind: Deployment
      image: vllm/vllm-openai:v0.6.3
      gpu: {count: 1}
"""
