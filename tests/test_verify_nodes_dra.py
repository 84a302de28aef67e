"""verify-nodes.sh checks each pool by what its allocation advertises (issue 32 item 6): a DRA pool's nodes by the
devices of their ResourceSlices (the DRA driver never sets a node's allocatable, so the allocatable column showed
`<none>` on a healthy DRA node and blamed the device plugin); a device-plugin pool by its allocatable, as before.

The script is run with a `kubectl` stub that plays a cluster: which nodes each label selector finds, and how many
devices of each unit each node's ResourceSlices list."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO

from gpustack.compile import compile_blueprint
from gpustack.plan import Plan
from gpustack.validation import validate_path, validate_text

VERIFY = "verify-nodes.sh"
# $CLUSTER (JSON): {"nodes": {selector: [node, ...]}, "devices": {node: {"gpu" | profile: count}}}
STUB = f"""#!{sys.executable}
import json, os, re, sys
args = sys.argv[1:]
cluster = json.load(open(os.environ["CLUSTER"]))
with open(os.environ["KUBECTL_LOG"], "a") as log:
    log.write(json.dumps(args) + "\\n")
output = args[args.index("-o") + 1]
if args[1] == "nodes":
    names = cluster["nodes"].get(args[args.index("-l") + 1], [])
    if output.startswith("jsonpath="):
        print(" ".join(names), end="")
    else:
        print("NAME")
        print("\\n".join(names))
    sys.exit(0)
assert args[1].startswith("resourceslices."), args
selector = dict(part.split("=", 1) for part in args[args.index("--field-selector") + 1].split(","))
assert selector["spec.driver"] == "gpu.nvidia.com", selector
unit = re.search(r'profile.string=="([^"]+)"', output)
key = unit.group(1) if unit else ("gpu" if 'type.string=="gpu"' in output else None)
assert key is not None, output
for i in range(cluster["devices"].get(selector["spec.nodeName"], {{}}).get(key, 0)):
    print(f"gpu-{{i}}")
