"""How a multi-node training job's processes find each other: torchrun's arguments derived from the job's shape.

A multi-node job has one shape, written once in the blueprint: how many pods (nodes) and how many GPUs each. torchrun
needs that shape on its command line (`--nnodes`, `--nproc_per_node`) plus where rank 0 listens and which node this
is. The controller provides the latter as environment variables in each pod (Volcano's `pytorch` plugin: MASTER_ADDR,
MASTER_PORT, WORLD_SIZE = pods, RANK = 0 for the master, 1.. for the workers; in a JobSet's pods gpustack sets the
same four itself, RANK from the Indexed Job's completion index), and Kubernetes expands `$(VAR)` in a container's
command from its environment, so the derived arguments name the variables instead of values a pod cannot
know in advance.

`launch` parses a command as torchrun does (flags up to the training script); `derived_command` inserts the flags a
command leaves out; `disagreements` lists the ones it writes differently from the shape (GS609).
"""

from __future__ import annotations

from dataclasses import dataclass

from gpustack.model import Workload, WorkloadKind

# Volcano's pytorch plugin default port (how_to_use_pytorch_plugin.md); the plugin also opens it on every container.
MASTER_PORT = 23456
# torchrun's flags that take no value; every other flag before the script takes one (`--flag=v` or `--flag v`).
BOOLEAN_FLAGS = frozenset({"--standalone", "--no_python", "--run_path", "--module", "-m"})
LAUNCHERS = (("torchrun",), ("python", "-m", "torch.distributed.run"), ("python3", "-m", "torch.distributed.run"))


@dataclass(frozen=True)
class Shape:
    """What the job is: `nodes` pods, each running `nproc` processes (one per GPU)."""

    nodes: int
    nproc: int


def training_shape(workload: Workload) -> Shape | None:
    """The shape of a multi-node training workload, whose pods rendezvous; None for every other kind."""
    if workload.kind in (WorkloadKind.VOLCANO_JOB, WorkloadKind.JOB_SET):
        return Shape(workload.pods, workload.gpu.count)
    return None


@dataclass(frozen=True)
class Flag:
    name: str  # normalised: `--nproc-per-node` and `--nproc_per_node` are one flag
    value: str | None
    index: int  # position of the flag in the launch line (command then args)


@dataclass(frozen=True)
class Launch:
    """A torchrun launch line: the launcher's length in tokens and the flags given before the training script."""

    launcher: int
    flags: tuple[Flag, ...]

    def get(self, name: str) -> Flag | None:
        return next((flag for flag in self.flags if flag.name == name), None)


@dataclass(frozen=True)
class Disagreement:
    index: int  # position in the launch line
    message: str
    hint: str


def _normalise(flag: str) -> str:
    if flag.startswith("--"):
        return "--" + flag[2:].replace("-", "_")
    return flag


def launch(line: tuple[str, ...]) -> Launch | None:
    """The torchrun launch in `line`, or None when the line does not start torchrun."""
    launcher = next((len(words) for words in LAUNCHERS if _is_launcher(line, words)), None)
    if launcher is None:
        return None
    flags: list[Flag] = []
    index = launcher
    while index < len(line) and line[index].startswith("-"):
        token = line[index]
        name, _, inline = token.partition("=")
        name = _normalise(name)
        if "=" in token:
            flags.append(Flag(name, inline, index))
        elif name in BOOLEAN_FLAGS:
            flags.append(Flag(name, None, index))
        else:
            value = line[index + 1] if index + 1 < len(line) else None
            flags.append(Flag(name, value, index))
            index += 1
        index += 1
    return Launch(launcher, tuple(flags))


def _is_launcher(line: tuple[str, ...], words: tuple[str, ...]) -> bool:
    if len(line) < len(words):
        return False
    first = line[0].rsplit("/", 1)[-1]  # /usr/local/bin/torchrun is torchrun
    return (first, *line[1 : len(words)]) == words


def derived_flags(shape: Shape) -> dict[str, str]:
    """The flags gpustack adds, by normalised name; the `$(...)` values are expanded by the kubelet."""
    return {
        "--nnodes": str(shape.nodes),
        "--nproc_per_node": str(shape.nproc),
        "--node_rank": "$(RANK)",
        "--master_addr": "$(MASTER_ADDR)",
        "--master_port": "$(MASTER_PORT)",
    }


def derived_command(command: tuple[str, ...], args: tuple[str, ...], shape: Shape) -> tuple[str, ...]:
    """`command` with the flags the launch line leaves out inserted after the launcher; unchanged if not torchrun.

    A line that names its own rendezvous (`--rdzv_endpoint`, `--master_addr`, `--standalone`) keeps it: gpustack
    adds only the shape then.
    """
    found = launch((*command, *args))
    if found is None or found.launcher > len(command):
        return command
    own_rendezvous = any(found.get(name) for name in ("--rdzv_endpoint", "--master_addr", "--standalone"))
    added = [
        f"{name}={value}"
        for name, value in derived_flags(shape).items()
        if found.get(name) is None and not (own_rendezvous and value.startswith("$("))
    ]
    return (*command[: found.launcher], *added, *command[found.launcher :])


def disagreements(line: tuple[str, ...], shape: Shape) -> list[Disagreement]:
    """Where a launch line contradicts the job's shape: each would hang the rendezvous or leave GPUs idle."""
    found = launch(line)
    if found is None:
        return []
    problems: list[Disagreement] = []
    nnodes = found.get("--nnodes")
    if nnodes is not None and not _admits(nnodes.value, shape.nodes):
        problems.append(
            Disagreement(
                nnodes.index,
                f"torchrun's --nnodes is {nnodes.value!s}, but the job runs {shape.nodes} pod(s): the rendezvous "
                "waits for nodes that never come, or starts without some",
                f"remove it: gpustack passes --nnodes={shape.nodes} from the job's shape",
            )
        )
    nproc = found.get("--nproc_per_node")
    if nproc is not None and (nproc.value or "").isdigit() and int(nproc.value or 0) != shape.nproc:
        problems.append(
            Disagreement(
                nproc.index,
                f"torchrun's --nproc_per_node is {nproc.value}, but each pod gets {shape.nproc} GPU(s): processes "
                "without a GPU fail, GPUs without a process idle",
                f"remove it: gpustack passes --nproc_per_node={shape.nproc} from the workload's gpu.count",
            )
        )
    rank = found.get("--node_rank")
    if rank is not None and shape.nodes > 1 and (rank.value or "").isdigit():
        problems.append(
            Disagreement(
                rank.index,
                f"torchrun's --node_rank is {rank.value} in every pod: {shape.nodes} nodes claim the same rank",
                "remove it: gpustack passes --node_rank=$(RANK), each pod's own rank",
            )
        )
    standalone = found.get("--standalone")
    if standalone is not None and shape.nodes > 1:
        problems.append(
            Disagreement(
                standalone.index,
                f"torchrun --standalone runs a single-node rendezvous, but the job runs {shape.nodes} pods: each "
                "trains alone",
                "remove it: gpustack points every pod at the master's rendezvous endpoint",
            )
        )
    return problems


def _admits(value: str | None, nodes: int) -> bool:
    """torchrun's --nnodes is N or an elastic range MIN:MAX."""
    low, _, high = (value or "").partition(":")
    if not low.isdigit() or (high and not high.isdigit()):
        return True  # not a number: torchrun itself rejects it, with its own message
    return int(low) <= nodes <= int(high or low)
