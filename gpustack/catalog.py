"""The GPU catalog: typed access to gpustack/data/gpus.yaml (models, GFD labels, MIG geometry).

The facts live in the YAML, with their sources; this module only loads them and answers
"which model is this name?". Names are matched the way real nodes spell them, never by memory.
"""

from __future__ import annotations

import difflib
import functools
import itertools
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import yaml

try:
    _Loader: type[yaml.CSafeLoader] | type[yaml.SafeLoader] = yaml.CSafeLoader
except AttributeError:  # PyYAML built without libyaml
    _Loader = yaml.SafeLoader

NVIDIA_PREFIX = "NVIDIA-"
# GFD appends these to gpu.product: -MIG-<profile> under MIG single, -SHARED when replicas > 1.
_SHARED_SUFFIX = re.compile(r"-SHARED$", re.IGNORECASE)
_MIG_SUFFIX = re.compile(r"-MIG-[A-Za-z0-9.+-]+$", re.IGNORECASE)
# vGPU guests report their vGPU type, e.g. NVIDIA-A10-24Q: frame buffer in GB plus a class letter.
_VGPU_SUFFIX = re.compile(r"-\d+[QACB]$")
# The parts of a catalog key after the product name: form factor (SXM4, PCIE, NVL, Server...) or memory (80GB).
_VARIANT_PART = re.compile(r"^(SXM\d*|PCIE|NVL|\d+GB|Server|Workstation)$")


class FrozenCounts(Mapping[str, int]):
    """A read-only, hashable name -> count mapping (engine counts), so dataclasses holding it stay hashable."""

    __slots__ = ("_items",)

    def __init__(self, items: Mapping[str, int]) -> None:
        self._items = dict(items)

    def __getitem__(self, key: str) -> int:
        return self._items[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __hash__(self) -> int:
        return hash(frozenset(self._items.items()))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Mapping) and dict(self._items) == dict(other)

    def __repr__(self) -> str:
        return f"FrozenCounts({self._items!r})"


@dataclass(frozen=True)
class MigProfile:
    name: str
    id: int
    memory_gb: int
    compute: int
    memory_slices: int
    max_count: int
    placements: tuple[int, ...]
    size: int
    exclusive_group: str | None = None
    engines: Mapping[str, int] | None = None
    min_driver: str | None = None

    def __post_init__(self) -> None:
        # Stay hashable whatever a caller passes: results are cached per geometry.
        object.__setattr__(self, "placements", tuple(self.placements))
        if self.engines is not None and not isinstance(self.engines, FrozenCounts):
            object.__setattr__(self, "engines", FrozenCounts(self.engines))


@dataclass(frozen=True)
class MigGeometry:
    name: str
    compute_slices: int
    memory_slices: int
    placement_units: int
    max_instances: int
    profiles: tuple[MigProfile, ...]
    engine_totals: Mapping[str, int] | None = None
    memory_gib: int = 0
    min_driver: str | None = None
    pci_device_ids: tuple[str, ...] = ()
    legacy: bool = False
    sources: tuple[str, ...] = ()
    _by_name: Mapping[str, MigProfile] = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "profiles", tuple(self.profiles))
        if self.engine_totals is not None and not isinstance(self.engine_totals, FrozenCounts):
            object.__setattr__(self, "engine_totals", FrozenCounts(self.engine_totals))
        # A name -> profile index built once: check_layout runs per pool and must stay cheap.
        object.__setattr__(self, "_by_name", {p.name: p for p in self.profiles})

    def profile(self, name: str) -> MigProfile | None:
        return self._by_name.get(name)


