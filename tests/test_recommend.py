"""`gpustack recommend`: layout: auto pools get the MIG layouts that hold their workloads on the fewest GPUs."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from conftest import CASES

from gpustack.cli import group
from gpustack.codes import MIG_LAYOUT_AUTO, RECOMMEND_NO_FIT
from gpustack.recommend import recommend
from gpustack.validation import validate_path

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "blueprints" / "recommend.yaml"


def blueprint(
    workloads: str,
    *,
    model: str = "A100-SXM4-80GB",
    gpus: int = 1,
    max_nodes: int = 8,
    quota: str = "      quota: {pool: unlimited}\n",  # a granted pool with no entry is closed (GS610)
    strategy: str = "mixed",
) -> str:
    return f"""\
apiVersion: gpustack.io/v1alpha1
kind: ClusterBlueprint
metadata:
  name: rec  # the cluster
spec:
  kubernetes:
    version: "1.33"
  stack: gpu-operator
  gpuOperator:
    chartVersion: v26.7.0
  nodePools:
    - name: pool
      gpu: {{model: {model}, count: {gpus}}}
      selector:
        matchLabels: {{cloud.google.com/gke-nodepool: pool}}
      minNodes: 0
      maxNodes: {max_nodes}
      sharing:
        strategy: mig
        mig:
          strategy: {strategy}
          layout: auto   # left to gpustack recommend
  tenants:
    - name: ml
      namespaces: [ml]
      pools: [pool]
{quota}  workloads:
{workloads}"""


def workload(name: str, replicas: int, gpu: str, kind: str = "Deployment") -> str:
    return (
        f"    - name: {name}\n      tenant: ml\n      pool: pool\n      kind: {kind}\n      replicas: {replicas}\n"
        f"      image: team/{name}:1\n      gpu: {gpu}\n"
    )


HAND = workload("chat", 4, "{memory: 10Gi}") + workload("tune", 2, "{profile: 3g.40gb}", "Job")


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(group, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout + result.stderr


def solved(tmp_path: Path, text: str) -> dict:
    path = tmp_path / "bp.yaml"
    path.write_text(text, encoding="utf-8")
    code, out = run("recommend", str(path), "-o", "json")
    assert code == 0, out
    pools: list[dict] = json.loads(out)["pools"]
    assert len(pools) == 1
    return pools[0]


def test_four_10gib_inference_and_two_3g_finetunes_fit_two_gpus_each_cut_3g_plus_four_1g(tmp_path: Path) -> None:
    pool = solved(tmp_path, blueprint(HAND))
    assert pool["gpus"] == 2 and pool["nodes"] == 2
    assert pool["groups"] == [{"devices": [0], "layout": {"3g.40gb": 1, "1g.10gb": 4}}]
    assert pool["optimal"] is True and pool["lowerBound"]["gpus"] == 2
    assert pool["strandedGibPerNode"] == 0 and pool["distinctLayouts"] == 1


def test_two_gpu_nodes_need_one_node_cut_the_same_on_both_gpus(tmp_path: Path) -> None:
    pool = solved(tmp_path, blueprint(HAND, gpus=2))
    assert pool["nodes"] == 1 and pool["gpus"] == 2
    assert pool["groups"] == [{"devices": [0, 1], "layout": {"3g.40gb": 1, "1g.10gb": 4}}]


def test_a_quota_is_capacity_the_layouts_must_give(tmp_path: Path) -> None:
    quota = "      quota:\n        pool: {mig-1g.10gb: 10, mig-3g.40gb: 2}\n"
    pool = solved(tmp_path, blueprint(HAND, quota=quota))
    units = {u["unit"]: u for u in pool["units"]}
    assert units["1g.10gb"]["offeredPerNode"] * pool["nodes"] >= 10
    assert pool["gpus"] == 3  # 10 x 1g.10gb and 2 x 3g.40gb: two GPUs hold at most 8 small slices beside the large


def test_whole_gpus_sit_beside_mig_under_the_mixed_strategy(tmp_path: Path) -> None:
    workloads = HAND + workload("train", 1, "{count: 2}", "Job")
    pool = solved(tmp_path, blueprint(workloads, gpus=4))
    assert pool["nodes"] == 1
    assert pool["groups"] == [
        {"devices": [0, 1], "layout": {"3g.40gb": 1, "1g.10gb": 4}},
        {"devices": [2, 3], "whole": True},
    ]


def test_text_output_states_layouts_bound_optimality_and_baseline(tmp_path: Path) -> None:
    path = tmp_path / "bp.yaml"
    path.write_text(blueprint(HAND), encoding="utf-8")
    code, out = run("recommend", str(path))
    assert code == 0
    assert "GPU 0 of each node: {3g.40gb: 1, 1g.10gb: 4}" in out
    assert "nodes: 2, GPUs: 2" in out
    assert "lower bound: 2 GPU(s) (linear relaxation" in out
    assert "optimal: yes" in out and "first-fit-decreasing: 2 GPU(s)" in out
    assert run("recommend", str(path)) == (code, out)  # deterministic


def test_first_fit_decreasing_needs_twice_the_gpus_where_the_solver_pairs_slices(tmp_path: Path) -> None:
    # Largest first, first fit puts both 3g.40gb on GPU 0 ({3g.40gb: 2}), then GPU 1 holds only three 2g.20gb: the
    # fourth opens a second node. Cut {3g.40gb: 1, 2g.20gb: 2} on both GPUs, one node holds it all.
    workloads = workload("large", 2, "{profile: 3g.40gb}") + workload("medium", 4, "{profile: 2g.20gb}")
    pool = solved(tmp_path, blueprint(workloads, gpus=2))
    assert pool["groups"] == [{"devices": [0, 1], "layout": {"3g.40gb": 1, "2g.20gb": 2}}]
    assert pool["gpus"] == 2 and pool["optimal"] is True
    assert pool["firstFitDecreasingGpus"] == 4


def test_validate_accepts_auto_and_compile_refuses_it_with_the_strict_diagnostic(tmp_path: Path) -> None:
    path = tmp_path / "bp.yaml"
    path.write_text(blueprint(HAND), encoding="utf-8")
    code, validated = run("validate", str(path))
    assert code == 0 and f"warning[{MIG_LAYOUT_AUTO}]" in validated
    strict_code, strict = run("validate", "--strict", str(path))
    compile_code, compiled = run("compile", str(path), "-d", str(tmp_path / "out"))
    assert strict_code == compile_code == 1
    head = f"{path}:22:19: error[{MIG_LAYOUT_AUTO}]"
    assert head in strict and head in compiled and "gpustack recommend" in compiled
    assert not (tmp_path / "out").exists()


def test_write_replaces_auto_keeping_comments_and_order_then_validates_compiles_and_simulates(tmp_path: Path) -> None:
    path = tmp_path / "bp.yaml"
    text = blueprint(HAND)
    path.write_text(text, encoding="utf-8")
    code, out = run("recommend", str(path), "--write")
    assert code == 0, out
    written = path.read_text(encoding="utf-8")
    before, after = text.splitlines(), written.splitlines()
    assert [line for line in after if "layout" not in line and "gpustack recommend:" not in line] == [
        line for line in before if "layout" not in line
    ]
    assert "          layout: {3g.40gb: 1, 1g.10gb: 4}   # left to gpustack recommend" in after
    assert any(line.startswith("          # chosen by gpustack recommend: 2 node(s), 2 GPU(s)") for line in after)
    assert validate_path(path).diagnostics == ()
    assert run("compile", str(path), "-d", str(tmp_path / "out"))[0] == 0
    code, simulated = run("simulate", str(path))
    assert code == 0 and "all 6 pod(s) placed" in simulated


def test_write_turns_layout_into_groups_when_the_gpus_of_a_node_differ(tmp_path: Path) -> None:
    path = tmp_path / "bp.yaml"
    path.write_text(blueprint(HAND + workload("train", 1, "{count: 2}", "Job"), gpus=4), encoding="utf-8")
    assert run("recommend", str(path), "--write")[0] == 0
    written = path.read_text(encoding="utf-8")
    assert "groups: [{devices: [0, 1], layout: {3g.40gb: 1, 1g.10gb: 4}}, {devices: [2, 3], whole: true}]" in written
    assert validate_path(path).diagnostics == ()
    code, simulated = run("simulate", str(path))
    assert code == 0 and "all 7 pod(s) placed" in simulated


def test_a_pool_too_small_is_refused_naming_what_does_not_fit() -> None:
    case = CASES / "recommend" / "too-small.yaml"
    code, out = run("recommend", str(case))
    assert code == 1
    assert f"{case}:18:17: error[{RECOMMEND_NO_FIT}]" in out
    assert "7g.80gb: 2 pod(s) of train ask 2; it would take 2 node(s)" in out


def test_write_leaves_a_refused_blueprint_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "bp.yaml"
    text = blueprint(workload("train", 3, "{profile: 7g.80gb}", "Job"), max_nodes=2)
    path.write_text(text, encoding="utf-8")
    assert run("recommend", str(path), "--write")[0] == 1
    assert path.read_text(encoding="utf-8") == text


def test_no_auto_pool_means_nothing_to_recommend() -> None:
    code, out = run("recommend", str(REPO / "blueprints" / "mig-mixed.yaml"))
    assert code == 0 and "nothing to recommend" in out


def test_the_example_blueprint_is_recommended_written_and_placed(tmp_path: Path) -> None:
    copy = tmp_path / EXAMPLE.name
    copy.write_text(EXAMPLE.read_text(encoding="utf-8"), encoding="utf-8")
    result = validate_path(copy)
    assert [d.code for d in result.diagnostics] == [MIG_LAYOUT_AUTO, MIG_LAYOUT_AUTO]  # a100's layout, h100's sharing
    assert result.context is not None
    found, refused = recommend(result.context)
    assert refused == () and len(found) == 2 and all(r.optimal for r in found)
    assert run("recommend", str(copy), "--write")[0] == 0
    assert validate_path(copy).diagnostics == ()
    assert run("compile", str(copy), "-d", str(tmp_path / "out"))[0] == 0
    code, simulated = run("simulate", str(copy))
    assert code == 0 and "placed" in simulated and "unplaced" not in simulated.lower()


def test_time_sliced_instances_each_hold_replicas_pods(tmp_path: Path) -> None:
    text = blueprint(HAND).replace(
        "          layout: auto   # left to gpustack recommend\n",
        "          layout: auto   # left to gpustack recommend\n          timeSlicing: {replicas: 2}\n",
    )
    pool = solved(tmp_path, text)
    units = {u["unit"]: u["neededPerNode"] for u in pool["units"]}
    assert pool["gpus"] == 1 and units == {"1g.10gb": 2, "3g.40gb": 1}  # 4 pods on 2 slices, 2 pods on 1


def test_single_strategy_gets_one_profile_per_layout(tmp_path: Path) -> None:
    workloads = workload("embed", 9, "{memory: 8Gi}")
    pool = solved(tmp_path, blueprint(workloads, strategy="single"))
    assert pool["groups"] == [{"devices": [0], "layout": {"1g.10gb": 7}}] and pool["gpus"] == 2


def test_single_strategy_with_two_profiles_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "bp.yaml"
    path.write_text(blueprint(HAND, strategy="single"), encoding="utf-8")
    code, out = run("recommend", str(path))
    assert code == 1 and f"error[{RECOMMEND_NO_FIT}]" in out and "together: 1g.10gb" in out


def test_a_static_pool_is_refused_at_its_node_list(tmp_path: Path) -> None:
    text = blueprint(HAND).replace(
        "      selector:\n        matchLabels: {cloud.google.com/gke-nodepool: pool}\n      minNodes: 0\n"
        "      maxNodes: 8\n",
        "      nodes: [n1]\n",
    )
    path = tmp_path / "bp.yaml"
    path.write_text(text, encoding="utf-8")
    code, out = run("recommend", str(path))
    assert code == 1
    assert f"{path}:14:14: error[{RECOMMEND_NO_FIT}]: pool 'pool' cannot hold its demand on 1 node(s)" in out
    assert "it would take 2 node(s)" in out


def test_a_pool_asking_only_whole_gpus_has_nothing_to_cut(tmp_path: Path) -> None:
    path = tmp_path / "bp.yaml"
    path.write_text(blueprint(workload("train", 2, "{count: 1}", "Job")), encoding="utf-8")
    code, out = run("recommend", str(path), "-o", "json")
    assert code == 1
    (found,) = json.loads(out)["files"][0]["diagnostics"]
    assert found["code"] == RECOMMEND_NO_FIT and "asks only for whole GPUs" in found["message"]


def test_validate_of_an_auto_pool_never_loads_the_solver() -> None:
    import subprocess
    import sys

    script = (
        "import sys; from gpustack.cli import main\n"
        "try:\n    main(['validate', sys.argv[1]])\nexcept SystemExit:\n    pass\n"
        "assert not any(m.startswith('ortools') for m in sys.modules), 'ortools loaded'\n"
    )
    case = CASES / "invalid" / "mig-layout-auto.yaml"
    done = subprocess.run([sys.executable, "-c", script, str(case)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


def test_write_into_a_flow_mapping_with_crlf_lines_keeps_both(tmp_path: Path) -> None:
    text = blueprint(HAND, gpus=4).replace(
        "      sharing:\n        strategy: mig\n        mig:\n          strategy: mixed\n"
        "          layout: auto   # left to gpustack recommend\n",
        "      sharing: {strategy: mig, mig: {strategy: mixed, layout: auto}}  # flow style\n",
    )
    text += workload("train", 1, "{count: 2}", "Job")
    path = tmp_path / "bp.yaml"
    path.write_bytes(text.replace("\n", "\r\n").encode("utf-8"))
    assert run("recommend", str(path), "--write")[0] == 0
    written = path.read_bytes().decode("utf-8")
    assert "\n" not in written.replace("\r\n", "")
    assert (
        "      sharing: {strategy: mig, mig: {strategy: mixed, groups: [{devices: [0, 1], layout: {3g.40gb: 1, "
        "1g.10gb: 4}}, {devices: [2, 3], whole: true}]}}  # flow style\r\n" in written
    )
    assert validate_path(path).diagnostics == ()


def test_deploy_refuses_an_auto_pool_as_compile_does() -> None:
    import pytest

    from gpustack.registration import InvalidBlueprint, deploy_plan

    result = validate_path(CASES / "invalid" / "mig-layout-auto.yaml")
    assert result.context is not None and result.ok
    with pytest.raises(InvalidBlueprint) as refused:
        deploy_plan(result.context, warnings=result.diagnostics)
    assert [(d.code, d.severity.value) for d in refused.value.diagnostics] == [(MIG_LAYOUT_AUTO, "error")]


def test_review_shows_auto_replaced_and_rollout_refuses_auto_as_the_new_side(tmp_path: Path) -> None:
    auto, chosen = tmp_path / "auto.yaml", tmp_path / "chosen.yaml"
    auto.write_text(blueprint(HAND), encoding="utf-8")
    chosen.write_text(blueprint(HAND), encoding="utf-8")
    assert run("recommend", str(chosen), "--write")[0] == 0
    code, review = run("diff", str(auto), str(chosen))
    assert "sharing.mig.layout: auto -> {3g.40gb: 1, 1g.10gb: 4}" in review
    code, out = run("rollout", str(chosen), str(auto))
    assert code != 0 and f"{auto}:22:19: error[{MIG_LAYOUT_AUTO}]" in out and "nothing to plan" in out


def test_a_fixed_size_pool_gets_the_node_count_and_the_review_shows_the_gpus_freed(tmp_path: Path) -> None:
    # Hand-written: four single-GPU nodes cut {1g.10gb: 7}. Recommended: the same cut on one node; diff says so.
    fixed = (
        "      selector:\n        matchLabels: {cloud.google.com/gke-nodepool: pool}\n      minNodes: 0\n"
        "      maxNodes: 8\n"
    )
    text = blueprint(workload("chat", 6, "{memory: 10Gi}")).replace(
        fixed, "      selector:\n        matchLabels: {cloud.google.com/gke-nodepool: pool}\n      count: 4  # today\n"
    )
    hand, chosen = tmp_path / "hand.yaml", tmp_path / "chosen.yaml"
    hand.write_text(text.replace("layout: auto", "layout: {1g.10gb: 7}"), encoding="utf-8")
    chosen.write_text(text, encoding="utf-8")
    code, out = run("recommend", str(chosen), "--write")
    assert code == 0 and "nodes: 1, GPUs: 1 (count 4; --write sets it to 1)" in out
    assert "      count: 1  # today\n" in chosen.read_text(encoding="utf-8")
    assert validate_path(chosen).diagnostics == ()
    _, review = run("diff", str(hand), str(chosen))
    assert "count: 4 -> 1" in review and "4 -> 1 nodes, 4 -> 1 GPUs" in review


def test_without_the_solver_recommend_says_which_extra_to_install(tmp_path: Path) -> None:
    import subprocess
    import sys

    # A module finder that refuses ortools, as a plain `pip install gpustack` leaves it missing.
    script = (
        "import sys\n"
        "class Missing:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] == 'ortools':\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
        "sys.meta_path.insert(0, Missing())\n"
        "from gpustack.cli import main\n"
        "main(['recommend', sys.argv[1]])\n"
    )
    case = CASES / "invalid" / "mig-layout-auto.yaml"
    done = subprocess.run([sys.executable, "-c", script, str(case)], capture_output=True, text=True, check=False)
    assert done.returncode == 2, done.stderr
    assert "pip install 'gpustack[recommend]'" in done.stderr and "Traceback" not in done.stderr
