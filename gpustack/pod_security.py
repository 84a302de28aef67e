"""What a pod a workload template renders may not do to the node it lands on: the Pod Security Standards'
"baseline" profile, applied at compile time (H4, N11), and no way to GPUs around the device plugin.

A template may add what gpustack does not model, never what breaks out of the container: the generated pods keep
these rules (see workloads.py), and a tenant's template is held to them on every pod spec its object carries,
init and ephemeral containers included. The baseline's controls, field for field
(https://kubernetes.io/docs/concepts/security/pod-security-standards/#baseline): HostProcess, host namespaces,
privileged containers, capabilities, hostPath volumes, host ports, AppArmor, SELinux, /proc mount type, seccomp
and sysctls. Stricter here than the baseline: no capability may be added at all (gpustack drops ALL), no
privilege escalation, and no `runtimeClassName` (the blueprint names no runtime class; the GPU Operator's runtime
honours the device env below). `shareProcessNamespace` and `runAsUser: 0` are not baseline controls (restricted
is not applied): they stay allowed.

The NVIDIA container toolkit reads device env (NVIDIA_VISIBLE_DEVICES...) and mounts under its device folder as a
device request wherever it honours env: a container that sets one gets GPUs without a request, outside the device
plugin and every quota. So no container may set those names: not by `env`, nor through `envFrom` of a ConfigMap or
Secret of the output (with its `prefix`), and no ConfigMap a template renders may hold them.

A pod reads Secrets and ConfigMaps of its own namespace only (env `valueFrom`, `envFrom`, volumes), and gpustack
forces a template's namespace to its tenant's: a reference that names a namespace anyway is refused.
"""

from __future__ import annotations

import posixpath
from typing import Any, NamedTuple

from gpustack.names import DEVICE_ENV, DEVICE_MOUNT_ROOT, GPU_ONLY_ENV
from gpustack.offers import RESOURCE_PREFIX
from gpustack.plan import Object
from gpustack.template_kinds import PodTemplate, at, containers, kind_of, listed, pod_templates

BASELINE_SYSCTLS = frozenset(
    {
        "kernel.shm_rmid_forced",
        "net.ipv4.ip_local_port_range",
        "net.ipv4.ip_unprivileged_port_start",
        "net.ipv4.tcp_syncookies",
        "net.ipv4.ping_group_range",
        "net.ipv4.ip_local_reserved_ports",
        "net.ipv4.tcp_keepalive_time",
        "net.ipv4.tcp_fin_timeout",
        "net.ipv4.tcp_keepalive_intvl",
        "net.ipv4.tcp_keepalive_probes",
    }
)
BASELINE_SELINUX_TYPES = ("", "container_t", "container_init_t", "container_kvm_t", "container_engine_t")
SECCOMP_ANNOTATION_POD = "seccomp.security.alpha.kubernetes.io/pod"
SECCOMP_ANNOTATION_CONTAINER = "container.seccomp.security.alpha.kubernetes.io/"
APPARMOR_ANNOTATION = "container.apparmor.security.beta.kubernetes.io/"
HOST = "a pod that shares the node's namespaces or files can see and reach every GPU process on it"
HARDENING = "keep gpustack's securityContext (allowPrivilegeEscalation: false, capabilities: {drop: [ALL]})"
BASELINE_HINT = (
    "the Pod Security Standards' baseline profile refuses it: drop the field, or keep gpustack's "
    "`securityContext` (seccomp RuntimeDefault)"
)
DEVICE_HINT = "drop it: the device plugin hands the container exactly the GPUs it requests"


def device_name(name: Any) -> str | None:
    """The device env key a name is, read as leniently as a runtime might (case, surrounding blanks); or None."""
    if not isinstance(name, str):
        return None
    key = name.strip().upper()
    return key if key in DEVICE_ENV or key in GPU_ONLY_ENV else None


