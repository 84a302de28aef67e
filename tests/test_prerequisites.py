"""The output installs what its objects need (issue 32 item 6): every CRD-backed kind a compiled object is of has a
pinned Helm release in the apply order (JobSet and LeaderWorkerSet beside Kueue, Volcano, KAI and the DRA driver),
and check-prerequisites.sh checks each needed CRD or API before `kubectl apply -k`, naming the release to install.

The scripts are run, with a `kubectl` stub first on PATH, as an admin would run them."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import REPO

from gpustack.compile import compile_blueprint
from gpustack.compile.controllers import JOBSET, LEADER_WORKER_SET, needed_controllers
from gpustack.outputs import render_files
from gpustack.plan import Manifest, Plan
from gpustack.registration import CUSTOM_WORKLOADS, group_of
from gpustack.validation import validate_path, validate_text

PREREQUISITES = "check-prerequisites.sh"
# Answers `kubectl get crd NAME` (and `get --raw`, `get deviceclass`) from the names in $KUBECTL_HAS, one a line.
STUB = """#!/bin/sh
printf '%s\\n' "$*" >> "$KUBECTL_LOG"
last=""
for arg in "$@"; do last=$arg; done
grep -qxF -- "$last" "$KUBECTL_HAS"
"""


def plan_of(name: str) -> Plan:
    result = validate_path(REPO / "blueprints" / f"{name}.yaml")
    assert result.ok and result.context is not None, [d.message for d in result.diagnostics]
    return compile_blueprint(result.context)


def files_of(name: str) -> dict[str, str]:
    return render_files(plan_of(name))


def run(script: str, has: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    sh = shutil.which("sh")
    if sh is None:
        pytest.skip("the POSIX shell sh is not installed: this test runs the generated script with it")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    stub = bin_dir / "kubectl"
    stub.write_text(STUB, encoding="utf-8")
    stub.chmod(0o755)
    (tmp_path / "has").write_text("".join(f"{name}\n" for name in has), encoding="utf-8")
    (tmp_path / PREREQUISITES).write_text(script, encoding="utf-8")
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "KUBECTL_HAS": str(tmp_path / "has"),
        "KUBECTL_LOG": str(tmp_path / "kubectl.log"),
    }
    return subprocess.run([sh, PREREQUISITES], env=env, cwd=tmp_path, capture_output=True, text=True, check=False)


MULTI_NODE_CRDS = [
    "resourceflavors.kueue.x-k8s.io",
    "clusterqueues.kueue.x-k8s.io",
    "localqueues.kueue.x-k8s.io",
    "jobsets.jobset.x-k8s.io",
    "leaderworkersets.leaderworkerset.x-k8s.io",
]


def test_multi_node_installs_the_jobset_and_leaderworkerset_controllers() -> None:
    # The failure: multi-node compiles a JobSet and a LeaderWorkerSet and nothing installed their CRDs.
    releases = {r.name: r for r in plan_of("multi-node").releases}
    assert releases["jobset"].chart_ref == "oci://registry.k8s.io/jobset/charts/jobset"
    assert (releases["jobset"].version, releases["jobset"].namespace) == ("0.10.1", "jobset-system")
    assert releases["lws"].chart_ref == "oci://registry.k8s.io/lws/charts/lws"
    assert (releases["lws"].version, releases["lws"].namespace) == ("0.8.0", "lws-system")


def test_the_readme_installs_the_charts_and_checks_before_apply() -> None:
    readme = files_of("multi-node")["README.md"]
    step3, step4 = readme.index("\n3. "), readme.index("\n4. ")
    for chart in ("oci://registry.k8s.io/jobset/charts/jobset", "oci://registry.k8s.io/lws/charts/lws"):
        assert step3 < readme.index(f"helm upgrade --install {chart.rsplit('/', 1)[1]} {chart}") < step4
    check, apply = readme.index(f"sh {PREREQUISITES} && \\"), readme.index("kubectl apply --server-side")
    assert step4 < check < readme.index("-k .", apply)
    assert f"`{PREREQUISITES}`" in readme.split("## Files", 1)[1]


def test_the_check_names_every_needed_crd_in_apply_order() -> None:
    script = files_of("multi-node")[PREREQUISITES]
    assert re.findall(r"kubectl get crd ([\w.-]+)", script) == MULTI_NODE_CRDS


def test_all_served_passes(tmp_path: Path) -> None:
    done = run(files_of("multi-node")[PREREQUISITES], MULTI_NODE_CRDS, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert done.stdout.count("ok: CRD ") == len(MULTI_NODE_CRDS)


def test_a_missing_crd_fails_naming_the_release(tmp_path: Path) -> None:
    present = [crd for crd in MULTI_NODE_CRDS if not crd.startswith("leaderworkersets.")]
    done = run(files_of("multi-node")[PREREQUISITES], present, tmp_path)
    assert done.returncode == 1
    missing = [line for line in done.stderr.splitlines() if line.startswith("missing:")]
    assert len(missing) == 1
    assert "CRD leaderworkersets.leaderworkerset.x-k8s.io (LeaderWorkerSet)" in missing[0]
    assert (
        "install Helm release lws (chart oci://registry.k8s.io/lws/charts/lws 0.8.0, namespace lws-system"
        in (missing[0])
    )


def test_nothing_installed_reports_each_release(tmp_path: Path) -> None:
    done = run(files_of("multi-node")[PREREQUISITES], [], tmp_path)
    assert done.returncode == 1
    for release in ("kueue", "jobset", "lws"):
        assert f"install Helm release {release} " in done.stderr


@pytest.mark.parametrize(
    ("name", "crds"),
    [
        ("volcano", ["queues.scheduling.volcano.sh", "jobs.batch.volcano.sh"]),
        ("kai", ["queues.scheduling.run.ai", "schedulingshards.kai.scheduler", "jobsets.jobset.x-k8s.io"]),
    ],
)
def test_scheduler_crds_name_their_release(name: str, crds: list[str], tmp_path: Path) -> None:
    script = files_of(name)[PREREQUISITES]
    assert sorted(re.findall(r"kubectl get crd ([\w.-]+)", script)) == sorted(crds)
    done = run(script, [], tmp_path)
    assert done.returncode == 1
    releases = {r.chart: r.name for r in plan_of(name).releases}
    wanted = {"volcano": ["volcano"], "kai": ["kai-scheduler", "jobset"]}[name]
    for chart in wanted:
        assert f"install Helm release {releases[chart]} " in done.stderr


def test_dra_checks_the_api_version_and_the_driver(tmp_path: Path) -> None:
    script = files_of("dra")[PREREQUISITES]
    done = run(script, ["/apis/resource.k8s.io/v1"], tmp_path)
    assert done.returncode == 1
    assert "ok: API resource.k8s.io/v1" in done.stdout
    assert "missing: DeviceClass gpu.nvidia.com" in done.stderr
    assert "install Helm release nvidia-dra-driver-gpu " in done.stderr
    done = run(script, ["/apis/resource.k8s.io/v1", "gpu.nvidia.com"], tmp_path)
    assert done.returncode == 0, done.stderr


def test_no_custom_kind_no_check_no_controller() -> None:
    files = files_of("quickstart")
    assert PREREQUISITES not in files
    assert "check-prerequisites" not in files["README.md"]
    assert not {"jobset", "lws"} & {r.name for r in plan_of("quickstart").releases}


def test_a_rendered_template_of_the_kind_needs_its_controller() -> None:
    # From the objects themselves, not the workload's kind: a template may render a JobSet for a `Job` workload.
    jobset = Manifest(
        "workloads", "w.yaml", {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "a"}}
    )
    lws = Manifest(
        "workloads",
        "w.yaml",
        {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet", "metadata": {"name": "b"}},
    )
    other = Manifest(
        "workloads", "w.yaml", {"apiVersion": "example.com/v1", "kind": "JobSet", "metadata": {"name": "c"}}
    )
    assert needed_controllers([jobset]) == [JOBSET]
    assert needed_controllers([lws, jobset]) == [JOBSET, LEADER_WORKER_SET]
    assert needed_controllers([other]) == []


def test_pulumi_installs_the_controllers_before_the_custom_workloads() -> None:
    # registration stage 3 holds every Plan release; JobSet and LeaderWorkerSet objects are custom workloads (stage 5).
    plan = plan_of("multi-node")
    kinds = {m.kind: m for m in plan.objects}
    assert group_of(kinds["JobSet"]) == CUSTOM_WORKLOADS
    assert group_of(kinds["LeaderWorkerSet"]) == CUSTOM_WORKLOADS
    assert {"jobset", "lws"} <= {r.name for r in plan.releases}


def test_every_word_is_quoted(tmp_path: Path) -> None:
    # A hostile value in a message reaches the script only as one quoted word: nothing it says runs.
    from gpustack.outputs_readme import render_prerequisite_script

    plan = plan_of("multi-node")
    hostile = Manifest(
        "workloads",
        "w.yaml",
        {"apiVersion": "x$(touch pwned).example.com/v1", "kind": "Thing`touch pwned2`", "metadata": {"name": "n"}},
    )
    script = render_prerequisite_script(plan, [hostile])
    assert script is not None
    done = run(script, [], tmp_path)
    assert done.returncode == 1
    assert not (tmp_path / "pwned").exists() and not (tmp_path / "pwned2").exists()
    assert "x$(touch pwned).example.com" in done.stderr


# What a pod needs of its own memory: /dev/shm (an in-memory emptyDir) is charged to it (GS807).
SHM = (REPO / "tests" / "cases" / "recipes" / "vllm-leaderworkerset.yaml").read_text(encoding="utf-8")


def shm_warnings(text: str) -> list[tuple[str, str, int]]:
    result = validate_text(text, "vllm.yaml")
    assert result.ok, [d.message for d in result.diagnostics]
    found = [d for d in result.diagnostics if d.code == "GS807"]
    assert all(d.span is not None for d in found)
    return [(d.code, d.message, d.span.start.line if d.span is not None else 0) for d in found]


def test_the_recipe_shm_within_memory_is_quiet() -> None:
    assert shm_warnings(SHM) == []


def test_shm_above_the_given_memory_warns_at_shm_size() -> None:
    text = SHM.replace("shmSize: 15Gi", "shmSize: 2000Gi")
    [(_code, message, line)] = shm_warnings(text)
    assert "/dev/shm at 2000Gi, above its pods' 1124Gi of memory" in message
    assert "OOM-killed" in message
    assert text.splitlines()[line - 1].strip() == "shmSize: 2000Gi"


def test_shm_above_the_sized_memory_warns_naming_where_it_came_from() -> None:
    # No resources: gpustack sizes memory from the node's share (8 of 8 GPUs of a 2Ti node, less what it keeps back).
    text = SHM.replace('      resources: {cpu: "125", memory: 1124Gi, ephemeralStorage: 800Gi}\n', "").replace(
        "shmSize: 15Gi", "shmSize: 4Ti"
    )
    [(_, message, _)] = shm_warnings(text)
    assert "above its pods' " in message and "(sized from node share)" in message


def test_shm_equal_to_memory_is_not_above_it() -> None:
    assert shm_warnings(SHM.replace("shmSize: 15Gi", "shmSize: 1124Gi")) == []
