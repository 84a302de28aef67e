"""A KAI tenant's workload template that renders gpustack's own manifest (schedulerName kai-scheduler, its leaf
queue label) passes the template check (GS606); one that names another scheduler, another tenant's queue or no queue
does not, and none can move the job out of its pool's KAI shard."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import BLUEPRINTS

from gpustack.compile import compile_blueprint
from gpustack.validation import validate_path

TEMPLATE_LINE = '      resources: {cpu: "48", memory: 512Gi}\n'


def _blueprint(tmp_path: Path, template: str) -> Path:
    text = (BLUEPRINTS / "kai.yaml").read_text(encoding="utf-8")
    assert text.count(TEMPLATE_LINE) == 1
    text = text.replace(TEMPLATE_LINE, TEMPLATE_LINE + "      template: pretrain.yaml.j2\n")
    (tmp_path / "pretrain.yaml.j2").write_text(template, encoding="utf-8")
    path = tmp_path / "kai.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_template_rendering_gpustacks_manifest_is_valid(tmp_path: Path) -> None:
    result = validate_path(_blueprint(tmp_path, "{{ manifest | toyaml }}\n"))
    assert result.ok, [(d.code, d.message) for d in result.diagnostics]


def test_a_template_naming_another_scheduler_is_refused(tmp_path: Path) -> None:
    template = (
        "{%- for r in manifest.spec.replicatedJobs -%}"
        "{%- set _ = r.template.spec.template.spec.update({'schedulerName': 'volcano'}) -%}"
        "{%- endfor -%}\n{{ manifest | toyaml }}\n"
    )
    result = validate_path(_blueprint(tmp_path, template))
    assert "GS606" in [d.code for d in result.diagnostics]


def _problems(tmp_path: Path, template: str) -> list[str]:
    result = validate_path(_blueprint(tmp_path, template))
    return [d.message for d in result.diagnostics if d.code == "GS606"]


WORKERS = "{%- set t = manifest.spec.replicatedJobs[0].template.spec.template -%}"


def test_attack_a_template_naming_another_tenants_queue_is_refused(tmp_path: Path) -> None:
    template = WORKERS + "{%- set _ = t.metadata.labels.update({'kai.scheduler/queue': 'serving.h100.serving'}) -%}"
    found = _problems(tmp_path, template + "\n{{ manifest | toyaml }}\n")
    assert any("names KAI queue 'serving.h100.serving'" in m and "'training.h100.training'" in m for m in found), found


@pytest.mark.parametrize("change", ["pop('gpustack.io/pool')", "update({'gpustack.io/pool': 'a100-mig'})"])
def test_a_template_cannot_move_the_job_out_of_its_pools_shard(tmp_path: Path, change: str) -> None:
    """KAI puts the PodGroup in the shard of the JobSet's own pool label; gpustack's labels win on a rendered object,
    so the compiled JobSet keeps its pool's (and the admission policy refuses one without it)."""
    template = f"{{%- set _ = manifest.metadata.labels.{change} -%}}\n{{{{ manifest | toyaml }}}}\n"
    result = validate_path(_blueprint(tmp_path, template))
    assert result.ok and result.context is not None, [d.message for d in result.diagnostics]
    (jobset,) = [m.obj for m in compile_blueprint(result.context).objects if m.obj["kind"] == "JobSet"]
    assert jobset["metadata"]["labels"]["gpustack.io/pool"] == "h100"


def test_a_kai_pod_template_naming_no_queue_is_refused(tmp_path: Path) -> None:
    template = WORKERS + "{%- set _ = t.metadata.labels.pop('kai.scheduler/queue') -%}\n{{ manifest | toyaml }}\n"
    found = _problems(tmp_path, template)
    assert any("the pod names no KAI queue" in m for m in found), found


@pytest.mark.parametrize("annotation", ["gpu-fraction", "gpu-memory"])
def test_attack_a_template_asking_kai_for_a_gpu_share_is_refused(tmp_path: Path, annotation: str) -> None:
    template = WORKERS + f"{{%- set _ = t.metadata.update({{'annotations': {{'{annotation}': '0.5'}}}}) -%}}"
    found = _problems(tmp_path, template + "\n{{ manifest | toyaml }}\n")
    assert any(f"ask KAI for a share of a GPU ({annotation})" in m for m in found), found