def requests_gpu(spec: Any) -> bool:
    for _label, container in containers(spec):
        resources = container.get("resources")
        resources = resources if isinstance(resources, dict) else {}
        if isinstance(resources.get("claims"), list) and resources["claims"]:
            return True  # a DRA pool's container gets its GPUs through the pod's claim, not an extended resource
        for side in ("requests", "limits"):
            amounts = resources.get(side)
            if isinstance(amounts, dict) and any(str(name).startswith(RESOURCE_PREFIX) for name in amounts):
                return True
    return False


def _device_key_problem(where: str, key: str, *, gpu_pod: bool, spelled: str = "") -> tuple[str, str] | None:
    named = f"{key} (as {spelled!r})" if spelled and spelled != key else key
    if key in DEVICE_ENV:
        return (f"{where} sets {named}: it can give the container GPUs it never requested", DEVICE_HINT)
    if not gpu_pod:
        return (f"{where} sets {named} in a pod that requests no GPU", DEVICE_HINT)
    return None


def _device_problems(label: str, container: dict[str, Any], *, gpu_pod: bool) -> list[tuple[str, str]]:
    """Env and mounts the NVIDIA container toolkit reads as a device request (H4)."""
    problems = []
    for item in listed(container.get("env")):
        name = item.get("name") if isinstance(item, dict) else None
        key = device_name(name)
        if key is not None:
            found = _device_key_problem(f"{label} env", key, gpu_pod=gpu_pod, spelled=str(name))
            problems += [found] if found is not None else []
        elif name == "CUDA_VISIBLE_DEVICES":
            problems.append(
                (
                    f"{label} env sets CUDA_VISIBLE_DEVICES, which fights the device plugin's GPU assignment",
                    "drop CUDA_VISIBLE_DEVICES: the device plugin exposes exactly the allocated GPUs",
                )
            )
    for item in listed(container.get("volumeMounts")):
        path = str(item.get("mountPath", "")) if isinstance(item, dict) else ""
        normal = posixpath.normpath("/" + path.lstrip("/")) if path else ""
        if normal == DEVICE_MOUNT_ROOT or normal.startswith(DEVICE_MOUNT_ROOT + "/"):
            problems.append((f"{label} mounts {path}: the toolkit reads mounts there as a device request", DEVICE_HINT))
    return problems


def _security_problems(label: str, security: Any) -> list[tuple[str, str]]:
    """A container's (label) or the pod's ('pod') securityContext against the baseline."""
    if not isinstance(security, dict):
        return []
    problems = []
    seccomp = at(security, "seccompProfile", "type")
    if seccomp == "Unconfined":
        problems.append((f"{label} securityContext.seccompProfile.type is Unconfined", BASELINE_HINT))
    apparmor = at(security, "appArmorProfile", "type")
    if apparmor not in (None, "RuntimeDefault", "Localhost"):
        problems.append((f"{label} securityContext.appArmorProfile.type is {apparmor}", BASELINE_HINT))
    selinux = security.get("seLinuxOptions")
    if isinstance(selinux, dict):
        if selinux.get("type") not in (None, *BASELINE_SELINUX_TYPES):
            problems.append((f"{label} securityContext.seLinuxOptions.type is {selinux.get('type')}", BASELINE_HINT))
        for field_name in ("user", "role"):
            if selinux.get(field_name) not in (None, ""):
                problems.append((f"{label} securityContext.seLinuxOptions.{field_name} is set", BASELINE_HINT))
    if at(security, "windowsOptions", "hostProcess") is True:
        problems.append((f"{label} securityContext.windowsOptions.hostProcess is true: {HOST}", BASELINE_HINT))
    return problems


