"""A fleet file as typed, frozen records, with the schema's defaults applied."""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from gpustack.diagnostic import JsonPath

DELIVERY_FOLDER = "delivery"  # beside the clusters' folders: no cluster may take its name
DEFAULT_NAMESPACE = {"argocd": "argocd", "flux": "flux-system"}
DEFAULT_REF = {"git": "main", "oci": "latest"}
LABEL_KEYS = ("region", "environment", "cloud")


@dataclass(frozen=True)
class Source:
    kind: str  # git or oci
    url: str
    ref: str
    path: str  # the compiled fleet folder inside the repository or artifact
    secret_ref: str | None


@dataclass(frozen=True)
class Delivery:
    engine: str  # argocd or flux
    namespace: str
    project: str
    interval: str
    auto_sync: bool  # Argo CD: sync (and prune) without a person pressing Sync
    source: Source


@dataclass(frozen=True)
class FleetCluster:
    name: str
    labels: tuple[tuple[str, str], ...]  # in LABEL_KEYS order
    blueprint: str | None
    overlay: str | dict[str, Any] | None
    path: JsonPath  # ("spec", "clusters", index)


@dataclass(frozen=True)
class Fleet:
    name: str
    file: str  # as the user gave it
    base: str | None
    delivery: Delivery
    clusters: tuple[FleetCluster, ...]

    @property
    def folder(self) -> Path:
        """The fleet file's folder: every path the fleet names is relative to it and stays inside it."""
        return Path(self.file).parent

    def cluster(self, name: str) -> FleetCluster | None:
        return next((cluster for cluster in self.clusters if cluster.name == name), None)


@functools.cache
def _definitions() -> dict[str, Any]:
    text = resources.files("gpustack").joinpath("data", "fleet.schema.json").read_text(encoding="utf-8")
    definitions: dict[str, Any] = json.loads(text)["$defs"]
    return definitions


def _default(definition: str, *names: str) -> Any:
    """The fleet schema's default for a field (`_default("delivery", "source", "kind")`): defaults are written once,
    in the schema. What depends on the engine or the source's kind (namespace, ref) has no one default there."""
    node = _definitions()[definition]
    for name in names:
        node = node["properties"][name]
    return node["default"]


def build_fleet(data: dict[str, Any], file: str) -> Fleet:
    """The fleet of a document whose shape the fleet schema accepted."""
    spec = data["spec"]
    delivery = spec["delivery"]
    source = delivery["source"]
    kind = source.get("kind", _default("delivery", "source", "kind"))
    clusters = tuple(
        FleetCluster(
            name=entry["name"],
            labels=tuple((key, entry["labels"][key]) for key in LABEL_KEYS if key in entry.get("labels", {})),
            blueprint=entry.get("blueprint"),
            overlay=entry.get("overlay"),
            path=("spec", "clusters", index),
        )
        for index, entry in enumerate(spec["clusters"])
    )
    return Fleet(
        name=data["metadata"]["name"],
        file=file,
        base=spec.get("base"),
        delivery=Delivery(
            engine=delivery["engine"],
            namespace=delivery.get("namespace", DEFAULT_NAMESPACE[delivery["engine"]]),
            project=delivery.get("project", _default("delivery", "project")),
            interval=delivery.get("interval", _default("delivery", "interval")),
            auto_sync=delivery.get("autoSync", _default("delivery", "autoSync")),
            source=Source(
                kind=kind,
                url=source["url"],
                ref=source.get("ref", DEFAULT_REF[kind]),
                path=source.get("path", "."),
                secret_ref=source.get("secretRef"),
            ),
        ),
        clusters=clusters,
    )
