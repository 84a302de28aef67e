"""The sandbox a workload template renders in: Jinja2's SandboxedEnvironment with StrictUndefined, one compiled
template per text and run, and bounds on time, memory and output (M1).

Templates are user input. The sandbox stops attribute escapes; the bounds stop `{% for %}` inside `{% for %}` and
`'a' * 10**9`, which the sandbox allows: validate renders templates in pre-commit hooks and CI, so a render is
bounded in time (a timer), in memory (the address-space limit, raised only by the headroom a render may use) and in
output (the blueprint's own size cap). What to do with a failure is the caller's (workload_templates.py: GS606).
"""

from __future__ import annotations

import os
import resource
import signal
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any

from jinja2 import FunctionLoader, StrictUndefined, Template, TemplateSyntaxError, Undefined, UndefinedError
from jinja2.sandbox import SandboxedEnvironment, SecurityError

from gpustack.context import Context
from gpustack.load import MAX_BYTES
from gpustack.yamlout import dump_yaml

VARIABLES = ("workload", "tenant", "pool", "namespace", "resources", "tolerations", "affinity", "labels", "manifest")

RENDER_SECONDS = 2.0  # one template; any real template renders in milliseconds
RENDER_SECONDS_PER_BLUEPRINT = 4.0  # every template of one blueprint together
RENDER_MEMORY = 512 * 1024 * 1024  # address space a render may add


class RenderLimitError(Exception):
    """A render ran past a bound: the message says which."""


def _toyaml(value: Any) -> str:
    if isinstance(value, Undefined):
        str(value)  # StrictUndefined raises here, naming the variable, instead of a YAML representer error
    # No trailing newline (nor the "..." that ends a bare scalar document), so `{{ x | toyaml | indent(4) }}` can
    # sit on its own line.
    return dump_yaml(value).removesuffix("\n...\n").rstrip("\n")


def _environment(path: str, text: str) -> SandboxedEnvironment:
    # The loader names the template after its path, so Jinja's errors and traceback frames carry it.
    env = SandboxedEnvironment(
        loader=FunctionLoader(lambda name: (text, path, lambda: True) if name == path else None),
        undefined=StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
    )
    env.filters["toyaml"] = _toyaml
    return env


def compiled_template(ctx: Context, path: str, text: str) -> Template:
    """One compiled template per template text and Context, shared by the workloads that name it: each render gets
    its own variables, and a sandboxed template cannot change its environment. A sandbox per render cost a compile
    each time and left a cycle of Jinja objects per workload for the collector (gpustack/collector.py)."""
    compiled: dict[tuple[str, str], Template] = ctx.__dict__.setdefault("_compiled_templates", {})
    template = compiled.get((path, text))
    if template is None:
        template = compiled[path, text] = _environment(path, text).get_template(path)
    return template


def template_line(error: BaseException, path: str) -> int | None:
    """The template line an error points at, from Jinja's syntax error or the traceback's template frames."""
    if isinstance(error, TemplateSyntaxError):
        return error.lineno
    frames = [f for f in traceback.extract_tb(error.__traceback__) if f.filename in (path, "<template>")]
    return frames[-1].lineno if frames else None


def render_hint(error: BaseException) -> str:
    if isinstance(error, SecurityError):
        return (
            "templates run in a sandbox: attributes starting with '_' and unsafe calls are refused; "
            "use the variables gpustack passes in"
        )
    if isinstance(error, UndefinedError):
        return f"the variables are {', '.join(VARIABLES)}; undefined names are errors, not empty strings"
    if isinstance(error, TemplateSyntaxError):
        return "fix the Jinja2 syntax at that line"
    return "fix the expression at that line"


def _address_space() -> int | None:
    try:
        with open("/proc/self/statm", encoding="ascii") as handle:
            return int(handle.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def _spent(ctx: Context) -> list[float]:
    # Seconds spent rendering for this blueprint: kept beside the Context's cached facts, so the budget is per compile.
    return ctx.__dict__.setdefault("_template_render_seconds", [0.0])


def render_bounded(ctx: Context, load: Callable[[], Template], variables: dict[str, Any]) -> str:
    """Compile (Jinja folds constants then: `'a' * 10**9` runs here) and render within the bounds."""
    spent = _spent(ctx)
    seconds = min(RENDER_SECONDS, RENDER_SECONDS_PER_BLUEPRINT - spent[0])
    if seconds <= 0:
        raise RenderLimitError(
            f"not rendered: this blueprint's templates already took {RENDER_SECONDS_PER_BLUEPRINT:g} s together"
        )
    timed = threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer")
    used = _address_space()
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    bounded = used is not None and (soft == resource.RLIM_INFINITY or soft > used + RENDER_MEMORY)

    def expire(_signum: int, _frame: object) -> None:
        raise RenderLimitError(f"rendering took longer than {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, expire) if timed else None
    start = time.monotonic()
    try:
        if bounded:
            assert used is not None
            resource.setrlimit(resource.RLIMIT_AS, (used + RENDER_MEMORY, hard))
        if timed:
            signal.setitimer(signal.ITIMER_REAL, seconds)
        chunks: list[str] = []
        size = 0
        for chunk in load().generate(**variables):
            size += len(chunk)
            if size > MAX_BYTES:
                raise RenderLimitError(f"rendered more than {MAX_BYTES // (1024 * 1024)} MiB")
            chunks.append(chunk)
        return "".join(chunks)
    except MemoryError as error:
        raise RenderLimitError(f"rendering needed more than {RENDER_MEMORY // (1024 * 1024)} MiB") from error
    finally:
        if timed:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous if previous is not None else signal.SIG_DFL)
        if bounded:
            resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
        spent[0] += time.monotonic() - start