def _container_problems(label: str, container: dict[str, Any]) -> list[tuple[str, str]]:
    security = container.get("securityContext")
    problems = _security_problems(label, security)
    security = security if isinstance(security, dict) else {}
    if security.get("privileged") is True:
        problems.append((f"{label} securityContext.privileged is true: a privileged pod sees every GPU", HARDENING))
    if security.get("allowPrivilegeEscalation") is True:
        problems.append((f"{label} securityContext.allowPrivilegeEscalation is true", HARDENING))
    added = at(security, "capabilities", "add")
    if added:
        problems.append((f"{label} securityContext.capabilities.add adds {added}", HARDENING))
    if security.get("procMount") not in (None, "Default"):
        problems.append((f"{label} securityContext.procMount is {security['procMount']}", BASELINE_HINT))
    for index, port in enumerate(listed(container.get("ports"))):
        host_port = port.get("hostPort") if isinstance(port, dict) else None
        if host_port not in (None, 0):
            problems.append(
                (
                    f"{label} ports[{index}].hostPort is {host_port}: it opens the port on the node's own address",
                    "drop hostPort; expose the workload through a Service",
                )
            )
    return problems


def _annotation_problems(metadata: Any) -> list[tuple[str, str]]:
    """The seccomp and AppArmor annotations older kubelets read, against the baseline."""
    annotations = at(metadata, "annotations")
    problems = []
    for key, value in annotations.items() if isinstance(annotations, dict) else []:
        key = str(key)
        if (key == SECCOMP_ANNOTATION_POD or key.startswith(SECCOMP_ANNOTATION_CONTAINER)) and value == "unconfined":
            problems.append((f"annotation {key} is unconfined", BASELINE_HINT))
        if key.startswith(APPARMOR_ANNOTATION) and not (
            value in ("", "runtime/default") or (isinstance(value, str) and value.startswith("localhost/"))
        ):
            problems.append((f"annotation {key} is {value!r}", BASELINE_HINT))
    return problems


def pod_problems(template: PodTemplate) -> list[tuple[str, str]]:
    """Every baseline and device-access rule one pod template breaks."""
    spec = template.spec
    if not isinstance(spec, dict):
        return []
    problems = _annotation_problems(template.metadata)
    for field_name in ("hostPID", "hostIPC", "hostNetwork"):
        if spec.get(field_name) is True:
            problems.append((f"{field_name} is true: {HOST}", f"drop {field_name}"))
    for index, volume in enumerate(listed(spec.get("volumes"))):
        if isinstance(volume, dict) and "hostPath" in volume:
            problems.append((f"volumes[{index}] is a hostPath volume: {HOST}", "use an emptyDir or a PVC"))
        problems += _namespaced_refs(f"volumes[{index}]", volume)
    if spec.get("runtimeClassName") not in (None, ""):
        problems.append(
            (
                f"runtimeClassName is {spec['runtimeClassName']!r}, a runtime the blueprint does not name",
                "drop runtimeClassName: gpustack's pods run under the nodes' default runtime",
            )
        )
    problems += _security_problems("pod", spec.get("securityContext"))
    for index, sysctl in enumerate(listed(at(spec, "securityContext", "sysctls"))):
        name = sysctl.get("name") if isinstance(sysctl, dict) else None
        if name not in BASELINE_SYSCTLS:
            problems.append(
                (f"pod securityContext.sysctls[{index}] sets {name}, not a namespaced safe sysctl", BASELINE_HINT)
            )
    gpu_pod = requests_gpu(spec)
    for label, container in containers(spec):
        problems += _container_problems(label, container)
        problems += _device_problems(label, container, gpu_pod=gpu_pod)
        problems += _prefix_problems(label, container)
        problems += _namespaced_refs(label, {"env": container.get("env"), "envFrom": container.get("envFrom")})
    return problems


# Where a pod names a Secret or ConfigMap: env valueFrom, envFrom, and secret, configMap and projected volumes.
_REF_FIELDS = frozenset({"secretKeyRef", "configMapKeyRef", "secretRef", "configMapRef", "secret", "configMap"})


