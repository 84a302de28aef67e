"""A RolloutPlan as a POSIX sh script: kubectl (and helm) commands, each wait bounded, each step recorded.

Re-running resumes: a step recorded in the state file is skipped, and every command is itself safe to repeat,
so a step that failed half-way (a drain that timed out) runs again from the start.

The script is run by an admin with cluster-admin rights, and plan data comes from blueprints, templates and file
names others wrote. So every line is built by one of four writers, and no other code adds text to the script:

- `comment`: `# ` and the text with every control, format and line or paragraph separator written as an escape,
  so no character of it can end the comment (sh ends it at a newline; viewers at CR, U+0085, U+2028 too);
- `command`: every word through `shlex.quote`;
- `heredoc`: a command, then a body under a quoted delimiter no line of the body equals (sh expands nothing in it);
- `assign`: a fixed variable name and a quoted value.

The rest is the fixed text of this module (`PRELUDE`, `STATE`, `HELPERS`, `SUMMARY`), with no plan data in it.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from collections.abc import Sequence

from gpustack.collector import paused
from gpustack.escapes import printable
from gpustack.rollout.model import Action, RolloutPlan, Step

OBJECT_END = "GPUSTACK_OBJECT"  # heredoc delimiter; one-line JSON can never equal it
STATE_VERSION = "1"  # the state file's format: a header line, then one line per finished step
_VARIABLE = re.compile(r"^[A-Z][A-Z0-9_]*$")


class UnsafeWord(ValueError):
    """Plan data that no command can carry as it is (a NUL byte, a name that starts with '-'): no script is written."""


def visible(text: str, backslashes: bool = True) -> str:
    """The text on one line, every hidden character escaped as the terminal reporters escape it (escapes.printable;
    a tab too, so a line is all printable), and the backslash, so escapes stay unambiguous, unless `backslashes` is
    False: terminal text that shows shell words, whose backslashes are their own."""
    return printable(text.replace("\\", "\\\\") if backslashes else text).replace("\t", "\\x09")


def comment(text: str) -> str:
    return f"# {visible(text)}"


def _word(word: str) -> str:
    if "\0" in word:
        raise UnsafeWord(f"a NUL byte in '{visible(word)}': no command-line argument can carry it")
    return shlex.quote(word)


def command(words: Sequence[str]) -> str:
    return " ".join(_word(word) for word in words)


def heredoc(words: Sequence[str], body: str) -> list[str]:
    """The command reading `body` from a quoted here-document: sh expands nothing in it and ends it only at a
    line equal to the delimiter, so the delimiter is one that no line of the body equals."""
    if "\0" in body:
        raise UnsafeWord("a NUL byte in an object: a here-document cannot carry it")
    lines = body.split("\n")
    end, number = OBJECT_END, 0
    while end in lines:
        number += 1
        end = f"{OBJECT_END}_{number}"
    return [f"{command(words)} <<'{end}'", *lines, end]


def assign(name: str, value: str) -> str:
    assert _VARIABLE.match(name), name  # names are this module's constants, never plan data
    return f"{name}={_word(value)}"


PRELUDE = """\
set -eu
umask 077

# Finished steps are recorded outside the working tree, in a folder only this user can open (mode 700):
# GPUSTACK_ROLLOUT_STATE_DIR, else $XDG_STATE_HOME/gpustack, else ~/.local/state/gpustack. The state file is
# made by this script's first run, with a random run id and this plan's digest; a state file from another
# plan, with a line this script did not write, or in a folder others can open is refused, never trusted.
# Remove the file to start over. GPUSTACK_ROLLOUT_SKIP_HELM=1 leaves the helm steps out (charts applied by
# Pulumi, see docs/rollout.md)."""

