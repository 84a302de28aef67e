"""`gpustack import` never grants more than the cluster enforces, never reads a config a tenant wrote, stays linear
in pools, and takes `-o FORMAT` like every other command (security-review-3 N5, N6, N7, N17).

Each review reproduction (`../shared/reference/security-review-3/n5-import-quota-max`, `n6-import-configmap-shadow`,
`n7-import-quadratic`) is a test here, built the same way: the review's snapshot edit on tests/cases/import.
"""

from __future__ import annotations

import gc
import json
import sys
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from pytest import MonkeyPatch

from gpustack.cli import group
from gpustack.cluster.importer import Import, import_snapshot
from gpustack.cluster.snapshot import parse_snapshot
from gpustack.validation import validate_text

CASES = Path(__file__).parent / "cases" / "import"
MIXED = (CASES / "mixed-cluster.yaml").read_text(encoding="utf-8")
FIRST_CONFIG_MAP = "- apiVersion: v1\n  kind: ConfigMap"


def _with(items: str, base: str = MIXED) -> str:
    """The snapshot with `items` listed before its first ConfigMap, as the review's repro.sh edits it."""
    at = base.index(FIRST_CONFIG_MAP)
    return base[:at] + items + base[at:]


def _import(text: str) -> Import:
    result = import_snapshot(parse_snapshot(text, "snapshot.yaml"), "snapshot")
    assert validate_text(result.text, "imported.yaml").ok
    return result


def _tenant(result: Import, name: str) -> dict[str, Any]:
    return next(t for t in result.data["spec"]["tenants"] if t["name"] == name)


def _pool(result: Import, name: str) -> dict[str, Any]:
    return next(p for p in result.data["spec"]["nodePools"] if p["name"] == name)


def _quota(name: str, namespace: str, hard: str, extra: str = "") -> str:
    return (
        f"- apiVersion: v1\n  kind: ResourceQuota\n  metadata: {{name: {name}, namespace: {namespace}}}\n"
        f"  spec:\n    hard: {{{hard}}}\n{extra}"
    )


# N5: of several quotas the smallest binds, as the API server enforces each one.


def test_n5_repro_a_second_larger_quota_does_not_raise_the_grant() -> None:
    result = _import(_with(_quota("aaa-ceiling", "vision", 'requests.nvidia.com/gpu.shared: "16"')))
    assert _tenant(result, "vision")["quota"] == {"l4-pool": {"gpu.shared": 8}}
    assert (
        "  # guessed: quota nvidia.com/gpu.shared: vision's ResourceQuotas differ (gpu 8, aaa-ceiling 16); the "
        "smallest, 8, which the API server enforces" in result.text.splitlines()
    )


def test_n5_three_quotas_take_the_smallest_wherever_it_is_listed() -> None:
    quotas = _quota("a-wide", "vision", 'requests.nvidia.com/gpu.shared: "12"') + _quota(
        "z-tight", "vision", 'requests.nvidia.com/gpu.shared: "3"'
    )
    result = _import(_with(quotas))
    assert _tenant(result, "vision")["quota"] == {"l4-pool": {"gpu.shared": 3}}
    assert "(z-tight 3, gpu 8, a-wide 12); the smallest, 3" in result.text


def test_n5_equal_quotas_are_no_guess() -> None:
    result = _import(_with(_quota("again", "vision", 'requests.nvidia.com/gpu.shared: "8"')))
    assert _tenant(result, "vision")["quota"] == {"l4-pool": {"gpu.shared": 8}}
    assert "differ" not in result.text


def test_n5_a_scoped_quota_binds_the_pods_in_its_scope_so_it_binds_the_import() -> None:
    """A quota with a scopeSelector holds only high-priority pods to 2; the blueprint's quota binds every pod, so
    it may grant no more than 2, and says the scope."""
    scoped = _quota(
        "high-only",
        "vision",
        'requests.nvidia.com/gpu.shared: "2"',
        "    scopeSelector:\n      matchExpressions:\n"
        "      - {scopeName: PriorityClass, operator: In, values: [gpustack-high]}\n",
    )
    result = _import(_with(scoped))
    assert _tenant(result, "vision")["quota"] == {"l4-pool": {"gpu.shared": 2}}
    assert (
        "quota nvidia.com/gpu.shared: vision's ResourceQuota high-only (2) counts only pods in scope PriorityClass In "
        "(gpustack-high); imported for every pod, so stricter than the cluster for the others" in result.text
    )


def test_n5_a_quota_with_scopes_only_is_still_the_limit() -> None:
    scoped = _quota("running", "vision", 'requests.nvidia.com/gpu.shared: "4"', "    scopes: [NotTerminating]\n")
    result = _import(_with(scoped))
    assert _tenant(result, "vision")["quota"] == {"l4-pool": {"gpu.shared": 4}}
    assert "counts only pods in scope NotTerminating" in result.text


