"""N4 (security review 3): a quota closes every resource name a tenant's pools advertise and it was not granted.

A ResourceQuota limits only the names it lists. Before, a tenant whose quota on a pool named some of the pool's
resources got no line for the others and could take them without limit: the whole GPUs of a mixed MIG pool beside
the MIG slices it was granted (the review's case), a second MIG profile, a time-sliced `.shared` name, HAMi's cores,
a DRA pool's other device class. Now each is `"0"` (ResourceQuota, LimitRange, Kueue's ClusterQueue, Volcano's queue
capability, the DRA device quota), as if the blueprint wrote the 0. A pool whose quota is `unlimited` stays granted
whole (no line; a granted pool with no quota entry is closed, tests/test_quota_unlimited.py), and nothing an
example's own workloads use is closed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from builders import ONE_POOL
from click.testing import CliRunner
from conftest import BLUEPRINTS, shipped_examples

from gpustack.cli import group

REVIEW = Path(__file__).resolve().parents[2] / "shared" / "reference" / "security-review-3" / "n4-mixed-mig-whole"
KUEUE_LINE = (
    "      scheduler: kueue               # a ClusterQueue per tenant, a ResourceFlavor per pool, covering every name\n"
)
SERVING_QUOTA = "h100-mixed: {gpu: 0, mig-3g.40gb: 8, mig-1g.10gb: 28}"
# The review's scenario (security-review-3/n4-mixed-mig-whole/scenario.yaml): serving asks for 2 x 4 whole GPUs.
GRAB = """\
pods:
  - name: grab
    namespace: {namespace}
    replicas: 2
    spec:
      tolerations: [{{key: gpustack.io/pool, value: h100-mixed, effect: NoSchedule, operator: Equal}}]
      nodeSelector: {{gpustack.io/pool: h100-mixed}}
      containers: [{{name: m, resources: {{limits: {{nvidia.com/gpu: 4}}}}}}]
