"""What a tenant's template may render (security review C1, M4, H4, M3): reproductions from the review.

Every case goes through the CLI as a user meets it: `validate` exits 1 with GS606 at the workload's `template:`
line, and `compile -o DIR` writes nothing.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from gpustack.cli import group

BASE = """\
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
    - {name: payments, namespaces: [payments], pools: [h100], quota: {h100: {gpu: 8}}, priority: critical}
  workloads:
    - name: chat
      tenant: ml
      pool: l4
      kind: Deployment
      image: vllm/vllm-openai:v0.6.3
      gpu: {count: 1}
      template: templates/t.j2
"""
TEMPLATE_LINE = 25  # the `template:` line of BASE

CLUSTER_ADMIN = """\
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: ml-is-cluster-admin
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects:
- {kind: ServiceAccount, name: default, namespace: ml}
"""

SMUGGLING_LIST = """\
apiVersion: v1
kind: List
metadata: {name: chat}
items:
- apiVersion: rbac.authorization.k8s.io/v1
  kind: RoleBinding
  metadata: {name: ml-admin-in-payments, namespace: payments}
  roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: admin}
  subjects: [{kind: Group, name: ml-team}]
- apiVersion: v1
  kind: Pod
  metadata: {name: sneaky, namespace: kube-system}
  spec:
    nodeName: gpu-node-2
    tolerations: [{operator: Exists}]
    containers: [{name: c, image: busybox, resources: {limits: {nvidia.com/gpu: "8"}}}]
"""

QUOTA_SHADOW = """\
apiVersion: v1
kind: ResourceQuota
metadata: {name: gpustack-gpu-quota}
spec: {hard: {requests.nvidia.com/gpu: "1000"}}
"""


def mutate(statement: str) -> str:
    """gpustack's own Deployment after one change (`pod` is its pod spec, `c` its first container)."""
    return (
        "{%- set pod = manifest.spec.template.spec -%}\n{%- set c = pod.containers[0] -%}\n"
        f"{{%- set _ = {statement} -%}}\n{{{{ manifest | toyaml }}}}\n"
    )


def write_case(tmp_path: Path, template: str, blueprint: str = BASE) -> Path:
    (tmp_path / "templates").mkdir(exist_ok=True)
    (tmp_path / "templates" / "t.j2").write_text(template)
    path = tmp_path / "bp.yaml"
    path.write_text(blueprint)
    return path


def refused(tmp_path: Path, template: str, blueprint: str = BASE) -> str:
    """validate's output for a template that must be refused; also checks compile writes nothing."""
    path = write_case(tmp_path, template, blueprint)
    runner = CliRunner()
    result = runner.invoke(group, ["validate", str(path)])
    assert result.exit_code == 1, result.output
    assert f"bp.yaml:{TEMPLATE_LINE}:" in result.output and "error[GS606]" in result.output
    assert "Traceback" not in result.output and "internal error" not in result.output
    out = tmp_path / "out"
    compiled = runner.invoke(group, ["compile", str(path), "-o", str(out)])
    assert compiled.exit_code == 1 and not out.exists()
    return result.output


def test_the_base_template_is_clean(tmp_path: Path) -> None:
    path = write_case(tmp_path, "{{ manifest | toyaml }}\n")
    assert CliRunner().invoke(group, ["validate", "--strict", str(path)]).exit_code == 0


def test_a_cluster_role_binding_is_refused(tmp_path: Path) -> None:
    output = refused(tmp_path, CLUSTER_ADMIN)
    assert "ClusterRoleBinding (rbac.authorization.k8s.io/v1), which a tenant's template may not emit" in output
    assert "Deployment (apps/v1)" in output  # the hint lists what is allowed


def test_a_list_smuggling_objects_into_other_namespaces_is_refused(tmp_path: Path) -> None:
    output = refused(tmp_path, SMUGGLING_LIST)
    assert "renders a List" in output and "may not render lists" in output


@pytest.mark.parametrize(
    ("api", "kind"),
    [
        ("v1", "ResourceQuota"),
        ("v1", "LimitRange"),
        ("v1", "Namespace"),
        ("v1", "Secret"),
        ("v1", "Node"),
        ("v1", "ServiceAccount"),
        ("rbac.authorization.k8s.io/v1", "Role"),
        ("scheduling.k8s.io/v1", "PriorityClass"),
        ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding"),
        ("apps/v1", "DaemonSet"),
        ("apps/v1", "DeploymentList"),
        ("v1", "Deployment"),  # a kind under the wrong group is not the allowed kind
    ],
)
def test_kinds_outside_the_allowed_set_are_refused(tmp_path: Path, api: str, kind: str) -> None:
    output = refused(tmp_path, f"apiVersion: {api}\nkind: {kind}\nmetadata: {{name: x}}\n")
    assert kind in output


def test_a_template_cannot_shadow_gpustacks_quota(tmp_path: Path) -> None:
    assert "ResourceQuota" in refused(tmp_path, QUOTA_SHADOW)