"""


def plan_of(path: Path) -> Plan:
    result = validate_path(path)
    assert result.ok and result.context is not None, [d.message for d in result.diagnostics]
    return compile_blueprint(result.context)


def script_of(plan: Plan) -> str:
    return next(a.text for a in plan.artifacts if a.path == VERIFY)


def run(script: str, cluster: dict[str, Any], tmp_path: Path) -> tuple[subprocess.CompletedProcess[str], list[Any]]:
    sh = shutil.which("sh")
    if sh is None:
        pytest.skip("the POSIX shell sh is not installed: this test runs the generated script with it")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    stub = bin_dir / "kubectl"
    stub.write_text(STUB, encoding="utf-8")
    stub.chmod(0o755)
    (tmp_path / "cluster.json").write_text(json.dumps(cluster), encoding="utf-8")
    (tmp_path / VERIFY).write_text(script, encoding="utf-8")
    log = tmp_path / "kubectl.log"
    log.write_text("", encoding="utf-8")
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "CLUSTER": str(tmp_path / "cluster.json"),
        "KUBECTL_LOG": str(log),
    }
    done = subprocess.run([sh, VERIFY], env=env, cwd=tmp_path, capture_output=True, text=True, check=False)
    return done, [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]


NODES = {
    "gpustack.io/pool=h100-train": ["h100-a", "h100-b"],
    "gpustack.io/pool=a100-mig": ["a100-a"],
    "gpustack.io/pool=l4-serve": ["l4-a", "l4-b"],
}
HEALTHY = {"h100-a": {"gpu": 8}, "h100-b": {"gpu": 8}, "a100-a": {"3g.40gb": 16}}


@pytest.fixture(scope="module")
def dra_script() -> str:
    return script_of(plan_of(REPO / "blueprints" / "dra.yaml"))


def test_dra_pools_read_resource_slices_not_allocatable(dra_script: str) -> None:
    h100, a100, l4 = (
        dra_script.split(f"pool {name}", 1)[1].split("\n\n", 1)[0] for name in ("h100-train", "a100-mig", "l4-serve")
    )
    for section in (h100, a100):
        assert "resourceslices.v1.resource.k8s.io" in section
        assert "status.allocatable" not in section
    assert 'type.string=="gpu"' in h100 and 'profile.string=="3g.40gb"' in a100
    assert "status.allocatable.nvidia\\.com/gpu" in l4  # the device-plugin pool keeps its allocatable column


def test_a_healthy_dra_cluster_passes(dra_script: str, tmp_path: Path) -> None:
    done, calls = run(dra_script, {"nodes": NODES, "devices": HEALTHY}, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "h100-a: 8 gpu.nvidia.com GPUs: ok" in done.stdout
    assert "a100-a: 16 gpu.nvidia.com devices of MIG profile 3g.40gb: ok" in done.stdout
    slices = [c for c in calls if c[1].startswith("resourceslices")]
    assert {c[c.index("--field-selector") + 1] for c in slices} == {
        f"spec.driver=gpu.nvidia.com,spec.nodeName={node}" for node in ("h100-a", "h100-b", "a100-a")
    }


def test_a_node_without_slices_blames_the_driver_plugin(dra_script: str, tmp_path: Path) -> None:
    devices = {**HEALTHY, "h100-b": {}}
    done, _ = run(dra_script, {"nodes": NODES, "devices": devices}, tmp_path)
    assert done.returncode == 1
    line = next(line for line in done.stderr.splitlines() if "h100-b" in line)
    assert "no gpu.nvidia.com GPUs in its ResourceSlices" in line
    assert "DRA driver kubelet plugin does not run on it" in line
    assert "kubectl get pods -n nvidia-dra-driver-gpu -o wide" in line
    assert "device plugin" not in done.stderr


def test_an_unfinished_mig_layout_says_so(dra_script: str, tmp_path: Path) -> None:
    devices = {**HEALTHY, "a100-a": {"3g.40gb": 6}}
    done, _ = run(dra_script, {"nodes": NODES, "devices": devices}, tmp_path)
    assert done.returncode == 1
    assert "a100-a: 6 of 16 gpu.nvidia.com devices of MIG profile 3g.40gb" in done.stderr
    assert "MIG layout is unfinished" in done.stderr


def test_more_devices_than_declared_is_reported(dra_script: str, tmp_path: Path) -> None:
    devices = {**HEALTHY, "h100-a": {"gpu": 9}}
    done, _ = run(dra_script, {"nodes": NODES, "devices": devices}, tmp_path)
    assert done.returncode == 1
    assert "more than the 8 its pool declares" in done.stderr


def test_a_pool_with_no_labelled_node_fails(dra_script: str, tmp_path: Path) -> None:
    nodes = {**NODES, "gpustack.io/pool=a100-mig": []}
    done, _ = run(dra_script, {"nodes": nodes, "devices": HEALTHY}, tmp_path)
    assert done.returncode == 1
    assert "no node matches gpustack.io/pool=a100-mig" in done.stderr


def test_device_plugin_only_scripts_are_unchanged_in_kind() -> None:
    script = script_of(plan_of(REPO / "blueprints" / "quickstart.yaml"))
    assert "resourceslices" not in script and "dra_devices" not in script
    assert "status.allocatable" in script


BETA = """\
apiVersion: gpustack.io/v1alpha1
kind: ClusterBlueprint
metadata: {name: beta}
spec:
  kubernetes: {version: "1.33"}
  dra: {apiVersion: resource.k8s.io/v1beta1}
  nodePools:
    - name: h100
      gpu: {model: NVIDIA-H100-80GB-HBM3, count: 4}
      nodes: [h1]
      allocation: dra
"""


def test_the_beta_api_reads_basic_attributes(tmp_path: Path) -> None:
    result = validate_text(BETA, "beta.yaml")
    if not result.ok or result.context is None:
        pytest.skip(f"resource.k8s.io/v1beta1 is not accepted here: {[d.message for d in result.diagnostics]}")
    script = script_of(compile_blueprint(result.context))
    assert "resourceslices.v1beta1.resource.k8s.io" in script
    assert '@.basic.attributes.type.string=="gpu"' in script
    done, _ = run(script, {"nodes": {"gpustack.io/pool=h100": ["h1"]}, "devices": {"h1": {"gpu": 4}}}, tmp_path)
    assert done.returncode == 0, done.stderr