"""


def run(*args: str) -> tuple[int, str]:
    """Exit code and stdout (compile -d - says on stderr what the stream leaves out)."""
    result = CliRunner().invoke(group, list(args))
    return result.exit_code, result.stdout


def write(tmp_path: Path, text: str, name: str = "bp.yaml") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def compiled(tmp_path: Path, text: str, path: Path | None = None) -> list[dict[str, Any]]:
    """The objects compile writes for `text` (or the blueprint at `path`, beside its templates)."""
    code, output = run("compile", str(path) if path is not None else write(tmp_path, text), "-d", "-")
    assert code == 0, output
    return [doc for doc in yaml.safe_load_all(output) if doc]


def find(objects: list[dict[str, Any]], kind: str, namespace: str | None = None, name: str | None = None) -> Any:
    found = [
        o
        for o in objects
        if o["kind"] == kind
        and (namespace is None or o["metadata"].get("namespace") == namespace)
        and (name is None or o["metadata"]["name"] == name)
    ]
    assert len(found) == 1, (kind, namespace, name, len(found))
    return found[0]


def hard(objects: list[dict[str, Any]], namespace: str, name: str = "gpustack-gpu-quota") -> dict[str, str]:
    return dict(find(objects, "ResourceQuota", namespace, name)["spec"]["hard"])


def limit_max(objects: list[dict[str, Any]], namespace: str) -> dict[str, str]:
    return dict(find(objects, "LimitRange", namespace)["spec"]["limits"][0].get("max", {}))


def review_blueprint(*, kueue: bool = False, finetune: bool = False) -> str:
    """security-review-3/n4-mixed-mig-whole/repro.sh's blueprint: blueprints/mig-mixed.yaml with serving's explicit
    `gpu: 0` dropped (and Kueue, so the ResourceQuota is the limit; and research's workload, so its GPUs are free)."""
    text = (BLUEPRINTS / "mig-mixed.yaml").read_text()
    assert KUEUE_LINE in text and SERVING_QUOTA in text
    if not kueue:
        text = text.replace(KUEUE_LINE, "")
    text = text.replace(SERVING_QUOTA, "h100-mixed: {mig-3g.40gb: 8, mig-1g.10gb: 28}")
    if not finetune:
        start, end = text.index("    - name: finetune"), text.index("    - name: chat")
        text = text[:start] + text[end:]
    return text


# --- the review's case: a mixed whole+MIG pool ------------------------------------------------------------------------


def test_the_review_s_mixed_pool_closes_the_whole_gpus_serving_was_not_granted(tmp_path: Path) -> None:
    objects = compiled(tmp_path, review_blueprint())
    assert hard(objects, "serving") == {
        "requests.nvidia.com/gpu": "0",  # no line before: research's 8 whole GPUs were open to serving
        "requests.nvidia.com/mig-1g.10gb": "28",
        "requests.nvidia.com/mig-1g.10gb.shared": "224",
        "requests.nvidia.com/mig-3g.40gb": "8",
    }
    assert limit_max(objects, "serving")["nvidia.com/gpu"] == "0"  # was 4: one node's whole GPUs
    # research's grant is what the blueprint says, whole GPUs included
    assert hard(objects, "research")["requests.nvidia.com/gpu"] == "8"
    assert limit_max(objects, "research")["nvidia.com/gpu"] == "4"


def test_simulate_leaves_serving_s_whole_gpu_pods_pending_with_the_quota_s_message(tmp_path: Path) -> None:
    blueprint = write(tmp_path, review_blueprint())
    _, output = run("simulate", blueprint, "--scenario", write(tmp_path, GRAB.format(namespace="serving"), "s.yaml"))
    assert "grab (serving, default-scheduler): 0/2 placed" in output, output
    # kube-apiserver's LimitRanger wording: it runs before ResourceQuota, and the LimitRange closes the name too
    assert 'pods "grab-0" is forbidden: maximum nvidia.com/gpu usage per Container is 0, but limit is 4' in output
    if (REVIEW / "scenario.yaml").is_file():  # the review's own scenario file, where it is beside the checkout
        _, theirs = run("simulate", blueprint, "--scenario", str(REVIEW / "scenario.yaml"))
        assert "grab (serving, default-scheduler): 0/2 placed" in theirs


def test_research_keeps_the_whole_gpus_it_was_granted(tmp_path: Path) -> None:
    blueprint = write(tmp_path, review_blueprint(finetune=True))
    _, output = run("simulate", blueprint, "--scenario", write(tmp_path, GRAB.format(namespace="research"), "s.yaml"))
    # finetune (2 x 4) and grab (2 x 4) are research's 8 granted whole GPUs... and 8 more: only finetune fits
    assert "finetune" in output and "exceeded quota" in output
    _, alone = run("simulate", write(tmp_path, review_blueprint(), "idle.yaml"), "--scenario", str(tmp_path / "s.yaml"))
    assert "grab (research, default-scheduler): 2/2 placed" in alone, alone


def test_kueue_covers_the_same_names_with_zero(tmp_path: Path) -> None:
    objects = compiled(tmp_path, review_blueprint(kueue=True))
    queue = find(objects, "ClusterQueue", name="serving")
    [flavor] = [f for f in queue["spec"]["resourceGroups"][0]["flavors"] if f["name"] == "h100-mixed"]
    nominal = {r["name"]: r["nominalQuota"] for r in flavor["resources"]}
    assert nominal["nvidia.com/gpu"] == 0  # was the pool's 8 whole GPUs
    assert nominal["nvidia.com/mig-3g.40gb"] == 8 and nominal["nvidia.com/mig-1g.10gb"] == 28
    assert hard(objects, "serving")["requests.nvidia.com/gpu"] == "0"  # the ceiling behind the ClusterQueue
    assert limit_max(objects, "serving")["nvidia.com/gpu"] == "0"


# --- other pools that advertise several names -------------------------------------------------------------------------


def test_two_mig_profiles_close_the_one_not_granted(tmp_path: Path) -> None:
    text = review_blueprint().replace("h100-mixed: {mig-3g.40gb: 8, mig-1g.10gb: 28}", "h100-mixed: {mig-3g.40gb: 8}")
    serving = hard(compiled(tmp_path, text), "serving")
    assert serving["requests.nvidia.com/mig-1g.10gb"] == "0" and serving["requests.nvidia.com/mig-3g.40gb"] == "8"
    assert serving["requests.nvidia.com/gpu"] == "0"


SLICED = """\
apiVersion: gpustack.io/v1alpha1
kind: ClusterBlueprint
metadata: {name: shared-names}
spec:
  kubernetes: {version: "1.33"}
  stack: gpu-operator
  gpuOperator: {chartVersion: v26.7.0, namespace: gpu-operator}
  nodePools:
    - name: a100-mixed
      gpu: {model: A100-SXM4-80GB, count: 8}
      nodes: [a100-a]
      taints:
        - {key: gpustack.io/pool, value: a100-mixed, effect: NoSchedule}
      sharing:
        strategy: mig
        mig:
          strategy: mixed
          groups:
            - {devices: [0, 1, 2, 3], whole: true}
            - {devices: [4, 5, 6, 7], layout: {"1g.10gb": 7}}
          timeSlicing: {replicas: 4, renameByDefault: true}
    - name: l4-sliced
      gpu: {model: L4, count: 4}
      nodes: [l4-a]
      taints:
        - {key: gpustack.io/pool, value: l4-sliced, effect: NoSchedule}
      sharing:
        strategy: time-slicing
        timeSlicing: {replicas: 4, renameByDefault: true}
  tenants:
    - name: small
      namespaces: [small]
      pools: [a100-mixed]
      priority: normal
      scheduler: volcano
      quota:
        a100-mixed: {mig-1g.10gb.shared: 56}
    - name: big
      namespaces: [big]
      pools: [a100-mixed, l4-sliced]
      priority: normal
      quota:
        a100-mixed: {gpu: 4}
        l4-sliced: unlimited
"""


def test_time_sliced_shared_names_are_closed_both_ways(tmp_path: Path) -> None:
    objects = compiled(tmp_path, SLICED)
    assert hard(objects, "small") == {
        "requests.nvidia.com/gpu": "0",  # the pool's whole GPUs: not granted
        "requests.nvidia.com/gpu.shared": "0",  # only a pool small is not granted advertises it (as before)
        "requests.nvidia.com/mig-1g.10gb.shared": "56",
    }
    # big holds l4-sliced whole (`unlimited`): its gpu.shared stays unlimited, no line
    assert hard(objects, "big") == {"requests.nvidia.com/gpu": "4", "requests.nvidia.com/mig-1g.10gb.shared": "0"}
    assert limit_max(objects, "small")["nvidia.com/gpu"] == "0"
    assert limit_max(objects, "big")["nvidia.com/mig-1g.10gb.shared"] == "0"
    assert limit_max(objects, "big")["nvidia.com/gpu.shared"] == "16"  # its own: one node's 4 GPUs x 4 replicas
    # Volcano's queue capability says the same as small's ResourceQuota
    capability = find(objects, "Queue", name="small")["spec"]["capability"]
    assert capability == {"nvidia.com/gpu": "0", "nvidia.com/mig-1g.10gb.shared": "56"}


HAMI_ONLY = (
    (BLUEPRINTS / "hami.yaml")
    .read_text()
    .replace("pools: [l40s-vgpu, h100]", "pools: [l40s-vgpu]")
    .replace("l40s-vgpu: {gpumem: 196608, gpucores: 400}", "l40s-vgpu: {gpumem: 196608}")
    .replace("        h100: unlimited", "        # h100: unlimited")
)


def _hami_without_llm(text: str) -> str:
    return text[: text.index("    - name: llm")]


def test_hami_names_a_memory_only_quota_does_not_grant_are_closed(tmp_path: Path) -> None:
    text = _hami_without_llm(HAMI_ONLY).replace("gpu: {memory: 20Gi, cores: 50}", "gpu: {memory: 20Gi}")
    apps = hard(compiled(tmp_path, text), "apps")
    assert apps["requests.nvidia.com/gpumem"] == "196608"
    # Without a gpucores line a pod could take every GPU's whole compute; without a gpu line every vGPU slot.
    assert apps["requests.nvidia.com/gpucores"] == "0" and apps["requests.nvidia.com/gpu"] == "0"


def test_the_hami_example_keeps_what_it_grants(tmp_path: Path) -> None:
    objects = compiled(tmp_path, (BLUEPRINTS / "hami.yaml").read_text())
    apps = hard(objects, "apps")
    assert apps["requests.nvidia.com/gpucores"] == "400"
    assert "requests.nvidia.com/gpu" not in apps  # the h100 pool is `unlimited`: nvidia.com/gpu stays open


def test_a_template_that_needs_a_closed_name_is_a_warning_at_validate(tmp_path: Path) -> None:
    text = (BLUEPRINTS / "hami.yaml").read_text().replace(", gpucores: 400}", "}")
    code, output = run("validate", "--strict", write(tmp_path, text))
    assert code == 1 and "[GS505]" in output, output
    assert "200 nvidia.com/gpucores in pool 'l40s-vgpu', which its quota on the pool does not name" in output


DRA = """\
apiVersion: gpustack.io/v1alpha1
kind: ClusterBlueprint
metadata: {name: dra-two-units}
spec:
  kubernetes: {version: "1.34"}
  stack: gpu-operator
  gpuOperator: {chartVersion: v26.7.0, namespace: gpu-operator}
  nodePools:
    - name: a100-mig
      gpu: {model: A100-SXM4-80GB, count: 8}
      nodes: [a100-a]
      allocation: dra
      taints:
        - {key: gpustack.io/pool, value: a100-mig, effect: NoSchedule}
      sharing:
        strategy: mig
        mig:
          strategy: mixed
          groups:
            - {devices: [0, 1, 2, 3], layout: {"3g.40gb": 2}}
            - {devices: [4, 5, 6, 7], layout: {"1g.10gb": 7}}
  tenants:
    - name: inference
      namespaces: [inference]
      pools: [a100-mig]
      priority: high
      quota:
        a100-mig: {mig-3g.40gb: 4}
"""


def test_a_dra_pool_s_other_device_class_is_closed(tmp_path: Path) -> None:
    objects = compiled(tmp_path, DRA)
    devices = hard(objects, "inference", "gpustack-dra-devices")
    assert devices["mig-3g.40gb.a100-mig.gpustack.io.deviceclass.resource.k8s.io/devices"] == "4"
    assert devices["mig-1g.10gb.a100-mig.gpustack.io.deviceclass.resource.k8s.io/devices"] == "0"  # no line before
    assert hard(objects, "inference")["requests.nvidia.com/mig-1g.10gb"] == "0"
    # with an `unlimited` quota on the pool, the pool is granted whole: no device line for its classes
    whole = compiled(tmp_path, DRA.replace("a100-mig: {mig-3g.40gb: 4}", "a100-mig: unlimited"))
    assert not [k for k in hard(whole, "inference", "gpustack-dra-devices") if ".a100-mig." in k]


# --- what stays open --------------------------------------------------------------------------------------------------


def test_a_pool_whose_quota_is_unlimited_stays_whole(tmp_path: Path) -> None:
    assert ", quota: {l4: {gpu: 4}}}" in ONE_POOL
    objects = compiled(tmp_path, ONE_POOL.replace(", quota: {l4: {gpu: 4}}}", ", quota: {l4: unlimited}}"))
    assert not [o for o in objects if o["kind"] == "ResourceQuota"]  # nothing to close: the pool is granted whole
    assert limit_max(objects, "ml") == {"nvidia.com/gpu": "4"}


EXAMPLES = shipped_examples()


def _gpu_requests(obj: dict[str, Any]) -> list[dict[str, str]]:
    """The nvidia.com/* requests of every container of a compiled workload (any pod-carrying kind)."""
    found: list[dict[str, str]] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if "containers" in node and isinstance(node["containers"], list):
                for container in [*node["containers"], *node.get("initContainers", [])]:
                    resources = container.get("resources", {})
                    asked = {**resources.get("limits", {}), **resources.get("requests", {})}
                    found.append({k: str(v) for k, v in asked.items() if k.startswith("nvidia.com/")})
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(obj.get("spec", {}))
    return found


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_no_example_s_own_workload_asks_for_a_name_its_quota_closes(tmp_path: Path, path: Path) -> None:
    objects = compiled(tmp_path, "", path)
    quotas = {o["metadata"]["namespace"]: o["spec"]["hard"] for o in objects if o["kind"] == "ResourceQuota"}
    for obj in objects:
        namespace = obj["metadata"].get("namespace")
        if namespace not in quotas or obj["kind"] in ("ResourceQuota", "LimitRange"):
            continue
        for asked in _gpu_requests(obj):
            for resource, amount in asked.items():
                line = quotas[namespace].get(f"requests.{resource}")
                assert line is None or int(line) >= int(amount) > 0, (obj["metadata"]["name"], resource, line)


def test_a_name_held_whole_on_another_pool_stays_open_and_only_kueue_closes_it_per_pool(tmp_path: Path) -> None:
    """What docs/admission.md says is not enforced: a ResourceQuota counts names per namespace, not per pool."""
    whole = """\
    - name: l4-whole
      gpu: {model: L4, count: 4}
      nodes: [l4-b]
      nodeResources: {cpu: "32", memory: 256Gi}
      taints:
        - {key: gpustack.io/pool, value: l4-whole, effect: NoSchedule}
  tenants:
"""
    text = SLICED.replace("  tenants:\n", whole, 1).replace(
        "      nodes: [a100-a]\n", '      nodes: [a100-a]\n      nodeResources: {cpu: "128", memory: 1Ti}\n'
    )
    text = text.replace(
        "      pools: [a100-mixed]\n      priority: normal\n      scheduler: volcano\n",
        "      pools: [a100-mixed, l4-whole]\n      priority: normal\n      scheduler: volcano\n",
    ).replace(
        "a100-mixed: {mig-1g.10gb.shared: 56}\n", "a100-mixed: {mig-1g.10gb.shared: 56}\n        l4-whole: unlimited\n"
    )
    assert "requests.nvidia.com/gpu" not in hard(compiled(tmp_path, text), "small")  # held whole on l4-whole
    queued = compiled(tmp_path, text.replace("scheduler: volcano", "scheduler: kueue"))
    flavors = find(queued, "ClusterQueue", name="small")["spec"]["resourceGroups"][0]["flavors"]
    nominal = {f["name"]: {r["name"]: r["nominalQuota"] for r in f["resources"]} for f in flavors}
    assert nominal["a100-mixed"]["nvidia.com/gpu"] == 0 and nominal["l4-whole"]["nvidia.com/gpu"] == 4
