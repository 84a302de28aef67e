"""One report per mistake, the cause first, on the CLI's text (issue 32 item 5).

The five most common mistakes (a wrong model name, a MIG layout that does not fit, a pool without a quota, a key
typo, a missing template) each print one diagnostic: the cause, never a consequence of it before or after it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from gpustack.cli import group

BASE = """\
apiVersion: gpustack.io/v1alpha1
kind: ClusterBlueprint
metadata:
  name: mistakes
spec:
  kubernetes:
    version: "1.31"
  nodePools:
    - name: l4
      gpu: {model: L4, count: 4}
      nodes: [gpu-node-1, gpu-node-2]
      sharing:
        strategy: time-slicing
        timeSlicing: {replicas: 2}
    - name: a100
      gpu: {model: A100-SXM4-80GB, count: 8}
      nodes: [a100-a]
      sharing:
        strategy: mig
        mig:
          strategy: mixed
          layout: {"3g.40gb": 2}
  tenants:
    - name: ml
      namespaces: [ml]
      pools: [l4, a100]
      quota:
        l4: {gpu: 16}
        a100: {mig-3g.40gb: 16}
  workloads:
    - name: chat
      tenant: ml
      pool: l4
      kind: Deployment
      replicas: 2
      image: vllm/vllm-openai:v0.6.3
      gpu: {count: 1}
    - name: small
      tenant: ml
      pool: a100
      kind: Deployment
      replicas: 2
      image: vllm/vllm-openai:v0.6.3
      gpu: {profile: 3g.40gb}
"""

HEADLINE = re.compile(
    r"^(?P<file>\S+?):(?P<line>\d+):(?P<column>\d+): (?P<severity>error|warning)\[(?P<code>GS\d{3})\]"
)


def validate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str) -> tuple[int, str, list[re.Match[str]]]:
    """`gpustack validate b.yaml` run from the blueprint's folder, as a user types it."""
    (tmp_path / "b.yaml").write_text(text)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(group, ["validate", "b.yaml"])
    headlines = [m for m in map(HEADLINE.match, result.output.splitlines()) if m is not None]
    return result.exit_code, result.output, headlines


def edited(old: str, new: str) -> str:
    assert BASE.count(old) == 1, old
    return BASE.replace(old, new)


def test_the_base_blueprint_is_valid(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    code, output, headlines = validate(tmp_path, monkeypatch, BASE)
    assert (code, headlines) == (0, []), output


def test_a_key_typo_prints_the_did_you_mean_and_not_the_missing_field_it_causes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, output, headlines = validate(tmp_path, monkeypatch, edited("timeSlicing: {", "timeslicing: {"))
    assert code == 1
    assert [(m["code"], m["line"]) for m in headlines] == [("GS101", "14")], output
    assert "did you mean 'timeSlicing'?" in output
    assert "needs 'timeSlicing'" not in output  # GS108, the consequence


def test_a_misnamed_field_carries_what_its_object_then_lacks_in_its_hint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, output, headlines = validate(tmp_path, monkeypatch, edited("gpu: {profile: 3g.40gb}", "gpu: {mig: 3g.40gb}"))
    assert code == 1
    assert [m["code"] for m in headlines] == ["GS101"], output
    assert "as it stands, workloads[1].gpu needs count, profile or memory" in output


def test_a_wrong_model_name_is_one_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    code, output, headlines = validate(tmp_path, monkeypatch, edited("A100-SXM4-80GB", "A100-SXM5-80GB"))
    assert code == 1
    assert [(m["code"], m["line"]) for m in headlines] == [("GS301", "16")], output


def test_a_mig_layout_that_does_not_fit_is_one_error_without_its_quota_consequences(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, output, headlines = validate(tmp_path, monkeypatch, edited('{"3g.40gb": 2}', '{"3g.40gb": 3}'))
    assert code == 1
    assert [(m["code"], m["line"]) for m in headlines] == [("GS303", "22")], output
    assert "quota" not in output


def test_a_quota_on_a_resource_the_pool_does_not_advertise_is_one_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `gpu.shared` where the time-sliced pool advertises `gpu` (no renameByDefault): the quota then names nothing
    # the workloads ask for, which GS505 said too, as a warning printed before the error that causes it.
    code, output, headlines = validate(tmp_path, monkeypatch, edited("l4: {gpu: 16}", "l4: {gpu.shared: 16}"))
    assert code == 1
    assert [(m["severity"], m["code"]) for m in headlines] == [("error", "GS502")], output
    assert "pool 'l4' advertises gpu" in output


def test_a_pool_without_a_quota_is_one_warning_naming_the_pool_and_how_to_open_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, output, headlines = validate(tmp_path, monkeypatch, edited("        a100: {mig-3g.40gb: 16}\n", ""))
    assert code == 0, output
    assert [(m["severity"], m["code"], m["line"]) for m in headlines] == [("warning", "GS610", "26")], output
    assert "'a100'" in output and "unlimited" in output


def test_a_pool_without_a_quota_beside_a_layout_that_does_not_fit_is_the_layout_error_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = edited("        a100: {mig-3g.40gb: 16}\n", "").replace('{"3g.40gb": 2}', '{"3g.40gb": 3}')
    code, output, headlines = validate(tmp_path, monkeypatch, text)
    assert (code, [m["code"] for m in headlines]) == (1, ["GS303"]), output


@pytest.mark.parametrize("folder_exists", [False, True])
def test_a_missing_template_names_the_file_as_written_and_no_folder_or_absolute_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, folder_exists: bool
) -> None:
    if folder_exists:
        (tmp_path / "templates").mkdir()
    text = edited("      gpu: {count: 1}\n", "      gpu: {count: 1}\n      template: templates/chat.yaml.j2\n")
    code, output, headlines = validate(tmp_path, monkeypatch, text)
    assert code == 1
    assert [(m["file"], m["code"], m["line"]) for m in headlines] == [("b.yaml", "GS605", "38")], output
    assert "cannot read template 'templates/chat.yaml.j2' of workload 'chat'" in output
    assert str(tmp_path) not in output
    assert str(tmp_path.resolve()) not in output
