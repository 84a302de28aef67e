"""Workload templates rendered exactly as compile renders them (GS606: a template that fails to render, breaks a
rule, renders an object another object already is, or reads device env through `envFrom` of a ConfigMap another
template renders), so `validate` fails where `compile` would. The rules themselves live beside the rendering
(`workload_templates.check_rendered`, `check_env_sources`), below compile, which renders through the same door."""

from __future__ import annotations

from collections.abc import Iterator

from gpustack.context import Context
from gpustack.diagnostic import Diagnostic
from gpustack.workloads import workload_outputs


def check_rendered_templates(ctx: Context) -> Iterator[Diagnostic]:
    read = {path for path, _text in ctx.blueprint.templates}
    if not any(workload.template in read for workload in ctx.blueprint.workloads):
        # Nothing to render: every problem here is a rendered template's, and building the generated objects of
        # 1,000 workloads only to find none would cost validate a sixth of its time at fleet size.
        return
    for workload, _objects, problems in workload_outputs(ctx):
        if workload.template not in read:
            continue  # none, or not read: the reader said why (GS605), or the caller reads no templates (text only)
        yield from problems


# Rendering builds the objects compile would: it runs only on a blueprint the other rules found no error in.
RULES = (check_rendered_templates,)
