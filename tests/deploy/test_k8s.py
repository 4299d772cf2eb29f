#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Offline checks of deploy/k8s and deploy/k8s/stateful (kustomize bases) and deploy/compose.

Renders each base with `kubectl kustomize` when kubectl is on PATH (else loads the files and
folders the kustomizations list) and checks, with python3-yaml, what a cluster would only reveal at run
time: the GPU request, TLS and tokens from Secrets, health probes over TLS on the gRPC port,
metrics on loopback behind the TLS sidecar, a grace period longer than the drain, Prometheus
annotations, a headless Service whose selector matches the pods, a ServiceMonitor
and PodDisruptionBudget that select them, a non-root pod. The StatefulSet must have the
Deployment's pod template plus a claim mounted at --data-dir (owned by the pod's group), and
name the headless Service. The compose file gets the same kind of checks (GPU reservation,
mounts that exist, stop grace period, a named volume at --data-dir).
"""
import argparse
import copy
import os
import re
import shutil
import subprocess
import sys

import yaml


def render(k8s_dir):
    if shutil.which("kubectl"):
        out = subprocess.run(["kubectl", "kustomize", k8s_dir], capture_output=True, text=True, timeout=120)
        if out.returncode != 0:
            sys.exit(f"FAIL: kubectl kustomize: {out.stderr}")
        print("rendered with kubectl kustomize")
        return list(yaml.safe_load_all(out.stdout))
    print("kubectl not found: checked the listed resources without kustomize")
    return listed_resources(k8s_dir)


def listed_resources(k8s_dir):
    kust = yaml.safe_load(open(os.path.join(k8s_dir, "kustomization.yaml")))
    docs = []
    for res in kust["resources"]:
        path = os.path.join(k8s_dir, res)
        if os.path.isdir(path):
            docs += listed_resources(path)
        else:
            docs += list(yaml.safe_load_all(open(path)))
    return docs


def matches(selector, labels):
    return all(labels.get(k) == v for k, v in selector.items())


def flag(args, name):
    for a in args:
        m = re.match(rf"--{name}=(.*)", a)
        if m:
            return m.group(1)
    return None


def check_k8s(docs, workload_kind):
    by_kind = {}
    for d in docs:
        assert d and "kind" in d and "apiVersion" in d and d.get("metadata", {}).get("name"), d
        by_kind.setdefault(d["kind"], []).append(d)
    for kind in (workload_kind, "Service", "ServiceMonitor", "PodDisruptionBudget"):
        assert len(by_kind.get(kind, [])) == 1, f"expected one {kind}, got {len(by_kind.get(kind, []))}"
    other = {"Deployment": "StatefulSet", "StatefulSet": "Deployment"}[workload_kind]
    assert other not in by_kind, f"both a {workload_kind} and a {other}"
    dep, svc = by_kind[workload_kind][0], by_kind["Service"][0]
    mon, pdb = by_kind["ServiceMonitor"][0], by_kind["PodDisruptionBudget"][0]
    assert dep["apiVersion"] == "apps/v1" and pdb["apiVersion"] == "policy/v1"
    assert mon["apiVersion"] == "monitoring.coreos.com/v1"
    pod = dep["spec"]["template"]
    labels = pod["metadata"]["labels"]
    assert matches(dep["spec"]["selector"]["matchLabels"], labels), f"{workload_kind} selector misses its pods"
    spec = pod["spec"]
    containers = {c["name"]: c for c in spec["containers"]}
    assert set(containers) == {"gcompute", "metrics-proxy"}, set(containers)
    c, proxy = containers["gcompute"], containers["metrics-proxy"]
    args = c.get("args", []) + c.get("command", [])
    ports = {p["name"]: p["containerPort"] for p in c["ports"] + proxy["ports"]}
    listen, mlisten = flag(args, "listen"), flag(args, "metrics-listen")
    assert listen and listen.startswith("0.0.0.0:"), f"--listen {listen}: must listen on all pod addresses"
    assert int(listen.rsplit(":", 1)[1]) == ports["grpc"]
    # TLS and tokens from the Secrets; /metrics on loopback, served by the sidecar over TLS.
    assert mlisten and mlisten.startswith("127.0.0.1:"), f"--metrics-listen {mlisten}: loopback only"
    mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
    secrets = {v["name"]: v["secret"]["secretName"] for v in spec["volumes"] if "secret" in v}
    assert secrets == {"tls": "gcompute-tls", "tokens": "gcompute-tokens"}, secrets
    assert flag(args, "tls-cert") == mounts["tls"] + "/tls.crt"
    assert flag(args, "tls-key") == mounts["tls"] + "/tls.key"
    assert flag(args, "auth-tokens") == mounts["tokens"] + "/tokens"
    assert flag(proxy["args"], "upstream") == f"http://{mlisten}/"
    assert int(flag(proxy["args"], "secure-listen-address").rsplit(":", 1)[1]) == ports["metrics"]
    # GPU.
    for section in ("limits", "requests"):
        assert str(c["resources"][section].get("nvidia.com/gpu")) == "1", f"nvidia.com/gpu {section}"
    # Probes: `gcompute health` over TLS on the gRPC port (the kubelet's gRPC probes cannot
    # speak TLS); liveness must outlast the drain.
    drain = int(flag(args, "drain-seconds") or 30)
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        cmd = c[probe]["exec"]["command"]
        assert cmd[0] == "gcompute" and cmd[-1] == "health", f"{probe}: {cmd}"
        assert cmd[cmd.index("--server") + 1].endswith(f":{ports['grpc']}"), f"{probe}: {cmd}"
        assert cmd[cmd.index("--tls-ca") + 1] == mounts["tls"] + "/ca.crt", f"{probe}: {cmd}"
    live = c["livenessProbe"]
    assert live["periodSeconds"] * live["failureThreshold"] > drain, "liveness would kill a draining pod"
    grace = spec["terminationGracePeriodSeconds"]
    assert drain + 5 <= grace <= drain + 60, f"terminationGracePeriodSeconds {grace} vs --drain-seconds {drain}"
    # Prometheus annotations point at the metrics port.
    ann = pod["metadata"]["annotations"]
    assert ann["prometheus.io/scrape"] == "true" and int(ann["prometheus.io/port"]) == ports["metrics"]
    assert ann["prometheus.io/scheme"] == "https"
    # Non-root, no privilege escalation.
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert c["securityContext"]["allowPrivilegeEscalation"] is False
    # Headless Service selecting the pods, named ports that exist.
    assert svc["spec"].get("clusterIP") == "None", "Service must be headless for client-side balancing"
    assert matches(svc["spec"]["selector"], labels)
    svc_ports = {p["name"]: p for p in svc["spec"]["ports"]}
    for name in ("grpc", "metrics"):
        tp = svc_ports[name]["targetPort"]
        assert tp == name or tp == ports[name], f"Service port {name} targets {tp}"
    # ServiceMonitor selects the Service and scrapes a port it has.
    assert matches(mon["spec"]["selector"]["matchLabels"], svc["metadata"]["labels"])
    assert all(e["port"] in svc_ports for e in mon["spec"]["endpoints"])
    assert all(e["scheme"] == "https" for e in mon["spec"]["endpoints"])
    # PDB selects the pods and allows progress.
    assert matches(pdb["spec"]["selector"]["matchLabels"], labels)
    assert "maxUnavailable" in pdb["spec"] or "minAvailable" in pdb["spec"]
    print(f"k8s {workload_kind}: {len(docs)} objects OK (drain {drain} s, grace {grace} s)")
    return dep, svc


def check_stateful(stateful, deployment, svc):
    """The StatefulSet is the Deployment's pod template plus persistent --data-dir."""
    spec = stateful["spec"]
    assert spec["serviceName"] == svc["metadata"]["name"], "serviceName must be the headless Service"
    (claim,) = spec["volumeClaimTemplates"]
    assert claim["spec"]["accessModes"] == ["ReadWriteOnce"]
    assert claim["spec"]["resources"]["requests"]["storage"]
    pod = copy.deepcopy(spec["template"])
    c = next(c for c in pod["spec"]["containers"] if c["name"] == "gcompute")
    data_dir = flag(c["args"], "data-dir")
    mount = next((m for m in c["volumeMounts"] if m["name"] == claim["metadata"]["name"]), None)
    assert mount and mount["mountPath"] == data_dir and not mount.get("readOnly"), \
        f"--data-dir {data_dir} must be the claim's mount, writable: {mount}"
    run_as = pod["spec"]["securityContext"]
    assert run_as["fsGroup"] == run_as["runAsGroup"], "the claim must be writable by the server"
    # Without those additions, the pod templates are the same.
    c["args"].remove(f"--data-dir={data_dir}")
    c["volumeMounts"].remove(mount)
    for key in ("fsGroup", "fsGroupChangePolicy"):
        run_as.pop(key, None)
    assert pod == deployment["spec"]["template"], "the StatefulSet's pod template drifted from the Deployment's"
    assert deployment["spec"]["replicas"] == spec["replicas"]
    print(f"k8s StatefulSet: the Deployment's pods plus a claim at {data_dir}")