@dataclass(frozen=True)
class GpuModel:
    key: str
    display_name: str
    product_labels: tuple[str, ...]
    memory_gib: int
    memory_mib: tuple[int, ...]
    architecture: str
    family: str
    compute_capability: str
    mig: MigGeometry | None
    nvml_names: tuple[str, ...] = ()
    vgpu_labels: tuple[str, ...] = ()
    gke_accelerators: tuple[str, ...] = ()
    observed: bool = False
    sources: tuple[str, ...] = ()

    @property
    def product_label(self) -> str:
        """The `nvidia.com/gpu.product` value current drivers write."""
        return self.product_labels[0]

    @property
    def gke_accelerator(self) -> str | None:
        return self.gke_accelerators[0] if self.gke_accelerators else None

    @property
    def mps_max_clients(self) -> int:
        # Not a hardware fact but the device plugin's own rule (cmd/mps-control-daemon/mps/device.go, assertReplicas:
        # 48 clients if `isAtLeastVolta`, which compares the compute capability with 7.5, else 16; research
        # nvidia-device-plugin.md), so it stays beside the code that mirrors the plugin. NVIDIA's MPS guide puts
        # the hardware's own limit at 48 from Volta (7.0) on: the plugin is the stricter of the two on a V100.
        return 48 if _version(self.compute_capability) >= (7, 5) else 16


@dataclass(frozen=True)
class Catalog:
    models: Mapping[str, GpuModel]
    geometries: Mapping[str, MigGeometry] = field(default_factory=dict)
    _exact: Mapping[str, GpuModel] = field(init=False, repr=False, compare=False, hash=False)
    _folded: Mapping[str, GpuModel] = field(init=False, repr=False, compare=False, hash=False)
    _vgpu_bases: Mapping[str, GpuModel] = field(init=False, repr=False, compare=False, hash=False)
    _cloud: Mapping[str, GpuModel] = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        exact: dict[str, GpuModel] = {}
        for model in self.models.values():
            for name in (model.key, *model.product_labels, *model.vgpu_labels):
                if exact.setdefault(name, model) is not model:
                    raise ValueError(f"catalog: {name!r} names both {exact[name].key} and {model.key}")
        folded = {name.casefold(): model for name, model in exact.items()}
        if len(folded) != len(exact):
            raise ValueError("catalog: two names differ only in case")
        vgpu_bases = {_VGPU_SUFFIX.sub("", v).casefold(): m for m in self.models.values() for v in m.vgpu_labels}
        object.__setattr__(self, "_exact", exact)
        object.__setattr__(self, "_folded", folded)
        object.__setattr__(self, "_vgpu_bases", vgpu_bases)
        # Cloud accelerator names (GKE's cloud.google.com/gke-accelerator values) are what people type. Matched
        # exactly, as GKE spells them: NVIDIA-H200-141GB is a fabricated product label, not nvidia-h200-141gb.
        cloud: dict[str, GpuModel] = {}
        for model in self.models.values():
            for name in model.gke_accelerators:
                other = cloud.setdefault(name, model)
                if other is not model or folded.get(name.casefold(), model) is not model:
                    raise ValueError(f"catalog: cloud name {name!r} names two models")
        object.__setattr__(self, "_cloud", cloud)

    def resolve(self, name: str) -> GpuModel | None:
        """The model a catalog key, a `nvidia.com/gpu.product` value (as nodes carry it) or a cloud
        accelerator name (GKE's `nvidia-tesla-t4`) names, or None."""
        cloud = self._cloud.get(name.strip())
        if cloud is not None:
            return cloud
        for candidate in _label_forms(name.strip()):
            model = self._lookup(candidate)
            if model is not None:
                return model
        for candidate in _label_forms(name.strip()):
            model = self._lookup_vgpu(candidate)
            if model is not None:
                return model
        return None

    def mig_capable(self) -> list[str]:
        """The GPUs that support MIG, by their product names (keys without form factor or memory: A100, H100),
        in catalog order: what a hint names when MIG is asked of another GPU."""
        names = (_product_name(model.key) for model in self.models.values() if model.mig is not None)
        return list(dict.fromkeys(names))

    def suggest(self, name: str, limit: int = 3) -> list[str]:
        """Did-you-mean: every model whose key starts with the name's words (`A100`: all four A100s),
        else the closest key or product label of up to `limit` models, best first."""
        query = _words(_strip_gfd_suffixes(name.strip()))
        if not query:
            return []
        family = sorted(m.key for m in self.models.values() if _words(m.key)[: len(query)] == query)
        if family:
            return family
        best: dict[str, tuple[float, str]] = {}
        # Only names worth writing down: keys and the labels current drivers write, not legacy or vGPU ones.
        names = ((name, model) for model in self.models.values() for name in (model.key, model.product_label))
        for candidate, model in names:
            score = _similarity(query, _words(candidate))
            if score >= 0.5 and score > best.get(model.key, (0.0, ""))[0]:
                best[model.key] = (score, candidate)
        ranked = sorted(best.values(), key=lambda item: (-item[0], item[1]))
        return [candidate for _, candidate in ranked[:limit]]

    def search(self, text: str) -> list[GpuModel]:
        """Models whose key, product labels or cloud accelerator names contain `text`, ignoring case."""
        needle = text.strip().casefold()
        return sorted(
            (
                m
                for m in self.models.values()
                if any(needle in name.casefold() for name in (m.key, *m.product_labels, *m.gke_accelerators))
            ),
            key=lambda m: m.key,
        )

    def _lookup(self, name: str) -> GpuModel | None:
        return self._exact.get(name) or self._folded.get(name.casefold())

    def _lookup_vgpu(self, name: str) -> GpuModel | None:
        # Only when what remains of a vGPU type names a GPU: NVIDIA-A40-12Q -> NVIDIA-A40.
        if not _VGPU_SUFFIX.search(name):
            return None
        base = _VGPU_SUFFIX.sub("", name)
        return self._vgpu_bases.get(base.casefold()) or self._lookup(base)


