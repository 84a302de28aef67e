"""Jinja2 for gpustack's own text artefacts (reports, READMEs, the capacity chart).

One configuration for all of them: strict about undefined names, no HTML escaping except in SVG,
block tags that do not leave blank lines behind.
"""

from __future__ import annotations

from functools import cache

import jinja2


def package_environment() -> jinja2.Environment:
    """A fresh environment over `gpustack/templates`; callers may add their own filters to it."""
    return jinja2.Environment(
        loader=jinja2.PackageLoader("gpustack", "templates"),
        undefined=jinja2.StrictUndefined,
        autoescape=jinja2.select_autoescape(["svg.j2"], default_for_string=False),
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )


@cache
def _shared_environment() -> jinja2.Environment:
    return package_environment()


def package_template(name: str) -> jinja2.Template:
    """A template from `gpustack/templates` in the shared environment (which nobody adds filters to)."""
    return _shared_environment().get_template(name)
