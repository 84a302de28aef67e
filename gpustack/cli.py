"""The `gpustack` command: a click group whose subcommands are imported only when run.

Each command lives in `gpustack.commands.<name>`; importing the group costs nothing but
click, so `gpustack validate` never pays for the compiler, and only `deploy` code imports pulumi.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from typing import Any

import click

COMMANDS: dict[str, tuple[str, str]] = {
    "validate": ("gpustack.commands.validate", "Check blueprints: shape, references, hardware and sharing rules."),
    "compile": ("gpustack.commands.compile", "Compile a blueprint into Kubernetes manifests and Helm values."),
    "schema": ("gpustack.commands.schema", "Print the blueprint JSON Schema (for editors and CI)."),
    "models": ("gpustack.commands.models", "List the GPU models gpustack knows, with MIG profiles."),
    "diff": ("gpustack.commands.diff", "Review a blueprint change: risks, capacity and manifest deltas."),
    "graph": ("gpustack.commands.graph", "Draw pools, tenants and workloads as a Mermaid diagram."),
    "simulate": ("gpustack.commands.simulate", "Place every workload's pods as kube-scheduler would, before apply."),
    "capacity": ("gpustack.commands.capacity", "Show what each pool can give and what each tenant may take."),
    "rollout": ("gpustack.commands.rollout", "Plan a change on a running cluster: node waves, drains, waits."),
    "import": ("gpustack.commands.import_", "Infer a blueprint from a cluster snapshot (kubectl get -o yaml)."),
    "drift": ("gpustack.commands.drift", "Compare a blueprint with a cluster snapshot, node by node."),
    "recommend": ("gpustack.commands.recommend", "Choose MIG layouts for layout: auto pools on the fewest GPUs."),
    "fleet": ("gpustack.commands.fleet", "Compile, review and check a fleet of clusters (Argo CD or Flux)."),
}
EXIT_INTERNAL = 3


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(name for name, (module, _) in COMMANDS.items() if importlib.util.find_spec(module) is not None)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS or importlib.util.find_spec(COMMANDS[cmd_name][0]) is None:
            return None
        command: click.Command = importlib.import_module(COMMANDS[cmd_name][0]).command
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [
            (name, help_text)
            for name, (module, help_text) in sorted(COMMANDS.items())
            if importlib.util.find_spec(module) is not None
        ]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="gpustack")
def group() -> None:
    """gpustack: one blueprint for a Kubernetes GPU cluster, checked against real hardware.

    Exit codes: 0 ok, 1 invalid input or a failed check, 2 usage error.
    """


def main(argv: list[str] | None = None) -> Any:
    """Console entry point: click's own handling, plus a last line of defence against tracebacks."""
    try:
        return group.main(args=argv, prog_name="gpustack")
    except KeyboardInterrupt:
        click.echo("gpustack: interrupted", err=True)
        sys.exit(130)
    except Exception as error:  # a user must never see a traceback
        click.echo(f"gpustack: internal error: {type(error).__name__}: {error}", err=True)
        click.echo("This is a bug in gpustack; please report it with the blueprint that caused it.", err=True)
        sys.exit(EXIT_INTERNAL)
