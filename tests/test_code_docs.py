"""docs/codes/: a current page per diagnostic code, and every diagnostic points at its page."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from click.testing import CliRunner
from conftest import CASES, REPO

from gpustack.cli import group
from gpustack.codes import CODES, EXPLANATIONS


def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("code_docs", REPO / "scripts" / "code_docs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["code_docs"] = module
    spec.loader.exec_module(module)
    return module


def test_the_pages_are_current() -> None:
    pages = generator().render_pages()
    on_disk = {p.relative_to(REPO).as_posix() for p in (REPO / "docs" / "codes").glob("*.md")}
    assert on_disk == set(pages), "run: python scripts/code_docs.py"
    stale = [path for path, text in pages.items() if (REPO / path).read_text(encoding="utf-8") != text]
    assert stale == [], "run: python scripts/code_docs.py"


def test_every_code_has_a_page_with_trigger_example_and_fix() -> None:
    assert set(EXPLANATIONS) == set(CODES)
    for code, summary in CODES.items():
        page = (REPO / "docs" / "codes" / f"{code}.md").read_text(encoding="utf-8")
        trigger, fix = EXPLANATIONS[code]
        assert page.startswith(f"# {code}: {summary}\n")
        assert trigger in page and fix in page
        assert "## Example\n\n" in page and "```text\n$ gpustack " in page, f"{code}: no example"
        assert f"error[{code}]" in page or f"warning[{code}]" in page, f"{code}: the example does not show it"


def test_text_output_links_every_diagnostic_to_its_page(tmp_path: Path) -> None:
    result = CliRunner().invoke(group, ["validate", str(CASES / "invalid" / "quota-problems.yaml")])
    blocks = result.stdout.split("\n\n")[:-1]
    assert len(blocks) >= 4
    for block in blocks:
        code = block.split("[", 1)[1][:5]
        assert block.rstrip().endswith(f"= see: docs/codes/{code}.md")
        assert (REPO / "docs" / "codes" / f"{code}.md").is_file()