def check_compose(path):
    d = yaml.safe_load(open(path))
    base = os.path.dirname(path)
    svc = d["services"]
    assert {"gcompute", "prometheus", "grafana"} <= set(svc), set(svc)
    g = svc["gcompute"]
    (dev,) = g["deploy"]["resources"]["reservations"]["devices"]
    assert dev["driver"] == "nvidia" and "gpu" in dev["capabilities"]
    drain = int(flag(g["command"], "drain-seconds") or 30)
    grace = int(g["stop_grace_period"].rstrip("s"))
    assert grace > drain, f"stop_grace_period {grace} s <= drain {drain} s"
    # TLS and tokens from compose secrets; metrics on loopback, scraped by Prometheus from
    # inside gcompute's network namespace.
    declared = set(d["secrets"])
    assert set(g["secrets"]) <= declared
    for name in ("tls-cert", "tls-key", "auth-tokens"):
        value = flag(g["command"], name)
        assert value and value.startswith("/run/secrets/") and value.rsplit("/", 1)[1] in g["secrets"], name
    assert flag(g["command"], "metrics-listen").startswith("127.0.0.1:")
    assert svc["prometheus"]["network_mode"] == "service:gcompute"
    # Graphs and jobs on a named volume at --data-dir.
    data_dir = flag(g["command"], "data-dir")
    assert data_dir, "gcompute runs without --data-dir: a restart loses every graph"
    assert any(v.split(":")[0] in d.get("volumes", {}) and v.split(":")[1] == data_dir
               for v in g.get("volumes", [])), f"no named volume at --data-dir {data_dir}"
    for name in ("prometheus", "grafana"):
        for v in svc[name].get("volumes", []):
            src = v.split(":")[0]
            if src.startswith("."):
                assert os.path.exists(os.path.join(base, src)), f"{name} mounts missing {src}"
    print("compose: OK")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True)
    a = ap.parse_args()
    k8s = os.path.join(a.source, "deploy", "k8s")
    deployment, _ = check_k8s(render(k8s), "Deployment")
    stateful, svc = check_k8s(render(os.path.join(k8s, "stateful")), "StatefulSet")
    check_stateful(stateful, deployment, svc)
    check_compose(os.path.join(a.source, "deploy", "compose", "docker-compose.yml"))
    print("PASS")


if __name__ == "__main__":
    main()
