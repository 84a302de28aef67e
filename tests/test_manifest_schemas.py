"""The test-support checker itself: it must catch what it exists to catch, and never pass what it cannot check."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import manifest_schemas as ms
import pytest
import yaml

VERSIONS = ("1.30", "1.31", ms.newest_version())


def deployment() -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "llm", "namespace": "search", "labels": {"app": "llm"}},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "llm"}},
            "template": {
                "metadata": {"labels": {"app": "llm"}},
                "spec": {
                    "tolerations": [{"key": "gpu-pool", "operator": "Equal", "value": "a", "effect": "NoSchedule"}],
                    "affinity": {
                        "nodeAffinity": {
                            "requiredDuringSchedulingIgnoredDuringExecution": {
                                "nodeSelectorTerms": [
                                    {
                                        "matchExpressions": [
                                            {"key": "gpustack.io/pool", "operator": "In", "values": ["a"]}
                                        ]
                                    }
                                ]
                            }
                        }
                    },
                    "containers": [
                        {
                            "name": "llm",
                            "image": "vllm:1",
                            "resources": {
                                "requests": {"cpu": "4", "nvidia.com/gpu": "1"},
                                "limits": {"cpu": "4", "nvidia.com/gpu": "1"},
                            },
                        }
                    ],
                },
            },
        },
    }


def volcano_job() -> dict[str, Any]:
    pod = {"spec": {"restartPolicy": "Never", "containers": [{"name": "w", "image": "pytorch:1"}]}}
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "ddp", "namespace": "research"},
        "spec": {
            "schedulerName": "volcano",
            "minAvailable": 2,
            "tasks": [{"name": "w", "replicas": 2, "template": pod}],
        },
    }


def queue() -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": "team-a"},
        "spec": {"weight": 1, "reclaimable": True, "capability": {"nvidia.com/gpu": 8}},
    }


@pytest.mark.parametrize("version", VERSIONS)
def test_a_good_deployment_passes(version: str) -> None:
    assert ms.core_errors(deployment(), version) == []
    assert ms.validate_any(deployment(), version) == []


def test_bundled_versions_cover_what_the_tests_use() -> None:
    versions = ms.bundled_versions()
    assert "1.30" in versions and "1.31" in versions
    assert versions == tuple(sorted(versions, key=lambda v: tuple(map(int, v.split(".")))))


@pytest.mark.parametrize("version", VERSIONS)
def test_strict_mode_catches_tolerationz(version: str) -> None:
    obj = deployment()
    spec = obj["spec"]["template"]["spec"]
    spec["tolerationz"] = spec.pop("tolerations")
    [error] = ms.core_errors(obj, version)
    assert "Deployment/llm $.spec.template.spec" in error and "'tolerationz' was unexpected" in error


def test_a_bool_label_is_caught() -> None:
    obj = deployment()
    obj["metadata"]["labels"]["gpu"] = True
    errors = ms.validate_any(obj, "1.31")
    assert any("$.metadata.labels.gpu" in e and "True is not of type 'string'" in e for e in errors)


def test_all_errors_are_reported_not_only_the_first() -> None:
    obj = deployment()
    obj["spec"]["replicas"] = "2"
    obj["spec"]["template"]["spec"]["tolerationz"] = []
    obj["metadata"]["labels"]["gpu"] = True
    errors = ms.core_errors(obj, "1.31")
    assert len(errors) == 3
    assert errors == sorted(errors)


def test_validators_are_built_once_per_version_and_kind() -> None:
    ms.core_errors(deployment(), "1.31")
    before = ms._core_validator.cache_info()
    for _ in range(20):
        ms.core_errors(deployment(), "1.31")
    after = ms._core_validator.cache_info()
    assert after.misses == before.misses and after.hits == before.hits + 20


@pytest.mark.parametrize("version", ["1.20", "1.99", "latest"])
def test_an_unbundled_version_is_an_error_not_a_pass(version: str) -> None:
    [error] = ms.core_errors(deployment(), version)
    assert version in error


def test_an_unknown_core_kind_is_an_error() -> None:
    obj = {"apiVersion": "v1", "kind": "Podd", "metadata": {"name": "x"}}
    [error] = ms.validate_any(obj, "1.31")
    assert "unknown kind" in error


def test_an_unknown_crd_kind_is_an_error() -> None:
    obj = {"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor", "metadata": {"name": "dcgm"}}
    [error] = ms.validate_any(obj, "1.31")
    assert "unknown kind" in error and "ServiceMonitor" in error


def test_crd_kinds_never_go_to_kubernetes_validate() -> None:
    # kubernetes-validate 1.37 would map a Volcano PodGroup onto the core scheduling.k8s.io PodGroup schema.
    podgroup = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup", "metadata": {"name": "g"}}
    [error] = ms.core_errors(podgroup, "1.37")
    assert "CRD" in error
    [error] = ms.validate_any(podgroup, "1.37")
    assert "PodGroup" in error  # no CRD file for it: an error, never a pass against the wrong schema


def test_a_schema_for_a_different_group_is_not_used() -> None:
    # Same file name as the core scheduling.k8s.io PodGroup (the domain is dropped from file names).
    podgroup = {"apiVersion": "scheduling.example.com/v1beta1", "kind": "PodGroup", "metadata": {"name": "g"}}
    [error] = ms.core_errors(podgroup, "1.37")
    assert "unknown kind" in error


def test_apiserver_rules_the_schemas_do_not_carry() -> None:
    obj = deployment()
    spec = obj["spec"]["template"]["spec"]
    spec["tolerations"] = [{"key": "gpu", "operator": "Exist", "effect": "NoSchedul"}]
    expression = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    expression["nodeSelectorTerms"][0]["matchExpressions"][0]["operator"] = "in"
    spec["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = "2"
    obj["metadata"]["name"] = "LLM_Inference"
    assert ms.core_errors(obj, "1.31") == []  # the bundled schemas have no enums and no name rules
    errors = "\n".join(ms.validate_any(obj, "1.31"))
    for expected in ("'Exist'", "'NoSchedul'", "'in'", "must equal its limit", "'LLM_Inference'"):
        assert expected in errors


def test_extended_resources_need_limits_and_whole_numbers() -> None:
    obj = deployment()
    resources = obj["spec"]["template"]["spec"]["containers"][0]["resources"]
    resources["requests"]["nvidia.com/gpu"] = "0.5"
    del resources["limits"]["nvidia.com/gpu"]
    errors = "\n".join(ms.apiserver_errors(obj))
    assert "limit must be set" in errors and "whole number" in errors


def test_scope_of_core_kinds() -> None:
    namespaced = deployment()
    del namespaced["metadata"]["namespace"]
    assert any("set metadata.namespace" in e for e in ms.validate_any(namespaced, "1.31"))
    cluster = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a", "namespace": "b"}}
    assert any("cluster-scoped" in e for e in ms.validate_any(cluster, "1.31"))


# --- CRDs (upstream files in ../shared/conformance/crds) ------------------------------------------------------------


@pytest.mark.conformance
def test_a_good_volcano_job_and_queue_pass() -> None:
    ms.skip_without_crds()
    assert ms.crd_errors(volcano_job(), "batch.volcano.sh_jobs.yaml") == []
    assert ms.validate_any(volcano_job(), "1.31") == []
    assert ms.validate_any(queue(), "1.31") == []


@pytest.mark.conformance
def test_volcano_job_min_available_below_zero_is_caught() -> None:
    ms.skip_without_crds()
    job = volcano_job()
    job["spec"]["minAvailable"] = -1
    [error] = ms.validate_any(job, "1.31")
    assert "$.spec.minAvailable" in error and "-1 is less than the minimum of 0" in error


@pytest.mark.conformance
def test_volcano_job_pod_template_is_strict_too() -> None:
    ms.skip_without_crds()
    job = volcano_job()
    job["spec"]["tasks"][0]["template"]["spec"]["tolerationz"] = []
    job["spec"]["tasks"][0]["replica"] = 2
    errors = "\n".join(ms.crd_errors(job, "batch.volcano.sh_jobs.yaml"))
    assert "'tolerationz' was unexpected" in errors and "'replica' was unexpected" in errors


@pytest.mark.conformance
def test_queue_typo_is_caught() -> None:
    ms.skip_without_crds()
    obj = queue()
    obj["spec"]["wieght"] = obj["spec"].pop("weight")
    [error] = ms.validate_any(obj, "1.31")
    assert "Queue/team-a $.spec" in error and "'wieght' was unexpected" in error


@pytest.mark.conformance
def test_queue_is_cluster_scoped_and_metadata_is_typed() -> None:
    ms.skip_without_crds()
    obj = queue()
    obj["metadata"]["namespace"] = "team-a"
    obj["metadata"]["labels"] = {"gpu": True}
    obj["metadata"]["lables"] = {}
    errors = "\n".join(ms.validate_any(obj, "1.31"))
    assert "cluster-scoped" in errors
    assert "True is not of type 'string'" in errors
    assert "'lables' was unexpected" in errors


@pytest.mark.conformance
def test_wrong_api_version_or_kind_for_the_crd() -> None:
    ms.skip_without_crds()
    obj = volcano_job()
    obj["apiVersion"] = "batch.volcano.sh/v1beta9"
    [error] = ms.crd_errors(obj, "batch.volcano.sh_jobs.yaml")
    assert "no version v1beta9" in error
    [error] = ms.crd_errors(queue(), "batch.volcano.sh_jobs.yaml")
    assert "not scheduling.volcano.sh Queue" in error


@pytest.mark.conformance
def test_kueue_cel_rules_are_evaluated() -> None:
    ms.skip_without_crds()
    flavor = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ResourceFlavor",
        "metadata": {"name": "a100"},
        "spec": {
            "nodeLabels": {"gpustack.io/pool": "a100"},
            "nodeTaints": [{"key": "gpustack.io/pool", "value": "a100", "effect": "NoSchedule"}],
        },
    }
    assert ms.validate_any(flavor, "1.31") == []
    flavor["spec"]["nodeTaints"][0]["effect"] = "NoSchedul"
    [error] = ms.validate_any(flavor, "1.31")
    assert "$.spec.nodeTaints" in error and "supported taint effect values" in error and "CEL" in error


@pytest.mark.conformance
def test_kueue_cluster_queue_rules() -> None:
    ms.skip_without_crds()
    cluster_queue = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": "team-a"},
        "spec": {
            "namespaceSelector": {},
            "resourceGroups": [
                {
                    "coveredResources": ["nvidia.com/gpu"],
                    "flavors": [{"name": "a100", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 8}]}],
                }
            ],
        },
    }
    assert ms.validate_any(cluster_queue, "1.31") == []
    borrowing = copy.deepcopy(cluster_queue)
    borrowing["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["borrowingLimit"] = 4
    assert any("borrowingLimit must be nil when cohort is empty" in e for e in ms.validate_any(borrowing, "1.31"))
    uncovered = copy.deepcopy(cluster_queue)
    uncovered["spec"]["resourceGroups"][0]["coveredResources"].append("cpu")
    assert any("same number of resources" in e for e in ms.validate_any(uncovered, "1.31"))
    duplicate = copy.deepcopy(cluster_queue)
    flavors = duplicate["spec"]["resourceGroups"][0]["flavors"]
    flavors.append(copy.deepcopy(flavors[0]))
    assert any("duplicate entry" in e for e in ms.validate_any(duplicate, "1.31"))


@pytest.mark.conformance
def test_transition_rules_do_not_apply_on_create() -> None:
    ms.skip_without_crds()
    local_queue = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "LocalQueue",
        "metadata": {"name": "default", "namespace": "team-a"},
        "spec": {"clusterQueue": "team-a"},
    }
    assert ms.validate_any(local_queue, "1.31") == []
    del local_queue["metadata"]["namespace"]
    assert any("namespaced" in e for e in ms.validate_any(local_queue, "1.31"))


def write_crd(tmp_path: Path, rule: str, message: str = "quota too small") -> Path:
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.x-k8s.io"},
        "spec": {
            "group": "example.x-k8s.io",
            "scope": "Cluster",
            "names": {"kind": "Widget", "plural": "widgets"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "apiVersion": {"type": "string"},
                                "kind": {"type": "string"},
                                "metadata": {"type": "object"},
                                "spec": {
                                    "type": "object",
                                    "properties": {
                                        "size": {"type": "string", "nullable": True},
                                        "count": {"type": "integer", "minimum": 0, "exclusiveMinimum": True},
                                        "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                                    },
                                    "x-kubernetes-validations": [{"rule": rule, "message": message}],
                                },
                            },
                        }
                    },
                }
            ],
        },
    }
    path = tmp_path / "widgets.yaml"
    path.write_text(yaml.safe_dump(crd))
    return path


def widget(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "example.x-k8s.io/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": spec}


def test_a_rule_cel_python_cannot_evaluate_is_reported_never_passed(tmp_path: Path) -> None:
    # Kubernetes' quantity() library is not in cel-python.
    path = write_crd(tmp_path, "quantity(self.size).isGreaterThan(quantity('1'))")
    [error] = ms.crd_errors(widget(size="2"), path)
    assert "not evaluated" in error and "quantity" in error


def test_a_failing_rule_reports_its_message_and_a_passing_rule_nothing(tmp_path: Path) -> None:
    path = write_crd(tmp_path, "self.count > 2")
    assert ms.crd_errors(widget(count=3), path) == []
    [error] = ms.crd_errors(widget(count=2), path)
    assert "quota too small" in error and "$.spec" in error


def test_openapi_conversion(tmp_path: Path) -> None:
    path = write_crd(tmp_path, "true")
    assert ms.crd_errors(widget(size=None, count=1, extra={"anything": {"goes": 1}}), path) == []  # nullable, preserve
    [error] = ms.crd_errors(widget(count=0), path)  # OpenAPI's boolean exclusiveMinimum
    assert "count" in error
    [error] = ms.crd_errors(widget(colour="red"), path)
    assert "'colour' was unexpected" in error
    [error] = ms.crd_errors({**widget(), "apiVersion": "example.x-k8s.io/v2"}, path)
    assert "no version v2" in error


def test_missing_crd_file_is_an_error(tmp_path: Path) -> None:
    [error] = ms.crd_errors(widget(), tmp_path / "absent.yaml")
    assert "not found" in error
