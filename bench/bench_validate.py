"""Validation of a 10,000-node / 1,000-pool / 500-tenant blueprint, against merely parsing the same file.

Run: python bench/bench_validate.py   (prints times and the validate/parse ratio; no assertions)
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import yaml
from generate import blueprint

from gpustack.validation import validate_text


def best_of(runs: int, action: object) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        action()  # type: ignore[operator]
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    text = blueprint(pools=1000, tenants=500, nodes_per_pool=10)
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    parse = best_of(3, lambda: yaml.load(text, Loader=loader))
    result = validate_text(text, "bench.yaml")
    assert result.ok, [d.message for d in result.diagnostics[:5]]
    validate = best_of(3, lambda: validate_text(text, "bench.yaml"))
    print(f"blueprint: {len(text) / 1e6:.2f} MB, 1,000 pools, 10,000 nodes, 500 tenants, 1,000 workloads")
    print(f"parse only (yaml CSafeLoader): {parse:.3f} s")
    print(f"gpustack validate (load + schema + checks): {validate:.3f} s")
    print(f"ratio validate / parse: {validate / parse:.2f}x")


if __name__ == "__main__":
    main()