def _label_forms(name: str) -> Iterator[str]:
    """The spellings to try for a name, most literal first."""
    yield name
    base = _strip_gfd_suffixes(name)
    if base != name:
        yield base
    # Drivers before R470 wrote data-center names without "NVIDIA " (A100-SXM4-40GB); Tesla names never had it.
    if not base.upper().startswith((NVIDIA_PREFIX, "TESLA-")):
        yield NVIDIA_PREFIX + base


def _strip_gfd_suffixes(name: str) -> str:
    return _MIG_SUFFIX.sub("", _SHARED_SUFFIX.sub("", name))


def _words(name: str) -> tuple[str, ...]:
    """A name as lower-case words without the vendor prefix: NVIDIA-H100-80GB-HBM3 -> (h100, 80gb, hbm3)."""
    words = [w for w in re.split(r"[-_ ]+", name.casefold()) if w]
    while words[:1] in (["nvidia"], ["tesla"]):
        words = words[1:]
    return tuple(words)


def _similarity(a: tuple[str, ...], b: tuple[str, ...]) -> float:
    # Spelling, shared words and the same chip (the first word: h100, a100) count equally, so
    # NVIDIA-H100-SXM5-80GB is nearer the H100s than the similarly spelled A100-SXM4-80GB.
    spelling = difflib.SequenceMatcher(None, "-".join(a), "-".join(b)).ratio()
    union = set(a) | set(b)
    shared = len(set(a) & set(b)) / len(union) if union else 0.0
    chip = 1.0 if a[:1] == b[:1] else 0.0
    return (spelling + shared + chip) / 3


def _product_name(key: str) -> str:
    """`A100-SXM4-80GB` -> `A100`, `RTX-PRO-6000-Blackwell-Server` -> `RTX-PRO-6000-Blackwell`."""
    parts = key.split("-")
    kept = list(itertools.takewhile(lambda part: not _VARIANT_PART.match(part), parts))
    return "-".join(kept or parts[:1])


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


@functools.cache
def load_catalog() -> Catalog:
    text = resources.files("gpustack").joinpath("data/gpus.yaml").read_text(encoding="utf-8")
    return catalog_from(yaml.load(text, Loader=_Loader))


