"""Workloads read env from the tenant's own Secrets and ConfigMaps, request ephemeral storage and size /dev/shm
(issue 32 item 2), and no field reaches another namespace's Secret.

The vLLM LeaderWorkerSet recipe (docs.vllm.ai, deployment/frameworks/lws) is written as a blueprint under
tests/cases/recipes/ and its compiled LeaderWorkerSet compared with the recipe field by field.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from conftest import REPO

from gpustack.cli import group
from gpustack.compile import compile_blueprint
from gpustack.validation import validate_path, validate_text

RECIPE = REPO / "tests" / "cases" / "recipes" / "vllm-leaderworkerset.yaml"
TOKEN = "{valueFrom: {secretKeyRef: {name: hf-token, key: token}}}"

# The recipe's lws.yaml, leader and worker alike: what each pod gets. Its HUGGING_FACE_HUB_TOKEN is a literal
# `<your-hf-token>` there; here it is read from a Secret.
RECIPE_POD: dict[str, Any] = {
    "limits": {"nvidia.com/gpu": "8", "memory": "1124Gi", "ephemeral-storage": "800Gi"},
    "requests": {"ephemeral-storage": "800Gi", "cpu": "125"},
    "shm": {"medium": "Memory", "sizeLimit": "15Gi"},
}


def objects(path: Path = RECIPE, text: str | None = None) -> list[dict[str, Any]]:
    validation = validate_path(path) if text is None else validate_text(text, "b.yaml")
    assert validation.ok and validation.context is not None, validation.diagnostics
    return [manifest.obj for manifest in compile_blueprint(validation.context).objects]


def the(kind: str, found: list[dict[str, Any]]) -> dict[str, Any]:
    (obj,) = [o for o in found if o["kind"] == kind]
    return obj


def diagnostics(text: str) -> list[tuple[str, str]]:
    return [(d.code, d.message) for d in validate_text(text, "b.yaml").diagnostics]


def recipe_text() -> str:
    return RECIPE.read_text()


def test_the_vllm_recipe_compiles_to_the_recipes_leader_worker_set() -> None:
    lws = the("LeaderWorkerSet", objects())
    assert lws["metadata"]["namespace"] == "serving"
    assert lws["spec"]["replicas"] == 2
    template = lws["spec"]["leaderWorkerTemplate"]
    assert (template["size"], template["restartPolicy"]) == (2, "RecreateGroupOnPodRestart")
    for role in ("leaderTemplate", "workerTemplate"):
        spec = template[role]["spec"]
        (container,) = spec["containers"]
        resources = container["resources"]
        for field in ("limits", "requests"):
            for name, amount in RECIPE_POD[field].items():
                assert resources[field][name] == amount, (role, field, name)
        assert resources["requests"] == resources["limits"]  # gpustack's pods are Guaranteed
        env = {item["name"]: item for item in container["env"]}
        assert env["HUGGING_FACE_HUB_TOKEN"] == {
            "name": "HUGGING_FACE_HUB_TOKEN",
            "valueFrom": {"secretKeyRef": {"name": "hf-token", "key": "token"}},
        }
        (mount,) = [m for m in container["volumeMounts"] if m["mountPath"] == "/dev/shm"]
        (volume,) = [v for v in spec["volumes"] if v["name"] == mount["name"]]
        assert volume["emptyDir"] == RECIPE_POD["shm"]


def test_no_compiled_file_holds_the_token_or_a_secret() -> None:
    found = objects()
    assert not [o for o in found if o["kind"] == "Secret"]  # gpustack references it; the tenant creates it
    assert "<your-hf-token>" not in yaml.safe_dump_all(found)


def test_a_config_map_key_and_an_optional_secret_key_render_as_kubernetes_spells_them() -> None:
    text = recipe_text().replace(
        f"HUGGING_FACE_HUB_TOKEN: {TOKEN}",
        "HUGGING_FACE_HUB_TOKEN: {valueFrom: {secretKeyRef: {name: hf-token, key: token, optional: true}}}\n"
        "        MODEL: {valueFrom: {configMapKeyRef: {name: models, key: llm}}}\n"
        "        HF_HOME: /models",
    )
    (container,) = the("LeaderWorkerSet", objects(text=text))["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"][
        "containers"
    ]
    env = {item["name"]: item for item in container["env"]}
    assert env["HUGGING_FACE_HUB_TOKEN"]["valueFrom"] == {
        "secretKeyRef": {"name": "hf-token", "key": "token", "optional": True}
    }
    assert env["MODEL"]["valueFrom"] == {"configMapKeyRef": {"name": "models", "key": "llm"}}
    assert env["HF_HOME"] == {"name": "HF_HOME", "value": "/models"}


def test_without_the_new_fields_nothing_changes() -> None:
    text = recipe_text().replace("      shmSize: 15Gi\n", "").replace(", ephemeralStorage: 800Gi", "")
    spec = the("LeaderWorkerSet", objects(text=text))["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]
    assert "ephemeral-storage" not in spec["containers"][0]["resources"]["limits"]
    assert spec["volumes"] == [{"name": "dshm", "emptyDir": {"medium": "Memory"}}]  # multi-node: unsized, as before


def test_a_single_gpu_deployment_gets_dev_shm_only_when_it_asks() -> None:
    text = (REPO / "blueprints" / "quickstart.yaml").read_text()
    spec = the("Deployment", objects(text=text))["spec"]["template"]["spec"]
    assert "volumes" not in spec
    sized = text.replace("      gpu: {count: 1}\n", "      gpu: {count: 1}\n      shmSize: 2Gi\n")
    spec = the("Deployment", objects(text=sized))["spec"]["template"]["spec"]
    assert spec["volumes"] == [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "2Gi"}}]
    assert spec["containers"][0]["volumeMounts"] == [{"name": "dshm", "mountPath": "/dev/shm"}]


# --- attacks: another namespace's Secret ----------------------------------------------------------------------------


def test_a_secret_reference_cannot_name_a_namespace() -> None:
    text = recipe_text().replace("{name: hf-token, key: token}", "{name: hf-token, key: token, namespace: payments}")
    assert [code for code, _ in diagnostics(text)] == ["GS101"]
    assert "unknown field 'namespace'" in diagnostics(text)[0][1]
    (hint,) = [d.hint for d in validate_text(text, "b.yaml").diagnostics]
    assert hint == "allowed fields here: name, key, optional"  # not "did you mean 'name'?"


def test_a_workload_in_another_tenants_namespace_cannot_read_its_secrets() -> None:
    text = (
        recipe_text()
        .replace(
            "        h100: {gpu: 32}\n",
            "        h100: {gpu: 32}\n    - name: payments\n      namespaces: [payments]\n      pools: [h100]\n"
            "      quota:\n        h100: {gpu: 8}\n",
        )
        .replace("      kind: LeaderWorkerSet\n", "      kind: LeaderWorkerSet\n      namespace: payments\n")
    )
    found = diagnostics(text)
    assert (
        "GS205",
        "workload 'vllm' is in namespace 'payments', which is not one of tenant 'serving''s namespaces",
    ) in (found)


@pytest.mark.parametrize(
    "value",
    [
        "{valueFrom: {secretKeyRef: {name: a, key: b}, configMapKeyRef: {name: a, key: b}}}",  # two sources
        "{valueFrom: {fieldRef: {fieldPath: metadata.namespace}}}",  # not a Secret or ConfigMap
        "{secretKeyRef: {name: a, key: b}}",  # valueFrom left out
        "{valueFrom: {secretKeyRef: {name: a}}}",  # no key
        "{valueFrom: {secretKeyRef: {name: Not_A_Name, key: b}}}",
    ],
)
def test_a_malformed_reference_is_refused(value: str) -> None:
    text = recipe_text().replace(TOKEN, value)
    found = diagnostics(text)
    assert len(found) == 1 and found[0][0].startswith("GS1"), found


@pytest.mark.parametrize("name", ["NVIDIA_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES"])
def test_device_env_read_from_a_secret_is_still_refused(name: str) -> None:
    text = recipe_text().replace("HUGGING_FACE_HUB_TOKEN:", f"{name}:")
    assert "GS602" in [code for code, _ in diagnostics(text)]


TEMPLATE_BLUEPRINT = """\
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
  tenants:
    - {name: ml, namespaces: [ml], pools: [l4], quota: {l4: {gpu: 4}}}
  workloads:
    - name: chat
      tenant: ml
      pool: l4
      kind: Deployment
      image: vllm/vllm-openai:v0.6.3
      gpu: {count: 1}
      template: templates/chat.j2