def test_n5_grouped_namespaces_never_raise_one_namespace_s_limit() -> None:
    """vision (8) and vision-batch (16) are one tenant by their label; each namespace gets the tenant's whole
    quota, so the tenant gets 8, not 16, which would double vision's."""
    grouped = MIXED.replace(
        "  metadata:\n    name: vision\n", "  metadata:\n    name: vision\n    labels: {gpustack.io/tenant: vision}\n"
    )
    extra = (
        "- apiVersion: v1\n  kind: Namespace\n  metadata:\n    name: vision-batch\n"
        "    labels: {gpustack.io/tenant: vision}\n"
    ) + _quota("gpu", "vision-batch", 'requests.nvidia.com/gpu.shared: "16"')
    result = _import(_with(extra, grouped))
    vision = _tenant(result, "vision")
    assert vision["namespaces"] == ["vision", "vision-batch"]
    assert vision["quota"] == {"l4-pool": {"gpu.shared": 8}}
    assert (
        "quota nvidia.com/gpu.shared: the namespaces differ (vision 8, vision-batch 16); the smallest, 8, which each "
        "namespace gets, so none gets more than it has" in result.text
    )


# N6: configs come only from the operator's and the device plugin's namespaces.

FORGED_PLUGIN = """- apiVersion: v1
  kind: ConfigMap
  metadata: {name: my-notes, namespace: aaa-scratch}
  data:
    l4-ts4: |-
      version: v1
      flags:
        migStrategy: none
      sharing:
        timeSlicing:
          renameByDefault: true
          failRequestsGreaterThanOne: false
          resources:
          - name: nvidia.com/gpu
            replicas: 4
"""


def test_n6_repro_a_tenant_config_map_does_not_shadow_the_operator_s() -> None:
    real, shadowed = _import(MIXED), _import(_with(FORGED_PLUGIN))
    assert _pool(shadowed, "l4-pool")["sharing"] == _pool(real, "l4-pool")["sharing"]
    assert _pool(shadowed, "l4-pool")["sharing"]["timeSlicing"]["failRequestsGreaterThanOne"] is True
    assert (
        "# ignored: device plugin or mig-parted configs in namespaces that are neither the GPU Operator's nor the "
        "device plugin's (a tenant may write there), never read: aaa-scratch/my-notes" in shadowed.text.splitlines()
    )


def test_n6_the_operator_s_config_map_missing_is_a_guess_never_the_tenant_s() -> None:
    without = MIXED[: MIXED.index(FIRST_CONFIG_MAP)]  # the operator's ConfigMap is the last item
    result = _import(without + FORGED_PLUGIN)
    l4 = _pool(result, "l4-pool")
    assert "failRequestsGreaterThanOne" not in l4["sharing"]["timeSlicing"]  # gpustack's default, not the tenant's
    assert (
        "  # guessed: failRequestsGreaterThanOne: not on the node's labels (the device plugin config 'l4-ts4' was not "
        "in the snapshot); gpustack's default" in result.text.splitlines()
    )


CLUSTER_POLICY = """- apiVersion: nvidia.com/v1
  kind: ClusterPolicy
  metadata: {name: cluster-policy}
  spec:
    devicePlugin: {config: {name: time-slicing-config, default: any}}
    migManager: {config: {name: custom-mig-config}}
  status: {namespace: gpu-operator, state: ready}
"""


def test_n6_a_config_map_the_cluster_policy_names_is_a_fact() -> None:
    result = _import(_with(CLUSTER_POLICY))
    assert _pool(result, "l4-pool")["sharing"]["timeSlicing"]["failRequestsGreaterThanOne"] is True
    assert "which no ClusterPolicy in the snapshot names" not in result.text
    # Without a ClusterPolicy the same ConfigMap is read too, as a guess: nothing says the operator reads it.
    assert (
        "# guessed: device plugin configs: read from ConfigMap gpu-operator/time-slicing-config" in _import(MIXED).text
    )


def test_n6_the_cluster_policy_s_config_map_missing_is_noted_and_nothing_else_read() -> None:
    """The ClusterPolicy names another ConfigMap: the operator reads only that one, so neither the operator
    namespace's other ConfigMap nor a tenant's is read."""
    renamed = CLUSTER_POLICY.replace("time-slicing-config", "plugin-config")
    result = _import(_with(renamed + FORGED_PLUGIN))
    assert "failRequestsGreaterThanOne" not in _pool(result, "l4-pool")["sharing"]["timeSlicing"]
    assert (
        "# guessed: device plugin configs: ClusterPolicy cluster-policy's device plugin reads ConfigMap "
        "gpu-operator/plugin-config, which is not in the snapshot" in result.text.splitlines()
    )


