"""Nothing a blueprint, a file name or a cluster writes reaches a terminal raw (L6, N16).

Round 3 of the security review found U+202E (a bidi override: Trojan Source reordering in CI logs) and U+2028 printed
raw by `diff`, where C0 and C1 controls were already escaped. Every text and Markdown output now escapes Unicode's
controls (Cc), format characters (Cf), line and paragraph separators (Zl, Zp) and lone surrogates (Cs) through one
function (`gpustack/escapes.py`); JSON and SARIF write them as `\\u` escapes, the same data to a parser.
"""

from __future__ import annotations

import json
import re
import shutil
import unicodedata
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from cluster_from import snapshot_data
from conftest import BLUEPRINTS

import gpustack
from gpustack.cli import group
from gpustack.escapes import HIDDEN_CATEGORIES, escaped, hidden, json_safe, printable
from gpustack.review.formatting import cell, one_line
from gpustack.rollout.script import visible
from gpustack.validation import validate_path
from gpustack.yamlout import dump_yaml

QUICKSTART = BLUEPRINTS / "quickstart.yaml"
# The review's two, and their kin: overrides, embeddings, isolates, marks, separators, NEL, BOM, a tag character.
HOSTILE = (
    "\u202e",  # RIGHT-TO-LEFT OVERRIDE
    "\u202a",  # LEFT-TO-RIGHT EMBEDDING
    "\u2066",  # LEFT-TO-RIGHT ISOLATE
    "\u2067",  # RIGHT-TO-LEFT ISOLATE
    "\u2068",  # FIRST STRONG ISOLATE
    "\u2069",  # POP DIRECTIONAL ISOLATE
    "\u200e",  # LEFT-TO-RIGHT MARK
    "\u200f",  # RIGHT-TO-LEFT MARK
    "\u061c",  # ARABIC LETTER MARK
    "\u2028",  # LINE SEPARATOR
    "\u2029",  # PARAGRAPH SEPARATOR
    "\u0085",  # NEXT LINE (C1)
    "\u009b",  # CONTROL SEQUENCE INTRODUCER (C1)
    "\ufeff",  # ZERO WIDTH NO-BREAK SPACE (BOM)
    "\U000e0001",  # LANGUAGE TAG
)
PAYLOAD = "a" + "b".join(HOSTILE) + "z"
YAML_PAYLOAD = "".join(f"\\U{ord(c):08x}" if ord(c) > 0xFFFF else f"\\u{ord(c):04x}" for c in PAYLOAD)
# File names may carry what YAML does not need to: the override and the separator the review printed.
NAME = "bp\u202e\u2066lmy.\u2028x.yaml"


def raw(output: str) -> list[str]:
    """Hidden characters in the output, but the line breaks and tabs that structure it."""
    return sorted({f"U+{ord(c):04X}" for c in output if hidden(c) and c not in "\n\t"})


def run(*args: str | Path) -> Result:
    return CliRunner().invoke(group, [str(a) for a in args])


def edited(path: Path, *replacements: tuple[str, str], source: Path = QUICKSTART) -> Path:
    text = source.read_text(encoding="utf-8")
    for old, new in replacements:
        assert old in text, old
        text = text.replace(old, new)
    path.write_text(text, encoding="utf-8")
    return path


DESCRIPTION = "description: One L4 node pool, one tenant, one inference Deployment."
IMAGE = "image: vllm/vllm-openai:v0.6.3"
MODEL = "gpu: {model: L4, count: 4}"


# --- the one function --------------------------------------------------------------------------------------------


def test_printable_escapes_exactly_the_hidden_categories() -> None:
    # Every code point this Python knows: hidden ones escaped, every other character (tab included) left alone.
    text = "".join(map(chr, range(0x110000)))
    expected = "".join(escaped(c) if unicodedata.category(c) in HIDDEN_CATEGORIES and c != "\t" else c for c in text)
    assert printable(text) == expected
    lines = "".join(c if c == "\n" else e for c, e in zip(text, map(printable, text), strict=True))
    assert printable(text, keep_newlines=True) == lines


