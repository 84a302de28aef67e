"""What a workload template may render, round 3 of the security review (N1 names, N3 Volcano queues, N11 envFrom
and the Pod Security baseline, N15 provider node-pool keys): each reproduction, then variants it does not try.

Every case goes through the CLI as a user meets it: `validate` exits 1 with GS606 at the workload's `template:`
line, `compile` writes nothing; the clean variants validate with `--strict`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from conftest import BLUEPRINTS

from gpustack.cli import group
from gpustack.object_names import LABEL_1035, LABEL_1123, SUBDOMAIN, label_value_fault, name_fault, qualified_name_fault

REVIEW = Path(__file__).resolve().parents[2] / "shared" / "reference" / "security-review-3"

TWO_TENANTS = """\
apiVersion: gpustack.io/v1alpha1
kind: ClusterBlueprint
metadata: {name: tpl}
spec:
  kubernetes: {version: "1.31"}
  nodePools:
    - name: l4
      gpu: {model: L4, count: 4}
      nodes: [gpu-node-1]
      taints: [{key: gpustack.io/pool, value: l4, effect: NoSchedule}]
    - name: h100
      gpu: {model: H100-SXM5-80GB, count: 8}
      nodes: [gpu-node-2]
      taints: [{key: gpustack.io/pool, value: h100, effect: NoSchedule}]
  tenants:
    - {name: ml, namespaces: [ml], pools: [l4], quota: {l4: {gpu: 4}}}
    - {name: payments, namespaces: [payments], pools: [h100], quota: {h100: {gpu: 8}}}
  workloads:
    - name: chat
      tenant: ml
      pool: l4
      kind: Deployment
      image: vllm/vllm-openai:v0.6.3
      gpu: {count: 1}
"""

GKE_POOLS = """\
apiVersion: gpustack.io/v1alpha1
kind: ClusterBlueprint
metadata: {name: cl}
spec:
  kubernetes: {version: "1.31"}
  nodePools:
    - name: l4a
      gpu: {model: L4, count: 1}
      cloud: {provider: PROVIDER, zones: [ZONE]}
      minNodes: 0
      maxNodes: 4
      taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
    - name: l4b
      gpu: {model: L4, count: 1}
      cloud: {provider: PROVIDER, zones: [ZONE]}
      minNodes: 0
      maxNodes: 4
      taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
  tenants:
    - {name: ml, namespaces: [ml], pools: [l4a], quota: {l4a: {gpu: 4}}}
    - {name: payments, namespaces: [payments], pools: [l4b], quota: {l4b: {gpu: 4}}}
  workloads:
    - name: chat
      tenant: ml
      pool: l4a
      kind: Deployment
      image: vllm/vllm-openai:v0.6.3
      gpu: {count: 1}
