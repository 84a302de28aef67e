"""N12: the `cloud` block's strings have the providers' grammars, and a review sees the block and its node class.

Built from security-review-3/n12-cloud-review/repro.sh (a zone with a line break, `$(id)`, `*`, a NUL in diskType,
a GKE machine type with flags after it, and a Karpenter nodeClass switched to another EC2NodeClass), plus variants.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from gpustack import schema
from gpustack.load import parse_document
from gpustack.review.loading import side_from_file
from gpustack.review.report import RENDERERS
from gpustack.review.review import review_change
from gpustack.validation import validate_path, validate_text

REPO = Path(__file__).resolve().parent.parent

# The review's k.yaml: a Karpenter GPU pool and a GKE CPU pool.
K_YAML = """apiVersion: gpustack.io/v1alpha1
kind: ClusterBlueprint
metadata: {name: cl}
spec:
  kubernetes: {version: "1.33"}
  nodePools:
    - name: h100
      gpu: {model: H100-SXM5-80GB, count: 8}
      cloud: {provider: karpenter, zones: ["us-east-1a"], nodeClass: "default", diskType: gp3}
      minNodes: 0
      maxNodes: 2
      taints: [{key: gpustack.io/pool, value: h100, effect: NoSchedule}]
    - name: cpu
      cloud: {provider: gke, machineType: "n2-standard-8", zones: [us-central1-a]}
      count: 1
  tenants:
    - {name: ml, namespaces: [ml], pools: [h100], quota: {h100: {gpu: 8}}}
"""


def repro_k2() -> str:
    """repro.sh's sed, applied to k.yaml."""
    return (
        K_YAML.replace('nodeClass: "default"', 'nodeClass: "admin-node-role"')
        .replace('zones: ["us-east-1a"]', 'zones: ["us-east-1a\\n  evil: 1", "$(id)", "*"]')
        .replace("diskType: gp3", 'diskType: "gp3\\u0000;x"')
        .replace('machineType: "n2-standard-8"', 'machineType: "n2-standard-8 --metadata=startup-script=curl|sh"')
    )


def shape_errors(text: str) -> list[tuple[str, str, int, int]]:
    doc = parse_document(text, "k2.yaml")
    return [
        (d.code, ".".join(map(str, d.path)), d.span.start.line, d.span.start.column) for d in schema.check_shape(doc)
    ]


def test_the_repro_s_strings_are_refused_at_their_lines() -> None:
    assert shape_errors(repro_k2()) == [
        ("GS105", "spec.nodePools.0.cloud.zones.0", 9, 44),
        ("GS105", "spec.nodePools.0.cloud.zones.1", 9, 69),
        ("GS105", "spec.nodePools.0.cloud.zones.2", 9, 78),
        ("GS105", "spec.nodePools.0.cloud.diskType", 9, 124),
        ("GS105", "spec.nodePools.1.cloud.machineType", 14, 43),
    ]


def test_the_original_blueprint_is_refused_only_for_its_karpenter_disk() -> None:
    # Its strings pass their grammars; its Karpenter diskType is refused: a NodePool cannot carry it (GS316, the
    # EC2NodeClass's, which gpustack does not write).
    assert [d.code for d in validate_text(K_YAML, "k.yaml").diagnostics] == ["GS316"]


# --- variants: every field, every provider, the characters that matter ----------------------------------------

HOSTILE = [
    "\x00",
    "\n",
    "\r",
    "\u2028",
    " ",
    "\t",
    "$(id)",
    "`id`",
    ";id",
    "|sh",
    "'",
    '"',
    "*",
    " --flag",
    "\u202e",
    "/../",
]

# provider -> (a real zone, a real machine type)
REAL = {
    "gke": ("us-central1-a", "a2-ultragpu-8g"),
    "eks": ("us-east-1a", "p5.48xlarge"),
    "karpenter": ("us-east-1a", "p5.48xlarge"),
    "aks": ("1", "Standard_ND96amsr_A100_v4"),
}


def cloud_blueprint(cloud: dict[str, Any]) -> str:
    data = yaml.safe_load(K_YAML)
    data["spec"]["nodePools"][0]["cloud"] = cloud
    data["spec"]["nodePools"][0].pop("gpu") if "machineType" in cloud and cloud["provider"] != "karpenter" else None
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=False)


def refused_fields(cloud: dict[str, Any]) -> set[str]:
    return {path for code, path, _, _ in shape_errors(cloud_blueprint(cloud)) if code == "GS105"}


