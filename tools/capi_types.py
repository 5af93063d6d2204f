#!/usr/bin/env python3
"""Writes the Cluster API types fixture the kubernetes driver's objects are held to.

    python3 tools/capi_types.py <cluster-api git dir> <commit> <version> \
        > tests/fixtures/capi-<version>-types.json

<cluster-api git dir> is a clone of kubernetes-sigs/cluster-api (a bare one will do), <commit>
the commit to read (the fixtures are made from ae7ff047db), <version> the served version
(v1beta1 or v1beta2). For each kind the driver writes or patches (Cluster, Machine,
MachineDeployment, KubeadmControlPlane, KubeadmConfigTemplate) it reads the
CustomResourceDefinition from the commit and keeps the version's openAPIV3Schema without
descriptions and status: type, properties, required, items, additionalProperties, format and
the x-kubernetes int-or-string and preserve-unknown-fields markers. The output is the same
bytes for the same commit and version (keys sorted, compact). Needs PyYAML.
"""

import json
import subprocess
import sys

import yaml

CRDS = {
    "bootstrap.cluster.x-k8s.io/KubeadmConfigTemplate":
        "bootstrap/kubeadm/config/crd/bases/bootstrap.cluster.x-k8s.io_kubeadmconfigtemplates.yaml",
    "cluster.x-k8s.io/Cluster": "core/config/crd/bases/cluster.x-k8s.io_clusters.yaml",
    "cluster.x-k8s.io/Machine": "core/config/crd/bases/cluster.x-k8s.io_machines.yaml",
    "cluster.x-k8s.io/MachineDeployment":
        "core/config/crd/bases/cluster.x-k8s.io_machinedeployments.yaml",
    "controlplane.cluster.x-k8s.io/KubeadmControlPlane":
        "controlplane/kubeadm/config/crd/bases/controlplane.cluster.x-k8s.io_kubeadmcontrolplanes.yaml",
}

KEEP = {
    "type", "properties", "required", "items", "additionalProperties", "format",
    "x-kubernetes-int-or-string", "x-kubernetes-preserve-unknown-fields",
}


def git(repo, *args):
    return subprocess.check_output(["git", "-C", repo, *args], text=True)


def prune(schema):
    """The schema with only the KEEP keywords, recursively."""
    out = {}
    for key, value in schema.items():
        if key not in KEEP:
            continue
        if key == "properties":
            out[key] = {name: prune(child) for name, child in value.items()}
        elif key in ("items", "additionalProperties") and isinstance(value, dict):
            out[key] = prune(value)
        else:
            out[key] = value
    return out


def main(argv):
    if len(argv) != 4:
        sys.exit(__doc__)
    repo, commit, version = argv[1:]
    short = git(repo, "rev-parse", "--short=10", commit).strip()
    tag = git(repo, "describe", "--tags", "--abbrev=0", commit).strip()
    schemas = {}
    for group_kind, path in CRDS.items():
        group, kind = group_kind.split("/")
        crd = yaml.safe_load(git(repo, "show", f"{commit}:{path}"))
        served = [v for v in crd["spec"]["versions"] if v["name"] == version and v.get("served")]
        if not served:
            sys.exit(f"{path} at {short} does not serve {version}")
        schema = prune(served[0]["schema"]["openAPIV3Schema"])
        schema.get("properties", {}).pop("status", None)
        schemas[f"{group}/{version}/{kind}"] = schema
    source = (
        f"The CustomResourceDefinitions of Cluster API at {short} (after {tag}, "
        f"config/crd/bases), served version {version}: each kind's openAPIV3Schema without "
        "descriptions and status, keeping type, properties, required, items, "
        "additionalProperties, format and the x-kubernetes int-or-string and "
        "preserve-unknown-fields markers."
    )
    doc = {"schemas": schemas, "source": source}
    sys.stdout.write(json.dumps(doc, sort_keys=True, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main(sys.argv)