"""
ZONES = {"gke": "us-central1-a", "eks": "us-east-1a"}


def with_templates(blueprint: str, templates: dict[str, str]) -> str:
    """`blueprint` with `template: templates/<workload>.j2` on each named workload."""
    for workload in templates:
        marker = f"    - name: {workload}\n"
        at = blueprint.find(marker, blueprint.index("\n  workloads:\n"))
        assert at >= 0, workload
        at += len(marker)
        blueprint = f"{blueprint[:at]}      template: templates/{workload}.j2\n{blueprint[at:]}"
    return blueprint


def write_case(tmp_path: Path, blueprint: str, templates: dict[str, str]) -> Path:
    (tmp_path / "templates").mkdir(exist_ok=True)
    for workload, text in templates.items():
        (tmp_path / "templates" / f"{workload}.j2").write_text(text, encoding="utf-8")
    path = tmp_path / "bp.yaml"
    path.write_text(with_templates(blueprint, templates), encoding="utf-8")
    return path


def template_lines(path: Path) -> dict[str, int]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return {m.group(1): n for n, line in enumerate(lines, 1) if (m := re.search(r"template: templates/(.+)\.j2", line))}


def messages(tmp_path: Path, blueprint: str, templates: dict[str, str]) -> list[str]:
    """GS606 messages of `validate -o json`, after checking the CLI refuses the blueprint as a user sees it."""
    path = write_case(tmp_path, blueprint, templates)
    runner = CliRunner()
    text = runner.invoke(group, ["validate", str(path)])
    assert text.exit_code == 1, text.output
    assert "Traceback" not in text.output and "internal error" not in text.output
    lines = template_lines(path)
    assert any(f"bp.yaml:{line}:" in text.output for line in lines.values()), text.output
    out = tmp_path / "out"
    assert runner.invoke(group, ["compile", str(path), "-o", str(out)]).exit_code == 1 and not out.exists()
    report = json.loads(runner.invoke(group, ["validate", "-o", "json", str(path)]).output)
    diagnostics = [d for file in report["files"] for d in file["diagnostics"] if d["severity"] == "error"]
    assert diagnostics and all(d["code"] == "GS606" for d in diagnostics), diagnostics
    return [d["message"] for d in diagnostics]


def refused(tmp_path: Path, blueprint: str, templates: dict[str, str], *fragments: str) -> list[str]:
    found = messages(tmp_path, blueprint, templates)
    for fragment in fragments:
        assert any(fragment in message for message in found), (fragment, found)
    return found


def clean(tmp_path: Path, blueprint: str, templates: dict[str, str], *, strict: bool = True) -> None:
    """The template is accepted: no diagnostic at all (`--strict`), or no error where the blueprint warns."""
    path = write_case(tmp_path, blueprint, templates)
    result = CliRunner().invoke(group, ["validate", *(["--strict"] if strict else []), str(path)])
    assert result.exit_code == 0 and "GS606" not in result.output, result.output


def mutate(statement: str, pod: str = "manifest.spec.template.spec") -> str:
    """gpustack's own object after one change (`pod` is a pod spec, `c` its first container, `m` the object)."""
    return (
        f"{{%- set m = manifest -%}}{{%- set pod = {pod} -%}}{{%- set c = pod.containers[0] -%}}\n"
        f"{{%- set _ = {statement} -%}}\n{{{{ manifest | toyaml }}}}\n"
    )


def object_named(kind: str, name: str, api: str = "v1", extra: str = "") -> str:
    return f"apiVersion: {api}\nkind: {kind}\nmetadata:\n  name: {json.dumps(name)}\n{extra}"


@pytest.mark.parametrize("example", sorted(p.name for p in BLUEPRINTS.glob("*.yaml")))
def test_gpustack_s_own_objects_keep_every_rule(tmp_path: Path, example: str) -> None:
    """Every workload of every example rendered as generated (`{{ manifest | toyaml }}`) passes: the rules refuse
    what a template adds, never what gpustack derives."""
    blueprint = (BLUEPRINTS / example).read_text(encoding="utf-8")
    workloads = yaml.safe_load(blueprint)["spec"].get("workloads", [])
    names = [w["name"] for w in workloads if "template" not in w and f"    - name: {w['name']}\n" in blueprint]
    if not names:
        pytest.skip(f"the example {example} has no workload written as a block")
    path = write_case(tmp_path, blueprint, dict.fromkeys(names, "{{ manifest | toyaml }}\n"))
    for own in (BLUEPRINTS / "templates").glob("*"):  # the examples' own templates, checked as they are
        (tmp_path / "templates" / own.name).write_text(own.read_text(encoding="utf-8"), encoding="utf-8")
    result = CliRunner().invoke(group, ["validate", str(path)])
    assert "GS606" not in result.output and "GS605" not in result.output, result.output


# --- N1: every rendered name, label and annotation is Kubernetes' syntax ---------------------------------------------


def test_the_review_s_rollout_injection_name_is_refused(tmp_path: Path) -> None:
    """N1's reproduction: the ConfigMap named "x\\ntouch PWNED-cm\\n#" is refused, and rollout plans nothing."""
    case = REVIEW / "n1-rollout-object-name"
    if not case.is_dir():
        pytest.skip(f"the review's reproductions are not here: {case} is missing")
    template = (case / "templates" / "cm.j2").read_text(encoding="utf-8")
    blueprint = (case / "new.yaml").read_text(encoding="utf-8").replace("      template: templates/cm.j2\n", "")
    [message] = refused(tmp_path, blueprint, {"chat": template}, "metadata.name 'x\\ntouch PWNED-cm\\n#' is not")
    assert "\n" not in message
    (tmp_path / "base.yaml").write_text(TWO_TENANTS, encoding="utf-8")
    rollout = CliRunner().invoke(
        group, ["rollout", str(tmp_path / "base.yaml"), str(tmp_path / "bp.yaml"), "-o", "script"]
    )
    assert rollout.exit_code == 1 and "touch PWNED" not in rollout.output.replace("\\ntouch PWNED", "")