"""


def template_case(tmp_path: Path, template: str) -> tuple[int, str]:
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "chat.j2").write_text(template)
    (tmp_path / "bp.yaml").write_text(TEMPLATE_BLUEPRINT)
    result = CliRunner().invoke(group, ["validate", str(tmp_path / "bp.yaml")])
    return result.exit_code, result.output


def pod_edit(*expressions: str) -> str:
    """gpustack's own Deployment after some changes (`m` the object, `pod` its pod spec, `c` its first container)."""
    sets = "".join(f"{{%- set _ = {e} -%}}\n" for e in expressions)
    return (
        "{%- set m = manifest -%}{%- set pod = m.spec.template.spec -%}{%- set c = pod.containers[0] -%}\n"
        + sets
        + "{{ manifest | toyaml }}\n"
    )


@pytest.mark.parametrize(
    "edit",
    [
        # env valueFrom, envFrom and a secret volume, each with a namespace Kubernetes does not have
        "c.env.append({'name': 'T', 'valueFrom': {'secretKeyRef': "
        "{'name': 'db', 'key': 'password', 'namespace': 'payments'}}})",
        "c.update({'envFrom': [{'secretRef': {'name': 'db', 'namespace': 'payments'}}]})",
        "pod.update({'volumes': [{'name': 's', 'secret': {'secretName': 'db', 'namespace': 'payments'}}]})",
        "pod.update({'volumes': [{'name': 's', 'projected': {'sources': [{'configMap': "
        "{'name': 'db', 'namespace': 'payments'}}]}}]})",
    ],
)
def test_a_template_cannot_name_another_namespaces_secret(tmp_path: Path, edit: str) -> None:
    code, output = template_case(tmp_path, pod_edit(edit))
    assert code == 1 and "GS606" in output, output
    assert "names namespace 'payments': a pod reads Secrets and ConfigMaps of its own namespace only" in output


def test_a_template_moved_to_another_namespace_stays_in_its_tenants(tmp_path: Path) -> None:
    template = pod_edit(
        "m.metadata.update({'namespace': 'payments'})",
        "c.env.append({'name': 'T', 'valueFrom': {'secretKeyRef': {'name': 'db', 'key': 'password'}}})",
    )
    code, output = template_case(tmp_path, template)
    assert code == 0, output
    validation = validate_path(tmp_path / "bp.yaml")
    assert validation.context is not None
    found = [m.obj for m in compile_blueprint(validation.context).objects if m.kind == "Deployment"]
    assert [o["metadata"]["namespace"] for o in found] == ["ml"]


def test_simulate_places_the_recipe_whose_nodes_state_no_disk() -> None:
    # A blueprint states no node's disk: ephemeral-storage requests are not refused for it (as cpu and memory are
    # not where nodeResources is left out); a live cluster's nodes are judged on their allocatable.
    result = CliRunner().invoke(group, ["simulate", str(RECIPE)])
    assert result.exit_code == 0, result.output
    assert "Insufficient ephemeral-storage" not in result.output
    assert "all 4 pod(s) placed" in result.output