@pytest.mark.parametrize("provider", sorted(REAL))
@pytest.mark.parametrize("bad", HOSTILE, ids=[repr(b) for b in HOSTILE])
def test_hostile_characters_are_refused_in_every_string_of_the_block(provider: str, bad: str) -> None:
    zone, machine = REAL[provider]
    cloud: dict[str, Any] = {
        "provider": provider,
        "zones": [zone + bad],
        "machineType": machine + bad,
        "diskType": "gp3" + bad,
    }
    expected = {f"spec.nodePools.0.cloud.{field}" for field in ("zones.0", "machineType", "diskType")}
    if provider == "eks":  # EKS has no disk type at all (tests/test_cloud_karpenter.py): nothing to parse
        del cloud["diskType"]
        expected.remove("spec.nodePools.0.cloud.diskType")
    if provider == "karpenter":
        cloud["nodeClass"] = "gpu" + bad
        expected.add("spec.nodePools.0.cloud.nodeClass")
    assert refused_fields(cloud) == expected


@pytest.mark.parametrize(
    ("provider", "field", "value"),
    [
        ("gke", "zones", "us-east-1a"),  # an AWS zone on GKE
        ("eks", "zones", "us-central1-a"),  # a GCP zone on EKS
        ("aks", "zones", "eastus-1"),
        ("gke", "machineType", "p5.48xlarge"),
        ("eks", "machineType", "n2-standard-8"),
        ("karpenter", "machineType", "Standard_D8s_v5"),
        ("aks", "machineType", "a2-highgpu-1g"),
        ("karpenter", "nodeClass", "Admin-Role"),
        ("karpenter", "nodeClass", "a_b"),
        ("karpenter", "nodeClass", "-gpu"),
    ],
)
def test_another_provider_s_names_are_refused(provider: str, field: str, value: str) -> None:
    cloud: dict[str, Any] = {"provider": provider, field: [value] if field == "zones" else value}
    assert refused_fields(cloud) == {f"spec.nodePools.0.cloud.{field}" + (".0" if field == "zones" else "")}


# Real names from the providers' documentation, beyond the catalog's: custom and metal machine types, Local and
# Wavelength Zones, constrained-vCPU Azure sizes.
REAL_NAMES: dict[str, dict[str, list[str]]] = {
    "gke": {
        "zones": ["us-central1-a", "europe-west4-b", "northamerica-northeast1-a", "me-central2-a", "us-east5-c"],
        "machineType": ["n2-standard-8", "e2-medium", "f1-micro", "custom-4-16384", "n2-custom-4-16384-ext"],
        "diskType": ["pd-standard", "pd-balanced", "pd-ssd", "hyperdisk-balanced"],
    },
    "eks": {
        "zones": ["us-east-1a", "us-west-2-lax-1a", "us-east-1-wl1-bos-wlz-1", "us-gov-west-1a", "ap-southeast-4a"],
        "machineType": ["m5.large", "u-6tb1.metal", "c7gd.metal-48xl", "mac2-m2pro.metal", "u7i-12tb.224xlarge"],
        "diskType": ["gp2", "gp3", "io1", "io2", "st1", "sc1", "standard"],
    },
    "aks": {
        "zones": ["1", "2", "3"],
        "machineType": ["Standard_D8s_v5", "Standard_DS13-4_v2", "Basic_A0", "Standard_NC4as_T4_v3"],
        "diskType": ["Managed", "Ephemeral"],
    },
}


@pytest.mark.parametrize(
    ("provider", "field", "value"),
    [(p, f, v) for p, fields in REAL_NAMES.items() for f, values in fields.items() for v in values]
    + [("karpenter", "nodeClass", name) for name in ("default", "gpu", "gpu-h100.v2", "admin-node-role")],
)
def test_real_names_pass(provider: str, field: str, value: str) -> None:
    cloud: dict[str, Any] = {"provider": provider, field: [value] if field == "zones" else value}
    assert refused_fields(cloud) == set()


def catalog_machines() -> list[tuple[str, str]]:
    data = yaml.safe_load((REPO / "gpustack" / "data" / "cloud-machines.yaml").read_text(encoding="utf-8"))
    rows = [(provider, machine) for provider, table in data["providers"].items() for machine in table["machines"]]
    return rows + [("karpenter", machine) for machine in data["providers"]["eks"]["machines"]]