@pytest.mark.parametrize(
    ("kind", "api", "name", "fault"),
    [
        ("ConfigMap", "v1", "x\r\ntouch PWNED\r\n#", "is not a DNS-1123 subdomain"),
        ("ConfigMap", "v1", "x\u2028touch PWNED", "is not a DNS-1123 subdomain"),
        ("ConfigMap", "v1", "x\u0085y", "is not a DNS-1123 subdomain"),
        ("ConfigMap", "v1", "$(id)", "is not a DNS-1123 subdomain"),
        ("ConfigMap", "v1", "`id`", "is not a DNS-1123 subdomain"),
        ("ConfigMap", "v1", "it's", "is not a DNS-1123 subdomain"),
        ("ConfigMap", "v1", "Chat", "is not a DNS-1123 subdomain"),
        ("ConfigMap", "v1", "chat-", "is not a DNS-1123 subdomain"),
        ("ConfigMap", "v1", "a" * 254, "is 254 characters, more than the 253 allowed"),
        ("PersistentVolumeClaim", "v1", "data cache", "is not a DNS-1123 subdomain"),
        ("Service", "v1", "1chat", "is not a DNS-1035 label"),
        ("Service", "v1", "chat.web", "is not a DNS-1035 label"),
        ("Service", "v1", "s" * 64, "more than the 63 allowed"),
    ],
)
def test_a_name_the_api_server_would_refuse_is_refused(
    tmp_path: Path, kind: str, api: str, name: str, fault: str
) -> None:
    extra = "spec: {ports: [{port: 80}]}\n" if kind == "Service" else ""
    [message] = refused(tmp_path, TWO_TENANTS, {"chat": object_named(kind, name, api, extra)}, fault)
    assert f"renders {kind} whose metadata.name" in message
    assert not any(c in message for c in "\r\n\u2028\u0085")  # escaped, never raw


@pytest.mark.parametrize(
    ("statement", "fault"),
    [
        ("m.metadata.update({'name': 'j' * 64})", "is 64 characters, more than the 63 allowed (the Job controller"),
        ("m.metadata.update({'generateName': 'bad name-'})", "metadata.generateName 'bad name-' is not"),
    ],
)
def test_a_job_name_keeps_the_limits_of_the_objects_made_from_it(tmp_path: Path, statement: str, fault: str) -> None:
    blueprint = TWO_TENANTS.replace("kind: Deployment", "kind: Job")
    refused(tmp_path, blueprint, {"chat": mutate(statement)}, fault)


def test_a_cron_job_name_leaves_room_for_its_jobs_suffix(tmp_path: Path) -> None:
    cron = (
        "apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: " + "c" * 53 + "}\nspec:\n  schedule: '0 2 * * *'\n"
        "  jobTemplate: {spec: {template: {spec: {restartPolicy: Never, tolerations: {{ tolerations | tojson }}, "
        "containers: [{name: main, image: b:1}]}}}}\n"
    )
    refused(tmp_path, TWO_TENANTS, {"chat": cron}, "is 53 characters, more than the 52 allowed")
    clean(tmp_path, TWO_TENANTS, {"chat": cron.replace("c" * 53, "c" * 52)})


def test_the_longest_valid_names_pass(tmp_path: Path) -> None:
    clean(tmp_path, TWO_TENANTS, {"chat": object_named("ConfigMap", "a" * 251 + ".b", extra="data: {a: b}\n")})
    clean(tmp_path, TWO_TENANTS, {"chat": mutate("m.metadata.update({'generateName': 'chat-', 'name': 'chat-1'})")})


