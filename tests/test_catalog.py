"""The GPU catalog: every model resolves from the labels real nodes carry, and the data agrees with itself."""

from __future__ import annotations

import math
from importlib import resources

import pytest
import yaml

from gpustack.catalog import Catalog, GpuModel, catalog_from, load_catalog, sanitise

CATALOG = load_catalog()
RAW = yaml.safe_load(resources.files("gpustack").joinpath("data/gpus.yaml").read_text(encoding="utf-8"))

REQUIRED_MODELS = (
    "V100-SXM2-16GB",
    "V100-SXM2-32GB",
    "V100-PCIE-16GB",
    "V100-PCIE-32GB",
    "T4",
    "A10",
    "A10G",
    "A30",
    "A40",
    "A100-SXM4-40GB",
    "A100-PCIE-40GB",
    "A100-SXM4-80GB",
    "A100-PCIE-80GB",
    "L4",
    "L40",
    "L40S",
    "RTX-6000-Ada",
    "H100-SXM5-80GB",
    "H100-PCIE-80GB",
    "H100-NVL",
    "H200",
    "H200-NVL",
    "GH200-96GB",
    "GH200-144GB",
    "B200",
    "GB200",
    "RTX-PRO-6000-Blackwell-Server",
    "RTX-PRO-6000-Blackwell-Workstation",
)

MIG_MODELS = {
    "A30": "A30-24GB",
    "A100-SXM4-40GB": "A100-40GB",
    "A100-PCIE-40GB": "A100-40GB",
    "A100-SXM4-80GB": "A100-80GB",
    "A100-PCIE-80GB": "A100-80GB",
    "H100-SXM5-80GB": "H100-80GB",
    "H100-PCIE-80GB": "H100-80GB",
    "H100-NVL": "H100-94GB",
    "H200": "H200-141GB",
    "H200-NVL": "H200-141GB",
    "GH200-96GB": "GH200-96GB",
    "GH200-144GB": "GH200-144GB",
    "B200": "B200-180GB",
    "GB200": "GB200-186GB",
    "RTX-PRO-6000-Blackwell-Server": "RTX-PRO-6000-Blackwell-96GB",
    "RTX-PRO-6000-Blackwell-Workstation": "RTX-PRO-6000-Blackwell-96GB",
}

# Label values as real nodes carry them (GFD suffixes, old drivers, vGPU guests) -> the model they name.
NODE_LABELS = {
    "A100-SXM4-80GB": "A100-SXM4-80GB",
    "NVIDIA-A100-SXM4-80GB-MIG-3g.40gb": "A100-SXM4-80GB",
    "A100-SXM-80GB": "A100-SXM4-80GB",
    "A100-SXM4-40GB-MIG-1g.5gb": "A100-SXM4-40GB",
    "A100-SXM4-40GB-MIG-1g.5gb-SHARED": "A100-SXM4-40GB",
    "NVIDIA-A100-SXM4-40GB-MIG-INVALID": "A100-SXM4-40GB",
    "A100-PCIE-40GB": "A100-PCIE-40GB",
    "NVIDIA-A100-80GB-PCIe-MIG-1g.10gb": "A100-PCIE-80GB",
    "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb.me": "H100-SXM5-80GB",
    "NVIDIA-H100-80GB-HBM3-MIG-3g.40gb-SHARED": "H100-SXM5-80GB",
    "H100-80GB-HBM3": "H100-SXM5-80GB",
    "nvidia-h100-80gb-hbm3": "H100-SXM5-80GB",
    "NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition-MIG-1g.24gb-me": "RTX-PRO-6000-Blackwell-Server",
    "Tesla-T4": "T4",
    "Tesla-T4-SHARED": "T4",
    "Tesla-V100S-PCIE-32GB": "V100-PCIE-32GB",
    "NVIDIA-L4-SHARED": "L4",
    "NVIDIA-A10-24Q": "A10",
    "NVIDIA-A10-24Q-SHARED": "A10",
    "NVIDIA-A10-8Q": "A10",
    "NVIDIA-A40-12Q": "A40",
    "NVIDIA-A16-4Q": "A16",
    "H200-70C": "H200-NVL",
    "NVIDIA-H200-70C": "H200-NVL",
    "NVIDIA-H200-35C": "H200-NVL",
    "NVIDIA-H200": "H200",
    "NVIDIA-GH200-480GB": "GH200-96GB",
    "NVIDIA-GB200": "GB200",
    " NVIDIA-B200 ": "B200",
}

