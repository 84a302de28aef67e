"""One Context per run: validation builds it, keeps it, and every later stage takes it; no Context without a locator.

A Context is where a blueprint's facts are derived (models, offers, requests, demand) and where a diagnostic gets its
position. Built again downstream, a fact is derived twice and the new one must choose again whether to point at
the text; so each command builds exactly one per blueprint side, and a Blueprint built in code (a Pulumi program's)
goes through the same checks as a file.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from cluster_from import snapshot_text
from conftest import BLUEPRINTS, CASES

from gpustack.build import build_blueprint
from gpustack.catalog import load_catalog
from gpustack.cli import group
from gpustack.codes import MEMORY_OVERSUBSCRIBED
from gpustack.context import Context, unplaced
from gpustack.registration import InvalidBlueprint, failure_text, load_blueprint
from gpustack.report import format_text
from gpustack.validation import DocumentLocator, validate_path

MULTI_TENANT = BLUEPRINTS / "multi-tenant.yaml"
REVIEW = CASES / "review" / "mig-layout"


@pytest.fixture
def contexts(monkeypatch: pytest.MonkeyPatch) -> list[Context]:
    """Every Context constructed while the test runs (dataclasses.replace included: it constructs one too)."""
    made: list[Context] = []
    construct = Context.__init__

    def counting(self: Context, *args: object, **kwargs: object) -> None:
        construct(self, *args, **kwargs)  # type: ignore[arg-type]
        made.append(self)

    monkeypatch.setattr(Context, "__init__", counting)
    return made


def run(*args: str) -> None:
    result = CliRunner().invoke(group, list(args), catch_exceptions=False)
    assert result.exit_code in (0, 1), result.output


def sides(made: list[Context]) -> list[str]:
    return sorted(context.blueprint.source for context in made)


@pytest.mark.parametrize(
    "command",
    [
        pytest.param(lambda tmp: ("validate", str(MULTI_TENANT)), id="validate"),
        pytest.param(lambda tmp: ("compile", str(MULTI_TENANT), "-d", str(tmp / "out")), id="compile"),
        pytest.param(lambda tmp: ("compile", str(MULTI_TENANT), "--output", "json"), id="compile-json"),
        pytest.param(lambda tmp: ("simulate", str(MULTI_TENANT)), id="simulate"),
        pytest.param(lambda tmp: ("capacity", str(MULTI_TENANT)), id="capacity"),
        pytest.param(lambda tmp: ("graph", str(MULTI_TENANT)), id="graph"),
        pytest.param(lambda tmp: ("drift", str(MULTI_TENANT), str(tmp / "cluster.yaml")), id="drift"),
    ],
)
def test_a_command_on_one_blueprint_builds_one_context(command, tmp_path: Path, contexts: list[Context]) -> None:
    validated = validate_path(MULTI_TENANT)
    assert validated.blueprint is not None
    (tmp_path / "cluster.yaml").write_text(snapshot_text(validated.blueprint), encoding="utf-8")
    contexts.clear()
    run(*command(tmp_path))
    assert sides(contexts) == [str(MULTI_TENANT)]
    # Read from text: every diagnostic it could give points into the file.
    assert all(isinstance(context.locate, DocumentLocator) for context in contexts)


@pytest.mark.parametrize("command", ["diff", "rollout"])
def test_a_review_builds_one_context_per_side(command: str, contexts: list[Context]) -> None:
    before, after = REVIEW / "before.yaml", REVIEW / "after.yaml"
    run(command, str(before), str(after))
    assert sides(contexts) == sorted([str(before), str(after)])
    assert all(isinstance(context.locate, DocumentLocator) for context in contexts)


def test_a_context_is_never_built_without_a_locator() -> None:
    blueprint = validate_path(MULTI_TENANT).blueprint
    assert blueprint is not None
    with pytest.raises(TypeError):
        Context(blueprint, load_catalog())  # type: ignore[call-arg]


def test_compile_points_what_it_reports_into_the_text() -> None:
    """Compile takes validation's Context, so even a compile-only diagnostic gets validation's positions."""
    from gpustack.compile import compile_blueprint

    result = validate_path(CASES / "invalid" / "template-renders-badly.yaml")
    assert result.context is not None
    plan = compile_blueprint(result.context)
    assert plan.diagnostics and all(d.span is not None and d.span.file == result.file for d in plan.diagnostics)


# --- a Blueprint handed to Pulumi goes through the gate ----------------------------------------------------------


def built(path: Path) -> object:
    """The blueprint a Pulumi program builds in code from the same data, with no file behind it."""
    return build_blueprint(yaml.safe_load(path.read_text(encoding="utf-8")), "in-code")


def test_a_blueprint_object_with_an_error_is_refused_as_its_file_is() -> None:
    invalid = CASES / "invalid" / "seed-a100-4x3g20gb.yaml"
    with pytest.raises(InvalidBlueprint) as from_file:
        load_blueprint(invalid)
    with pytest.raises(InvalidBlueprint) as from_code:
        load_blueprint(built(invalid))  # type: ignore[arg-type]
    assert [d.code for d in from_code.value.diagnostics] == [d.code for d in from_file.value.diagnostics] == ["GS303"]
    [diagnostic] = from_code.value.diagnostics
    assert diagnostic.span is None and diagnostic.path  # no text to point into: its JSON path says where
    text = str(from_code.value)
    assert "error[GS303]" in text and f"--> {diagnostic.json_path}" in text
    assert text.endswith("\n\nin-code: 1 error(s); nothing applied")


def test_a_blueprint_object_keeps_its_warnings() -> None:
    loaded = load_blueprint(built(CASES / "invalid" / "time-slicing-oversubscribed.yaml"))  # type: ignore[arg-type]
    assert [d.code for d in loaded.diagnostics] == [MEMORY_OVERSUBSCRIBED]
    assert loaded.context.locate is unplaced


def test_pulumi_s_failure_text_is_the_shared_reporter_s() -> None:
    """The same diagnostics text every command prints, and the same closing line as `gpustack compile`'s."""
    invalid = CASES / "invalid" / "seed-a100-4x3g20gb.yaml"
    result = validate_path(invalid)
    runner = CliRunner()
    cli = runner.invoke(group, ["compile", str(invalid), "-d", "out"], catch_exceptions=False)
    closing = cli.output.rstrip("\n").rsplit("\n", 1)[-1]
    assert closing == f"{invalid}: 1 error(s); nothing written"
    text = failure_text(str(invalid), result.diagnostics)
    assert text == f"{format_text(result.diagnostics)}\n\n{invalid}: 1 error(s); nothing applied"