@pytest.mark.parametrize(
    ("statement", "fault"),
    [
        ("m.metadata.labels.update({'team': 'a b'})", "metadata.labels['team'] value 'a b' is not a label value"),
        ("m.metadata.labels.update({'team': 'x\\ntouch y'})", "value 'x\\ntouch y' is not a label value"),
        ("m.metadata.labels.update({'team': 't' * 64})", "is 64 characters, more than 63"),
        ("m.metadata.labels.update({'team': 3})", "value 3 is not a string (quote it)"),
        ("m.metadata.labels.update({'bad key': 'x'})", "metadata.labels key 'bad key' is not a qualified name"),
        ("m.metadata.labels.update({'Ex.com/x': 'x'})", "has prefix 'Ex.com', which is not a DNS-1123 subdomain"),
        ("m.metadata.update({'annotations': {'x\\ny': 'v'}})", "metadata.annotations key 'x\\ny' is not"),
        ("m.metadata.update({'annotations': {'note': 7}})", "metadata.annotations['note'] value 7 is not a string"),
        (
            "manifest.spec.template.metadata.labels.update({'v': '$(id)'})",
            "spec.template.metadata.labels['v'] value '$(id)' is not a label value",
        ),
        ("pod.update({'nodeSelector': {'disk': 'fast ssd'}})", "spec.template.spec.nodeSelector['disk'] value"),
    ],
)
def test_labels_and_annotations_keep_kubernetes_syntax(tmp_path: Path, statement: str, fault: str) -> None:
    refused(tmp_path, TWO_TENANTS, {"chat": mutate(statement)}, fault)


def test_free_text_annotation_values_and_upper_case_label_values_pass(tmp_path: Path) -> None:
    statement = (
        "m.metadata.update({'annotations': {'example.com/Note': 'any text, even\\nlines'}}) or "
        "m.metadata.labels.update({'tier': 'GPU_1.x'})"
    )
    clean(tmp_path, TWO_TENANTS, {"chat": mutate(statement)})


def test_a_job_set_s_nested_job_template_labels_are_checked(tmp_path: Path) -> None:
    blueprint = (BLUEPRINTS / "multi-node.yaml").read_text(encoding="utf-8")
    statement = "m.spec.replicatedJobs[0].template.setdefault('metadata', {}).update({'labels': {'x': 'a;b'}})"
    pod = "manifest.spec.replicatedJobs[0].template.spec.template.spec"
    refused(
        tmp_path, blueprint, {"pretrain": mutate(statement, pod)}, "spec.replicatedJobs[0].template.metadata.labels"
    )


def test_a_job_set_name_is_a_dns_1035_label(tmp_path: Path) -> None:
    blueprint = (BLUEPRINTS / "multi-node.yaml").read_text(encoding="utf-8")
    pod = "manifest.spec.replicatedJobs[0].template.spec.template.spec"
    refused(tmp_path, blueprint, {"pretrain": mutate("m.metadata.update({'name': '9pretrain'})", pod)}, "DNS-1035")


# Test vectors of k8s.io/apimachinery/pkg/util/validation (validation_test.go): the syntax is Kubernetes' own.
GOOD_QUALIFIED = [
    "simple",
    "now-with-dashes",
    "1-starts-with-num",
    "1234",
    "simple/simple",
    "now-with-dashes/simple",
    "now.with.dots/simple",
    "1-num.2-num/3-num",
    "1.2.3.4/5678",
    "Uppercase_Is_OK_123",
    "example.com/Uppercase_Is_OK_123",
    "requests.storage-foo",
    "a" * 63,
    "a" * 253 + "/" + "b" * 63,
]
BAD_QUALIFIED = [
    "nospecialchars%^=@",
    "cantendwithadash-",
    "-cantstartwithadash-",
    "only/one/slash",
    "Example.com/abc",
    "example_com/abc",
    "example.com/",
    "/simple",
    "a" * 64,
    "a" * 254 + "/abc",
]
GOOD_VALUES = ["simple", "now-with-dashes", "1-starts-with-num", "end-with-num-1", "1234", "a" * 63, ""]
BAD_VALUES = ["nospecialchars%^=@", "Tama-nui-te-r\u0101", "\u000bunprintable", "-starts", "ends-", ".dot", "a" * 64]