def catalog_from(data: Mapping[str, Any]) -> Catalog:
    """Build a Catalog from the parsed gpus.yaml document."""
    raw_geometries: Mapping[str, Any] = data["mig_geometries"]
    geometries = {name: _geometry_from(name, raw, raw_geometries) for name, raw in raw_geometries.items()}
    models = {key: _model_from(key, raw, geometries) for key, raw in data["models"].items()}
    return Catalog(models=models, geometries=geometries)


def _geometry_from(name: str, raw: Mapping[str, Any], everything: Mapping[str, Any]) -> MigGeometry:
    if "same_as" in raw:
        # An alias entry (H800-80GB) shares its twin's table but keeps its own device IDs and sources.
        twin = _geometry_from(raw["same_as"], everything[raw["same_as"]], everything)
        return MigGeometry(
            name=name,
            compute_slices=twin.compute_slices,
            memory_slices=twin.memory_slices,
            placement_units=twin.placement_units,
            max_instances=twin.max_instances,
            profiles=twin.profiles,
            engine_totals=twin.engine_totals,
            memory_gib=twin.memory_gib,
            min_driver=twin.min_driver,
            pci_device_ids=tuple(raw.get("pci_device_ids", ())),
            legacy=twin.legacy,
            sources=tuple(raw["sources"]),
        )
    totals = raw.get("engine_totals")
    return MigGeometry(
        name=name,
        compute_slices=raw["compute_slices"],
        memory_slices=raw["memory_slices"],
        placement_units=raw["placement_units"],
        max_instances=raw["max_instances"],
        profiles=tuple(_profile_from(p) for p in raw["profiles"]),
        engine_totals=FrozenCounts(totals) if totals else None,
        memory_gib=raw["memory_gib"],
        min_driver=raw.get("min_driver"),
        pci_device_ids=tuple(raw.get("pci_device_ids", ())),
        legacy=bool(raw.get("legacy", False)),
        sources=tuple(raw["sources"]),
    )


def _profile_from(raw: Mapping[str, Any]) -> MigProfile:
    engines = raw.get("engines")
    return MigProfile(
        name=raw["name"],
        id=raw["id"],
        memory_gb=raw["memory_gb"],
        compute=raw["compute"],
        memory_slices=raw["memory_slices"],
        max_count=raw["max_count"],
        placements=tuple(raw["placements"]),
        size=raw["size"],
        exclusive_group=raw.get("exclusive_group"),
        engines=FrozenCounts(engines) if engines else None,
        min_driver=raw.get("min_driver"),
    )


def _model_from(key: str, raw: Mapping[str, Any], geometries: Mapping[str, MigGeometry]) -> GpuModel:
    mig = raw["mig"]
    if mig is not None and mig not in geometries:
        raise ValueError(f"catalog: model {key} names an unknown MIG geometry {mig!r}")
    return GpuModel(
        key=key,
        display_name=raw["display_name"],
        product_labels=tuple(raw["product_labels"]),
        memory_gib=raw["memory_gib"],
        memory_mib=tuple(raw["memory_mib"]),
        architecture=raw["architecture"],
        family=raw["family"],
        compute_capability=str(raw["compute_capability"]),
        mig=geometries[mig] if mig is not None else None,
        nvml_names=tuple(raw.get("nvml_names", ())),
        vgpu_labels=tuple(raw.get("vgpu_labels", ())),
        gke_accelerators=tuple(raw.get("gke_accelerators", ())),
        observed=bool(raw.get("observed", False)),
        sources=tuple(raw["sources"]),
    )


def sanitise(nvml_name: str) -> str:
    """GFD's product-label rule: drop characters outside [A-Za-z0-9-_. ], join the words with '-'."""
    return "-".join(re.sub(r"[^A-Za-z0-9\-_. ]", "", nvml_name).split())