def _namespaced_refs(label: str, node: Any) -> list[tuple[str, str]]:
    """A reference to a Secret or ConfigMap that names a namespace. Kubernetes has no such field: a pod reads only
    its own namespace's, and gpustack puts a tenant's pods in the tenant's namespaces. Written anyway, it is a
    tenant reaching for another namespace's Secret, and is refused rather than left to the API server's warning."""
    found: list[tuple[str, str]] = []
    stack: list[tuple[str, Any]] = [(label, node)]
    while stack:
        where, value = stack.pop()
        if isinstance(value, dict):
            for key, child in value.items():
                if key in _REF_FIELDS and isinstance(child, dict) and "namespace" in child:
                    found.append(
                        (
                            f"{where} {key} names namespace {child['namespace']!r}: a pod reads Secrets and "
                            "ConfigMaps of its own namespace only",
                            "drop the namespace; put the Secret or ConfigMap in the tenant's namespace",
                        )
                    )
                stack.append((where, child))
        elif isinstance(value, list):
            stack.extend((where, child) for child in value)
    return found


def _prefix_problems(label: str, container: dict[str, Any]) -> list[tuple[str, str]]:
    """An `envFrom` prefix that starts a device env key: with a key such as VISIBLE_DEVICES in a ConfigMap or Secret
    the checks cannot read (one made outside gpustack), it spells the device env."""
    problems = []
    for index, item in enumerate(listed(container.get("envFrom"))):
        prefix = at(item, "prefix")
        start = prefix.strip().upper() if isinstance(prefix, str) else ""
        if start and any(key.startswith(start) for key in (*DEVICE_ENV, *GPU_ONLY_ENV)):
            problems.append(
                (f"{label} envFrom[{index}] prefix {prefix!r} starts a device env name", f"{DEVICE_HINT}; rename it")
            )
    return problems


def configmap_problems(obj: Object) -> list[tuple[str, str]]:
    """A rendered ConfigMap may not hold device env: `envFrom` would hand it to a container as env."""
    if kind_of(obj) != ("v1", "ConfigMap"):
        return []
    data = obj.get("data")
    return [
        (f"with data key {key!r}: `envFrom` turns it into device env {found} in any pod of the namespace", DEVICE_HINT)
        for key in (data if isinstance(data, dict) else {})
        if (found := device_name(key)) in DEVICE_ENV
    ]


class EnvSource(NamedTuple):
    """One `envFrom` entry of a container: the ConfigMap or Secret it reads, and the prefix it puts on each key."""

    where: str  # field path of the pod spec, then the container
    kind: str  # ConfigMap or Secret
    name: str
    prefix: str
    gpu_pod: bool


def env_sources(obj: Object) -> list[EnvSource]:
    found = []
    for template in pod_templates(obj):
        gpu_pod = requests_gpu(template.spec)
        for label, container in containers(template.spec):
            for index, item in enumerate(listed(container.get("envFrom"))):
                item = item if isinstance(item, dict) else {}
                prefix = raw if isinstance(raw := item.get("prefix"), str) else ""
                for field_name, kind in (("configMapRef", "ConfigMap"), ("secretRef", "Secret")):
                    name = at(item, field_name, "name")
                    if isinstance(name, str):
                        where = f"{template.spec_path}: {label} envFrom[{index}]"
                        found.append(EnvSource(where, kind, name, prefix, gpu_pod))
    return found


def env_keys(obj: Object) -> list[str]:
    """The keys a ConfigMap or Secret hands to `envFrom` (binaryData never becomes env)."""
    fields = ("data",) if obj.get("kind") == "ConfigMap" else ("data", "stringData")
    return [str(key) for field_name in fields if isinstance(obj.get(field_name), dict) for key in obj[field_name]]


def env_from_problems(source: EnvSource, target: Object, owner: str) -> list[tuple[str, str]]:
    """The device env a container would get through `source` from `target`, an object of the same output that
    workload `owner` makes."""
    problems = []
    for key in env_keys(target):
        found = device_name(source.prefix + key)
        if found is None:
            continue
        prefixed = f" with prefix {source.prefix!r}" if source.prefix else ""
        via = f"{source.where} reads {source.kind} '{source.name}' of workload '{owner}' (key {key!r}{prefixed}), which"
        problem = _device_key_problem(via, found, gpu_pod=source.gpu_pod)
        if problem is not None:
            problems.append(problem)
    return problems