def test_the_syntax_matches_kubernetes_own_test_vectors() -> None:
    assert [k for k in GOOD_QUALIFIED if qualified_name_fault(k) is not None] == []
    assert [k for k in BAD_QUALIFIED if qualified_name_fault(k) is None] == []
    assert [v for v in GOOD_VALUES if label_value_fault(v) is not None] == []
    assert [v for v in BAD_VALUES if label_value_fault(v) is None] == []
    good_subdomains = ["a", "ab", "a-b", "0", "a.b", "1.2.3", "a" * 253, "a-1.b-2"]
    bad_subdomains = ["", "A", "a_b", "-a", "a-", "a..b", ".a", "a.", "a b", "a" * 254, "a\n"]
    assert [n for n in good_subdomains if name_fault(n, SUBDOMAIN) is not None] == []
    assert [n for n in bad_subdomains if name_fault(n, SUBDOMAIN) is None] == []
    assert name_fault("1abc", LABEL_1035) is not None and name_fault("abc-1", LABEL_1035) is None
    assert name_fault("a.b", LABEL_1123) is not None and name_fault("1-a", LABEL_1123) is None
    assert name_fault("chat-", SUBDOMAIN, prefix=True) is None  # a generateName prefix may end in '-'


# --- N3: a Volcano tenant keeps to its own queue and priority ---------------------------------------------------------

VOLCANO_TASK = "manifest.spec.tasks[0].template.spec"


def volcano() -> str:
    return (BLUEPRINTS / "volcano.yaml").read_text(encoding="utf-8")


def test_the_review_s_queue_and_priority_takeover_is_refused(tmp_path: Path) -> None:
    """N3's reproduction: vision's Volcano Job names llm's queue (spec and annotation) and a system priority."""
    case = REVIEW / "n3-volcano-queue" / "templates" / "q.j2"
    if not case.is_file():
        pytest.skip(f"the review's reproductions are not here: {case} is missing")
    found = refused(
        tmp_path,
        volcano(),
        {"detector-train": case.read_text(encoding="utf-8")},
        "renders Job whose spec.queue names Volcano queue 'llm'; workload 'detector-train' of tenant 'vision' may "
        "only use queue 'vision'",
        "renders Job whose spec.priorityClassName 'system-cluster-critical' is not one of tenant 'vision''s classes",
        "spec.tasks[0].template.metadata.annotations scheduling.volcano.sh/queue-name names Volcano queue 'llm'",
        "spec.tasks[1].template.metadata.annotations scheduling.volcano.sh/queue-name",
    )
    assert len(found) == 4


@pytest.mark.parametrize(
    ("statement", "fault"),
    [
        ("m.spec.update({'priorityClassName': 'gpustack-high'})", "spec.priorityClassName 'gpustack-high' is not"),
        ("m.spec.pop('queue')", "spec.queue names no queue, so Volcano's default queue"),
        ("m.spec.update({'queue': 'default'})", "spec.queue names Volcano queue 'default'"),
        (
            "m.metadata.update({'annotations': {'scheduling.volcano.sh/queue-name': 'llm'}})",
            "whose metadata.annotations scheduling.volcano.sh/queue-name names Volcano queue 'llm'",
        ),
        (
            "manifest.spec.tasks[0].template.metadata.update({'annotations': {'volcano.sh/queue-name': 'llm'}})",
            "spec.tasks[0].template.metadata.annotations volcano.sh/queue-name names Volcano queue 'llm'",
        ),
    ],
)
def test_every_place_volcano_reads_a_queue_or_priority_is_checked(tmp_path: Path, statement: str, fault: str) -> None:
    refused(tmp_path, volcano(), {"detector-train": mutate(statement, VOLCANO_TASK)}, fault)


def test_a_volcano_tenant_s_own_queue_and_lower_priority_pass(tmp_path: Path) -> None:
    statement = "m.spec.update({'queue': 'vision', 'priorityClassName': 'gpustack-low'})"
    clean(tmp_path, volcano(), {"detector-train": mutate(statement, VOLCANO_TASK)})


@pytest.mark.parametrize(
    ("statement", "fault"),
    [
        (
            "manifest.spec.template.metadata.annotations.update({'scheduling.volcano.sh/queue-name': 'vision'})",
            "scheduling.volcano.sh/queue-name names Volcano queue 'vision'; workload 'eval' of tenant 'llm'",
        ),
        (
            "manifest.spec.template.metadata.annotations.pop('scheduling.volcano.sh/queue-name')",
            "scheduling.volcano.sh/queue-name annotation: the pod names no queue",
        ),
    ],
)
def test_a_volcano_tenant_s_plain_pods_stay_in_its_queue(tmp_path: Path, statement: str, fault: str) -> None:
    refused(tmp_path, volcano(), {"eval": mutate(statement)}, fault)


