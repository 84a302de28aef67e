"""`gpustack recommend` on `sharing.strategy: auto` pools: whole GPUs, MIG layouts or time-slicing, on fewest GPUs.

Hand-checkable on A100 80GB nodes of one GPU, each pool of fixed size so that --write sets its node count and
`simulate` then proves the pods fit exactly the nodes chosen:

- six 70 GiB pods: whole GPUs 6, MIG 6 (7g.80gb each): a tie, whole GPUs isolate better;
- seven 10 GiB shareable pods: whole 7, MIG 1 ({1g.10gb: 7}), time-slicing 1: a tie, MIG isolates better;
- six 12 GiB shareable pods: whole 6, MIG 2 (1g.20gb, four a GPU), time-slicing 1 (six replicas): time-slicing.
"""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from gpustack.cli import group
from gpustack.codes import MIG_LAYOUT_AUTO, RECOMMEND_NO_FIT
from gpustack.validation import validate_path, validate_text

UNLIMITED = "      quota: {pool: unlimited}\n"


def blueprint(
    workloads: str,
    *,
    model: str = "A100-SXM4-80GB",
    gpus: int = 1,
    count: int = 8,
    quota: str = UNLIMITED,
    tenants: str = "",
    sharing: str = "      sharing:\n        strategy: auto   # left to gpustack recommend\n",
) -> str:
    return f"""\
apiVersion: gpustack.io/v1alpha1
kind: ClusterBlueprint
metadata:
  name: rec
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
      count: {count}   # nodes
{sharing}  tenants:
    - name: ml
      namespaces: [ml]
      pools: [pool]
{quota}{tenants}  workloads:
{workloads}"""


def workload(name: str, replicas: int, gpu: str, tenant: str = "ml") -> str:
    return (
        f"    - name: {name}\n      tenant: {tenant}\n      pool: pool\n      kind: Deployment\n"
        f"      replicas: {replicas}\n      image: team/{name}:1\n      gpu: {gpu}\n"
    )


