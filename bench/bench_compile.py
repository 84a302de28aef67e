"""Compile of large generated blueprints: time against serializing the same objects (the floor), 1x to 10x input.

Run: python bench/bench_compile.py   (prints a table; no assertions)
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from generate import blueprint

from gpustack.compile import compile_blueprint
from gpustack.outputs import render_files
from gpustack.validation import validate_text
from gpustack.yamlout import dump_all


def best_of(runs: int, action: Callable[[], object]) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    print(
        f"{'scale':>5} {'pools':>6} {'objects':>8} {'compile s':>10} {'render s':>9} {'serialize s':>12} "
        f"{'compile+render / serialize':>27} {'growth':>7}"
    )
    base = None
    for scale in (1, 2, 5, 10):
        result = validate_text(blueprint(pools=100 * scale, tenants=50 * scale), "bench.yaml")
        assert result.ok and result.blueprint is not None
        bp = result.blueprint
        plan = compile_blueprint(bp)
        compile_time = best_of(3, lambda bp=bp: compile_blueprint(bp))
        render_time = best_of(3, lambda plan=plan: render_files(plan))
        serialize = best_of(3, lambda plan=plan: dump_all(m.obj for m in plan.objects))
        total = compile_time + render_time
        base = base or total
        print(
            f"{scale:>4}x {100 * scale:>6} {len(plan.objects):>8} {compile_time:>10.3f} {render_time:>9.3f} "
            f"{serialize:>12.3f} {total / serialize:>26.2f}x {total / base:>6.1f}x"
        )


if __name__ == "__main__":
    main()