def test_a_tenant_on_another_scheduler_may_not_name_a_volcano_tenant_s_queue(tmp_path: Path) -> None:
    blueprint = volcano().replace(
        "  workloads:\n",
        "    - {name: web, namespaces: [web], pools: [l4-eval], quota: {l4-eval: {gpu.shared: 2}}}\n  workloads:\n"
        "    - name: site\n      tenant: web\n      pool: l4-eval\n      kind: Deployment\n      image: b:1\n"
        "      gpu: {count: 1}\n",
    )
    statement = (
        "manifest.spec.template.metadata.setdefault('annotations', {})"
        ".update({'scheduling.volcano.sh/queue-name': 'llm'})"
    )
    refused(tmp_path, blueprint, {"site": mutate(statement)}, "may only use queue 'default'")


# --- N11 and H4: no device env through envFrom, and the Pod Security baseline -----------------------------------------

CONFIG_MAP = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: gpu-env}\ndata: DATA\n"
SECOND = (
    "    - name: env\n      tenant: ml\n      pool: l4\n      kind: Deployment\n      image: busybox:1\n"
    "      gpu: {count: 1}\n"
)


def test_the_review_s_envfrom_and_baseline_breaks_are_refused(tmp_path: Path) -> None:
    """N11's reproduction: every field it sets that the baseline or the device rule refuses is named."""
    case = REVIEW / "n11-template-envfrom" / "templates"
    if not case.is_dir():
        pytest.skip(f"the review's reproductions are not here: {case} is missing")
    templates = {
        "chat": (case / "envfrom.j2").read_text(encoding="utf-8"),
        "env": (case / "cmenv.j2").read_text(encoding="utf-8"),
    }
    found = refused(
        tmp_path,
        TWO_TENANTS + SECOND,
        templates,
        "env sets NVIDIA_VISIBLE_DEVICES (as 'nvidia_visible_devices')",
        "env sets NVIDIA_VISIBLE_DEVICES (as 'NVIDIA_VISIBLE_DEVICES ')",
        "ports[0].hostPort is 22",
        "securityContext.procMount is Unmasked",
        "securityContext.seccompProfile.type is Unconfined",
        "runtimeClassName is 'nvidia-privileged'",
        "renders ConfigMap with data key 'NVIDIA_VISIBLE_DEVICES'",
    )
    # Not baseline controls: sharing the pod's process namespace, root, hostUsers and a safe sysctl stay allowed.
    assert not any(word in m for m in found for word in ("shareProcessNamespace", "runAsUser", "hostUsers", "sysctl"))


def test_envfrom_of_another_template_s_config_map_is_read_across_the_output(tmp_path: Path) -> None:
    """A ConfigMap of one template is harmless alone, and so is a pod without GPUs that reads it with envFrom; only
    the two objects together put NVIDIA_DRIVER_CAPABILITIES into a container without a GPU."""
    config = CONFIG_MAP.replace("DATA", "{NVIDIA_DRIVER_CAPABILITIES: all, MODE: fast}")
    no_gpu = mutate(
        "c.update({'env': [], 'envFrom': [{'configMapRef': {'name': 'gpu-env'}}], "
        "'resources': {'requests': {'cpu': '1'}, 'limits': {'cpu': '1'}}})"
    )
    [message] = refused(
        tmp_path,
        TWO_TENANTS + SECOND,
        {"chat": no_gpu, "env": config},
        "renders Deployment whose spec.template.spec: containers[0] ('chat') envFrom[0] reads ConfigMap 'gpu-env' of "
        "workload 'env' (key 'NVIDIA_DRIVER_CAPABILITIES'), which sets NVIDIA_DRIVER_CAPABILITIES in a pod that "
        "requests no GPU",
    )
    assert message.startswith("workload 'chat'")
    # The same ConfigMap read by a GPU pod, and a pod without GPUs that reads another ConfigMap, both pass.
    with_gpu = mutate("c.update({'envFrom': [{'configMapRef': {'name': 'gpu-env'}}]})")
    clean(tmp_path, TWO_TENANTS + SECOND, {"chat": with_gpu, "env": config})
    clean(tmp_path, TWO_TENANTS + SECOND, {"chat": no_gpu.replace("gpu-env", "other"), "env": config})


