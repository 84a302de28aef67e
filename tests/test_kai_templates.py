"""A KAI tenant's workload template that renders gpustack's own manifest (schedulerName kai-scheduler, its leaf
queue label) passes the template check (GS606); one that names another scheduler does not."""

from __future__ import annotations

from pathlib import Path

from conftest import BLUEPRINTS

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