STATE = """\
refuse() {
  printf 'gpustack-rollout: %s\\n' "$1" >&2
  exit 1
}

if [ -n "${GPUSTACK_ROLLOUT_STATE:-}" ]; then
  refuse 'GPUSTACK_ROLLOUT_STATE is no longer read: set GPUSTACK_ROLLOUT_STATE_DIR to a folder only you can open'
fi
if [ -n "${GPUSTACK_ROLLOUT_STATE_DIR:-}" ]; then
  state_dir=$GPUSTACK_ROLLOUT_STATE_DIR
elif [ -n "${XDG_STATE_HOME:-}" ]; then
  state_dir=$XDG_STATE_HOME/gpustack
elif [ -n "${HOME:-}" ]; then
  state_dir=$HOME/.local/state/gpustack
else
  refuse 'no HOME: set GPUSTACK_ROLLOUT_STATE_DIR to a folder only you can open'
fi
case $state_dir in
  /*) ;;
  *) refuse "the state folder must be an absolute path, not $state_dir" ;;
esac
if [ ! -e "$state_dir" ] && [ ! -L "$state_dir" ]; then
  mkdir -p -- "$state_dir"
  chmod 700 -- "$state_dir"
fi
# A folder others can open (a checkout, /tmp) could hold a state file someone planted there.
# shellcheck disable=SC2012
if ! ls -ldn -- "$state_dir" | awk -v uid="$(id -u)" '$3 == uid && $1 ~ /^d...------/ { ok = 1 } END { exit !ok }'
then
  refuse "$state_dir is not a folder of yours that only you can open: chmod 700 it, or choose another"
fi
STATE_FILE=$state_dir/gpustack-rollout-$PLAN_TAG.state

# A finished step's line: its id, and a checksum of the id with this run's id and this plan's digest.
record() {
  printf '%s %s\\n' "$1" "$(printf '%s %s %s' "$RUN_ID" "$PLAN_DIGEST" "$1" | cksum)"
}

if [ -e "$STATE_FILE" ] || [ -L "$STATE_FILE" ]; then
  header=$(sed -n 1p <"$STATE_FILE")
  RUN_ID=${header##* }
  case $RUN_ID in
    *[!0-9a-f]* | '') refuse "$STATE_FILE was not written by this script: move it away to start over" ;;
  esac
  if [ "$header" != "gpustack-rollout-state @VERSION@ $PLAN_DIGEST $RUN_ID" ] || [ "${#RUN_ID}" -ne 32 ]; then
    refuse "$STATE_FILE was not written by this plan's script: move it away to start over"
  fi
  if ! sed 1d <"$STATE_FILE" | while IFS= read -r line || [ -n "$line" ]; do
    [ "$line" = "$(record "${line%% *}")" ] || exit 1
  done; then
    refuse "$STATE_FILE has a line this script did not write: move it away to start over"
  fi
else
  RUN_ID=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \\n')
  case $RUN_ID in
    *[!0-9a-f]* | '') refuse 'no random run id: /dev/urandom could not be read' ;;
  esac
  # noclobber: a file that appeared meanwhile is not taken over
  (set -C && printf 'gpustack-rollout-state @VERSION@ %s %s\\n' "$PLAN_DIGEST" "$RUN_ID" >"$STATE_FILE") ||
    refuse "could not create $STATE_FILE"
fi
printf 'gpustack-rollout: state in %s (run %s)\\n' "$STATE_FILE" "$RUN_ID"
steps_run=0
steps_skipped=0
steps_left=0
""".replace("@VERSION@", STATE_VERSION)

HELPERS = """\
step() {
  step_id=$1
  shift
  done_line=$(record "$step_id")
  if grep -qxF -- "$done_line" "$STATE_FILE"; then
    steps_skipped=$((steps_skipped + 1))
    printf 'gpustack-rollout: %s: done before, skipped\\n' "$step_id"
    return 0
  fi
  if [ "${GPUSTACK_ROLLOUT_SKIP_HELM:-}" = 1 ] && [ "$1" = helm ]; then
    # Charts that Pulumi (or GitOps) owns are not Helm releases: their owner applies them.
    steps_left=$((steps_left + 1))
    printf 'gpustack-rollout: %s: helm step left to the charts owner (GPUSTACK_ROLLOUT_SKIP_HELM=1)\\n' "$step_id"
    return 0
  fi
  printf 'gpustack-rollout: %s\\n' "$step_id"
  "$@"
  printf '%s\\n' "$done_line" >>"$STATE_FILE"
  steps_run=$((steps_run + 1))
}

# Whether $1 has a line equal to $2, compared whole (grep would take a newline in $2 for two patterns).
has_line() {
  printf '%s\\n' "$1" | {
    while IFS= read -r line; do
      if [ "$line" = "$2" ]; then exit 0; fi
    done
    exit 1
  }
}

# kubectl taint NODE KEY:EFFECT- fails on a taint the node does not have: look first.
untaint() {
  taints=$(kubectl get node "$1" -o 'jsonpath={range .spec.taints[*]}{.key}:{.effect}{"\\n"}{end}')
  if has_line "$taints" "$2"; then
    kubectl taint node "$1" "$2-"
  fi
}

# A Job's pod template cannot change once created: an existing Job is left to finish as it is.
apply_job() {
  if kubectl get job "$2" --namespace "$1" >/dev/null 2>&1; then
    printf 'gpustack-rollout: Job %s/%s exists: it keeps its old pod template\\n' "$1" "$2" >&2
    cat >/dev/null
  else
    kubectl apply --server-side --field-manager=gpustack -f -
  fi
}
"""

