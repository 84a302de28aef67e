"""The compiled README and Pulumi apply in one order, and that order succeeds on a fresh cluster."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from builders import sourceless
from conftest import shipped_examples

from gpustack.compile import compile_blueprint
from gpustack.outputs import render_files
from gpustack.registration import CLUSTER, NAMESPACES, TENANCY, deploy_plan
from gpustack.validation import validate_path

EXAMPLES = shipped_examples()


def steps(readme: str) -> list[str]:
    """The README's numbered apply steps, in order."""
    section = readme.split("## Apply", 1)[1].split("## Files", 1)[0]
    return re.split(r"\n(?=\d\. )", section)[1:]


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_the_readme_applies_in_pulumis_stage_order(example: Path) -> None:
    blueprint = validate_path(example).blueprint
    assert blueprint is not None
    plan = compile_blueprint(sourceless(blueprint))
    files = render_files(plan)
    readme = files["README.md"]
    ordered = steps(readme)
    # Step 1 is exactly Pulumi's stages 0 and 1: namespaces, cluster-wide objects, quotas and limit ranges.
    first = re.findall(r"-f (\S+)", ordered[0])
    first_objects = [doc for file in first for doc in yaml.safe_load_all(files[file]) if doc]
    stages = deploy_plan(sourceless(blueprint)).groups
    pulumi_first = [obj for group in (NAMESPACES, CLUSTER, TENANCY) for obj in stages.get(group, [])]
    key = lambda o: (o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"])  # noqa: E731
    assert sorted(map(key, first_objects)) == sorted(map(key, pulumi_first))
    # Then the nodes, then every chart with --wait, then the kustomization, then the check.
    text = "\n".join(ordered)
    charts = [text.index(f"helm upgrade --install {r.name} ") for r in plan.releases]
    apply_k = text.index("kubectl apply --server-side --field-manager=gpustack -k .")
    verify = text.index("sh verify-nodes.sh")
    assert text.index("kubectl apply") < min(charts) and max(charts) < apply_k < verify
    assert text.count("--wait --timeout") == len(plan.releases)
    if "nodes/label-nodes.sh" in files:
        assert text.index("sh nodes/label-nodes.sh") < min(charts)
    assert "verify-nodes.sh" in files
