"""`gpustack fleet compile` at scale: N clusters (default 100) of the many-pools 1x shape (bench/fleet.py: 100 pools,
1,000 nodes, 50 tenants, 50 workloads each), on one core and on every core, with the speed-up.

Run: python bench/fleet_compile.py [--clusters N] [--jobs J] [--repeat R]   (best of R runs of each)

Each cluster is the shape's blueprint as the fleet's base plus an overlay of its own (its Kubernetes version and
its first pool's nodes), so every cluster is resolved, validated and compiled on its own. A run is the whole
command: read the fleet, compile every cluster in worker processes, write every folder through the safe writer.
The parallel output is checked byte for byte against the serial one. (bench/fleet.py holds the shapes; this file is
the fleet command's figure, kept apart from bench/run.py.)
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from fleet import many_pools  # noqa: E402

from gpustack.fleet.compiling import compile_fleet, default_jobs, write_clusters  # noqa: E402
from gpustack.fleet.reading import read_fleet  # noqa: E402


def write_fleet(folder: Path, clusters: int) -> Path:
    (folder / "base.yaml").write_text(many_pools(1), encoding="utf-8")
    lines = [
        "apiVersion: gpustack.io/v1alpha1",
        "kind: Fleet",
        "metadata: {name: bench}",
        "spec:",
        "  base: base.yaml",
        "  delivery: {engine: argocd, source: {url: 'https://git.example.com/fleet.git', path: out}}",
        "  clusters:",
    ]
    for index in range(clusters):
        version = ("1.31", "1.32", "1.33")[index % 3]
        nodes = ", ".join(f"c{index:03d}-n{n:02d}" for n in range(10))
        lines += [
            f"    - name: cluster-{index:03d}",
            f"      labels: {{region: region-{index % 4}, environment: production}}",
            "      overlay:",
            "        spec:",
            f'          kubernetes: {{version: "{version}"}}',
            f"          nodePools: [{{name: pool-0000, nodes: [{nodes}]}}]",
        ]
    path = folder / "fleet.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def timed(fleet: Path, out: Path, jobs: int) -> float:
    """The whole command in a fresh interpreter, as a user runs it: a parent grown by an earlier run in this process
    would make every forked worker pay for its heap."""
    start = time.perf_counter()
    # The shape's warnings (one of each, naming every cluster) are not the figure: written where no one reads.
    command = [sys.executable, "-m", "gpustack", "fleet", "compile", str(fleet), "-d", str(out), "--jobs", str(jobs)]
    done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=HERE.parent, check=False)
    if done.returncode:
        raise RuntimeError(f"fleet compile failed with exit {done.returncode}")
    return time.perf_counter() - start


def phases(fleet: Path, out: Path, jobs: int) -> tuple[float, float]:
    """(compile in the workers, write in the parent) for one run: the written part is serial (one writer at a time
    replaces folders under DIR), so it bounds the speed-up (Amdahl)."""
    read = read_fleet(str(fleet))
    assert read.fleet is not None
    start = time.perf_counter()
    outcomes = compile_fleet(str(fleet), read.fleet, str(out), check=False, jobs=jobs)
    compiled = time.perf_counter()
    write_clusters(outcomes, str(out))
    return compiled - start, time.perf_counter() - compiled


def tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clusters", type=int, default=100)
    parser.add_argument("--jobs", type=int, default=default_jobs(), help="cores for the parallel run (default: all)")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        fleet = write_fleet(root, args.clusters)
        serial, parallel = [], []
        for run in range(args.repeat):  # alternately, so a neighbour's load slows both
            serial.append(timed(fleet, root / f"serial-{run}", 1))
            parallel.append(timed(fleet, root / f"parallel-{run}", args.jobs))
        same = tree(root / "serial-0") == tree(root / "parallel-0")
        compiling, writing = phases(fleet, root / "phases", args.jobs)
    one, many = min(serial), min(parallel)  # the best of --repeat runs: the least disturbed by a busy machine
    print(
        f"fleet compile, {args.clusters} clusters of many-pools 1x (100 pools, 1,000 nodes each), "
        f"{os.cpu_count()} CPUs on this machine"
    )
    print(f"  1 core:   {one:8.2f} s  ({one / args.clusters * 1000:.0f} ms per cluster)")
    print(f"  {args.jobs} cores: {many:8.2f} s  (speed-up {one / many:.2f}x)")
    print(f"  of a {args.jobs}-core run: compile {compiling:.2f} s (workers), write {writing:.2f} s (parent, serial)")
    print(f"  parallel output byte for byte the serial output: {'yes' if same else 'NO'}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