UNEVEN = """apiVersion: v1
kind: List
items:
- kind: Node
  metadata:
    name: h100-x
    labels:
      nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3
      nvidia.com/gpu.count: "8"
      nvidia.com/mig.strategy: mixed
      nvidia.com/mig.config: half-and-half
      nvidia.com/mig-1g.10gb.count: "28"
      nvidia.com/mig-3g.40gb.count: "8"
  status: {allocatable: {nvidia.com/mig-1g.10gb: "28", nvidia.com/mig-3g.40gb: "8"}}
"""


def _mig_config_map(name: str, namespace: str, layout: str) -> str:
    return (
        f"- apiVersion: v1\n  kind: ConfigMap\n  metadata: {{name: {name}, namespace: {namespace}}}\n  data:\n"
        "    config.yaml: |\n      version: v1\n      mig-configs:\n        half-and-half:\n" + layout
    )


OPERATOR_LAYOUT = (
    "        - {devices: [0, 1, 2, 3], mig-enabled: true, mig-devices: {1g.10gb: 7}}\n"
    "        - {devices: [4, 5, 6, 7], mig-enabled: true, mig-devices: {3g.40gb: 2}}\n"
)
FORGED_LAYOUT = "        - {devices: all, mig-enabled: true, mig-devices: {7g.80gb: 1}}\n"


def test_n6_a_forged_mig_config_in_a_namespace_sorting_first_changes_nothing() -> None:
    operator = CLUSTER_POLICY.replace("devicePlugin: {config: {name: time-slicing-config, default: any}}\n    ", "")
    text = (
        UNEVEN
        + _mig_config_map("mig", "aaa", FORGED_LAYOUT)
        + _mig_config_map("custom-mig-config", "gpu-operator", OPERATOR_LAYOUT)
        + operator
    )
    result = _import(text)
    (pool,) = result.data["spec"]["nodePools"]
    assert pool["sharing"]["mig"]["groups"] == [
        {"devices": [0, 1, 2, 3], "layout": {"1g.10gb": 7}},
        {"devices": [4, 5, 6, 7], "layout": {"3g.40gb": 2}},
    ]
    assert "never read: aaa/mig" in result.text


def test_n6_a_forged_mig_config_alone_is_never_read() -> None:
    """Without the operator's mig-parted ConfigMap the layout is unreadable (GS023), not the tenant's."""
    result = import_snapshot(parse_snapshot(UNEVEN + _mig_config_map("mig", "aaa", FORGED_LAYOUT), "s.yaml"), "s")
    assert [d.code for d in result.diagnostics] == ["GS023"]
    # issue 27: the node keeps a pool of its own, without the sharing that could not be read (never the forged one)
    (pool,) = result.data["spec"]["nodePools"]
    assert "sharing" not in pool and pool["nodes"] == ["h100-x"]


# N7: linear in pools.


def _flat(nodes: int) -> str:
    """The review's repro: every node its own pool (a taint of its own), all of one hint."""
    rows = [
        f"- {{kind: Node, apiVersion: v1, metadata: {{name: n{i}, labels: {{nvidia.com/gpu.product: NVIDIA-L4, "
        f'nvidia.com/gpu.count: "1"}}}}, spec: {{taints: [{{key: k{i}, effect: NoSchedule}}]}}, '
        f'status: {{allocatable: {{nvidia.com/gpu: "1"}}}}}}\n'
        for i in range(nodes)
    ]
    return "apiVersion: v1\nkind: List\nitems:\n" + "".join(rows)


def _cluster_lines(nodes: int) -> int:
    """Lines of gpustack/cluster/ executed by one import: a count of work, the same on any machine."""
    snapshot = parse_snapshot(_flat(nodes), "flat.yaml")
    folder = str(Path(__file__).parent.parent / "gpustack" / "cluster")
    count = 0

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        nonlocal count
        if not frame.f_code.co_filename.startswith(folder):
            return None
        if event == "line":
            count += 1
        return tracer

    sys.settrace(tracer)
    try:
        result = import_snapshot(snapshot, "flat")
    finally:
        sys.settrace(None)
    assert len(result.data["spec"]["nodePools"]) == nodes
    return count


def test_n7_repro_import_work_grows_linearly_with_pools() -> None:
    """Doubling the pools doubles the lines run; the quadratic search and naming made it four times (the wall
    clock at 8 MiB is bench/run.py's `cluster` stage)."""
    small, large = _cluster_lines(150), _cluster_lines(600)
    assert large / small < 4.4, (small, large)  # 4x the pools: linear is 4x, quadratic was 16x


