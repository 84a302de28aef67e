"""Pulumi stays optional: the core installs without it, and validate/compile never import it.

Each check runs in a fresh interpreter, because this test session itself has pulumi loaded.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

from conftest import BLUEPRINTS, REPO

from gpustack.codes import TEMPLATE_ERROR

PULUMI_PACKAGES = ("pulumi", "pulumi_kubernetes")
DEPLOY = "gpustack.deploy"  # the one module allowed to import pulumi

# A meta-path finder that makes pulumi unimportable, as in an install without the `pulumi` extra.
BLOCKER = textwrap.dedent(
    """
    import sys

    class NoPulumi:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in {blocked!r}:
                raise ModuleNotFoundError(f"No module named {{name!r}} (blocked)", name=name)
            return None

    sys.meta_path.insert(0, NoPulumi())
    """
).format(blocked=set(PULUMI_PACKAGES))

# Run `gpustack validate` and `gpustack compile` in-process, as the console script does.
RUN_CLI = textwrap.dedent(
    """
    import contextlib, io, json, sys
    from gpustack.cli import group

    def run(*args):
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            try:
                group.main(args=list(args), prog_name="gpustack", standalone_mode=False)
            except SystemExit as exit:
                return exit.code or 0
        return 0

    codes = [run("validate", sys.argv[1]), run("compile", sys.argv[1], "-d", sys.argv[2])]
    loaded = sorted(m for m in sys.modules if m.split(".")[0] in {blocked!r})
    print(json.dumps({{"codes": codes, "pulumi_modules": loaded}}))
    """
).format(blocked=set(PULUMI_PACKAGES))


def python(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code, *args], cwd=REPO, capture_output=True, text=True, timeout=120, check=False
    )


def core_modules() -> list[str]:
    """Every gpustack module but the Pulumi one and `__main__` (which runs the CLI when imported)."""
    names = []
    for path in sorted((REPO / "gpustack").rglob("*.py")):
        parts = path.relative_to(REPO).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        if name not in (DEPLOY, "gpustack.__main__"):
            names.append(name)
    return names


def test_validate_and_compile_never_import_pulumi(tmp_path: Path) -> None:
    result = python(RUN_CLI, str(BLUEPRINTS / "seed-article.yaml"), str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["codes"] == [0, 0]  # both commands really ran, and succeeded
    assert (tmp_path / "out" / "kustomization.yaml").is_file()
    assert report["pulumi_modules"] == []


def test_validate_and_compile_work_without_pulumi_installed(tmp_path: Path) -> None:
    result = python(BLOCKER + RUN_CLI, str(BLUEPRINTS / "quickstart.yaml"), str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["codes"] == [0, 0]


def test_every_core_module_imports_without_pulumi() -> None:
    modules = core_modules()
    assert "gpustack.cli" in modules and "gpustack.compile" in modules and DEPLOY not in modules
    code = BLOCKER + textwrap.dedent(
        f"""
        import importlib
        for name in {modules!r}:
            importlib.import_module(name)
        try:
            importlib.import_module({DEPLOY!r})
        except ModuleNotFoundError as error:
            print("deploy needs", error.name)
        """
    )
    result = python(code)
    assert result.returncode == 0, result.stderr
    # The blocker works: the one module that needs pulumi fails to import under it.
    assert result.stdout.strip() == "deploy needs pulumi"


def test_the_core_does_not_depend_on_pulumi() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert not [d for d in project["dependencies"] if d.lower().startswith(("pulumi", "pulumi-kubernetes"))]
    extra = {d.split(">")[0].split("=")[0].strip().lower() for d in project["optional-dependencies"]["pulumi"]}
    assert extra == {"pulumi", "pulumi-kubernetes"}


# `gpustack validate FILE`, in-process as the console script runs it: which gpustack modules did it load?
RUN_VALIDATE = textwrap.dedent(
    """
    import contextlib, io, json, sys
    from gpustack.cli import group

    with contextlib.redirect_stdout(io.StringIO()) as out:
        try:
            group.main(args=["validate", *sys.argv[1:]], prog_name="gpustack", standalone_mode=False)
            code = 0
        except SystemExit as exit:
            code = exit.code or 0
    loaded = sorted(m for m in sys.modules if m.startswith("gpustack."))
    print(json.dumps({"code": code, "out": out.getvalue(), "modules": loaded}))
    """
)


def test_validate_never_imports_the_compiler() -> None:
    # multi-tenant.yaml has a workload template, which validate renders as compile would (GS606).
    blueprint = BLUEPRINTS / "multi-tenant.yaml"
    assert "template:" in blueprint.read_text(encoding="utf-8")
    result = python(RUN_VALIDATE, str(blueprint))
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["code"] == 0, report["out"]
    assert "gpustack.checks.templates" in report["modules"]  # the template check really ran
    assert "gpustack.workload_templates" in report["modules"]
    assert [m for m in report["modules"] if m == "gpustack.compile" or m.startswith("gpustack.compile.")] == []


def test_validate_reports_a_template_error_without_the_compiler() -> None:
    result = python(RUN_VALIDATE, str(REPO / "tests" / "cases" / "invalid" / "template-renders-badly.yaml"))
    report = json.loads(result.stdout)
    assert report["code"] == 1 and TEMPLATE_ERROR in report["out"]
    assert not any(m.startswith("gpustack.compile") for m in report["modules"])


# Which modules of jsonschema's family a run of `gpustack ARGS` loaded, in-process as the console script runs it.
RUN_ANY = textwrap.dedent(
    """
    import contextlib, io, json, sys
    from gpustack.cli import group

    with contextlib.redirect_stdout(io.StringIO()) as out:
        try:
            group.main(args=sys.argv[1:], prog_name="gpustack", standalone_mode=False)
            code = 0
        except SystemExit as exit:
            code = exit.code or 0
    loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("jsonschema", "referencing"))
    print(json.dumps({"code": code, "out": out.getvalue(), "modules": loaded}))
    """
)


def test_a_valid_blueprint_is_validated_compiled_and_simulated_without_jsonschema(tmp_path: Path) -> None:
    """The compiled schema (schema_predicate) vouches for a valid blueprint alone: jsonschema, about 70 ms of every
    command's start-up, is imported only to find and word what is wrong."""
    blueprint = str(BLUEPRINTS / "multi-tenant.yaml")
    for args in (["validate", blueprint], ["compile", blueprint, "-d", str(tmp_path / "out")], ["simulate", blueprint]):
        report = json.loads(python(RUN_ANY, *args).stdout)
        assert report["code"] == 0, report["out"]
        assert report["modules"] == [], args
    wrong = tmp_path / "wrong.yaml"
    wrong.write_text(Path(blueprint).read_text(encoding="utf-8").replace("nodePools:", "nodePoolz:", 1))
    report = json.loads(python(RUN_ANY, "validate", str(wrong)).stdout)
    assert report["code"] == 1 and "GS101" in report["out"]  # jsonschema found and worded the unknown field
    assert "jsonschema" in report["modules"]
