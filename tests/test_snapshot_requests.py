"""Pods whose resources are written alike are read once (cluster/pod_requests.py), and that changes nothing a user
sees: each pod's requests are what reading it alone gives, and every malformed pod still gets its own diagnostic."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gpustack.cluster import pod_requests
from gpustack.cluster.snapshot import parse_snapshot
from gpustack.diagnostic import DiagnosticError


def _pod(name: str, resources: Any, init: Any = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"nodeName": "n1", "containers": [{"name": "c", "resources": resources}]}
    if init is not None:
        spec["initContainers"] = [{"name": "i", "resources": init}]
    return {"kind": "Pod", "metadata": {"name": name, "namespace": "a"}, "spec": spec, "status": {"phase": "Running"}}


def _read(pods: list[dict[str, Any]]) -> list[tuple[tuple[str, str], ...]]:
    text = json.dumps({"apiVersion": "v1", "kind": "List", "items": pods})
    return [pod.requests for pod in parse_snapshot(text, "cluster.json").pods]


AGENT = {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"nvidia.com/gpu": "1"}}


def test_pods_written_alike_read_alike_and_once(monkeypatch: pytest.MonkeyPatch) -> None:
    reads: list[object] = []
    original = pod_requests._read_requests

    def counted(*args: Any) -> Any:
        reads.append(args)
        return original(*args)

    monkeypatch.setattr(pod_requests, "_read_requests", counted)
    found = _read([_pod(f"p{i}", AGENT) for i in range(5)] + [_pod("q", AGENT, {"requests": {"cpu": "2"}})])
    assert found[:5] == [(("cpu", "100m"), ("memory", "134217728"), ("nvidia.com/gpu", "1"))] * 5
    assert found[5] == (("cpu", "2"), ("memory", "134217728"), ("nvidia.com/gpu", "1"))  # an init container's max
    assert len(reads) == 2  # the five agents once, the pod with an init container once


def test_every_malformed_pod_keeps_its_diagnostic() -> None:
    """A bad quantity is never kept, so the second pod written alike is read again and reported at its own path."""
    bad = {"requests": {"cpu": "lots"}}
    with pytest.raises(DiagnosticError) as raised:
        _read([_pod("p0", bad), _pod("p1", bad)])
    paths = [d.path for d in raised.value.diagnostics]
    assert [p[:2] for p in paths] == [("items", 0), ("items", 1)]


@pytest.mark.parametrize(
    ("resources", "expected"),
    [
        ({"requests": {"cpu": 1}}, (("cpu", "1"),)),  # an int is read as its string, with no key
        ({"requests": {"cpu": 1.5}}, (("cpu", "1500m"),)),
        ("none", ()),  # resources that are not a mapping are read as none, with no key
    ],
)
def test_what_gets_no_key_is_read_as_before(resources: Any, expected: tuple[tuple[str, str], ...]) -> None:
    assert pod_requests.request_key({"containers": [{"resources": resources}]}) is None
    assert _read([_pod("p", resources)]) == [expected]


def test_true_and_1_are_not_one_key() -> None:
    """In Python True == 1: a key holding either would let a boolean quantity take a number's reading unreported."""
    assert pod_requests.request_key({"containers": [{"resources": {"requests": {"cpu": True}}}]}) is None
    with pytest.raises(DiagnosticError):
        _read([_pod("p0", {"requests": {"cpu": "1"}}), _pod("p1", {"requests": {"cpu": True}})])