def test_a_prefix_that_spells_device_env_is_refused(tmp_path: Path) -> None:
    """A ConfigMap key VISIBLE_DEVICES is no device key, but envFrom's prefix NVIDIA_ makes it one."""
    config = CONFIG_MAP.replace("DATA", "{VISIBLE_DEVICES: all}")
    envfrom = mutate("c.update({'envFrom': [{'prefix': 'nvidia_', 'configMapRef': {'name': 'gpu-env'}}]})")
    [message] = refused(
        tmp_path, TWO_TENANTS + SECOND, {"chat": envfrom, "env": config}, "envFrom[0] prefix 'nvidia_' starts"
    )
    assert message.startswith("workload 'chat'")


@pytest.mark.parametrize(
    ("statement", "fault"),
    [
        (
            "c.update({'envFrom': [{'prefix': 'NVIDIA_VISIBLE_', 'secretRef': {'name': 'made-elsewhere'}}]})",
            "envFrom[0] prefix 'NVIDIA_VISIBLE_' starts a device env name",
        ),
        (
            "c.env.append({'name': 'NVIDIA_VISIBLE_DEVICES', 'valueFrom': "
            "{'configMapKeyRef': {'name': 'gpu-env', 'key': 'NVIDIA_VISIBLE_DEVICES'}}})",
            "env sets NVIDIA_VISIBLE_DEVICES: it can give the container GPUs",
        ),
        (
            "c.env.append({'name': 'NVIDIA_MIG_CONFIG_DEVICES', 'valueFrom': "
            "{'secretKeyRef': {'name': 's', 'key': 'k'}}})",
            "env sets NVIDIA_MIG_CONFIG_DEVICES",
        ),
        (
            "c.update({'volumeMounts': [{'name': 'v', 'mountPath': '/var/run/../run/nvidia-container-devices/all'}]})",
            "the toolkit reads mounts there as a device request",
        ),
    ],
)
def test_device_env_has_no_side_door(tmp_path: Path, statement: str, fault: str) -> None:
    refused(tmp_path, TWO_TENANTS, {"chat": mutate(statement)}, fault)


def test_a_template_may_not_render_a_secret_to_carry_device_env(tmp_path: Path) -> None:
    secret = "apiVersion: v1\nkind: Secret\nmetadata: {name: gpu-env}\nstringData: {NVIDIA_VISIBLE_DEVICES: all}\n"
    refused(tmp_path, TWO_TENANTS, {"chat": secret}, "renders Secret (v1), which a tenant's template may not emit")


@pytest.mark.parametrize(
    ("statement", "fault"),
    [
        (
            "c.securityContext.update({'seccompProfile': {'type': 'Unconfined'}})",
            "containers[0] ('chat') securityContext.seccompProfile.type is Unconfined",
        ),
        ("pod.securityContext.update({'seccompProfile': {'type': 'Unconfined'}})", "pod securityContext.seccomp"),
        (
            "c.securityContext.update({'appArmorProfile': {'type': 'Unconfined'}})",
            "securityContext.appArmorProfile.type is Unconfined",
        ),
        (
            "manifest.spec.template.metadata.update({'annotations': "
            "{'container.apparmor.security.beta.kubernetes.io/chat': 'unconfined'}})",
            "annotation container.apparmor.security.beta.kubernetes.io/chat is 'unconfined'",
        ),
        (
            "manifest.spec.template.metadata.update({'annotations': "
            "{'seccomp.security.alpha.kubernetes.io/pod': 'unconfined'}})",
            "annotation seccomp.security.alpha.kubernetes.io/pod is unconfined",
        ),
        (
            "pod.securityContext.update({'seLinuxOptions': {'type': 'spc_t'}})",
            "pod securityContext.seLinuxOptions.type is spc_t",
        ),
        (
            "pod.securityContext.update({'windowsOptions': {'hostProcess': True}})",
            "windowsOptions.hostProcess is true",
        ),
        (
            "pod.securityContext.update({'sysctls': [{'name': 'kernel.msgmax', 'value': '1'}]})",
            "sets kernel.msgmax, not a namespaced safe sysctl",
        ),
        (
            "pod.update({'initContainers': [{'name': 'setup', 'image': 'b:1', 'ports': [{'containerPort': 80, "
            "'hostPort': 80}]}]})",
            "initContainers[0] ('setup') ports[0].hostPort is 80",
        ),
        (
            "pod.update({'ephemeralContainers': [{'name': 'debug', 'image': 'b:1', "
            "'securityContext': {'procMount': 'Unmasked'}}]})",
            "ephemeralContainers[0] ('debug') securityContext.procMount is Unmasked",
        ),
        ("pod.update({'runtimeClassName': 'nvidia'})", "runtimeClassName is 'nvidia', a runtime the blueprint"),
    ],
)
def test_the_pod_security_baseline_holds_at_compile_time(tmp_path: Path, statement: str, fault: str) -> None:
    [message] = refused(tmp_path, TWO_TENANTS, {"chat": mutate(statement)}, fault)
    assert "renders Deployment whose spec.template.spec:" in message