BIG = workload("big", 6, "{memory: 70Gi}")
SMALL = workload("small", 7, "{memory: 10Gi, shareable: true}")
CHAT = workload("chat", 6, "{memory: 12Gi, shareable: true}")


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(group, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout + result.stderr


def solved(tmp_path: Path, text: str) -> dict:
    path = tmp_path / "bp.yaml"
    path.write_text(text, encoding="utf-8")
    code, out = run("recommend", str(path), "-o", "json")
    assert code == 0, out
    (pool,) = json.loads(out)["pools"]
    assert pool["auto"] == "sharing"
    return pool


def candidates(pool: dict) -> dict[str, dict]:
    return {c["sharing"]: c for c in pool["candidates"]}


def written(tmp_path: Path, text: str) -> str:
    """--write, then the written blueprint validates clean, compiles, and simulate places every pod."""
    path = tmp_path / "bp.yaml"
    path.write_text(text, encoding="utf-8")
    code, out = run("recommend", str(path), "--write")
    assert code == 0, out
    assert validate_path(path).diagnostics == ()
    assert run("compile", str(path), "-d", str(tmp_path / "out"))[0] == 0
    code, simulated = run("simulate", str(path))
    pods = text.count("      replicas: ")
    assert code == 0 and "placed, 0 pending" in simulated and simulated.rstrip().endswith("pod(s) placed"), (
        simulated,
        pods,
    )
    return path.read_text(encoding="utf-8")


def test_whole_gpus_win_a_tie_with_mig(tmp_path: Path) -> None:
    pool = solved(tmp_path, blueprint(BIG))
    found = candidates(pool)
    assert (pool["sharing"], pool["gpus"], pool["nodes"], pool["optimal"]) == ("none", 6, 6, True)
    assert pool["lowerBound"] == {"gpus": 6, "method": "the least of the candidates' lower bounds"}
    assert found["mig"]["gpus"] == 6 and found["mig"]["lost"] == "6 GPU(s) too, but whole GPUs isolate better"
    assert found["time-slicing"]["lost"] == "not a candidate: workload 'big' does not set gpu.shareable: true"
    text = written(tmp_path, blueprint(BIG))
    assert "        strategy: none   # left to gpustack recommend\n" in text
    assert "      count: 6   # nodes\n" in text
    assert "        # sharing chosen by gpustack recommend: whole GPUs, 6 node(s), 6 GPU(s), lower bound 6" in text


def test_mig_wins_a_tie_with_time_slicing(tmp_path: Path) -> None:
    pool = solved(tmp_path, blueprint(SMALL))
    found = candidates(pool)
    assert (pool["sharing"], pool["gpus"], pool["optimal"]) == ("mig", 1, True)
    assert pool["groups"] == [{"devices": [0], "layout": {"1g.10gb": 7}}]
    assert found["none"]["gpus"] == 7 and found["none"]["lost"] == "7 GPU(s), 6 more"
    assert found["time-slicing"]["gpus"] == 1
    assert found["time-slicing"]["lost"] == "1 GPU(s) too, but MIG isolate better"
    text = written(tmp_path, blueprint(SMALL))
    assert (
        "        strategy: mig   # left to gpustack recommend\n"
        "        mig: {strategy: mixed, layout: {1g.10gb: 7}}\n" in text
    )
    assert "      count: 1   # nodes\n" in text


def test_time_slicing_wins_where_it_needs_fewest_gpus(tmp_path: Path) -> None:
    pool = solved(tmp_path, blueprint(CHAT))
    found = candidates(pool)
    assert (pool["sharing"], pool["gpus"], pool["replicas"], pool["mostReplicas"]) == ("time-slicing", 1, 6, 6)
    assert found["none"]["gpus"] == 6 and found["mig"]["gpus"] == 2 and found["mig"]["lost"] == "2 GPU(s), 1 more"
    assert pool["optimal"] is True and pool["lowerBound"]["gpus"] == 1
    text = written(tmp_path, blueprint(CHAT))
    assert "        strategy: time-slicing   # left to gpustack recommend\n        timeSlicing: {replicas: 6}\n" in text


def test_replicas_are_the_fewest_that_keep_the_node_count(tmp_path: Path) -> None:
    # 5 GiB pods: 16 fit one 80 GiB GPU, but 5 pods on one node need only 5 replicas (and no fewer than 2).
    pool = solved(tmp_path, blueprint(workload("tiny", 5, "{memory: 5Gi, shareable: true}")))
    assert pool["sharing"] == "mig"  # {1g.10gb: 7} on one GPU: the same count, better isolated
    assert candidates(pool)["time-slicing"]["gpus"] == 1
    text = blueprint(workload("tiny", 3, "{memory: 30Gi, shareable: true}"), model="L4")
    # L4 (24 GiB, no MIG): 30 GiB fits no L4 at all: validate refuses it before recommend runs.
    assert validate_text(text, "x.yaml").ok is False
    pool = solved(tmp_path, blueprint(workload("tiny", 3, "{memory: 5Gi, shareable: true}"), model="L4"))
    assert (pool["sharing"], pool["gpus"], pool["replicas"], pool["mostReplicas"]) == ("time-slicing", 1, 3, 4)
    assert candidates(pool)["mig"]["reason"] == "L4 has no MIG"


def test_a_quota_naming_a_mig_profile_rules_out_whole_gpus_and_time_slicing(tmp_path: Path) -> None:
    quota = "      quota: {pool: {mig-1g.20gb: 6}}\n"
    pool = solved(tmp_path, blueprint(CHAT, quota=quota))
    found = candidates(pool)
    assert pool["sharing"] == "mig" and pool["gpus"] == 2
    for sharing, words in (("none", "whole GPUs"), ("time-slicing", "time-slicing")):
        assert found[sharing]["reason"] == f"the quota of tenant 'ml' names mig-1g.20gb, which {words} do not advertise"
    written(tmp_path, blueprint(CHAT, quota=quota))


def test_a_quota_naming_only_gpu_rules_out_mig_and_counts_replicas_under_time_slicing(tmp_path: Path) -> None:
    quota = "      quota: {pool: {gpu: 6}}\n"
    pool = solved(tmp_path, blueprint(CHAT, quota=quota))
    assert candidates(pool)["mig"]["reason"] == (
        "the quota of tenant 'ml' on the pool does not name mig-1g.20gb, which workload 'chat' asks under MIG: it "
        "would admit none of its pods"
    )
    assert pool["sharing"] == "time-slicing" and pool["gpus"] == 1
    # The same quota admits the same six pods: six GPUs under whole GPUs, six replicas of one GPU here.
    path = tmp_path / "bp.yaml"
    written(tmp_path, blueprint(CHAT, quota=quota))
    code, simulated = run("simulate", str(path))
    assert code == 0 and "requests.nvidia.com/gpu                   6 / 6" in simulated


def test_a_quota_above_the_pods_sizes_the_pool_in_each_sharings_units(tmp_path: Path) -> None:
    # gpu: 12 is 12 GPUs whole, 12 replicas time-sliced: two GPUs of six replicas (each 12 GiB x 6 = 72 of 80 GiB).
    pool = solved(tmp_path, blueprint(CHAT, quota="      quota: {pool: {gpu: 12}}\n", count=16))
    found = candidates(pool)
    assert found["none"]["gpus"] == 12
    assert (pool["sharing"], pool["gpus"], pool["replicas"]) == ("time-slicing", 2, 6)


def test_a_tenant_whose_pods_no_workload_describes_rules_out_time_slicing(tmp_path: Path) -> None:
    other = "    - name: guests\n      namespaces: [guests]\n      pools: [pool]\n      quota: {pool: {gpu: 2}}\n"
    pool = solved(tmp_path, blueprint(CHAT, tenants=other))
    assert candidates(pool)["time-slicing"]["reason"] == (
        "tenant 'guests' may run pods on the pool (its quota) but has no workload there to say they tolerate an "
        "unisolated GPU"
    )
    assert pool["sharing"] == "none" and pool["gpus"] == 6  # MIG: guests' quota names gpu but chat asks 1g.20gb


def test_what_time_slicing_cannot_hold(tmp_path: Path) -> None:
    cases = {
        "{memory: 50Gi, shareable: true}": (
            "workload 'w' needs 50 GiB: two of its pods do not fit one A100-SXM4-80GB (80 GiB), and time-slicing "
            "needs at least 2 replicas"
        ),
        "{count: 2, memory: 10Gi, shareable: true}": (
            "workload 'w' asks 2 GPUs per pod; a time-sliced pod gets one replica (more give it no more compute, "
            "and the device plugin refuses them)"
        ),
        "{count: 1, shareable: true}": "workload 'w' states no gpu.memory, so no replica count is safe for it",
        "{profile: 2g.20gb, shareable: true}": "workload 'w' asks for MIG profile 2g.20gb",
    }
    for gpu, reason in cases.items():
        pool = solved(tmp_path, blueprint(workload("w", 2, gpu), gpus=2))
        assert candidates(pool)["time-slicing"]["reason"] == reason, gpu


def test_a_pod_larger_than_a_node_rules_out_whole_gpus(tmp_path: Path) -> None:
    # Two GPUs a pod on nodes of one: no node count holds it whole; MIG cuts each pod's 1g.10gb pair from one GPU.
    pool = solved(tmp_path, blueprint(workload("w", 2, "{count: 2, memory: 10Gi}")))
    assert candidates(pool)["none"]["reason"] == "workload 'w' asks 2 GPUs per pod, a node has 1"
    assert (pool["sharing"], pool["gpus"]) == ("mig", 1)


def test_a_pool_no_sharing_fits_is_refused_at_its_node_count(tmp_path: Path) -> None:
    path = tmp_path / "bp.yaml"
    text = blueprint(workload("w", 3, "{memory: 50Gi}"), count=2)
    path.write_text(text, encoding="utf-8")
    code, out = run("recommend", str(path), "--write")
    assert code == 1 and path.read_text(encoding="utf-8") == text
    assert f"{path}:16:14: error[{RECOMMEND_NO_FIT}]: pool 'pool' cannot hold its demand on 2 node(s) of 1 GPU" in out
    assert (
        "under any sharing: whole GPUs: does not fit (3 pod(s) ask 3 GPU(s); it would take 3 node(s), the pool has at "
        "most 2); MIG: does not fit (7g.80gb: 3 pod(s) of w ask 3; it would take 3 node(s)); time-slicing: not a "
        "candidate (workload 'w' does not set gpu.shareable: true)" in out
    )


def test_a_pool_with_no_candidate_is_refused_at_its_strategy(tmp_path: Path) -> None:
    path = tmp_path / "bp.yaml"
    quota = "      quota: {pool: {mig-1g.10gb: 4}}\n"
    path.write_text(blueprint(CHAT + workload("tune", 1, "{profile: 3g.40gb}"), quota=quota), encoding="utf-8")
    code, out = run("recommend", str(path))
    assert code == 1
    assert f"{path}:18:19: error[{RECOMMEND_NO_FIT}]" in out
    assert "whole GPUs: not a candidate (workload 'tune' asks for MIG profile 3g.40gb)" in out
    assert "hint: choose the sharing yourself" in out


def test_validate_resolves_an_auto_pool_against_its_menu(tmp_path: Path) -> None:
    # A profile need is MIG's to serve; a quota may name gpu or any profile; neither is an error before recommend.
    text = blueprint(CHAT + workload("tune", 1, "{profile: 3g.40gb}"), quota="      quota: {pool: {gpu: 1}}\n")
    result = validate_text(text, "bp.yaml")
    assert [d.code for d in result.diagnostics] == [MIG_LAYOUT_AUTO]


def test_write_into_a_flow_mapping_with_crlf_lines(tmp_path: Path) -> None:
    for gpu, expected in (
        (CHAT, "sharing: {strategy: time-slicing, timeSlicing: {replicas: 6}}  # flow\r\n"),
        (SMALL, "sharing: {strategy: mig, mig: {strategy: mixed, layout: {1g.10gb: 7}}}  # flow\r\n"),
        (BIG, "sharing: {strategy: none}  # flow\r\n"),
    ):
        text = blueprint(gpu, sharing="      sharing: {strategy: auto}  # flow\n")
        path = tmp_path / "bp.yaml"
        path.write_bytes(text.replace("\n", "\r\n").encode("utf-8"))
        assert run("recommend", str(path), "--write")[0] == 0
        out = path.read_bytes().decode("utf-8")
        assert "\n" not in out.replace("\r\n", "") and f"      {expected}" in out
        assert "\r\n      # sharing chosen by gpustack recommend: " in out
        assert validate_path(path).diagnostics == ()


def test_write_at_the_end_of_a_file_without_its_last_line_break(tmp_path: Path) -> None:
    # The pools last, the strategy the file's last line: the sibling key gets a line of its own.
    text = blueprint(CHAT)
    pools_at = text.index("  nodePools:\n")
    tenants_at = text.index("  tenants:\n")
    moved = text[:pools_at] + text[tenants_at:] + text[pools_at:tenants_at].rstrip("\n")
    assert moved.endswith("strategy: auto   # left to gpustack recommend")
    path = tmp_path / "bp.yaml"
    path.write_text(moved, encoding="utf-8")
    assert run("recommend", str(path), "--write")[0] == 0
    out = path.read_text(encoding="utf-8")
    assert out.endswith(
        "        strategy: time-slicing   # left to gpustack recommend\n        timeSlicing: {replicas: 6}\n"
    )
    assert validate_path(path).diagnostics == ()


def test_the_same_blueprint_gives_the_same_bytes(tmp_path: Path) -> None:
    path = tmp_path / "bp.yaml"
    path.write_text(blueprint(SMALL + CHAT), encoding="utf-8")
    for output in ("text", "json"):
        first = run("recommend", str(path), "-o", output)
        assert first[0] == 0 and run("recommend", str(path), "-o", output) == first


def test_text_output_says_what_was_chosen_and_why_the_others_lost(tmp_path: Path) -> None:
    path = tmp_path / "bp.yaml"
    path.write_text(blueprint(CHAT), encoding="utf-8")
    code, out = run("recommend", str(path))
    assert code == 0
    assert out.splitlines()[:6] == [
        "pool pool: A100-SXM4-80GB, 1 GPU(s) per node, at most 8 node(s), sharing: auto",
        "  sharing: time-slicing, 6 replicas per GPU (strategy: time-slicing; at most 6 keep the largest memory "
        "need within the GPU)",
        "  nodes: 1, GPUs: 1 (count 8; --write sets it to 1)",
        "  lower bound: 1 GPU(s) (the least of the candidates' lower bounds: whole GPUs 6, MIG 2, time-slicing 1)",
        "  optimal: yes (proven least under time-slicing, and no other candidate's lower bound is below it)",
        "  first-fit-decreasing: 1 GPU(s) (saves 0)",
    ]
    assert "    whole GPUs: 6 GPU(s), 5 more (6 GPU(s) on 6 node(s), lower bound 6, optimal" in out
    assert "    MIG: 2 GPU(s), 1 more (2 GPU(s) on 2 node(s), lower bound 2, optimal" in out


def test_review_of_hand_written_whole_gpus_to_the_recommended_sharing_shows_the_gpus_freed(tmp_path: Path) -> None:
    hand, chosen = tmp_path / "hand.yaml", tmp_path / "chosen.yaml"
    hand.write_text(
        blueprint(CHAT, count=6).replace("strategy: auto   # left to gpustack recommend", "strategy: none"),
        encoding="utf-8",
    )
    chosen.write_text(blueprint(CHAT, count=6), encoding="utf-8")
    assert run("recommend", str(chosen), "--write")[0] == 0
    _, review = run("diff", str(hand), str(chosen))
    assert "count: 6 -> 1" in review and "6 -> 1 nodes, 6 -> 1 GPUs" in review
    assert "sharing.strategy: none -> time-slicing" in review
    code, plan = run("rollout", str(hand), str(chosen))
    assert code == 0, plan


def test_review_of_auto_to_the_written_sharing_shows_the_choice_without_risks_it_never_had(tmp_path: Path) -> None:
    # The auto side never reached a cluster (compile refuses it): nothing it "advertised" is renamed, nothing it
    # "isolated" weakens. A hand-written MIG pool moving to time-slicing still gets both risks.
    auto, chosen, mig = tmp_path / "auto.yaml", tmp_path / "chosen.yaml", tmp_path / "mig.yaml"
    auto.write_text(blueprint(CHAT, count=6), encoding="utf-8")
    chosen.write_text(blueprint(CHAT, count=6), encoding="utf-8")
    mig.write_text(
        blueprint(CHAT, count=6).replace(
            "strategy: auto   # left to gpustack recommend",
            "strategy: mig\n        mig: {strategy: mixed, layout: {1g.20gb: 4}}",
        ),
        encoding="utf-8",
    )
    assert run("recommend", str(chosen), "--write")[0] == 0
    _, review = run("diff", str(auto), str(chosen))
    assert "sharing.strategy: auto -> time-slicing" in review and "6 -> 1 nodes, 6 -> 1 GPUs" in review
    assert "1 pool changed; no risk flagged" in review
    _, review = run("diff", str(mig), str(chosen))
    assert "stops advertising nvidia.com/mig-1g.20gb" in review and "isolation drops" in review