SUMMARY = """\
printf 'gpustack-rollout: all steps done: %s run now, %s skipped (done before), %s left to the charts owner\\n' \\
  "$steps_run" "$steps_skipped" "$steps_left"
printf 'gpustack-rollout: state in %s\\n' "$STATE_FILE\""""


def _script_words(step: Step) -> list[str]:
    words = list(step.command)
    if step.action is Action.UNTAINT:
        words = ["untaint", words[3], words[4].removesuffix("-")]
    return words


def command_line(step: Step) -> str:
    """The step's command as one shell line (stdin shown as a redirect from the plan), for people to read."""
    text = " ".join(shlex.quote(word) for word in _script_words(step))
    return f"{text} < (object in the plan)" if step.stdin is not None else text


def _operands(step: Step) -> list[str]:
    """The words kubectl or helm read as names (nodes, labels, taints, objects, releases, charts), not options."""
    words = list(step.command)
    match step.action:
        case Action.CORDON | Action.UNCORDON | Action.DRAIN | Action.HELM_UNINSTALL:
            return words[2:3]
        case Action.LABEL | Action.TAINT:
            return words[3:-1] if words[-1] == "--overwrite" else words[3:]
        case Action.UNTAINT:
            return words[3:5]
        case Action.DELETE:
            return words[2:4]
        case Action.HELM_UPGRADE:
            return words[3:5]
        case _:
            return []  # objects come on stdin; waits name `node/NODE`


def _step_lines(step: Step) -> list[str]:
    words = _script_words(step)
    operands = _operands(step)
    if step.action is Action.APPLY_JOB and step.stdin is not None:
        metadata = json.loads(step.stdin)["metadata"]
        operands = [str(metadata.get("namespace", "default")), str(metadata["name"])]
        words = ["apply_job", *operands]
    for word in operands:
        # `kubectl delete ConfigMap --all` deletes them all: a name that starts with '-' is never passed on.
        if word.startswith("-"):
            raise UnsafeWord(f"'{visible(word)}' would be read as an option, not a name: no name starts with '-'")
    words = ["step", step.id, *words]
    if step.stdin is None:
        return [comment(step.description), command(words)]
    return [comment(step.description), *heredoc(words, step.stdin)]


def plan_digest(plan: RolloutPlan) -> str:
    """A SHA-256 of every step, in hex: it changes whenever any step does."""
    steps = [[step.id, *step.command, step.stdin or ""] for step in plan.steps]
    return hashlib.sha256(json.dumps(steps, sort_keys=True).encode("utf-8")).hexdigest()


@paused()  # see gpustack/collector.py
def render_script(plan: RolloutPlan) -> str:
    """The script; raises UnsafeWord when plan data holds a NUL byte or a name that would be read as an option."""
    digest = plan_digest(plan)
    lines = [
        "#!/bin/sh",
        comment(
            f"gpustack rollout: {plan.before} -> {plan.after}. Generated by gpustack; change the blueprint, not this."
        ),
        comment("Run it with kubectl (and helm) pointed at the cluster. It stops at the first failed step;"),
        comment("run it again to resume from that step."),
        comment(f"Max unavailable per pool: {plan.max_unavailable}."),
        PRELUDE,
        assign("PLAN_DIGEST", digest),
        assign("PLAN_TAG", digest[:12]),
        "",
        STATE,
        HELPERS,
    ]
    for phase in plan.phases:
        lines.append(comment(f"--- {phase.id}: {phase.title}"))
        if phase.unprotected:
            lines.append(comment(f"No PodDisruptionBudget: {', '.join(phase.unprotected)}"))
        for step in phase.steps:
            lines += _step_lines(step)
        lines.append("")
    lines.append(SUMMARY)
    return "\n".join(lines) + "\n"