# Values seen in tutorials and generated docs that no driver ever wrote (gfd-products.yaml
# meta.fabricated_values_seen_in_docs), and the seed article's `NVIDIA-A100` / `NVIDIA-H100`.
FABRICATED_LABELS = (
    "NVIDIA-H100-SXM5-80GB",
    "NVIDIA-H100-SXM4-80GB",
    "NVIDIA-H100-80GB-PCIe",
    "NVIDIA-H200-141GB",
    "NVIDIA-H200-SXM5-141GB",
    "NVIDIA-H200-SXM",
    "NVIDIA-H200-80GB-HBM3",
    "NVIDIA-T4",
    "NVIDIA-V100-SXM2-16GB",
    "NVIDIA-Tesla-V100-SXM2-16GB",
    "NVIDIA-GB200-NVL",
    "NVIDIA-A100",
    "NVIDIA-H100",
)

# GFD's family from compute capability (k8s-device-plugin internal/lm/resource.go, v0.20.0).
GFD_FAMILY = {(7, 0): "volta", (7, 5): "turing", (8, 0): "ampere", (8, 6): "ampere", (8, 9): "ada-lovelace"}


def _gfd_family(capability: str) -> str:
    major, minor = (int(part) for part in capability.split("."))
    if major == 9:
        return "hopper"
    if major in (10, 12):
        return "blackwell"
    return GFD_FAMILY[(major, minor)]


def _all_labels(model: GpuModel) -> tuple[str, ...]:
    return (*model.product_labels, *model.vgpu_labels, *RAW["models"][model.key].get("labels_seen", ()))


@pytest.mark.parametrize("key", REQUIRED_MODELS)
def test_required_model_resolves_by_key_and_every_label(key):
    model = CATALOG.resolve(key)
    assert model is not None and model.key == key
    for label in _all_labels(model):
        resolved = CATALOG.resolve(label)
        assert resolved is not None and resolved.key == key, label


@pytest.mark.parametrize(("label", "key"), NODE_LABELS.items())
def test_node_label_resolves(label, key):
    model = CATALOG.resolve(label)
    assert model is not None, label
    assert model.key == key


@pytest.mark.parametrize("label", FABRICATED_LABELS)
def test_fabricated_label_is_no_model(label):
    assert all(label not in m.product_labels and label != m.key for m in CATALOG.models.values())
    assert CATALOG.resolve(label) is None


def test_unknown_name_resolves_to_none_with_suggestion():
    assert CATALOG.resolve("NVIDIA-H100-SXM5-80GB") is None
    suggestions = CATALOG.suggest("NVIDIA-H100-SXM5-80GB")
    assert suggestions
    first = CATALOG.resolve(suggestions[0])
    assert first is not None and first.key == "H100-SXM5-80GB"
    assert CATALOG.suggest("NVIDIA-T4") == ["T4"]
    assert CATALOG.resolve("RTX-4090") is None
    assert CATALOG.suggest("completely-unrelated") == []


def test_vgpu_suffix_is_stripped_only_when_the_rest_is_a_gpu():
    assert CATALOG.resolve("NVIDIA-X9-24Q") is None
    assert CATALOG.resolve("NVIDIA-L40S-48Q") == CATALOG.models["L40S"]


def test_mig_capable_models_are_exactly_the_mig_models():
    assert {k: m.mig.name for k, m in CATALOG.models.items() if m.mig is not None} == MIG_MODELS


