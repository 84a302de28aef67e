"""Multi-node training that rendezvous: the seed article's job carries everything torchrun needs, in every pod."""

from __future__ import annotations

import re
from typing import Any

import pytest
from builders import sourceless
from conftest import BLUEPRINTS

from gpustack.compile import compile_blueprint
from gpustack.rendezvous import Shape, derived_command, disagreements, launch
from gpustack.validation import validate_path


def seed_job() -> dict[str, Any]:
    result = validate_path(BLUEPRINTS / "seed-article.yaml")
    assert result.blueprint is not None
    plan = compile_blueprint(sourceless(result.blueprint))
    [job] = [m.obj for m in plan.objects if m.obj["kind"] == "Job" and m.obj["metadata"]["name"] == "pretrain"]
    return job


def volcano_pods(job: dict[str, Any]) -> list[tuple[str, dict[str, Any], dict[str, str]]]:
    """(pod name, container, env) as Volcano creates them: the pytorch plugin's variables added to each container.

    Modelled on Volcano's pytorch plugin (docs/user-guide/how_to_use_pytorch_plugin.md): MASTER_ADDR is the master
    task's first pod under the svc plugin's subdomain, WORLD_SIZE counts the job's pods, RANK is 0 for the master
    and 1.. for the workers.
    """
    spec = job["spec"]
    options = dict(arg.removeprefix("--").split("=", 1) for arg in spec["plugins"]["pytorch"])
    name = job["metadata"]["name"]
    world = sum(task["replicas"] for task in spec["tasks"])
    pods = []
    for task in spec["tasks"]:
        for index in range(task["replicas"]):
            rank = 0 if task["name"] == options["master"] else index + 1
            [container] = task["template"]["spec"]["containers"]
            env = {e["name"]: e["value"] for e in container["env"]}
            env |= {
                "MASTER_ADDR": f"{name}-{options['master']}-0.{name}",
                "MASTER_PORT": options["port"],
                "WORLD_SIZE": str(world),
                "RANK": str(rank),
            }
            pods.append((f"{name}-{task['name']}-{index}", container, env))
    return pods


def expand(words: list[str], env: dict[str, str]) -> list[str]:
    """The kubelet's $(VAR) expansion of a container's command from its environment."""
    return [re.sub(r"\$\((\w+)\)", lambda m: env.get(m.group(1), m.group(0)), word) for word in words]


def test_seed_article_job_runs_a_master_and_workers_with_volcanos_plugins() -> None:
    spec = seed_job()["spec"]
    assert spec["minAvailable"] == 4
    assert [(t["name"], t["replicas"]) for t in spec["tasks"]] == [("master", 1), ("worker", 3)]
    # svc: the headless Service named after the job, and each pod's hostname and subdomain, which MASTER_ADDR needs.
    assert "svc" in spec["plugins"] and spec["plugins"]["pytorch"] == [
        "--master=master",
        "--worker=worker",
        "--port=23456",
    ]


def test_every_seed_article_pod_joins_one_rendezvous_with_its_own_rank() -> None:
    pods = volcano_pods(seed_job())
    assert [name for name, _, _ in pods] == ["pretrain-master-0", *(f"pretrain-worker-{i}" for i in range(3))]
    ranks = []
    for _, container, env in pods:
        line = expand(container["command"], env)
        found = launch(tuple(line))
        assert found is not None and line[-1] == "train.py"
        flags = {flag.name: flag.value for flag in found.flags}
        assert flags["--nnodes"] == env["WORLD_SIZE"] == "4"
        assert flags["--nproc_per_node"] == container["resources"]["limits"]["nvidia.com/gpu"] == "2"
        assert flags["--master_addr"] == "pretrain-master-0.pretrain"
        assert flags["--master_port"] == "23456"
        ranks.append(flags["--node_rank"])
        # NCCL settings stay as the blueprint wrote them.
        assert (env["NCCL_SOCKET_IFNAME"], env["NCCL_IB_DISABLE"], env["NCCL_DEBUG"]) == ("eth0", "1", "WARN")
    assert ranks == ["0", "1", "2", "3"]


SHAPE = Shape(nodes=4, nproc=2)


@pytest.mark.parametrize(
    ("command", "args", "expected"),
    [
        # nothing repeated: the shape and the rendezvous, after the launcher
        (
            ("torchrun", "train.py"),
            (),
            (
                "torchrun",
                "--nnodes=4",
                "--nproc_per_node=2",
                "--node_rank=$(RANK)",
                "--master_addr=$(MASTER_ADDR)",
                "--master_port=$(MASTER_PORT)",
                "train.py",
            ),
        ),
        # the numbers repeated (dashes or underscores, = or a separate word): not added twice
        (
            ("/usr/bin/torchrun", "--nproc-per-node", "2", "--nnodes=4", "train.py"),
            (),
            (
                "/usr/bin/torchrun",
                "--node_rank=$(RANK)",
                "--master_addr=$(MASTER_ADDR)",
                "--master_port=$(MASTER_PORT)",
                "--nproc-per-node",
                "2",
                "--nnodes=4",
                "train.py",
            ),
        ),
        # a rendezvous of its own (c10d endpoint) is kept; only the shape is added
        (
            ("python", "-m", "torch.distributed.run", "--rdzv_endpoint=etcd:2379", "t.py"),
            (),
            (
                "python",
                "-m",
                "torch.distributed.run",
                "--nnodes=4",
                "--nproc_per_node=2",
                "--rdzv_endpoint=etcd:2379",
                "t.py",
            ),
        ),
        # not torchrun: untouched
        (("python", "train.py"), (), ("python", "train.py")),
        (("bash", "-c", "torchrun train.py"), (), ("bash", "-c", "torchrun train.py")),
    ],
)
def test_derived_command(command: tuple[str, ...], args: tuple[str, ...], expected: tuple[str, ...]) -> None:
    assert derived_command(command, args, SHAPE) == expected


@pytest.mark.parametrize(
    ("line", "flagged"),
    [
        (("torchrun", "--nnodes=4", "--nproc_per_node=2", "t.py"), []),
        (("torchrun", "--nnodes=2:8", "--nproc_per_node=auto", "t.py"), []),  # elastic range holding 4; auto
        (("torchrun", "--nnodes", "3", "t.py"), [1]),
        (("torchrun", "--nnodes=5:8", "t.py"), [1]),
        (("torchrun", "--max_restarts=3", "--nproc-per-node=8", "t.py"), [2]),
        (("torchrun", "--node_rank=0", "t.py"), [1]),
        (("torchrun", "--standalone", "t.py"), [1]),
        (("torchrun", "t.py", "--nnodes=1"), []),  # after the script: the script's own argument
    ],
)
def test_disagreements_point_at_the_flag(line: tuple[str, ...], flagged: list[int]) -> None:
    assert [problem.index for problem in disagreements(line, SHAPE)] == flagged


def test_a_single_node_job_may_fix_its_rank() -> None:
    assert disagreements(("torchrun", "--node_rank=0", "--standalone", "t.py"), Shape(1, 8)) == []