def test_what_the_baseline_allows_passes(tmp_path: Path) -> None:
    statement = (
        "pod.update({'shareProcessNamespace': True}) or "
        "pod.securityContext.update({'runAsUser': 0, 'sysctls': [{'name': 'kernel.shm_rmid_forced', 'value': '0'}], "
        "'seLinuxOptions': {'type': 'container_t'}}) or "
        "c.securityContext.update({'procMount': 'Default', 'appArmorProfile': {'type': 'RuntimeDefault'}}) or "
        "c.update({'ports': [{'containerPort': 8000, 'hostPort': 0}]})"
    )
    clean(tmp_path, TWO_TENANTS, {"chat": mutate(statement)})


def test_a_job_set_s_nested_pod_template_is_held_to_the_baseline(tmp_path: Path) -> None:
    blueprint = (BLUEPRINTS / "multi-node.yaml").read_text(encoding="utf-8")
    pod = "manifest.spec.replicatedJobs[0].template.spec.template.spec"
    [message] = refused(
        tmp_path, blueprint, {"pretrain": mutate("c.update({'ports': [{'containerPort': 22, 'hostPort': 22}]})", pod)}
    )
    assert "spec.replicatedJobs[0].template.spec.template.spec: containers[0]" in message and "hostPort" in message


# --- N15: a template selects only its own pool, by any key the policy knows -------------------------------------------

PROVIDER_KEYS = {
    "gke": "cloud.google.com/gke-nodepool",
    "eks": "eks.amazonaws.com/nodegroup",
}


def cloud_pools(provider: str) -> str:
    return GKE_POOLS.replace("PROVIDER", provider).replace("ZONE", ZONES[provider])


def test_the_review_s_provider_key_selection_is_refused(tmp_path: Path) -> None:
    """N15's reproduction: ml's template for GKE pool l4a selects payments' l4b by the GKE node-pool label."""
    case = REVIEW / "n15-template-selector-keys" / "templates" / "t.j2"
    if not case.is_file():
        pytest.skip(f"the review's reproductions are not here: {case} is missing")
    refused(
        tmp_path,
        cloud_pools("gke"),
        {"chat": case.read_text(encoding="utf-8")},
        "nodeSelector selects cloud.google.com/gke-nodepool l4b, which is not a label of pool 'l4a'",
    )


@pytest.mark.parametrize("provider", sorted(PROVIDER_KEYS))
def test_another_pool_is_never_reachable_by_its_provider_key(tmp_path: Path, provider: str) -> None:
    key = PROVIDER_KEYS[provider]
    term = {"matchExpressions": [{"key": key, "operator": "In", "values": ["l4b"]}]}
    required = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}
    affinity = f"pod.update({{'affinity': {{'nodeAffinity': {required!r}}}}})"
    refused(tmp_path, cloud_pools(provider), {"chat": mutate(affinity)}, f"selects {key} l4b")
    own = mutate(f"pod.update({{'nodeSelector': {{'{key}': 'l4a'}}}})")
    clean(tmp_path, cloud_pools(provider), {"chat": own}, strict=False)  # the shared taint warns (GS704)


def test_a_karpenter_selector_pool_is_told_apart_by_its_node_pool_key(tmp_path: Path) -> None:
    statement = "pod.update({'nodeSelector': {'karpenter.sh/nodepool': 'other'}})"
    pod = "manifest.spec.template.spec"
    refused(tmp_path, volcano(), {"eval": mutate(statement, pod)}, "selects karpenter.sh/nodepool other")