@pytest.mark.parametrize(("provider", "machine"), catalog_machines())
def test_every_machine_of_the_catalog_passes_its_provider_s_grammar(provider: str, machine: str) -> None:
    assert refused_fields({"provider": provider, "machineType": machine}) == set()


def shipped_blueprints() -> list[Path]:
    """Every whole blueprint shipped (not workload templates, nor a fleet's overlays)."""
    found = [*sorted((REPO / "blueprints").rglob("*.yaml")), REPO / "tests/cases/schema/valid/maximal.yaml"]
    return [path for path in found if "\nkind: ClusterBlueprint" in "\n" + path.read_text(encoding="utf-8")]


def test_the_shipped_cloud_blueprints_are_among_them() -> None:
    names = {path.name for path in shipped_blueprints()}
    assert {"gke.yaml", "eks.yaml", "aks.yaml", "karpenter.yaml", "quickstart.yaml", "maximal.yaml"} <= names


@pytest.mark.parametrize("path", shipped_blueprints(), ids=lambda p: str(p.relative_to(REPO)))
def test_every_shipped_blueprint_still_validates(path: Path) -> None:
    errors = [d for d in validate_path(str(path)).diagnostics if d.code.startswith("GS1")]
    assert errors == []


# --- the review sees the block ----------------------------------------------------------------------------------


# The review cases need a valid base: k.yaml with its Karpenter diskType moved to the GKE pool, where a disk type
# reaches the cloud (GS316 refuses it on Karpenter).
K_REVIEW = K_YAML.replace(", diskType: gp3}", "}").replace(
    "zones: [us-central1-a]}", "zones: [us-central1-a], diskType: pd-balanced}"
)


def review_text(tmp_path: Path, old: str, new: str) -> str:
    (tmp_path / "k.yaml").write_text(old, encoding="utf-8")
    (tmp_path / "k2.yaml").write_text(new, encoding="utf-8")
    before, after = side_from_file(str(tmp_path / "k.yaml")), side_from_file(str(tmp_path / "k2.yaml"))
    assert before.snapshot is not None and after.snapshot is not None
    return str(RENDERERS["text"](review_change(before.snapshot, after.snapshot)))


def test_switching_the_karpenter_node_class_is_a_high_risk_and_a_field_change(tmp_path: Path) -> None:
    report = review_text(tmp_path, K_REVIEW, K_REVIEW.replace('nodeClass: "default"', 'nodeClass: "admin-node-role"'))
    assert "no blueprint field changes" not in report
    assert "cloud.nodeClass: default -> admin-node-role" in report
    assert "[HIGH] Karpenter pool 'h100' moves to another EC2NodeClass" in report
    assert "(karpenter-node-class-changed)" in report


def test_a_provider_change_is_a_high_risk_and_a_field_change(tmp_path: Path) -> None:
    report = review_text(
        tmp_path,
        K_REVIEW,
        K_REVIEW.replace("provider: gke, machineType", "provider: eks, machineType")
        .replace('"n2-standard-8"', "m5.2xlarge")
        .replace("zones: [us-central1-a], diskType: pd-balanced", "zones: [us-east-1a]"),
    )
    assert "cloud.provider: gke -> eks" in report
    assert "cloud.machineType: n2-standard-8 -> m5.2xlarge" in report
    assert "[HIGH] cloud pool 'cpu' is replaced: provider gke -> eks" in report


@pytest.mark.parametrize(
    ("old", "new", "line"),
    [
        ('zones: ["us-east-1a"]', 'zones: ["us-east-1b"]', "cloud.zones: [us-east-1a] -> [us-east-1b]"),
        ("diskType: pd-balanced", "diskType: pd-ssd", "cloud.diskType: pd-balanced -> pd-ssd"),
        ('nodeClass: "default"', 'nodeClass: "default", spot: true', "cloud.spot: false -> true"),
    ],
)
def test_other_cloud_fields_are_listed_without_the_node_class_risk(
    tmp_path: Path, old: str, new: str, line: str
) -> None:
    report = review_text(tmp_path, K_REVIEW, K_REVIEW.replace(old, new))
    assert line in report
    assert "karpenter-node-class-changed" not in report


def test_an_unchanged_node_class_is_no_risk(tmp_path: Path) -> None:
    report = review_text(tmp_path, K_REVIEW, K_REVIEW.replace("maxNodes: 2", "maxNodes: 3"))
    assert "karpenter-node-class-changed" not in report and "cloud.nodeClass" not in report
