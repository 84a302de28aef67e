"""Options every command shares, so they read the same everywhere."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import click

F = TypeVar("F", bound=Callable[..., object])

OUTPUT_FORMATS = ("text", "json")


def output_option(choices: tuple[str, ...] = OUTPUT_FORMATS) -> Callable[[F], F]:
    return click.option(
        "--output",
        "-O",
        "output",
        type=click.Choice(choices),
        default="text",
        show_default=True,
        help="How to print results.",
    )
