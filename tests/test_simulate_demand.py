"""make_pod (simulate/demand.py) makes the Pod that Pod(...) makes, as frozen, without the dataclass's __init__."""

from __future__ import annotations

import dataclasses

import pytest

from gpustack.simulate import demand
from gpustack.simulate.demand import Pod, Source, make_pod
from gpustack.simulate.pods import PodShape

SHAPE = PodShape(requests=(("nvidia.com/gpu", 1),))
ARGS = ("w-3", "team-a", SHAPE, 100, True, Source(None, raw="w"), "team-a/job", 7)


def test_make_pod_is_pod() -> None:
    made, reference = make_pod(*ARGS), Pod(*ARGS)
    assert type(made) is Pod
    assert vars(made) == vars(reference)
    assert [getattr(made, f.name) for f in dataclasses.fields(Pod)] == list(ARGS)
    assert made.workload == reference.workload and made.volcano == reference.volcano


def test_make_pod_stays_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        make_pod(*ARGS).priority = 0  # type: ignore[misc]


def test_the_shortcut_is_taken_and_has_a_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    """The guard holds for today's Pod (else the shortcut would never run); without it, Pod(...) is called."""
    assert demand._PLAIN_POD
    monkeypatch.setattr(demand, "_PLAIN_POD", False)
    calls: list[tuple[object, ...]] = []
    original = Pod.__init__

    def counted(self: Pod, *args: object) -> None:
        calls.append(args)
        original(self, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(Pod, "__init__", counted)
    assert vars(make_pod(*ARGS)) == vars(Pod(*ARGS))
    assert len(calls) == 2