@pytest.mark.parametrize(
    ("statement", "fragment"),
    [
        ("pod.update({'nodeName': 'gpu-node-2'})", "nodeName pins the pod to node 'gpu-node-2'"),
        ("pod.update({'nodeSelector': {'gpustack.io/pool': 'h100'}})", "nodeSelector selects gpustack.io/pool h100"),
        (
            "pod.update({'nodeSelector': {'kubernetes.io/hostname': 'gpu-node-2'}})",
            "selects kubernetes.io/hostname gpu-node-2",
        ),
        (
            "pod.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms.append("
            "{'matchFields': [{'key': 'metadata.name', 'operator': 'In', 'values': ['gpu-node-2']}]})",
            "required node affinity (In) selects kubernetes.io/hostname gpu-node-2",
        ),
        (
            "pod.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms.append("
            "{'matchExpressions': [{'key': 'gpustack.io/pool', 'operator': 'Exists'}]})",
            "selects gpustack.io/pool (any value)",
        ),
        ("pod.update({'schedulerName': 'my-scheduler'})", "schedulerName 'my-scheduler'"),
        ("pod.update({'priorityClassName': 'system-node-critical'})", "priorityClassName 'system-node-critical'"),
        ("pod.update({'priorityClassName': 'gpustack-critical'})", "priorityClassName 'gpustack-critical'"),
        ("pod.update({'hostPID': true})", "hostPID is true"),
        ("pod.update({'hostNetwork': true})", "hostNetwork is true"),
        ("pod.update({'hostIPC': true})", "hostIPC is true"),
        ("pod.update({'volumes': [{'name': 'h', 'hostPath': {'path': '/'}}]})", "volumes[0] is a hostPath volume"),
        ("c.env.append({'name': 'NVIDIA_VISIBLE_DEVICES', 'value': 'all'})", "env sets NVIDIA_VISIBLE_DEVICES"),
        ("c.env.append({'name': 'NVIDIA_MIG_CONFIG_DEVICES', 'value': 'all'})", "env sets NVIDIA_MIG_CONFIG_DEVICES"),
        (
            "c.update({'volumeMounts': [{'name': 'x', 'mountPath': '/var/run/nvidia-container-devices/all'}]})",
            "mounts /var/run/nvidia-container-devices/all",
        ),
    ],
)
def test_pod_spec_rules_of_the_admission_policy_hold_in_templates(
    tmp_path: Path, statement: str, fragment: str
) -> None:
    assert fragment in refused(tmp_path, mutate(statement))


@pytest.mark.parametrize(
    "statement",
    [
        "pod.update({'priorityClassName': 'gpustack-low'})",  # a lower class of gpustack's own is fine
        "pod.update({'nodeSelector': {'gpustack.io/pool': 'l4', 'example.com/zone': 'a'}})",
        "c.env.append({'name': 'NVIDIA_DRIVER_CAPABILITIES', 'value': 'compute,utility,video'})",
        "pod.update({'schedulerName': 'default-scheduler'})",
    ],
)
def test_what_the_pool_allows_stays_allowed(tmp_path: Path, statement: str) -> None:
    path = write_case(tmp_path, mutate(statement))
    result = CliRunner().invoke(group, ["validate", "--strict", str(path)])
    assert result.exit_code == 0, result.output


def test_driver_capabilities_need_a_gpu_request(tmp_path: Path) -> None:
    statement = (
        "c.resources.update({'requests': {'cpu': '1'}, 'limits': {'cpu': '1'}}) or "
        "c.env.append({'name': 'NVIDIA_DRIVER_CAPABILITIES', 'value': 'all'})"
    )
    assert "NVIDIA_DRIVER_CAPABILITIES in a pod that requests no GPU" in refused(tmp_path, mutate(statement))


def test_a_service_with_external_ips_is_refused(tmp_path: Path) -> None:
    service = "apiVersion: v1\nkind: Service\nmetadata: {name: s}\n"
    service += "spec: {externalIPs: [8.8.8.8], ports: [{port: 53}]}\n"
    assert "externalIPs" in refused(tmp_path, service)


OTHER = """\
    - name: other
      tenant: ml
      pool: l4
      kind: Deployment
      image: vllm/vllm-openai:v0.6.3
      gpu: {count: 1}
"""


def test_a_rendered_object_may_not_take_a_generated_objects_identity(tmp_path: Path) -> None:
    template = "{%- set _ = manifest.metadata.update({'name': 'other'}) -%}{{ manifest | toyaml }}\n"
    output = refused(tmp_path, template, BASE + OTHER)
    assert "renders Deployment 'other' in namespace 'ml', which another object of the output already is" in output


def test_two_templates_may_not_render_the_same_object(tmp_path: Path) -> None:
    second = OTHER + "      template: templates/t.j2\n"
    template = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: shared}\ndata: {a: b}\n"
    path = write_case(tmp_path, template, BASE + second)
    result = CliRunner().invoke(group, ["validate", str(path)])
    assert result.exit_code == 1 and result.output.count("error[GS606]") == 1
    assert "ConfigMap 'shared' in namespace 'ml'" in result.output


def test_diff_refuses_a_cluster_admin_template_instead_of_flagging_nothing(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    before = write_case(tmp_path / "a", "{{ manifest | toyaml }}\n")
    after = write_case(tmp_path / "b", CLUSTER_ADMIN)
    result = CliRunner().invoke(group, ["diff", str(before), str(after), "--fail-on", "high"])
    # diff's exit code for a side it cannot review (was: 0, "no risk flagged")
    assert result.exit_code == 2 and "error[GS606]" in result.output and "nothing to review" in result.output


@pytest.mark.parametrize(
    "variable", ["NVIDIA_VISIBLE_DEVICES", "NVIDIA_MIG_CONFIG_DEVICES", "NVIDIA_MIG_MONITOR_DEVICES"]
)
def test_device_env_in_the_blueprint_is_gs602(tmp_path: Path, variable: str) -> None:
    blueprint = BASE.replace("      template: templates/t.j2\n", f"      env: {{{variable}: all}}\n")
    path = write_case(tmp_path, "", blueprint)
    result = CliRunner().invoke(group, ["validate", str(path)])
    assert result.exit_code == 1 and "bp.yaml:25:" in result.output and "error[GS602]" in result.output
    assert variable in result.output
