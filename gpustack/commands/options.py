"""Options every command shares, so they read the same everywhere.

`--output/-o FORMAT` is how a command prints; `--out-dir/-d DIR` (compile only) is where it writes.
Until the release after 0.1 the old spellings still work with a warning on stderr: `-O FORMAT` on every command,
on compile `-o DIR` / `--out DIR`, and on import `-o FILE` (now `--out-file/-f FILE`). `-o` stays unambiguous
meanwhile: a format name is a format, anything else is the deprecated directory or file.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])

OUTPUT_FORMATS = ("text", "json")
# Every format any command prints: none of these may name an output directory (`compile -o json`).
FORMAT_NAMES = ("text", "json", "sarif", "markdown", "yaml")


def deprecated(old: str, new: str) -> None:
    click.echo(f"gpustack: warning: {old} is deprecated and goes in the next release; use {new}", err=True)


class _FormatOrLegacyDir(click.ParamType):
    """A format name, or (deprecated) the output directory (compile) or file (import) `-o` used to take."""

    name = "format"

    def __init__(self, choices: tuple[str, ...], legacy_dir: bool) -> None:
        self.choices = choices
        self.legacy_dir = legacy_dir

    def get_metavar(self, param: click.Parameter, ctx: click.Context | None = None) -> str:
        return "[" + "|".join(self.choices) + "]"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        text = str(value)
        if text in self.choices:
            return text
        if self.legacy_dir and text not in FORMAT_NAMES:
            return _LEGACY_DIR_PREFIX + text
        known = ", ".join(self.choices)
        self.fail(f"'{text}' is not an output format of this command; choose one of: {known}", param, ctx)


_LEGACY_DIR_PREFIX = "\0dir:"  # never a format name, never typed by a user (NUL cannot be in argv)


def output_option(
    choices: tuple[str, ...] = OUTPUT_FORMATS, *, legacy_dir: bool = False, legacy_file: bool = False
) -> Callable[[F], F]:
    """`--output/-o FORMAT` (default: the first choice) plus the deprecated `-O FORMAT`; the command receives `output`.

    With `legacy_dir` (compile) a `-o` value that is no format name is the old output directory: the
    command receives it as `legacy_out_dir` after a deprecation warning. With `legacy_file` (import) it is the old
    output file, received as `legacy_out_file`.
    """
    legacy_key = "legacy_out_file" if legacy_file else "legacy_out_dir"
    legacy_what, legacy_new = ("file", "--out-file/-f") if legacy_file else ("directory", "--out-dir/-d")

    def decorate(function: F) -> F:
        @functools.wraps(function)
        def wrapper(*args: Any, output: str | None, legacy_output: str | None, **kwargs: Any) -> Any:
            if legacy_output is not None:
                deprecated(f"-O {legacy_output}", f"--output/-o {legacy_output}")
                output = output if output is not None else legacy_output
            if output is not None and output.startswith(_LEGACY_DIR_PREFIX):
                path = output.removeprefix(_LEGACY_DIR_PREFIX)
                deprecated(f"-o {path} for the output {legacy_what}", f"{legacy_new} {path}")
                kwargs[legacy_key] = path
                output = legacy_output
            elif legacy_dir or legacy_file:
                kwargs[legacy_key] = None
            return function(*args, output=output or choices[0], **kwargs)

        wrapper = click.option(
            "-O",
            "legacy_output",
            type=click.Choice(choices),
            hidden=True,
            help="Deprecated spelling of --output.",
        )(wrapper)
        wrapper = click.option(
            "--output",
            "-o",
            "output",
            type=_FormatOrLegacyDir(choices, True) if legacy_dir or legacy_file else click.Choice(choices),
            default=None,
            help=f"How to print results (default: {choices[0]}).",
        )(wrapper)
        return wrapper  # type: ignore[return-value]

    return decorate


def refuse_format_named_dir(folder: str) -> None:
    """`compile -d json` is nearly always `--output json` typed wrong: refuse it, and say how to mean it."""
    name = folder.rstrip("/" + os.sep)
    if name in FORMAT_NAMES:
        raise click.BadParameter(
            f"'{folder}' is named like an output format; to print {name}, use --output {name}; "
            f"to write to a folder named {name}, give ./{name}",
            param_hint="--out-dir",
        )