@pytest.mark.parametrize("char", HOSTILE)
def test_each_hostile_character_is_escaped_and_readable(char: str) -> None:
    shown = printable(f"x{char}y")
    assert not raw(shown) and shown.startswith("x\\") and shown.endswith("y")
    assert format(ord(char), "x") in shown  # the reader can tell which character it was


def test_ordinary_text_is_untouched() -> None:
    text = "Grüße, 東京の GPU クラスタ — ok ✓ 🚀 (tab\there)\nnext line"
    assert printable(text, keep_newlines=True) == text


def test_json_safe_keeps_the_data_and_drops_the_raw_characters() -> None:
    value = {"message": PAYLOAD + "\udc80", "ok": "Grüße 東京 🚀"}
    text = json_safe(json.dumps(value, ensure_ascii=False))
    assert json.loads(text) == value
    assert not raw(text)
    assert "Grüße 東京 🚀" in text  # readable UTF-8 stays as it is
    assert "\\udb40\\udc01" in text  # U+E0001 as JSON's surrogate pair


def test_the_rollout_script_and_the_review_cells_escape_through_the_same_function() -> None:
    assert visible(PAYLOAD, backslashes=False) == printable(PAYLOAD)
    assert one_line(PAYLOAD) == printable(PAYLOAD.replace("\u2028", " ").replace("\u2029", " ").replace("\x85", " "))
    assert not raw(cell(PAYLOAD))


def test_no_other_module_lists_the_hidden_characters() -> None:
    # One home: a second list of "characters to escape" would drift from this one (the review's N16 was such a gap).
    package = Path(gpustack.__file__).parent
    pattern = re.compile(r"unicodedata\.category\(|\\x7f-\\x9f|\\x7f-\\x84|\"Cf\"")
    found = [
        str(path.relative_to(package))
        for path in sorted(package.rglob("*.py"))
        if path.name != "escapes.py" and pattern.search(path.read_text(encoding="utf-8"))
    ]
    assert found == []


# --- validate: diagnostics, file names ----------------------------------------------------------------------------


@pytest.fixture
def hostile_model(tmp_path: Path) -> Path:
    """An unknown GPU model holding every hostile character, in a file whose name holds two more."""
    return edited(tmp_path / NAME, (MODEL, f'gpu: {{model: "L4{YAML_PAYLOAD}", count: 4}}'))


def test_validate_text_escapes_the_message_the_source_line_and_the_file_name(hostile_model: Path) -> None:
    result = run("validate", hostile_model)
    assert result.exit_code == 1
    assert raw(result.stdout) == []
    assert "\\u202e" in result.stdout and "\\u2028" in result.stdout and "\\U000e0001" in result.stdout
    assert "bp\\u202e\\u2066lmy.\\u2028x.yaml:" in result.stdout


@pytest.mark.parametrize("output", ["json", "sarif"])
def test_validate_json_and_sarif_carry_the_same_data_escaped(hostile_model: Path, output: str) -> None:
    result = run("validate", "--output", output, hostile_model)
    assert raw(result.stdout) == []
    document = json.loads(result.stdout)
    messages = (
        [d["message"] for f in document["files"] for d in f["diagnostics"]]
        if output == "json"
        else [r["message"]["text"] for r in document["runs"][0]["results"]]
    )
    assert any(PAYLOAD in message for message in messages)  # the parsed text is the blueprint's, unchanged


def test_every_command_stopping_on_it_escapes_the_file_name(hostile_model: Path) -> None:
    for command in (["compile", "-d", str(hostile_model.parent / "out")], ["simulate"], ["capacity"], ["graph"]):
        result = run(*command, hostile_model)
        assert result.exit_code == 1
        assert raw(result.stdout + result.stderr) == [], command
        assert "bp\\u202e\\u2066lmy.\\u2028x.yaml" in result.stderr, command


# --- diff: descriptions and images --------------------------------------------------------------------------------


@pytest.mark.parametrize("output", ["text", "markdown", "json"])
def test_diff_escapes_descriptions_and_images(tmp_path: Path, output: str) -> None:
    before = edited(tmp_path / "before.yaml")
    after = edited(
        tmp_path / "after.yaml",
        (DESCRIPTION, f'description: "{YAML_PAYLOAD}"'),
        (IMAGE, f'image: "vllm/vllm-openai:v0.6.4{YAML_PAYLOAD}"'),
    )
    result = run("diff", before, after, "--output", output)
    assert result.exit_code == 1, result.output
    assert raw(result.stdout) == []
    if output == "json":
        assert PAYLOAD in json.dumps(json.loads(result.stdout), ensure_ascii=False)
    else:
        assert "\\u202e" in result.stdout and "\\u2069" in result.stdout


