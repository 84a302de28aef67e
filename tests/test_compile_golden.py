"""`gpustack compile` end to end: golden output per example, schemas, the seed's traps, determinism, the writer.

Goldens are regenerated only with GPUSTACK_UPDATE_GOLDEN=1.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from builders import sourceless
from click.testing import CliRunner
from conftest import BLUEPRINTS, CASES, UPDATE_GOLDEN, shipped_examples
from manifest_schemas import CRD_GROUP_SUFFIXES, newest_version, validate_any

from gpustack.cli import group, main
from gpustack.codes import OUTPUT_UNSAFE
from gpustack.compile import compile_blueprint
from gpustack.context import Context
from gpustack.dra import pool_classes
from gpustack.mig import check_layout
from gpustack.outputs import render_files
from gpustack.plan import Plan
from gpustack.validation import validate_path
from gpustack.write import MANIFEST, MANIFEST_HEADER

GOLDEN = Path(__file__).resolve().parent / "golden"
EXAMPLES = shipped_examples()


def compiled(path: Path) -> Plan:
    result = validate_path(path)
    assert result.ok and result.blueprint is not None, [d.message for d in result.diagnostics]
    plan = compile_blueprint(result.context)  # the one Context validation built, as the command does
    assert plan.diagnostics == (), "compile reports nothing the checks did not"
    return plan


def is_custom_resource(obj: dict) -> bool:
    """Volcano and Kueue kinds: checked against their upstream CRDs, in the conformance test."""
    return obj["apiVersion"].split("/")[0].endswith(CRD_GROUP_SUFFIXES)


def context(path: Path) -> Context:
    result = validate_path(path)
    assert result.context is not None
    return result.context


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_golden_output(example: Path) -> None:
    files = render_files(compiled(example))
    golden = GOLDEN / example.stem
    if UPDATE_GOLDEN:
        shutil.rmtree(golden, ignore_errors=True)
        for relative, text in files.items():
            (golden / relative).parent.mkdir(parents=True, exist_ok=True)
            (golden / relative).write_text(text, encoding="utf-8")
    expected = {str(p.relative_to(golden)): p.read_text(encoding="utf-8") for p in golden.rglob("*") if p.is_file()}
    assert sorted(files) == sorted(expected), "files differ; rerun with GPUSTACK_UPDATE_GOLDEN=1 if intended"
    for relative, text in files.items():
        assert text == expected[relative], f"{example.stem}/{relative} differs from its golden copy"


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_every_object_passes_kubernetes_schemas(example: Path) -> None:
    plan = compiled(example)
    result = validate_path(example)
    assert result.blueprint is not None
    versions = {result.blueprint.kubernetes_version, newest_version()}
    for version in sorted(versions):
        for manifest in plan.objects:
            if is_custom_resource(manifest.obj):
                continue  # CRD-backed: checked against the upstream CRD in the conformance test below
            assert validate_any(manifest.obj, version) == [], f"{manifest.key} on {version}"


@pytest.mark.conformance
@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_custom_resources_pass_their_upstream_crds(example: Path) -> None:
    from manifest_schemas import skip_without_crds

    skip_without_crds()
    for manifest in compiled(example).objects:
        if is_custom_resource(manifest.obj):
            # validate_any takes a CRD group to its upstream CRD, CEL rules included.
            assert validate_any(manifest.obj, newest_version()) == [], manifest.key


def pod_specs(obj: dict) -> list[dict]:
    spec = obj.get("spec", {})
    if obj["kind"] == "Job" and obj["apiVersion"].startswith("batch.volcano.sh"):
        return [task["template"]["spec"] for task in spec["tasks"]]
    if "template" in spec:
        return [spec["template"]["spec"]]
    return []


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_seed_traps_cannot_happen(example: Path) -> None:
    """Every taint has its toleration, every resource name is advertised, every MIG config is a real layout."""
    ctx = context(example)
    plan = compile_blueprint(sourceless(ctx.blueprint))
    for manifest in plan.by_family("workloads"):
        labels = manifest.obj["metadata"]["labels"]
        if "gpustack.io/pool" not in labels or not pod_specs(manifest.obj):
            continue
        pool = ctx.pools[labels["gpustack.io/pool"]]
        advertised = {offer.resource for offer in ctx.offers[pool.name]}
        for spec in pod_specs(manifest.obj):
            tolerated = {(t["key"], t.get("value"), t["effect"]) for t in spec.get("tolerations", [])}
            assert tolerated == {(t.key, t.value, t.effect) for t in pool.taints}, manifest.key
            terms = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
            # A static pool by gpustack's pool label, a selector pool by exactly its selector.
            expected = (
                [{"key": "gpustack.io/pool", "operator": "In", "values": [pool.name]}]
                if pool.selector is None
                else [{"key": k, "operator": "In", "values": [v]} for k, v in pool.selector.match_labels]
            )
            assert terms["nodeSelectorTerms"] == [{"matchExpressions": expected}]
            if pool.allocation == "dra":
                # A DRA pod claims its devices from a template of its own namespace, on a class of its own pool,
                # and asks for no extended resource the DRA node does not advertise.
                [claim] = spec["resourceClaims"]
                template = plan.find("ResourceClaimTemplate", claim["resourceClaimTemplateName"], manifest.namespace)
                assert template is not None, manifest.key
                [request] = template.obj["spec"]["spec"]["devices"]["requests"]
                classes = {c.name for c in pool_classes(ctx, pool.name)}
                assert request["exactly"]["deviceClassName"] in classes, manifest.key
                for container in spec["containers"]:
                    assert container["resources"]["claims"] == [{"name": claim["name"]}]
                    assert not [r for r in container["resources"]["limits"] if r.startswith("nvidia.com/")]
                continue
            for container in spec["containers"]:
                limits = container["resources"]["limits"]
                requests = container["resources"]["requests"]
                gpu = {name for name in limits if name.startswith("nvidia.com/")}
                assert gpu and gpu <= advertised, f"{manifest.key} requests {gpu}, pool advertises {advertised}"
                assert all(requests[name] == limits[name] for name in gpu)
                assert all(env["name"] != "CUDA_VISIBLE_DEVICES" for env in container.get("env", []))
    mig = plan.find("ConfigMap", ctx.blueprint.mig_manager.config_map, ctx.blueprint.mig_manager.namespace)
    if mig is not None:
        configs = yaml.safe_load(mig.obj["data"]["config.yaml"])["mig-configs"]
        for pool in ctx.blueprint.pools:
            model = ctx.models[pool.name]
            if pool.sharing.mig is None or model is None or model.mig is None:
                continue
            for entry in configs[f"gpustack-{pool.name}"]:
                assert check_layout(model.mig, entry["mig-devices"]).valid


def compile_in_subprocess(example: Path, out: Path, seed: str) -> dict[str, bytes]:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    subprocess.run(
        [sys.executable, "-m", "gpustack", "compile", str(example), "-d", str(out)],
        check=True,
        env=env,
        capture_output=True,
    )
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


def test_same_bytes_across_runs_and_hash_seeds(tmp_path: Path) -> None:
    example = BLUEPRINTS / "seed-article.yaml"
    first = compile_in_subprocess(example, tmp_path / "a", "0")
    second = compile_in_subprocess(example, tmp_path / "b", "12345")
    assert first == second


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(group, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_check_reports_stale_and_current(tmp_path: Path) -> None:
    out = tmp_path / "out"
    example = str(BLUEPRINTS / "quickstart.yaml")
    assert run("compile", example, "-d", str(out))[0] == 0
    assert run("compile", example, "-d", str(out), "--check") == (0, f"{out} is up to date\n", "")
    values = out / "gpu-operator" / "values.yaml"
    values.write_text(values.read_text() + "# hand edit\n")
    (out / "stray.yaml").write_text("x: 1\n")
    code, stdout, _ = run("compile", example, "-d", str(out), "--check")
    assert code == 1
    assert "changed: gpu-operator/values.yaml" in stdout and "-# hand edit" in stdout
    assert "unexpected: stray.yaml" in stdout


def test_invalid_blueprint_writes_nothing_and_keeps_previous_output(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run("compile", str(BLUEPRINTS / "quickstart.yaml"), "-d", str(out))[0] == 0
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    code, _, stderr = run("compile", str(CASES / "invalid" / "seed-a100-4x3g20gb.yaml"), "-d", str(out))
    assert code == 1
    assert "error[GS303]" in stderr and "nothing written" in stderr
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert run("compile", str(CASES / "invalid" / "unknown-model.yaml"), "-d", str(tmp_path / "fresh"))[0] == 1
    assert not (tmp_path / "fresh").exists()


def test_a_failed_write_leaves_the_previous_output_intact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "out"
    assert run("compile", str(BLUEPRINTS / "quickstart.yaml"), "-d", str(out))[0] == 0
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}

    def broken_write(self: Path, *args: object, **kwargs: object) -> int:
        raise OSError("disk full")

    monkeypatch.setattr(Path, "write_text", broken_write)
    code, _, stderr = run("compile", str(BLUEPRINTS / "seed-article.yaml"), "-d", str(out))
    monkeypatch.undo()
    assert code == 1
    assert OUTPUT_UNSAFE in stderr and "disk full" in stderr and "previous output is left as it was" in stderr
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert [p.name for p in tmp_path.iterdir()] == ["out"], "no staging directory is left behind"


def test_refuses_to_replace_a_directory_it_did_not_write(tmp_path: Path) -> None:
    (tmp_path / "mine.txt").write_text("precious")
    code, _, stderr = run("compile", str(BLUEPRINTS / "quickstart.yaml"), "-d", str(tmp_path))
    assert code == 1
    assert OUTPUT_UNSAFE in stderr
    assert (tmp_path / "mine.txt").read_text() == "precious"


def test_stream_is_one_multi_document_yaml(tmp_path: Path) -> None:
    code, stdout, stderr = run("compile", str(BLUEPRINTS / "seed-article.yaml"), "-d", "-")
    assert code == 0
    documents = list(yaml.safe_load_all(stdout))
    plan = compiled(BLUEPRINTS / "seed-article.yaml")
    # Exactly what the kustomization applies: no Node objects (applying one that does not exist creates it).
    assert documents == [m.obj for m in plan.objects if m.family not in ("nodes", "node-taints")]
    assert not [d for d in documents if d["kind"] == "Node"]
    assert "not in the stream" in stderr and "gpu-operator/values.yaml" in stderr
    assert "node label and taint patch(es)" in stderr


def test_a_stream_that_fails_half_way_prints_nothing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`compile -d - | kubectl apply -f -` must not apply half a cluster when rendering breaks (only a bug can)."""
    import gpustack.commands.compile as command

    def breaks_after_one(plan: Plan) -> Iterator[str]:
        yield "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: first\n---\n"
        raise RuntimeError("rendering broke")

    monkeypatch.setattr(command, "stream_documents", breaks_after_one)
    with pytest.raises(SystemExit) as stopped:
        main(["compile", str(BLUEPRINTS / "seed-article.yaml"), "-d", "-"])
    captured = capsys.readouterr()
    assert stopped.value.code not in (0, None)
    assert captured.out == ""
    assert "internal error: RuntimeError: rendering broke" in captured.err