@pytest.mark.parametrize("key", sorted(RAW["models"]))
def test_model_record_is_complete(key):
    raw = RAW["models"][key]
    model = CATALOG.models[key]
    assert model.sources and all(isinstance(s, str) and s for s in model.sources)
    assert raw.get("confidence")
    assert isinstance(raw.get("observed"), bool)
    assert model.product_labels and model.product_label == model.product_labels[0]
    for name in model.nvml_names:
        assert sanitise(name) in (*model.product_labels, *model.vgpu_labels), name


@pytest.mark.parametrize("key", sorted(RAW["models"]))
def test_family_follows_compute_capability(key):
    model = CATALOG.models[key]
    assert model.family == _gfd_family(model.compute_capability)


@pytest.mark.parametrize("key", sorted(RAW["models"]))
def test_observed_memory_is_a_little_under_the_nominal(key):
    # NVML reports less than the nominal size (ECC, reserved memory), never more: a value outside
    # (90 %, 100 %] is a MIG slice or a different card.
    model = CATALOG.models[key]
    for mib in model.memory_mib:
        assert 0.9 * model.memory_gib * 1024 < mib <= model.memory_gib * 1024, mib


@pytest.mark.parametrize("key", sorted(MIG_MODELS))
def test_mig_profile_names_follow_the_model_memory(key):
    # go-nvlib names the full instance after ceil(total GiB): 81559 MiB -> 7g.80gb.
    model = CATALOG.models[key]
    assert model.mig is not None
    assert math.ceil(max(model.memory_mib) / 1024) == model.mig.memory_gib == model.memory_gib


def test_names_are_unique_across_models():
    seen: dict[str, str] = {}
    for model in CATALOG.models.values():
        for name in {model.key, *model.product_labels, *model.vgpu_labels}:
            assert seen.setdefault(name.casefold(), model.key) == model.key, name


def test_catalog_refuses_a_name_on_two_models():
    data = {"mig_geometries": {}, "models": {key: dict(RAW["models"][key]) for key in ("L4", "L40")}}
    data["models"]["L40"]["product_labels"] = ["NVIDIA-L40", "NVIDIA-L4"]
    with pytest.raises(ValueError, match="NVIDIA-L4"):
        catalog_from(data)


def test_mps_client_limit_follows_compute_capability():
    assert CATALOG.models["V100-SXM2-16GB"].mps_max_clients == 16
    assert CATALOG.models["T4"].mps_max_clients == 48
    assert CATALOG.models["H100-SXM5-80GB"].mps_max_clients == 48


def test_product_label_is_the_current_driver_one():
    assert CATALOG.models["A100-SXM4-40GB"].product_label == "NVIDIA-A100-SXM4-40GB"
    assert CATALOG.models["A100-SXM4-80GB"].product_label == "NVIDIA-A100-SXM4-80GB"
    assert CATALOG.models["H100-SXM5-80GB"].product_label == "NVIDIA-H100-80GB-HBM3"
    assert CATALOG.models["T4"].product_label == "Tesla-T4"


def test_gke_accelerators():
    assert CATALOG.models["L4"].gke_accelerator == "nvidia-l4"
    assert CATALOG.models["A100-SXM4-40GB"].gke_accelerator == "nvidia-tesla-a100"
    assert CATALOG.models["A10"].gke_accelerator is None


def test_load_catalog_is_cached_and_hashable_geometries():
    assert load_catalog() is CATALOG
    assert isinstance(CATALOG, Catalog)
    assert len({g for g in CATALOG.geometries.values()}) == len(CATALOG.geometries)


@pytest.mark.parametrize("name", sorted(RAW["mig_geometries"]))
def test_geometry_record_is_complete(name):
    raw = RAW["mig_geometries"][name]
    assert raw.get("sources") and raw.get("confidence")
    assert CATALOG.geometries[name].sources
