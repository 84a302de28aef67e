"""The MIG catalog against NVIDIA's own default mig-parted config (GPU Operator, 0400_configmap.yaml).

Every layout NVIDIA ships must be accepted on every catalogued model that has its profiles, and
the model groups its comments and device filters name must agree with the catalog.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import pytest
import yaml
from conftest import CONFORMANCE, missing_reference

from gpustack.catalog import MigGeometry, load_catalog
from gpustack.mig import check_layout

pytestmark = pytest.mark.conformance

CONFIG = CONFORMANCE / "default-mig-parted-config.yaml"
CATALOG = load_catalog()
_ABSENT = missing_reference(
    "The GPU Operator's default MIG configuration (default-mig-parted-config.yaml)",
    "the MIG catalog against every layout NVIDIA ships",
)

# The names the file's comments use -> catalog geometry (None: a GPU the catalog does not cover).
COMMENT_NAMES: dict[str, str | None] = {
    "A100-40GB": "A100-40GB",
    "A800-40GB": "A100-40GB",
    "A100-80GB": "A100-80GB",
    "A800-80GB": "A100-80GB",
    "H100-80GB": "H100-80GB",
    "H800-80GB": "H800-80GB",
    "A30-24GB": "A30-24GB",
    "H100 NVL": "H100-94GB",
    "H800 NVL": "H100-94GB",
    "GH200": "GH200-96GB",
    "H100-96GB": "GH200-96GB",
    "PG506-96GB": "GH200-96GB",
    "H20": "GH200-96GB",
    "H200-141GB": "H200-141GB",
    "H200 141GB": "H200-141GB",
    "H200 NVL": "H200-141GB",
    "GH200 144G HBM3e": "GH200-144GB",
    "B200": "B200-180GB",
    "GB200": "GB200-186GB",
    "GB200 HGX": "GB200-186GB",
    "RTX-PRO-6000-96GB": "RTX-PRO-6000-Blackwell-96GB",
    "B300": None,
    "GB300": None,
}

_B300 = "B300 is not catalogued: NVIDIA names its profiles, but no IDs or placements were found (mig.md section 2)"
_GB300 = "GB300 is not catalogued: NVIDIA names its profiles, but no IDs or placements were found (mig.md section 2)"
_EARLY_GB200 = "early GB200 names (renamed 2025-08-08); only the legacy geometry GB200-189GB-early has them"

# Entries no catalogued model accepts, and why. Keys: config name, plus [first device filter] for filtered entries.
NOT_FOR_ANY_MODEL = {
    "all-disabled": "MIG off: there is no layout to check",
    "all-enabled": "MIG on with no instances: gpustack rejects an empty layout (the device plugin ignores such GPUs)",
    "all-3g.95gb": _EARLY_GB200,
    "all-4g.95gb": _EARLY_GB200,
    "all-7g.189gb": _EARLY_GB200,
    "all-balanced[0x318210DE]": _B300,
    "all-1g.34gb": _B300,
    "all-1g.34gb.me": _B300,
    "all-1g.67gb": _B300,
    "all-2g.67gb": _B300,
    "all-3g.135gb": _B300,
    "all-4g.135gb": _B300,
    "all-7g.269gb": _B300,
    "all-balanced[0x31C210DE]": _GB300,
    "all-1g.35gb[0x31C210DE]": _GB300,
    "all-1g.35gb.me": _GB300,
    "all-1g.70gb": _GB300,
    "all-2g.70gb": _GB300,
    "all-3g.139gb": _GB300,
    "all-4g.139gb": _GB300,
    "all-7g.278gb": _GB300,
}

# Configs that sit under a comment naming other GPUs: the comment heads an earlier block and the
# file kept adding configs below it. None of the GPUs it names has these profiles.
STALE_HEADER = {
    "all-balanced[0x2BB510DE]": "the comment above all-balanced lists every family but the RTX PRO 6000",
    "all-1g.24gb.me": "under '# GB200, B200'; an RTX PRO 6000 profile",
    "all-2g.20gb": "under '# GB200, B200'; an A100-80GB/H100-80GB profile",
    "all-3g.40gb": "under '# GB200, B200'; an A100-80GB/H100-80GB profile",
    "all-4g.40gb": "under '# GB200, B200'; an A100-80GB/H100-80GB profile",
    "all-7g.80gb": "under '# GB200, B200'; an A100-80GB/H100-80GB profile",
    "all-1g.45gb": "under '# H100 NVL, H800 NVL, GH200'; a B200 profile",
    "all-1g.47gb": "under '# H100 NVL, H800 NVL, GH200'; a GB200 profile",
    "all-2g.45gb": "under '# H100 NVL, H800 NVL, GH200'; a B200 profile",
    "all-2g.47gb": "under '# H100 NVL, H800 NVL, GH200'; a GB200 profile",
    "all-3g.90gb": "under '# H100-96GB, PG506-96GB, GH200'; a B200 profile",
    "all-3g.93gb": "under '# H100-96GB, PG506-96GB, GH200'; a GB200 profile",
    "all-4g.90gb": "under '# H100-96GB, PG506-96GB, GH200'; a B200 profile",
    "all-4g.93gb": "under '# H100-96GB, PG506-96GB, GH200'; a GB200 profile",
    "all-7g.180gb": "under '# H100-96GB, PG506-96GB, GH200'; a B200 profile",
    "all-7g.186gb": "under '# H100-96GB, PG506-96GB, GH200'; a GB200 profile",
    "all-3g.95gb": "under '# H100-96GB, PG506-96GB, GH200'; an early GB200 profile",
    "all-4g.95gb": "under '# H100-96GB, PG506-96GB, GH200'; an early GB200 profile",
    "all-7g.189gb": "under '# H100-96GB, PG506-96GB, GH200'; an early GB200 profile",
}


@dataclass(frozen=True)
class Entry:
    """One entry of a mig-parted config, with the comments the file puts above it."""

    config: str
    device_filter: tuple[str, ...]
    mig_enabled: bool
    layout: dict[str, int]
    header: tuple[str, ...]  # GPU names in the comment above the config
    note: tuple[str, ...]  # GPU names in the comment right above this entry

    @property
    def key(self) -> str:
        return f"{self.config}[{self.device_filter[0]}]" if self.device_filter else self.config


def _config_text() -> str:
    if not CONFIG.exists():
        pytest.skip(_ABSENT)
    configmap = yaml.safe_load(CONFIG.read_text(encoding="utf-8"))
    return configmap["data"]["config.yaml"]


def _comment_names(line: str) -> tuple[str, ...]:
    return tuple(name.strip() for name in line.strip().lstrip("#").split(",") if name.strip())


def _comments(text: str) -> dict[tuple[str, int], tuple[tuple[str, ...], tuple[str, ...]]]:
    """(config, entry index) -> (header names, entry names), read from the raw text (YAML drops comments)."""
    found: dict[tuple[str, int], tuple[tuple[str, ...], tuple[str, ...]]] = {}
    header: tuple[str, ...] = ()
    pending: tuple[str, ...] = ()
    config, index = "", -1
    for line in text.splitlines():
        indent = len(line) - len(line.lstrip())
        if line.strip().startswith("#"):
            if indent == 2:
                header = _comment_names(line)
            else:
                pending = _comment_names(line)
        elif match := re.fullmatch(r"  (\S+):\s*", line):
            config, index, pending = match[1], -1, ()
        elif re.match(r"    - ", line):
            index += 1
            found[(config, index)] = (header, pending)
            pending = ()
    return found


def _entries() -> list[Entry]:
    text = _config_text()
    comments = _comments(text)
    entries = []
    for config, items in yaml.safe_load(text)["mig-configs"].items():
        for index, item in enumerate(items):
            device_filter = item.get("device-filter", ())
            header, note = comments[(config, index)]
            entries.append(
                Entry(
                    config=config,
                    device_filter=(device_filter,) if isinstance(device_filter, str) else tuple(device_filter),
                    mig_enabled=item["mig-enabled"],
                    layout=dict(item.get("mig-devices") or {}),
                    header=header,
                    note=note,
                )
            )
    return entries


def _applies(entry: Entry, geometry: MigGeometry) -> bool:
    """Whether mig-parted would apply the entry to this GPU: its filter names the GPU, or it has none."""
    if entry.device_filter and not set(entry.device_filter) & set(geometry.pci_device_ids):
        return False
    return all(geometry.profile(name) is not None for name in entry.layout)


def _accepting_models(entry: Entry) -> list[str]:
    return [
        key
        for key, model in CATALOG.models.items()
        if model.mig is not None and _applies(entry, model.mig) and check_layout(model.mig, entry.layout).valid
    ]


def _geometries_named(names: tuple[str, ...]) -> set[str]:
    unknown = [n for n in names if n not in COMMENT_NAMES]
    assert not unknown, f"the config's comments name GPUs this test does not map: {unknown}"
    return {g for n in names if (g := COMMENT_NAMES[n]) is not None}


def _cases(keep: Callable[[Entry], object] = lambda entry: True) -> list[object]:
    """The entries as test parameters; one skipped placeholder, with the reason, when the file is absent."""
    if not CONFIG.exists():
        return [pytest.param(None, marks=pytest.mark.skip(reason=_ABSENT), id="absent")]
    return [pytest.param(e, id=e.key) for e in _entries() if keep(e)]


def test_config_is_present_and_parsed():
    entries = _entries()
    assert len({e.config for e in entries}) == 81  # as counted in nvidia-device-plugin.md section 4.3


@pytest.mark.parametrize("entry", _cases())
def test_layout_is_accepted_wherever_its_profiles_exist(entry: Entry):
    models = [
        (key, m.mig)
        for key, m in CATALOG.models.items()
        if m.mig is not None and entry.mig_enabled and entry.layout and _applies(entry, m.mig)
    ]
    for key, geometry in models:
        result = check_layout(geometry, entry.layout)
        assert result.valid, f"{entry.key} {entry.layout} rejected on {key}: {result.problems}"
    if entry.key in NOT_FOR_ANY_MODEL:
        assert not models, f"{entry.key} is listed as for no model, but {[k for k, _ in models]} take it"
    else:
        assert models, f"{entry.key} {entry.layout} fits no catalogued model"


def test_exclusions_name_real_entries():
    keys = {e.key for e in _entries()}
    assert set(NOT_FOR_ANY_MODEL) <= keys
    assert set(STALE_HEADER) <= keys


@pytest.mark.parametrize("key", sorted(k for k, why in NOT_FOR_ANY_MODEL.items() if why == _EARLY_GB200))
def test_early_gb200_layouts_fit_the_legacy_geometry(key):
    entry = next(e for e in _entries() if e.key == key)
    early = CATALOG.geometries["GB200-189GB-early"]
    assert early.legacy
    assert check_layout(early, entry.layout).valid


@pytest.mark.parametrize("entry", _cases(lambda e: e.device_filter))
def test_device_filter_names_the_gpus_its_comment_names(entry: Entry):
    # The comment above a filtered entry and the PCI IDs in its filter must point at the same geometries.
    named = _geometries_named(entry.note)
    by_pci = {
        name
        for name, g in CATALOG.geometries.items()
        if not g.legacy and set(entry.device_filter) & set(g.pci_device_ids)
    }
    assert by_pci == named, f"{entry.key}: comment {entry.note} vs device IDs {entry.device_filter}"
    known_ids = {i for g in CATALOG.geometries.values() for i in g.pci_device_ids}
    if named:
        assert set(entry.device_filter) <= known_ids, f"{entry.key}: device IDs the catalog does not know"


@pytest.mark.parametrize("entry", _cases(lambda e: e.layout))
def test_header_comment_names_a_gpu_with_the_profiles(entry: Entry):
    # The comment above a config names the GPUs it is for: at least one of them must take it.
    takers = {name for name in _geometries_named(entry.header) if _applies(entry, CATALOG.geometries[name])}
    if entry.key in STALE_HEADER:
        assert not takers, f"{entry.key} is listed under a stale comment, but {takers} take it"
    elif entry.key not in NOT_FOR_ANY_MODEL:
        assert takers, f"{entry.key}: none of {entry.header} has {list(entry.layout)}"
        for name in takers:
            assert check_layout(CATALOG.geometries[name], entry.layout).valid, f"{entry.key} on {name}"


def _single_profile_config(entry: Entry) -> bool:
    return len(entry.layout) == 1 and entry.config != "all-balanced"


@pytest.mark.parametrize("entry", _cases(_single_profile_config))
def test_all_profile_configs_fill_the_gpu(entry: Entry):
    # mig-parted names them all-<profile, '+' as '.'> and asks for the profile's maximum count.
    ((profile, count),) = entry.layout.items()
    assert entry.config == "all-" + profile.replace("+", ".")
    for key, model in CATALOG.models.items():
        if model.mig is not None and _applies(entry, model.mig):
            found = model.mig.profile(profile)
            assert found is not None and found.max_count == count, f"{entry.key} on {key}"
