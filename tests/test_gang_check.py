"""GS512: a gang (a VolcanoJob's or JobSet's workers, one LeaderWorkerSet group) starts all its pods or none, so one
its pool or its tenant's quota can never hold whole never starts. It is a check, so `validate` and `compile` say it
at the workload's `workers` or `size`, and `gpustack capacity` words the same fact (`Context.gangs`).

tests/cases/invalid/gang-never-fits.yaml puts the pool variant under tests/test_one_gate.py and test_invalid_cases.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import BLUEPRINTS, CASES

from gpustack.cli import group
from gpustack.codes import GANG_NEVER_FITS

HEAD = re.compile(r"^(?P<at>\S+:\d+:\d+): warning\[GS512\]: (?P<message>.*)$", re.MULTILINE)


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(group, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout + result.stderr


def gang_warnings(path: Path) -> list[tuple[str, str]]:
    """(file:line:col, message) of every GS512 `gpustack validate` prints."""
    _, output = run("validate", str(path))
    return [(match["at"], match["message"]) for match in HEAD.finditer(output)]


def capacity_gangs(path: Path) -> list[str]:
    """The gang warnings of `gpustack capacity --output json`."""
    code, output = run("capacity", str(path), "--output", "json")
    assert code == 0, output
    return [w["message"] for w in json.loads(output)["warnings"] if "(all or none)" in w["message"]]


BLUEPRINT = """\
apiVersion: gpustack.io/v1alpha1
kind: ClusterBlueprint
metadata: {{name: gangs}}
spec:
  kubernetes: {{version: "1.33"}}
  nodePools:
    - name: h100
      gpu: {{model: H100-SXM5-80GB, count: 8}}
{pool}
      nodeResources: {{cpu: "192", memory: 2Ti}}
  tenants:
    - name: research
      namespaces: [research]
      pools: [h100]
      scheduler: kueue
{tenant}
  workloads:
    - name: pretrain
      tenant: research
      pool: h100
      kind: JobSet
      workers: 3
      image: t:1
      command: [torchrun, train.py]
      gpu: {{count: 8}}
"""
NODES = "      nodes: [h100-a, h100-b, h100-c]"


def write(tmp_path: Path, pool: str = NODES, tenant: str = "") -> Path:
    path = tmp_path / "blueprint.yaml"
    path.write_text(BLUEPRINT.format(pool=pool, tenant=tenant), encoding="utf-8")
    return path


def test_a_gang_over_its_tenants_quota_is_never_admitted_whole() -> None:
    path = CASES / "simulate" / "gang-quota" / "blueprint.yaml"
    [(at, message)] = gang_warnings(path)
    assert at == f"{path}:27:16"  # workers: 4
    assert message == (
        "workload 'pretrain' starts 4 pods together (all or none), 8 nvidia.com/gpu in all; tenant 'research' may "
        "hold at most 6 in pool 'h100', so it is never admitted whole"
    )
    _, output = run("validate", str(path))
    assert f"note: see {path}:21:15" in output  # the tenant's quota on the pool
    assert "hint: lower workers to 3 or less, ask for fewer nvidia.com/gpu per pod, or raise tenant 'research''s " in (
        output
    )
    assert "quota on pool 'h100' to at least 8" in output
    code, _ = run("validate", "--strict", str(path))
    assert code == 1


def test_the_pool_and_the_quota_are_each_said(tmp_path: Path) -> None:
    # Three 8-GPU workers on two 8-GPU nodes under a 16-GPU quota: both ways out are closed.
    path = write(tmp_path, "      nodes: [h100-a, h100-b]", "      quota:\n        h100: {gpu: 16}")
    messages = [message for _, message in gang_warnings(path)]
    assert len(messages) == 2
    assert any("pool 'h100' holds at most 2 such pods at once (a pod cannot span nodes)" in m for m in messages)
    assert any("tenant 'research' may hold at most 16 in pool 'h100'" in m for m in messages)
    line = path.read_text().splitlines().index("      workers: 3") + 1
    assert {at for at, _ in gang_warnings(path)} == {f"{path}:{line}:16"}  # both at the workers


def test_a_gang_that_fits_whole_is_not_flagged(tmp_path: Path) -> None:
    assert gang_warnings(write(tmp_path, tenant="      quota:\n        h100: {gpu: 24}")) == []


def test_what_a_kueue_tenant_may_borrow_counts(tmp_path: Path) -> None:
    cohort = (
        "      kueue:\n        cohort:\n          name: org\n          borrowingLimit:\n            h100: {{gpu: {}}}"
    )
    quota = "      quota:\n        h100: {gpu: 16}\n"
    assert gang_warnings(write(tmp_path, tenant=quota + cohort.format(8))) == []
    [(_, message)] = gang_warnings(write(tmp_path, tenant=quota + cohort.format(4)))
    assert "tenant 'research' may hold at most 20 in pool 'h100'" in message


@pytest.mark.parametrize(("nodes", "room"), [("minNodes: 1\n      maxNodes: 3", None), ("count: 2", 2)])
def test_a_selector_pool_is_counted_at_its_most_nodes(tmp_path: Path, nodes: str, room: int | None) -> None:
    # A selector pool lists no nodes: its room is its count, or maxNodes when autoscaled (once "at most 0").
    pool = f"      selector:\n        matchLabels: {{karpenter.sh/nodepool: h100}}\n      {nodes}"
    found = gang_warnings(write(tmp_path, pool))
    if room is None:
        assert found == []
    else:
        [(_, message)] = found
        assert f"pool 'h100' holds at most {room} such pods at once" in message


def test_the_volcano_example_fits_on_its_autoscaled_pool() -> None:
    # blueprints/volcano.yaml: two 8-GPU workers on an H100 pool of 2 to 4 nodes.
    assert gang_warnings(BLUEPRINTS / "volcano.yaml") == []
    assert capacity_gangs(BLUEPRINTS / "volcano.yaml") == []


GANG_FILES = [
    path
    for path in [*sorted(BLUEPRINTS.glob("*.yaml")), *sorted(CASES.rglob("*.yaml"))]
    if re.search(r"^\s+(workers|size): ", path.read_text(encoding="utf-8", errors="replace"), re.MULTILINE)
    and "ClusterBlueprint" in path.read_text(encoding="utf-8", errors="replace")
]


@pytest.mark.parametrize("path", GANG_FILES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_capacity_words_every_gang_the_check_raises_and_no_other(path: Path) -> None:
    checked = gang_warnings(path)
    _, output = run("validate", str(path))
    if "error[" in output:
        return  # capacity reports on valid blueprints only
    worded = capacity_gangs(path)
    assert len(worded) == len(checked), (worded, checked)
    for message in worded:
        workload = re.match(r"workload '([^']+)'", message)
        assert workload is not None
        assert any(f"workload '{workload[1]}'" in m for _, m in checked)


def test_the_gang_cases_cover_both_ways_it_never_starts() -> None:
    messages = [m for path in GANG_FILES for _, m in gang_warnings(path)]
    assert any(m.endswith("so it never starts") for m in messages)
    assert any(m.endswith("so it is never admitted whole") for m in messages)
    assert GANG_NEVER_FITS == "GS512"
