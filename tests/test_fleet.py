"""`gpustack fleet compile`: every cluster's folder byte for byte what `gpustack compile` of its resolved blueprint
writes, the Argo CD and Flux delivery objects valid against the upstream CRDs, --check, and parallel == serial."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from conftest import BLUEPRINTS
from manifest_schemas import crd_errors, skip_without_crds

from gpustack.cli import group
from gpustack.fleet.delivery import applications, delivery_objects
from gpustack.fleet.reading import read_fleet

EXAMPLE = BLUEPRINTS / "fleet"
CLUSTERS = ("train-eu", "train-us", "staging-eu")
CRD_FOR = {
    "ApplicationSet": "argoproj.io_applicationsets.yaml",
    "Application": "argoproj.io_applications.yaml",
    "Kustomization": "kustomize.toolkit.fluxcd.io_kustomizations.yaml",
    "GitRepository": "source.toolkit.fluxcd.io_gitrepositories.yaml",
    "OCIRepository": "source.toolkit.fluxcd.io_ocirepositories.yaml",
}


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(group, list(args))
    return result.exit_code, result.stdout, result.stderr


def tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def fleet(tmp_path: Path) -> Path:
    """A copy of blueprints/fleet, so a test may write beside it."""
    shutil.copytree(EXAMPLE, tmp_path / "fleet")
    return tmp_path / "fleet" / "fleet.yaml"


def with_engine(fleet: Path, delivery: str) -> Path:
    text = fleet.read_text()
    start, end = text.index("  delivery:\n"), text.index("  clusters:\n")
    fleet.write_text(text[:start] + delivery + text[end:])
    return fleet


FLUX_GIT = """  delivery:
    engine: flux
    interval: 5m
    source: {url: ssh://git@github.com/example/gpu-fleet.git, ref: main, path: manifests/fleet, secretRef: fleet-git}
"""
FLUX_OCI = """  delivery:
    engine: flux
    source: {kind: oci, url: oci://ghcr.io/example/gpu-fleet, ref: v1.2.0}
"""


def test_each_cluster_folder_is_what_compile_writes_of_its_resolved_blueprint(fleet: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    code, stdout, stderr = run("fleet", "compile", str(fleet), "-d", str(out))
    assert code == 0, stderr
    assert "wrote 3 cluster folder(s)" in stdout
    assert sorted(p.name for p in out.iterdir()) == sorted([*CLUSTERS, "delivery"])
    for cluster in CLUSTERS:
        code, resolved, stderr = run("fleet", "resolve", str(fleet), cluster)
        assert code == 0, stderr
        blueprint = fleet.parent / f"resolved-{cluster}.yaml"  # beside the base: its templates resolve the same
        blueprint.write_text(resolved)
        single = tmp_path / "single" / cluster
        code, _, stderr = run("compile", str(blueprint), "-d", str(single))
        assert code == 0, stderr
        assert tree(out / cluster) == tree(single), cluster
        assert yaml.safe_load(resolved)["metadata"]["name"] == cluster


def test_overlays_reach_only_their_cluster(fleet: Path) -> None:
    def resolved(cluster: str) -> dict:
        code, text, stderr = run("fleet", "resolve", str(fleet), cluster)
        assert code == 0, stderr
        return yaml.safe_load(text)["spec"]

    eu, us, staging = (resolved(name) for name in CLUSTERS)
    assert [p["name"] for p in us["nodePools"]] == ["h100", "l4", "a100-mig"]  # an extra pool, appended
    assert [p["name"] for p in eu["nodePools"]] == ["h100", "l4"]
    assert us["nodePools"][0]["cloud"] == {
        "provider": "gke",
        "machineType": "a3-highgpu-8g",
        "zones": ["us-central1-a"],
    }
    assert (eu["nodePools"][0]["minNodes"], eu["nodePools"][0]["maxNodes"]) == (4, 8)
    assert eu["tenants"][0]["quota"] == {"h100": {"gpu": 48}}
    assert eu["tenants"][0]["namespaces"] == ["research"]  # merged by name: the rest of the tenant kept
    assert staging["kubernetes"]["version"] == "1.33" and eu["kubernetes"]["version"] == "1.32"


def test_parallel_output_is_the_serial_output(fleet: Path, tmp_path: Path) -> None:
    for jobs, folder in (("1", "serial"), ("3", "parallel")):
        code, _, stderr = run("fleet", "compile", str(fleet), "-d", str(tmp_path / folder), "--jobs", jobs)
        assert code == 0, stderr
    assert tree(tmp_path / "serial") == tree(tmp_path / "parallel")


def test_check_finds_a_stale_cluster_and_one_left_behind(fleet: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run("fleet", "compile", str(fleet), "-d", str(out))[0] == 0
    code, stdout, _ = run("fleet", "compile", str(fleet), "-d", str(out), "--check")
    assert (code, stdout) == (0, f"{out} is up to date (3 clusters)\n")
    overlay = fleet.parent / "clusters" / "train-eu.yaml"
    overlay.write_text(overlay.read_text().replace("maxNodes: 8", "maxNodes: 9"))
    code, stdout, _ = run("fleet", "compile", str(fleet), "-d", str(out), "--check")
    assert code == 1
    assert "changed: train-eu/" not in stdout and "train-eu/changed: cloud/" in stdout
    assert f"{out} is stale: train-eu;" in stdout
    # A cluster gone from the fleet: its folder is named (stale), never deleted.
    assert run("fleet", "compile", str(fleet), "-d", str(out))[0] == 0
    text = fleet.read_text()
    fleet.write_text(text[: text.index("    - name: staging-eu")])
    code, stdout, stderr = run("fleet", "compile", str(fleet), "-d", str(out), "--check")
    assert code == 1 and "staging-eu" in stdout and "no longer in the fleet" in stderr
    assert run("fleet", "compile", str(fleet), "-d", str(out))[0] == 0
    assert (out / "staging-eu" / "kustomization.yaml").is_file()


def test_check_fails_on_a_stale_delivery_folder(fleet: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run("fleet", "compile", str(fleet), "-d", str(out))[0] == 0
    fleet.write_text(fleet.read_text().replace("ref: main", "ref: release"))
    code, stdout, _ = run("fleet", "compile", str(fleet), "-d", str(out), "--check")
    assert code == 1 and "delivery/changed: applicationset.yaml" in stdout


def _crd_valid(objects: list[dict]) -> None:
    skip_without_crds()
    for obj in objects:
        assert crd_errors(obj, CRD_FOR[obj["kind"]]) == [], obj["kind"]


def test_argocd_application_set_and_its_applications_are_valid(fleet: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run("fleet", "compile", str(fleet), "-d", str(out))[0] == 0
    written = list(yaml.safe_load_all((out / "delivery" / "applicationset.yaml").read_text()))
    model = read_fleet(str(fleet)).fleet
    assert model is not None
    assert written == delivery_objects(model)
    (application_set,) = written
    generators = application_set["spec"]["generators"]
    assert [g["clusters"]["values"]["path"] for g in generators] == [f"manifests/fleet/{c}" for c in CLUSTERS]
    assert generators[2]["clusters"]["selector"]["matchLabels"] == {
        "gpustack.io/cluster": "staging-eu",
        "gpustack.io/region": "europe-west4",
        "gpustack.io/environment": "staging",
        "gpustack.io/cloud": "gcp",
    }
    made = applications(model, {c: f"https://{c}.example.com" for c in CLUSTERS})
    assert [a["spec"]["source"]["path"] for a in made] == [f"manifests/fleet/{c}" for c in CLUSTERS]
    assert made[1]["metadata"]["name"] == "gpu-fleet-train-us"
    assert "automated" not in made[0]["spec"]["syncPolicy"]  # a person starts a sync unless autoSync says so
    _crd_valid([application_set, *made])
    kustomization = yaml.safe_load((out / "delivery" / "kustomization.yaml").read_text())
    assert kustomization["resources"] == ["applicationset.yaml"]


@pytest.mark.parametrize("delivery", [FLUX_GIT, FLUX_OCI], ids=["git", "oci"])
def test_flux_objects_are_valid(fleet: Path, tmp_path: Path, delivery: str) -> None:
    with_engine(fleet, delivery)
    out = tmp_path / "out"
    code, _, stderr = run("fleet", "compile", str(fleet), "-d", str(out))
    assert code == 0, stderr
    assert sorted(p.name for p in (out / "delivery").iterdir()) == sorted([*CLUSTERS, ".gpustack-manifest"])
    objects = []
    for cluster in CLUSTERS:
        folder = out / "delivery" / cluster
        resources = yaml.safe_load((folder / "kustomization.yaml").read_text())["resources"]
        found = [obj for name in resources for obj in yaml.safe_load_all((folder / name).read_text())]
        source, kustomization = found
        assert source["kind"] == ("GitRepository" if "ssh://" in delivery else "OCIRepository")
        assert kustomization["spec"]["sourceRef"] == {"kind": source["kind"], "name": "gpu-fleet"}
        expected = f"./manifests/fleet/{cluster}" if "ssh://" in delivery else f"./{cluster}"
        assert kustomization["spec"]["path"] == expected
        assert kustomization["metadata"]["labels"]["gpustack.io/cluster"] == cluster
        objects += found
    if "secretRef" in delivery:
        assert objects[0]["spec"]["secretRef"] == {"name": "fleet-git"} and objects[0]["spec"]["interval"] == "5m"
    _crd_valid(objects)


def test_argocd_auto_sync_prunes(fleet: Path) -> None:
    fleet.write_text(fleet.read_text().replace("    engine: argocd\n", "    engine: argocd\n    autoSync: true\n"))
    model = read_fleet(str(fleet)).fleet
    assert model is not None
    (application_set,) = delivery_objects(model)
    assert application_set["spec"]["template"]["spec"]["syncPolicy"]["automated"] == {"prune": True, "selfHeal": True}
    _crd_valid([application_set])


def test_a_whole_blueprint_cluster_compiles_as_its_file(tmp_path: Path) -> None:
    shutil.copy(BLUEPRINTS / "quickstart.yaml", tmp_path / "quickstart.yaml")
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(
        "apiVersion: gpustack.io/v1alpha1\nkind: Fleet\nmetadata: {name: small}\nspec:\n"
        "  delivery: {engine: argocd, source: {url: 'https://git.example.com/x.git'}}\n"
        "  clusters:\n    - {name: lab, blueprint: quickstart.yaml}\n"
    )
    out = tmp_path / "out"
    code, _, stderr = run("fleet", "compile", str(fleet), "-d", str(out))
    assert code == 0, stderr
    assert run("compile", str(tmp_path / "quickstart.yaml"), "-d", str(tmp_path / "single"))[0] == 0
    assert tree(out / "lab") == tree(tmp_path / "single")