def test_check_of_a_stream_is_a_usage_error() -> None:
    assert run("compile", str(BLUEPRINTS / "quickstart.yaml"), "-d", "-", "--check")[0] == 2


def test_a_killed_run_leaves_nothing_behind_and_its_output_is_recovered(tmp_path: Path) -> None:
    out = tmp_path / "out"
    example = str(BLUEPRINTS / "quickstart.yaml")
    assert run("compile", example, "-d", str(out))[0] == 0
    # A run killed while staging (it writes gpustack's manifest first), and one killed between the fallback swap's
    # two renames; and a user's own folder that only looks like a leftover, which is never touched:
    (tmp_path / ".out.new-abc").mkdir()
    (tmp_path / ".out.new-abc" / MANIFEST).write_text(MANIFEST_HEADER)
    out.rename(tmp_path / ".out.old-abc")
    (tmp_path / ".out.old-2024-01").mkdir()
    (tmp_path / ".out.old-2024-01" / "notes.txt").write_text("jan")
    assert run("compile", example, "-d", str(out))[0] == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [".out.old-2024-01", "out"]
    assert run("compile", example, "-d", str(out), "--check")[0] == 0


def test_replacing_output_swaps_it_whole(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run("compile", str(BLUEPRINTS / "quickstart.yaml"), "-d", str(out))[0] == 0
    assert run("compile", str(BLUEPRINTS / "seed-article.yaml"), "-d", str(out))[0] == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    assert run("compile", str(BLUEPRINTS / "seed-article.yaml"), "-d", str(out), "--check")[0] == 0


def test_kustomization_lists_every_applied_manifest(tmp_path: Path) -> None:
    plan = compiled(BLUEPRINTS / "seed-article.yaml")
    files = render_files(plan)
    kustomization = yaml.safe_load(files["kustomization.yaml"])
    listed = set(kustomization["resources"])
    assert listed == {m.file for m in plan.objects if m.family not in ("nodes", "node-taints")}
    assert all(name in files for name in listed)
    assert "nodes/taints.yaml" in files and "nodes/taints.yaml" not in listed
    assert "nodes/nodes.yaml" in files and "nodes/nodes.yaml" not in listed
    readme = files["README.md"]
    assert "helm upgrade --install gpu-operator" in readme and "--version v26.7.0" in readme
    assert readme.count("--wait --timeout") == len(plan.releases)
    # The operator upgrades its CRDs in a hook that needs it (values.yaml: operator.upgradeCRD).
    assert "-f gpu-operator/values.yaml --wait --timeout 15m --disable-openapi-validation" in readme
    for name in files:
        assert f"`{name}`" in readme or name == "README.md"