def test_n7_reading_and_importing_make_no_cycles() -> None:
    """Both run with the cyclic collector paused (its full passes grew with a fleet's records): safe only while they
    leave no cyclic garbage behind."""
    text = _with(FORGED_PLUGIN + CLUSTER_POLICY)
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        import_snapshot(parse_snapshot(text, "snapshot.yaml"), "snapshot")
        gc.collect()
        found = list(gc.garbage)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    assert found == []


def test_n7_more_pools_than_a_blueprint_holds_is_refused_before_it_is_written(
    tmp_path: Path, monkeypatch: MonkeyPatch
) -> None:
    """The review's 8 MiB snapshot makes 36,888 pools, more than a blueprint may list (GS106): import says so at
    once instead of rendering and validating a blueprint that cannot pass (here with the limit at 3)."""
    monkeypatch.setattr("gpustack.cluster.importer.MAX_ENTRIES", 3)
    snapshot = tmp_path / "flat.yaml"
    snapshot.write_text(_flat(5), encoding="utf-8")
    run = CliRunner().invoke(group, ["import", str(snapshot), "-f", str(tmp_path / "out.yaml")])
    assert run.exit_code == 1
    assert f"{snapshot}:4:1: error[GS106]: the snapshot's GPU nodes make 5 pools: a blueprint holds at most 3" in (
        run.stderr
    )
    assert run.stderr.endswith(f"{snapshot}: nothing written\n") and not (tmp_path / "out.yaml").exists()


def test_n7_pool_names_stay_unique_in_one_pass() -> None:
    result = import_snapshot(parse_snapshot(_flat(5), "flat.yaml"), "flat")
    assert [p["name"] for p in result.data["spec"]["nodePools"]] == ["l4", "l4-2", "l4-3", "l4-4", "l4-5"]


# N17: -o is a format, --out-file/-f the file.


def test_n17_o_json_prints_a_report_and_writes_no_file_named_json(tmp_path: Path, monkeypatch: MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    run = CliRunner().invoke(group, ["import", str(CASES / "mixed-cluster.yaml"), "-o", "json"])
    assert run.exit_code == 0, run.output
    assert list(tmp_path.iterdir()) == []
    report = json.loads(run.stdout)
    assert (report["apiVersion"], report["kind"]) == ("gpustack.io/v1alpha1", "ImportReport")
    assert report["written"] is False and report["outFile"] is None
    assert report["blueprint"]["spec"]["nodePools"][1]["name"] == "l4-pool"
    # issue 27: the unknown product's node has a pool of its own (without gpu), not a commented-out one
    assert (report["poolCount"], report["tenantCount"], report["warningCount"]) == (5, 2, 1)
    assert {"section": "nodePools", "name": "l4-pool", "kind": "guessed"}.items() <= report["notes"][2].items()


def test_n17_out_file_writes_the_blueprint(tmp_path: Path) -> None:
    out = tmp_path / "blueprint.yaml"
    run = CliRunner().invoke(group, ["import", str(CASES / "mixed-cluster.yaml"), "--out-file", str(out)])
    assert run.exit_code == 0, run.output
    assert "deprecated" not in run.stderr
    assert validate_text(out.read_text(encoding="utf-8"), str(out)).ok
    both = CliRunner().invoke(group, ["import", str(CASES / "mixed-cluster.yaml"), "-f", str(out), "-o", "json"])
    assert json.loads(both.stdout)["written"] is True and json.loads(both.stdout)["outFile"] == str(out)


def test_n17_the_old_o_path_still_works_with_a_warning(tmp_path: Path) -> None:
    out = tmp_path / "blueprint.yaml"
    run = CliRunner().invoke(group, ["import", str(CASES / "mixed-cluster.yaml"), "-o", str(out)])
    assert run.exit_code == 0, run.output
    assert (
        f"gpustack: warning: -o {out} for the output file is deprecated and goes in the next release; use "
        f"--out-file/-f {out}" in run.stderr
    )
    assert out.exists()


def test_n17_a_format_name_is_never_a_file(tmp_path: Path, monkeypatch: MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    text = CliRunner().invoke(group, ["import", str(CASES / "mixed-cluster.yaml"), "-o", "sarif"])
    assert text.exit_code == 2 and "not an output format of this command; choose one of: yaml, json" in text.stderr
    named = CliRunner().invoke(group, ["import", str(CASES / "mixed-cluster.yaml"), "-f", "json"])
    assert named.exit_code == 2 and "to write to a file named json, give ./json" in named.stderr
    assert list(tmp_path.iterdir()) == []