# --- simulate and capacity: file names reach their headers ---------------------------------------------------------


@pytest.mark.parametrize("command", ["simulate", "capacity"])
def test_simulate_and_capacity_text_escape_the_file_name(tmp_path: Path, command: str) -> None:
    path = tmp_path / NAME
    shutil.copy(QUICKSTART, path)
    result = run(command, path)
    assert result.exit_code == 0, result.output
    assert raw(result.stdout) == []
    assert "bp\\u202e\\u2066lmy.\\u2028x.yaml" in result.stdout
    as_json = run(command, path, "--output", "json")
    assert raw(as_json.stdout) == []
    assert json.loads(as_json.stdout)["file"] == str(path)


# --- drift: names and labels from a cluster ----------------------------------------------------------------------


@pytest.mark.parametrize("output", ["text", "markdown", "json"])
def test_drift_escapes_what_the_cluster_says(tmp_path: Path, output: str) -> None:
    blueprint = validate_path(QUICKSTART).blueprint
    assert blueprint is not None
    data = snapshot_data(blueprint)
    node = next(i for i in data["items"] if i["kind"] == "Node")
    node["metadata"]["labels"]["nvidia.com/device-plugin.config"] = f"edited{PAYLOAD}"
    data["items"].append(
        {
            "kind": "Node",
            "metadata": {"name": f"stray{PAYLOAD}", "labels": {"nvidia.com/gpu.product": "NVIDIA-L4"}},
            "status": {"allocatable": {"nvidia.com/gpu": "4"}},
        }
    )
    snapshot = tmp_path / "cluster.yaml"
    snapshot.write_text(dump_yaml(data), encoding="utf-8")
    result = run("drift", QUICKSTART, snapshot, "--output", output)
    assert result.exit_code == 1, result.output
    assert raw(result.stdout) == []
    if output == "json":
        assert PAYLOAD in json.dumps(json.loads(result.stdout), ensure_ascii=False)
    else:
        assert "stray" in result.stdout and "\\u202e" in result.stdout


# --- compile --check: names and contents read from the output folder ----------------------------------------------


def test_compile_check_escapes_file_names_and_contents_it_lists(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run("compile", QUICKSTART, "-d", out).exit_code == 0
    (out / f"notes{PAYLOAD}.md").write_text("x\n", encoding="utf-8")
    readme = out / "README.md"
    readme.write_text(readme.read_text(encoding="utf-8") + f"\x1b]52;c;aGk=\x07{PAYLOAD}\n", encoding="utf-8")
    result = run("compile", QUICKSTART, "-d", out, "--check")
    assert result.exit_code == 1
    assert raw(result.stdout) == []
    assert "unexpected: notes" in result.stdout and "\\x1b]52;c;aGk=\\x07" in result.stdout


# --- import: the snapshot's file name -------------------------------------------------------------------------------


def test_import_escapes_the_snapshot_name(tmp_path: Path) -> None:
    snapshot = tmp_path / f"snap{PAYLOAD}.yaml"
    snapshot.write_text("kind: List\nitems: []\n", encoding="utf-8")
    result = run("import", snapshot)
    assert result.exit_code == 1
    assert raw(result.stdout + result.stderr) == []
    assert "snap" in result.stderr


def test_the_caret_stays_under_the_value_after_escapes_before_it(tmp_path: Path) -> None:
    # The wrong count comes after a model name holding an override: its escape is wider than the character.
    path = edited(tmp_path / "bp.yaml", (MODEL, 'gpu: {model: "L4\u202e\u2066", count: "four"}'))
    lines = run("validate", path).stdout.splitlines()
    source = next(i for i, line in enumerate(lines) if '"four"' in line and " | " in line)
    assert "\\u202e" in lines[source]
    assert lines[source + 1].index("^") == lines[source].index('"four"')
