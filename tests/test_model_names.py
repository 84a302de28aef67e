"""Names people type: GKE accelerator names, every variant in suggestions, `gpustack models TEXT` search."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from conftest import BLUEPRINTS

from gpustack.catalog import load_catalog
from gpustack.cli import group
from gpustack.codes import UNKNOWN_MODEL
from gpustack.validation import validate_text


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("nvidia-h100-80gb", "H100-SXM5-80GB"),
        ("nvidia-tesla-t4", "T4"),
        ("nvidia-l4", "L4"),
        ("nvidia-tesla-a100", "A100-SXM4-40GB"),
        ("nvidia-a100-80gb", "A100-SXM4-80GB"),
        ("nvidia-tesla-v100", "V100-SXM2-16GB"),
    ],
)
def test_gke_accelerator_names_are_gpu_model_aliases(name: str, key: str) -> None:
    model = load_catalog().resolve(name)
    assert model is not None and model.key == key
    text = (BLUEPRINTS / "quickstart.yaml").read_text(encoding="utf-8")
    assert "model: L4," in text
    result = validate_text(text.replace("model: L4,", f"model: {name},"), "q.yaml")
    assert [d.code for d in result.diagnostics if d.severity == "error"] == []


def test_a100_suggestions_include_every_a100() -> None:
    assert load_catalog().suggest("A100") == ["A100-PCIE-40GB", "A100-PCIE-80GB", "A100-SXM4-40GB", "A100-SXM4-80GB"]


def test_unknown_model_hint_lists_every_variant_and_not_the_rejected_name() -> None:
    text = (BLUEPRINTS / "quickstart.yaml").read_text(encoding="utf-8")
    result = validate_text(text.replace("model: L4", "model: A100"), "q.yaml")
    (diagnostic,) = [d for d in result.diagnostics if d.code == UNKNOWN_MODEL]
    assert diagnostic.hint is not None and "'A100-SXM4-80GB'" in diagnostic.hint
    assert "'A100'" not in diagnostic.hint


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(group, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_models_filters_by_case_insensitive_substring() -> None:
    code, out, _ = run("models", "a100")
    assert code == 0
    assert [line.split()[0] for line in out.splitlines()] == [
        "A100-PCIE-40GB",
        "A100-PCIE-80GB",
        "A100-SXM4-40GB",
        "A100-SXM4-80GB",
    ]


def test_models_matches_product_labels_and_cloud_names() -> None:
    assert run("models", "80GB-HBM3")[1].split()[0] == "H100-SXM5-80GB"  # only in the product label
    code, out, _ = run("models", "tesla-t4", "--output", "json")
    assert code == 0
    (model,) = json.loads(out)["models"]
    assert model["key"] == "T4" and model["gkeAccelerators"] == ["nvidia-tesla-t4"]


def test_models_without_a_match_says_so_and_exits_one() -> None:
    code, out, err = run("models", "rtx-4090")
    assert code == 1 and out == ""
    assert "no GPU model matches 'rtx-4090'" in err and "gpustack models" in err


def test_cloud_names_match_as_gke_spells_them_so_fabricated_labels_stay_unknown() -> None:
    catalog = load_catalog()
    assert catalog.resolve("nvidia-h200-141gb") is not None
    assert catalog.resolve("NVIDIA-H200-141GB") is None, "a product label seen only in made-up docs"
