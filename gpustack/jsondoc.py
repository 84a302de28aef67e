"""The envelope every `--output json` document wears, so tools can tell what they were given.

One key style across commands: camelCase, the Kubernetes convention, with `apiVersion` and `kind`
first (docs/json-output.md lists each kind). A key's spelling changes only with a new apiVersion.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpustack.escapes import json_safe
from gpustack.json_text import pretty_json

API_VERSION = "gpustack.io/v1alpha1"


def json_document(kind: str, data: Mapping[str, Any]) -> dict[str, Any]:
    return {"apiVersion": API_VERSION, "kind": kind, **data}


def dump_document(kind: str, data: Mapping[str, Any]) -> str:
    """The document as pretty JSON text, keys in the order given (same input, same bytes); readable UTF-8, but no
    control, bidi or line-separator character raw (`escapes.json_safe`: the same data, safe on a terminal)."""
    return json_safe(pretty_json(json_document(kind, data))) + "\n"
