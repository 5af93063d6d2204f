#!/usr/bin/env python3
"""The cluster registry (`/apis`) driven by the official Python `kubernetes` client.

For each backend (SQLite in a temporary directory, and a fresh PostgreSQL database) it starts
`fleetyard serve` in no-auth mode on a free 127.0.0.1 port (the `Server`, `psql` and
`pg_database_url` helpers of tools/fuzz_api.py) and runs every check below against it with
`kubernetes.dynamic.DynamicClient` and `kubernetes.client.CustomObjectsApi`, as a controller
written in Python would use a real kube-apiserver serving the registry as a CRD. The no-auth
identity is the `[noauth]` default (project `admin`, roles admin,member,reader), so every
object lives in the namespace `admin`; each check uses its own object names and a label of its
own (`conformance.fleetyard.io/check=<check>`), so checks do not see each other's objects.

Checks (one line each: PASS, FAIL, XFAIL, or XPASS for an expected failure that passed):
  discovery                  ApisApi and the DynamicClient's discoverer find both groups,
                             `clusters` (namespaced, every verb, the status subresource) and
                             `clusterprofiles` (get, list, watch); /version says 1.32
  dynamic-crud               create, get, replace (a stale resourceVersion is 409 Conflict),
                             delete, then GET is 404
  dynamic-list               label_selector (=, !=, in, notin, exists), field_selector
                             metadata.name, limit/_continue pages in name order
  dynamic-patch              merge and JSON patch (`content_type` set); strategic merge is 415
  dynamic-apply              server-side apply with `field_manager`: create, then update;
                             without a field manager it is 422
  apply-conflicts            two field managers' applies keep their own fields (managedFields);
                             a second manager's apply of a field the first one owns is 409
                             Conflict with the API server's message and causes;
                             force_conflicts=True takes it over; the same with kubectl apply
                             --server-side --field-manager and --force-conflicts
  replace-needs-resourceversion
                             PUT without metadata.resourceVersion is 422 (a CRD has no
                             unconditional update)
  generation                 1 on create; metadata and status writes leave it, a spec change
                             moves it (a CRD with a status subresource); DynamicClient patch of
                             clusters/status
  field-validation           field_validation=Strict: an unknown field is 400 and nothing is
                             created; Ignore drops it
  deletecollection           DynamicClient delete without a name and with a label selector
                             (dry_run="All" first: nothing goes), and
                             delete_collection_namespaced_custom_object
  request-checks             400 for a body whose namespace, kind or (PUT) name is not the
                             request's; generateName; stale uid/resourceVersion
                             preconditions in V1DeleteOptions are 409 and delete nothing
  dry-run-writes             dry_run="All" on create, patch and replace writes nothing
  custom-objects             CustomObjectsApi create/get/list/patch/delete_namespaced_custom_object
  status-subresource         patch/get_namespaced_custom_object_status: only status.conditions
                             change, the `OK` condition stays the service's
  dry-run-delete             delete with dry_run="All" (DynamicClient, CustomObjectsApi) and
                             with body=V1DeleteOptions(dry_run=["All"]): the object stays; an
                             invalid propagation policy is a 422 (query and body)
  controller-flow            finalizer added, delete marks the object (deletionTimestamp), a
                             watch sees MODIFIED with it, a condition reported through
                             /status, the finalizer removed, the watch sees DELETED, GET is 404
  watch-selector             watch.Watch().stream with a label selector while an object is
                             relabelled in and out of it: ADDED, MODIFIED, DELETED; and
                             DynamicClient.watch(name=...)
  watch-resume               after a `timeout_seconds` expiry, a watch from the last
                             resourceVersion sees the changes made meanwhile, in order, each
                             with its own resourceVersion and the object (spec included) as it
                             was, none twice; DELETED carries the last full object
  clusterprofiles            list with label_selector="x-k8s.io/cluster-manager=fleetyard"
                             returns a profile for every cluster (both APIs)
  status-errors              ApiException.body is a metav1.Status (kind, status, reason,
                             code, message) for 404, 409 AlreadyExists, 422 Invalid, 400
  auth-reviews               AuthorizationV1Api create_self_subject_access_review (allowed,
                             with a reason; an unserved resource is not) and
                             create_self_subject_rules_review; AuthenticationV1Api
                             create_self_subject_review; an Impersonate-User header acts as
                             that user
  list-pages                 limit/_continue pages are one snapshot: a change to what is still
                             to come makes the next page 410 Expired whose Status carries a
                             token that goes on at the latest version; remainingItemCount
                             without a selector; resource_version_match Exact (410 once
                             changed), a version not reached (504 Timeout,
                             ResourceVersionTooLarge), a match without a version (422)
  streaming-list             watch.Watch().stream of a streaming list (sendInitialEvents=true,
                             resourceVersionMatch=NotOlderThan, allowWatchBookmarks=true):
                             ADDED for each object in name order, a BOOKMARK annotated
                             k8s.io/initial-events-end, then the live change; a watch with
                             resource_version_match and no sendInitialEvents is 422
  watch-expired              (last) a resourceVersion older than the change log answers 410
                             (the client raises ApiException 410 from the ERROR event); the
                             log is pruned first as the service's pruner does (rows deleted
                             and `cluster_change_horizon` moved, in SQL), since the real
                             window is an hour

Checks that fail because the service is wrong stay in the suite and are listed in XFAIL (check
name -> reason); they print XFAIL with the reason and do not fail the run. One that passes
prints XPASS and fails the run, so the list is kept true.

Bounded: every socket has a 30 s timeout, every watch a `timeout_seconds`, every check a
wall-clock limit (SIGALRM), and the service is killed when the script ends (also on failure).

    .tox/kube/bin/python tools/kube_conformance.py --bin target/debug/fleetyard
    ... --backends sqlite --only watch-resume,controller-flow

The last line is `kube-conformance: N passed, N failed (N xfailed)`; the exit status is 1 when
anything failed.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import queue
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import uuid
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fuzz_api import Server, pg_database_url, psql  # noqa: E402  (the shared service harness)

from kubernetes import client, dynamic, watch  # noqa: E402
from kubernetes.client.rest import ApiException  # noqa: E402

GROUP = "clusterregistry.k8s.io"
VERSION = "v1alpha1"
API_VERSION = GROUP + "/" + VERSION
PLURAL = "clusters"
PROFILE_GROUP = "multicluster.x-k8s.io"
PROFILE_API_VERSION = PROFILE_GROUP + "/v1alpha1"
NS = "admin"  # the [noauth] identity's project
CHECK_LABEL = "conformance.fleetyard.io/check"
SOCKET_TIMEOUT = 30  # seconds, every request of the client
CHECK_TIMEOUT = 90  # seconds, one check
WATCH_SECONDS = 20  # timeout_seconds of a watch that runs while a check writes
SHORT_WATCH_SECONDS = 2  # timeout_seconds of a watch meant to expire

# Checks known to fail because the service is wrong: name -> why. Kept in the run, reported as
# XFAIL; remove an entry when the service is fixed (an XPASS fails the run).
XFAIL: dict[str, str] = {}


class CheckFailed(Exception):
    pass


class CheckTimeout(Exception):
    pass


def expect(cond: bool, what: str, detail: Any = "") -> None:
    if not cond:
        raise CheckFailed("%s%s" % (what, ("\n" + str(detail)) if detail != "" else ""))


def expect_eq(got: Any, want: Any, what: str) -> None:
    if got != want:
        raise CheckFailed("%s: got %r, want %r" % (what, got, want))


def status_body(e: ApiException) -> dict:
    """The metav1.Status of an ApiException, checked for its shape."""
    try:
        body = json.loads(e.body)
    except (TypeError, ValueError):
        raise CheckFailed("HTTP %s body is not JSON: %r" % (e.status, e.body))
    expect(isinstance(body, dict), "the error body is an object", body)
    expect_eq(body.get("kind"), "Status", "error body kind (HTTP %s)" % e.status)
    expect_eq(body.get("apiVersion"), "v1", "error body apiVersion")
    expect_eq(body.get("status"), "Failure", "error body status")
    expect_eq(body.get("code"), e.status, "error body code")
    expect(isinstance(body.get("reason"), str) and body["reason"], "error body has a reason", body)
    expect(isinstance(body.get("message"), str) and body["message"], "error body has a message", body)
    return body


def expect_api_error(fn: Callable[[], Any], status: int, reason: str, what: str) -> dict:
    """Calls fn, which must raise ApiException with this status and a Status of this reason."""
    try:
        got = fn()
    except ApiException as e:
        expect(e.status == status, "%s: HTTP %s, want %s" % (what, e.status, status), e.body)
        body = status_body(e)
        expect_eq(body["reason"], reason, "%s: Status reason" % what)
        return body
    raise CheckFailed("%s: succeeded, want HTTP %s %s; answered %r" % (what, status, reason, to_dict(got)))


def to_dict(obj: Any) -> Any:
    if hasattr(obj, "to_dict"):
        return obj.to_dict()
    return obj


def cluster(name: str, check: str, labels: dict | None = None, **meta: Any) -> dict:
    metadata = {"name": name, "labels": {CHECK_LABEL: check, **(labels or {})}, **meta}
    return {"apiVersion": API_VERSION, "kind": "Cluster", "metadata": metadata,
            "spec": {"kubernetesApiEndpoints": {"serverEndpoints": [
                {"clientCIDR": "0.0.0.0/0", "serverAddress": "10.20.0.1:6443"}]}}}


def rv_int(obj: dict) -> int:
    return int(obj["metadata"]["resourceVersion"])


class Watcher:
    """watch.Watch().stream(...) in a thread of its own; events land in a queue. The stream
    ends when the server closes it (`timeout_seconds`) or on stop()."""

    def __init__(self, func: Callable, *args: Any, **kwargs: Any):
        self.w = watch.Watch()
        self.events: queue.Queue = queue.Queue()
        self.error: BaseException | None = None
        self.done = threading.Event()
        kwargs.setdefault("timeout_seconds", WATCH_SECONDS)
        kwargs.setdefault("_request_timeout", SOCKET_TIMEOUT + kwargs["timeout_seconds"])
        self.thread = threading.Thread(target=self._run, args=(func, args, kwargs), daemon=True)
        self.thread.start()

    def _run(self, func: Callable, args: tuple, kwargs: dict) -> None:
        try:
            for event in self.w.stream(func, *args, **kwargs):
                self.events.put(event)
        except BaseException as e:  # handed to the check
            self.error = e
        finally:
            self.done.set()

    def next(self, timeout: float = 15) -> dict:
        try:
            return self.events.get(timeout=timeout)
        except queue.Empty:
            raise CheckFailed("no watch event within %ss (watch error: %r)" % (timeout, self.error))

    def wait_for(self, pred: Callable[[dict], bool], what: str, timeout: float = 15) -> dict:
        """The next event; it must satisfy pred (no other event may come first)."""
        e = self.next(timeout)
        expect(pred(e), "watch: %s; got %s %s" % (what, e["type"], json.dumps(e["raw_object"].get("metadata"))))
        return e

    def drain(self, timeout: float) -> list[dict]:
        """Every event until the stream ends (within timeout)."""
        expect(self.done.wait(timeout), "the watch ended within %ss" % timeout)
        self.thread.join(5)
        out = []
        while True:
            try:
                out.append(self.events.get_nowait())
            except queue.Empty:
                return out

    def stop(self) -> None:
        self.w.stop()


def describe(events: list[dict]) -> str:
    return ", ".join("%s %s rv=%s labels=%s" % (e["type"], e["raw_object"]["metadata"].get("name"),
                                                  e["raw_object"]["metadata"].get("resourceVersion"),
                                                  e["raw_object"]["metadata"].get("labels"))
                     for e in events)


class Suite:
    """The checks, against one running service."""

    def __init__(self, server: Server, backend: str, database: str):
        self.server = server
        self.backend = backend
        self.database = database
        cfg = client.Configuration()
        cfg.host = server.base
        self.api = client.ApiClient(cfg)
        self.dyn = dynamic.DynamicClient(self.api)
        self.co = client.CustomObjectsApi(self.api)
        self._res: dict = {}

    @property
    def clusters(self):
        if "c" not in self._res:
            self._res["c"] = self.dyn.resources.get(api_version=API_VERSION, kind="Cluster")
        return self._res["c"]

    @property
    def profiles(self):
        if "p" not in self._res:
            self._res["p"] = self.dyn.resources.get(api_version=PROFILE_API_VERSION, kind="ClusterProfile")
        return self._res["p"]

    # -- helpers ------------------------------------------------------------------------------
    def create(self, body: dict) -> dict:
        return self.co.create_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, body)

    def get(self, name: str) -> dict:
        return self.co.get_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, name)

    def merge(self, name: str, patch: dict) -> dict:
        return self.co.patch_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, name, patch)

    def expect_gone(self, name: str) -> None:
        body = expect_api_error(lambda: self.get(name), 404, "NotFound", "GET %s after the delete" % name)
        expect_eq(body["message"], 'clusters.clusterregistry.k8s.io "%s" not found' % name, "404 message")

    def names(self, check: str, extra: str = "") -> list[str]:
        sel = "%s=%s%s" % (CHECK_LABEL, check, ("," + extra) if extra else "")
        items = self.co.list_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, label_selector=sel)["items"]
        return [i["metadata"]["name"] for i in items]

    # -- checks -------------------------------------------------------------------------------
    def check_discovery(self) -> None:
        groups = {g.name: g for g in client.ApisApi(self.api).get_api_versions().groups}
        for g in (GROUP, PROFILE_GROUP):
            expect(g in groups, "ApisApi lists %s" % g, sorted(groups))
            expect_eq(groups[g].preferred_version.version, "v1alpha1", "%s preferred version" % g)
        c = self.clusters
        expect_eq(c.namespaced, True, "clusters are namespaced")
        expect_eq(c.name, "clusters", "resource name")
        expect_eq(c.kind, "Cluster", "kind")
        expect_eq(sorted(c.verbs), ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
                  "clusters verbs")
        expect("status" in c.subresources, "clusters/status is discovered", c.subresources)
        p = self.profiles
        expect_eq(p.namespaced, True, "clusterprofiles are namespaced")
        expect_eq(p.name, "clusterprofiles", "resource name")
        expect_eq(sorted(p.verbs), ["get", "list", "watch"], "clusterprofiles verbs")
        v = self.dyn.version["kubernetes"]
        expect_eq((v["major"], v["minor"]), ("1", "32"), "/version")

    def check_dynamic_crud(self) -> None:
        check = "dynamic-crud"
        made = self.dyn.create(self.clusters, body=cluster("crud-a", check, {"env": "dev"}), namespace=NS).to_dict()
        md = made["metadata"]
        expect_eq(md["name"], "crud-a", "created name")
        expect_eq(md["namespace"], NS, "created namespace")
        expect(md.get("uid") and md.get("resourceVersion") and md.get("creationTimestamp"),
               "uid, resourceVersion and creationTimestamp are set", md)
        expect_eq(made["spec"]["kubernetesApiEndpoints"]["serverEndpoints"][0]["serverAddress"], "10.20.0.1:6443",
                  "spec kept")
        got = self.dyn.get(self.clusters, name="crud-a", namespace=NS).to_dict()
        expect_eq(got["metadata"]["uid"], md["uid"], "GET uid")
        expect_eq(got["metadata"]["resourceVersion"], md["resourceVersion"], "GET resourceVersion")
        # replace with the current resourceVersion, then again with the stale one
        body = got
        body["metadata"]["labels"]["env"] = "prod"
        replaced = self.dyn.replace(self.clusters, body=body, namespace=NS).to_dict()
        expect_eq(replaced["metadata"]["labels"]["env"], "prod", "replaced label")
        expect(rv_int(replaced) > rv_int(got), "replace moves resourceVersion", replaced["metadata"])
        body["metadata"]["labels"]["env"] = "stale"
        err = expect_api_error(lambda: self.dyn.replace(self.clusters, body=body, namespace=NS), 409, "Conflict",
                               "replace with the stale resourceVersion %s" % got["metadata"]["resourceVersion"])
        expect("the object has been modified" in err["message"], "409 message says the object was modified", err)
        expect_eq(self.get("crud-a")["metadata"]["labels"]["env"], "prod", "label after the refused replace")
        deleted = self.dyn.delete(self.clusters, name="crud-a", namespace=NS).to_dict()
        expect(deleted.get("kind") in ("Status", "Cluster"), "delete answers a Status or the object", deleted)
        self.expect_gone("crud-a")

    def check_dynamic_list(self) -> None:
        check = "dynamic-list"
        want = {"list-a": {"env": "prod", "tier": "gold"}, "list-b": {"env": "dev"}, "list-c": {"env": "prod"},
                "list-d": {"env": "test"}, "list-e": {"env": "dev", "tier": "bronze"}}
        for name, labels in want.items():
            self.dyn.create(self.clusters, body=cluster(name, check, labels), namespace=NS)

        def listed(**kw: Any) -> list[str]:
            out = self.dyn.get(self.clusters, namespace=NS, **kw).to_dict()
            expect_eq(out["kind"], "ClusterList", "list kind")
            expect_eq(out["apiVersion"], API_VERSION, "list apiVersion")
            expect(out["metadata"].get("resourceVersion"), "list has a resourceVersion", out["metadata"])
            return [i["metadata"]["name"] for i in out["items"]]

        base = "%s=%s" % (CHECK_LABEL, check)
        for sel, names in [
            ("env=prod", ["list-a", "list-c"]),
            ("env!=prod", ["list-b", "list-d", "list-e"]),
            ("env in (dev,test)", ["list-b", "list-d", "list-e"]),
            ("env notin (dev,test)", ["list-a", "list-c"]),
            ("tier", ["list-a", "list-e"]),
            ("!tier", ["list-b", "list-c", "list-d"]),
            ("env=prod,tier=gold", ["list-a"]),
        ]:
            expect_eq(listed(label_selector=base + "," + sel), names, "label_selector %r" % sel)
        expect_eq(listed(field_selector="metadata.name=list-c"), ["list-c"], "field_selector metadata.name=list-c")
        expect_eq(listed(label_selector=base, field_selector="metadata.name!=list-c"),
                  ["list-a", "list-b", "list-d", "list-e"], "field_selector metadata.name!=list-c")
        expect_eq(listed(field_selector="metadata.namespace=%s,metadata.name=list-b" % NS), ["list-b"],
                  "field_selector metadata.namespace and metadata.name")
        pages: list[list[str]] = []
        token = None
        while True:
            out = self.dyn.get(self.clusters, namespace=NS, label_selector=base, limit=2, _continue=token).to_dict()
            pages.append([i["metadata"]["name"] for i in out["items"]])
            token = out["metadata"].get("continue")
            if not token:
                break
            expect(len(pages) < 10, "paging ends", pages)
        expect_eq(pages, [["list-a", "list-b"], ["list-c", "list-d"], ["list-e"]], "limit=2 pages")

    def check_dynamic_patch(self) -> None:
        check = "dynamic-patch"
        made = self.dyn.create(self.clusters, body=cluster("patch-a", check, {"env": "dev"}), namespace=NS).to_dict()
        merged = self.dyn.patch(self.clusters, name="patch-a", namespace=NS,
                                body={"metadata": {"labels": {"env": "prod", "team": "blue"},
                                                   "annotations": {"example.com/note": "merged"}}},
                                content_type="application/merge-patch+json").to_dict()
        expect_eq(merged["metadata"]["labels"], {CHECK_LABEL: check, "env": "prod", "team": "blue"}, "merge patch labels")
        expect_eq(merged["metadata"]["annotations"], {"example.com/note": "merged"}, "merge patch annotations")
        expect(rv_int(merged) > rv_int(made), "merge patch moves resourceVersion")
        ops = [{"op": "test", "path": "/metadata/labels/env", "value": "prod"},
               {"op": "remove", "path": "/metadata/labels/team"},
               {"op": "replace", "path": "/spec/kubernetesApiEndpoints/serverEndpoints/0/serverAddress",
                "value": "10.20.0.2:6443"},
               {"op": "add", "path": "/metadata/annotations/example.com~1owner", "value": "ops"}]
        patched = self.dyn.patch(self.clusters, name="patch-a", namespace=NS, body=ops,
                                 content_type="application/json-patch+json").to_dict()
        expect_eq(patched["metadata"]["labels"], {CHECK_LABEL: check, "env": "prod"}, "JSON patch labels")
        expect_eq(patched["metadata"]["annotations"], {"example.com/note": "merged", "example.com/owner": "ops"},
                  "JSON patch annotations")
        expect_eq(patched["spec"]["kubernetesApiEndpoints"]["serverEndpoints"][0]["serverAddress"], "10.20.0.2:6443",
                  "JSON patch spec")
        expect_eq(self.get("patch-a")["metadata"]["annotations"], patched["metadata"]["annotations"],
                  "GET after the patches")
        # a failing `test` op changes nothing
        expect_api_error(lambda: self.dyn.patch(self.clusters, name="patch-a", namespace=NS,
                                                body=[{"op": "test", "path": "/metadata/labels/env", "value": "dev"},
                                                      {"op": "remove", "path": "/metadata/labels/env"}],
                                                content_type="application/json-patch+json"),
                         422, "Invalid", "JSON patch whose test fails")
        expect_eq(self.get("patch-a")["metadata"]["labels"].get("env"), "prod", "label after the failed test op")
        # the DynamicClient's default (strategic merge) is refused as for a custom resource
        expect_api_error(lambda: self.dyn.patch(self.clusters, name="patch-a", namespace=NS,
                                                body={"metadata": {"labels": {"env": "x"}}}),
                         415, "UnsupportedMediaType", "strategic merge patch")

    def check_dynamic_apply(self) -> None:
        check = "dynamic-apply"
        body = cluster("apply-a", check, {"env": "dev"})
        made = self.dyn.server_side_apply(self.clusters, body=body, namespace=NS, field_manager="conformance").to_dict()
        expect_eq(made["metadata"]["name"], "apply-a", "apply creates")
        expect_eq(made["metadata"]["labels"].get("env"), "dev", "applied label")
        expect_eq(self.get("apply-a")["metadata"]["uid"], made["metadata"]["uid"], "GET after the apply")
        body["metadata"]["labels"]["env"] = "prod"
        body["metadata"]["annotations"] = {"example.com/applied": "yes"}
        again = self.dyn.server_side_apply(self.clusters, body=body, namespace=NS, field_manager="conformance").to_dict()
        expect_eq(again["metadata"]["uid"], made["metadata"]["uid"], "apply updates the same object")
        expect_eq(again["metadata"]["labels"].get("env"), "prod", "apply updates the label")
        expect_eq(again["metadata"]["annotations"], {"example.com/applied": "yes"}, "apply adds the annotation")
        expect(rv_int(again) > rv_int(made), "apply moves resourceVersion")
        expect_api_error(lambda: self.dyn.server_side_apply(self.clusters, body=cluster("apply-b", check),
                                                            namespace=NS),
                         422, "Invalid", "server-side apply without field_manager")
        expect_api_error(lambda: self.get("apply-b"), 404, "NotFound", "the refused apply created nothing")

    def check_apply_conflicts(self) -> None:
        check = "apply-conflicts"
        body = cluster("ssa-a", check, {"env": "dev"})
        made = self.dyn.server_side_apply(self.clusters, body=body, namespace=NS, field_manager="first").to_dict()
        entries = made["metadata"].get("managedFields") or []
        expect_eq([(m.get("manager"), m.get("operation")) for m in entries], [("first", "Apply")],
                  "the applier's managedFields entry")
        expect_eq(entries[0].get("fieldsV1", {}).get("f:metadata", {}).get("f:labels"),
                  {"f:" + CHECK_LABEL: {}, "f:env": {}}, "the first manager owns the labels it applied")
        # A second manager applying other fields: both keep theirs.
        other = {"apiVersion": API_VERSION, "kind": "Cluster", "metadata": {"name": "ssa-a", "labels": {"team": "blue"}}}
        both = self.dyn.server_side_apply(self.clusters, body=other, namespace=NS, field_manager="second").to_dict()
        expect_eq((both["metadata"]["labels"].get("env"), both["metadata"]["labels"].get("team")), ("dev", "blue"),
                  "labels of both managers")
        expect_eq(sorted(m.get("manager") for m in both["metadata"]["managedFields"]), ["first", "second"],
                  "both managers are listed")
        body["metadata"]["labels"]["env"] = "prod"
        try:
            out = self.dyn.server_side_apply(self.clusters, body=body, namespace=NS, field_manager="second").to_dict()
        except ApiException as e:
            st = status_body(e)
            expect_eq(e.status, 409, "a second manager changing the first one's field")
            expect_eq(st.get("reason"), "Conflict", "409 reason")
            expect_eq(st.get("message"), 'Apply failed with 1 conflict: conflict with "first": .metadata.labels.env',
                      "409 message")
            expect_eq((st.get("details") or {}).get("causes"),
                      [{"reason": "FieldManagerConflict", "message": 'conflict with "first"',
                        "field": ".metadata.labels.env"}], "409 causes")
            expect_eq(self.get("ssa-a")["metadata"]["labels"]["env"], "dev", "the refused apply changed nothing")
        else:
            raise CheckFailed("a second manager's apply changing metadata.labels.env, owned by %r, was accepted "
                              "(now %r); want 409 Conflict" % ("first", out["metadata"]["labels"].get("env")))
        forced = self.dyn.server_side_apply(self.clusters, body=body, namespace=NS, field_manager="second",
                                            force_conflicts=True).to_dict()
        expect_eq(forced["metadata"]["labels"]["env"], "prod", "force_conflicts=True takes the field over")
        expect("team" not in forced["metadata"]["labels"], "a label the second manager dropped is gone",
               forced["metadata"]["labels"])
        owners = {m["manager"]: m.get("fieldsV1", {}) for m in forced["metadata"]["managedFields"]}
        expect("f:env" in owners.get("second", {}).get("f:metadata", {}).get("f:labels", {}),
               "the second manager owns the label now", owners)
        expect("f:env" not in owners.get("first", {}).get("f:metadata", {}).get("f:labels", {}),
               "the first manager lost it", owners)
        kubectl = shutil.which("kubectl")
        if kubectl:
            self.kubectl_apply_conflicts(kubectl, check)

    def kubectl_apply_conflicts(self, kubectl: str, check: str) -> None:
        """kubectl apply --server-side by two field managers, a conflict, --force-conflicts."""
        with tempfile.TemporaryDirectory() as tmp:
            config = os.path.join(tmp, "config")
            Path(config).write_text("")

            def run(*args: str, ok: bool = True) -> subprocess.CompletedProcess:
                cmd = [kubectl, "--kubeconfig", config, "--server", self.server.base, "--cache-dir",
                       os.path.join(tmp, "cache"), "-n", NS, *args]
                p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
                expect((p.returncode == 0) == ok, "kubectl %s %s" % (" ".join(args), "succeeds" if ok else "fails"),
                       p.stdout + p.stderr)
                return p

            def manifest(labels: dict) -> str:
                path = os.path.join(tmp, "ssa-k.json")
                Path(path).write_text(json.dumps(cluster("ssa-k", check, labels)))
                return path

            out = run("apply", "--server-side", "--field-manager=alice", "-f", manifest({"env": "dev"})).stdout
            expect("serverside-applied" in out, "kubectl apply --server-side creates", out)
            run("apply", "--server-side", "--field-manager=bob", "-f", manifest({"env": "dev", "team": "blue"}))
            err = run("apply", "--server-side", "--field-manager=bob", "-f", manifest({"env": "prod", "team": "blue"}),
                      ok=False).stderr
            expect('conflict with "alice"' in err and ".metadata.labels.env" in err,
                   "kubectl prints the conflicting field and manager", err)
            run("apply", "--server-side", "--field-manager=bob", "--force-conflicts", "-f",
                manifest({"env": "prod", "team": "blue"}))
            got = json.loads(run("get", "cluster", "ssa-k", "-o", "json", "--show-managed-fields").stdout)
            expect_eq(got["metadata"]["labels"].get("env"), "prod", "--force-conflicts applied the label")
            owners = {m["manager"]: m.get("fieldsV1", {}) for m in got["metadata"].get("managedFields") or []}
            expect("f:env" in owners.get("bob", {}).get("f:metadata", {}).get("f:labels", {}),
                   "--force-conflicts moved the field to bob", owners)

    def check_replace_needs_resourceversion(self) -> None:
        check = "replace-needs-resourceversion"
        self.create(cluster("put-a", check, {"env": "dev"}))
        body = self.get("put-a")
        del body["metadata"]["resourceVersion"]
        body["metadata"]["labels"]["env"] = "prod"
        expect_api_error(lambda: self.co.replace_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, "put-a", body),
                         422, "Invalid", "PUT without metadata.resourceVersion")
        expect_eq(self.get("put-a")["metadata"]["labels"]["env"], "dev", "the refused PUT changed nothing")

    def check_generation(self) -> None:
        check = "generation"
        made = self.create(cluster("gen-a", check))
        expect_eq(made["metadata"].get("generation"), 1, "generation of a new object")
        out = self.merge("gen-a", {"metadata": {"labels": {"env": "prod"}, "annotations": {"a": "b"}}})
        expect_eq(out["metadata"].get("generation"), 1, "metadata changes leave generation")
        out = self.co.patch_namespaced_custom_object_status(
            GROUP, VERSION, NS, PLURAL, "gen-a",
            {"status": {"conditions": [{"type": "example.com/Ready", "status": "True", "reason": "Fine"}]}})
        expect_eq(out["metadata"].get("generation"), 1, "a status write leaves generation")
        out = self.merge("gen-a", {"spec": {"kubernetesApiEndpoints": {"serverEndpoints": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": "10.20.0.9:6443"}]}}})
        expect_eq(out["metadata"].get("generation"), 2, "a spec change moves generation")
        out = self.dyn.patch(self.clusters.status, name="gen-a", namespace=NS,
                             body={"status": {"conditions": [{"type": "example.com/Ready", "status": "False",
                                                              "reason": "Broken"}]}},
                             content_type="application/merge-patch+json").to_dict()
        expect_eq({c["type"]: c["status"] for c in out["status"]["conditions"]}.get("example.com/Ready"), "False",
                  "DynamicClient patch of clusters/status")
        expect_eq(out["metadata"].get("generation"), 2, "generation after the DynamicClient status patch")

    def check_field_validation(self) -> None:
        check = "field-validation"
        body = cluster("fv-a", check)
        body["spec"]["bogus"] = 1
        body_ = expect_api_error(lambda: self.co.create_namespaced_custom_object(
            GROUP, VERSION, NS, PLURAL, body, field_validation="Strict"), 400, "BadRequest",
            "create with an unknown field and field_validation=Strict")
        expect("spec.bogus" in body_["message"], "the Status names spec.bogus", body_)
        expect_api_error(lambda: self.get("fv-a"), 404, "NotFound", "nothing was created")
        made = self.co.create_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, body, field_validation="Ignore")
        expect("bogus" not in made["spec"], "field_validation=Ignore drops the unknown field", made["spec"])

    def check_deletecollection(self) -> None:
        check = "deletecollection"
        for name, group in [("dc-a", "x"), ("dc-b", "x"), ("dc-c", "y")]:
            self.create(cluster(name, check, {"grp": group}))
        sel = "%s=%s,grp=x" % (CHECK_LABEL, check)
        self.dyn.delete(self.clusters, namespace=NS, label_selector=sel, dry_run="All")
        expect_eq(self.names(check), ["dc-a", "dc-b", "dc-c"], "a dry-run deletecollection deletes nothing")
        self.dyn.delete(self.clusters, namespace=NS, label_selector=sel)
        expect_eq(self.names(check), ["dc-c"], "deletecollection with a label selector deletes what matches")
        self.co.delete_collection_namespaced_custom_object(GROUP, VERSION, NS, PLURAL,
                                                           label_selector="%s=%s" % (CHECK_LABEL, check))
        expect_eq(self.names(check), [], "CustomObjectsApi delete_collection_namespaced_custom_object")

    def check_request_checks(self) -> None:
        check = "request-checks"
        b = cluster("rq-a", check)
        b["metadata"]["namespace"] = "some-other-project"
        body = expect_api_error(lambda: self.create(b), 400, "BadRequest", "create with another namespace in the body")
        expect("namespace" in body["message"], "the Status speaks of the namespace", body)
        body = expect_api_error(lambda: self.create({**cluster("rq-a", check), "kind": "Pod"}), 400, "BadRequest",
                                "create with kind Pod")
        made = self.create(cluster("rq-a", check))
        other = json.loads(json.dumps(made))
        other["metadata"]["name"] = "rq-b"
        expect_api_error(lambda: self.co.replace_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, "rq-a", other),
                         400, "BadRequest", "PUT with another name in the body")
        gen = self.create({**cluster("x", check), "metadata": {"generateName": "rq-gen-",
                                                               "labels": {CHECK_LABEL: check}}})
        expect(gen["metadata"]["name"].startswith("rq-gen-") and len(gen["metadata"]["name"]) > len("rq-gen-"),
               "generateName gives a name with the prefix", gen["metadata"])
        # DeleteOptions preconditions that no longer hold are 409 and delete nothing
        for what, pre in [("uid", client.V1Preconditions(uid=str(uuid.uuid4()))),
                          ("resourceVersion", client.V1Preconditions(resource_version=str(rv_int(made) - 1)))]:
            expect_api_error(lambda: self.co.delete_namespaced_custom_object(
                GROUP, VERSION, NS, PLURAL, "rq-a", body=client.V1DeleteOptions(preconditions=pre)),
                409, "Conflict", "delete with a stale %s precondition" % what)
            expect_eq(self.get("rq-a")["metadata"]["uid"], made["metadata"]["uid"], "the object stays (%s)" % what)
        self.co.delete_namespaced_custom_object(
            GROUP, VERSION, NS, PLURAL, "rq-a", body=client.V1DeleteOptions(preconditions=client.V1Preconditions(
                uid=made["metadata"]["uid"], resource_version=made["metadata"]["resourceVersion"])))
        self.expect_gone("rq-a")

    def check_dry_run_writes(self) -> None:
        check = "dry-run-writes"
        out = self.co.create_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, cluster("drw-a", check), dry_run="All")
        expect_eq(out["metadata"]["name"], "drw-a", "a dry-run create answers the object")
        expect_api_error(lambda: self.get("drw-a"), 404, "NotFound", "GET after a dry-run create")
        made = self.create(cluster("drw-a", check, {"env": "dev"}))
        out = self.co.patch_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, "drw-a",
                                                     {"metadata": {"labels": {"env": "prod"}}}, dry_run="All")
        expect_eq(out["metadata"]["labels"].get("env"), "prod", "a dry-run patch answers the patched object")
        got = self.get("drw-a")
        expect_eq(got["metadata"]["labels"].get("env"), "dev", "GET after a dry-run patch")
        expect_eq(got["metadata"]["resourceVersion"], made["metadata"]["resourceVersion"],
                  "a dry-run patch leaves resourceVersion")
        body = dict(got, metadata=dict(got["metadata"], labels={CHECK_LABEL: check, "env": "test"}))
        self.co.replace_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, "drw-a", body, dry_run="All")
        expect_eq(self.get("drw-a")["metadata"]["labels"].get("env"), "dev", "GET after a dry-run replace")

    def check_custom_objects(self) -> None:
        check = "custom-objects"
        made = self.create(cluster("co-a", check, {"env": "dev"}))
        expect_eq(made["kind"], "Cluster", "create kind")
        expect_eq(made["metadata"]["namespace"], NS, "create namespace")
        got = self.get("co-a")
        expect_eq(got["metadata"]["uid"], made["metadata"]["uid"], "get uid")
        self.create(cluster("co-b", check, {"env": "prod"}))
        lst = self.co.list_namespaced_custom_object(GROUP, VERSION, NS, PLURAL,
                                                    label_selector="%s=%s" % (CHECK_LABEL, check))
        expect_eq(lst["kind"], "ClusterList", "list kind")
        expect_eq([i["metadata"]["name"] for i in lst["items"]], ["co-a", "co-b"], "list names")
        expect_eq(self.names(check, "env=prod"), ["co-b"], "list with label_selector env=prod")
        allns = self.co.list_cluster_custom_object(GROUP, VERSION, PLURAL, label_selector="%s=%s" % (CHECK_LABEL, check))
        expect_eq([(i["metadata"]["namespace"], i["metadata"]["name"]) for i in allns["items"]],
                  [(NS, "co-a"), (NS, "co-b")], "list_cluster_custom_object (all namespaces)")
        patched = self.merge("co-a", {"metadata": {"labels": {"env": "prod"}}})
        expect_eq(patched["metadata"]["labels"].get("env"), "prod", "patch_namespaced_custom_object (merge)")
        expect_eq(self.names(check, "env=prod"), ["co-a", "co-b"], "list after the patch")
        gone = self.co.delete_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, "co-a")
        expect(isinstance(gone, dict) and gone.get("kind") in ("Status", "Cluster"), "delete answers", gone)
        self.expect_gone("co-a")
        expect_eq(self.names(check), ["co-b"], "list after the delete")

    def check_status_subresource(self) -> None:
        check = "status-subresource"
        made = self.create(cluster("st-a", check, {"env": "dev"}))
        ok_before = [c for c in made["status"]["conditions"] if c["type"] == "OK"]
        expect_eq(len(ok_before), 1, "a new cluster has the service's OK condition")
        patch = {"metadata": {"labels": {"env": "prod"}},
                 "spec": {"kubernetesApiEndpoints": {"serverEndpoints": [
                     {"clientCIDR": "0.0.0.0/0", "serverAddress": "10.99.0.1:6443"}]}},
                 "status": {"conditions": [
                     {"type": "OK", "status": "True", "reason": "ClientSaysSo", "message": "ignored"},
                     {"type": "example.com/Backup", "status": "True", "reason": "Done", "message": "nightly"}]}}
        out = self.co.patch_namespaced_custom_object_status(GROUP, VERSION, NS, PLURAL, "st-a", patch)
        expect_eq(out["metadata"]["labels"].get("env"), "dev", "a status patch leaves labels")
        expect_eq(out["spec"]["kubernetesApiEndpoints"]["serverEndpoints"][0]["serverAddress"], "10.20.0.1:6443",
                  "a status patch leaves spec")
        conds = {c["type"]: c for c in out["status"]["conditions"]}
        expect("example.com/Backup" in conds, "the reported condition is stored", out["status"])
        expect_eq((conds["example.com/Backup"]["status"], conds["example.com/Backup"]["reason"],
                   conds["example.com/Backup"]["message"]), ("True", "Done", "nightly"), "the reported condition")
        expect(conds["example.com/Backup"].get("lastTransitionTime"), "lastTransitionTime is set", conds)
        expect_eq({k: conds["OK"].get(k) for k in ("status", "reason")},
                  {k: ok_before[0].get(k) for k in ("status", "reason")}, "the OK condition stays the service's")
        got = self.co.get_namespaced_custom_object_status(GROUP, VERSION, NS, PLURAL, "st-a")
        expect_eq(got["status"], out["status"], "get_namespaced_custom_object_status")
        expect_eq(got["metadata"]["labels"].get("env"), "dev", "labels after the status patch")
        # the main resource ignores status
        main = self.merge("st-a", {"status": {"conditions": [{"type": "example.com/Backup", "status": "False",
                                                              "reason": "Nope"}]}})
        expect_eq({c["type"]: c["status"] for c in main["status"]["conditions"]}.get("example.com/Backup"), "True",
                  "a patch of the main resource leaves status")
        # a bad condition is a 422
        expect_api_error(lambda: self.co.patch_namespaced_custom_object_status(
            GROUP, VERSION, NS, PLURAL, "st-a",
            {"status": {"conditions": [{"type": "example.com/Backup", "status": "Maybe", "reason": "Done"}]}}),
            422, "Invalid", "a condition with status Maybe")

    def check_dry_run_delete(self) -> None:
        check = "dry-run-delete"
        made = self.create(cluster("dry-a", check))
        uid = made["metadata"]["uid"]

        def still_there(what: str) -> None:
            got = self.get("dry-a")
            expect_eq(got["metadata"]["uid"], uid, "%s: the object is still there" % what)
            expect("deletionTimestamp" not in got["metadata"], "%s: no deletionTimestamp" % what, got["metadata"])

        out = self.dyn.delete(self.clusters, name="dry-a", namespace=NS, dry_run="All").to_dict()
        expect(out.get("kind") in ("Status", "Cluster"), "dry-run delete answers", out)
        still_there("DynamicClient delete dry_run=All")
        self.co.delete_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, "dry-a", dry_run="All")
        still_there("CustomObjectsApi delete dry_run=All")
        self.co.delete_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, "dry-a",
                                                body=client.V1DeleteOptions(dry_run=["All"]))
        still_there("CustomObjectsApi delete body=V1DeleteOptions(dry_run=['All'])")
        self.dyn.delete(self.clusters, name="dry-a", namespace=NS, body={"dryRun": ["All"]})
        still_there("DynamicClient delete body={dryRun: [All]}")
        for what, call in [
            ("propagation_policy=Sideways (query)", lambda: self.co.delete_namespaced_custom_object(
                GROUP, VERSION, NS, PLURAL, "dry-a", propagation_policy="Sideways")),
            ("V1DeleteOptions(propagation_policy=Sideways) (body)", lambda: self.co.delete_namespaced_custom_object(
                GROUP, VERSION, NS, PLURAL, "dry-a", body=client.V1DeleteOptions(propagation_policy="Sideways"))),
            ("DynamicClient propagation_policy=Sideways", lambda: self.dyn.delete(
                self.clusters, name="dry-a", namespace=NS, propagation_policy="Sideways")),
        ]:
            body = expect_api_error(call, 422, "Invalid", what)
            expect("propagationPolicy" in json.dumps(body), "%s: the Status names propagationPolicy" % what, body)
            still_there(what)
        self.co.delete_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, "dry-a",
                                                body=client.V1DeleteOptions(propagation_policy="Foreground"))
        self.expect_gone("dry-a")

    def check_controller_flow(self) -> None:
        check = "controller-flow"
        fin = "conformance.fleetyard.io/cleanup"
        made = self.create(cluster("ctl-a", check))
        added = self.merge("ctl-a", {"metadata": {"finalizers": [fin]}})
        expect_eq(added["metadata"].get("finalizers"), [fin], "the finalizer is stored")
        w = Watcher(self.co.list_namespaced_custom_object, GROUP, VERSION, NS, PLURAL,
                    field_selector="metadata.name=ctl-a", resource_version=added["metadata"]["resourceVersion"])
        try:
            self.co.delete_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, "ctl-a")
            held = self.get("ctl-a")
            expect(held["metadata"].get("deletionTimestamp"), "after the delete the object stays with a "
                   "deletionTimestamp", held["metadata"])
            expect_eq(held["metadata"]["uid"], made["metadata"]["uid"], "the same object")
            e = w.wait_for(lambda e: e["type"] == "MODIFIED" and e["raw_object"]["metadata"].get("deletionTimestamp"),
                           "MODIFIED with deletionTimestamp")
            expect_eq(e["raw_object"]["metadata"]["finalizers"], [fin], "the watched object keeps the finalizer")
            # the controller reports its cleanup through /status
            st = self.co.patch_namespaced_custom_object_status(
                GROUP, VERSION, NS, PLURAL, "ctl-a",
                {"status": {"conditions": [{"type": "conformance.fleetyard.io/CleanedUp", "status": "True",
                                            "reason": "Done", "message": "external resources released"}]}})
            expect("conformance.fleetyard.io/CleanedUp" in [c["type"] for c in st["status"]["conditions"]],
                   "the condition is stored while the object is being deleted", st["status"])
            e = w.wait_for(lambda e: e["type"] == "MODIFIED", "MODIFIED for the status write")
            expect("conformance.fleetyard.io/CleanedUp" in [c["type"] for c in e["raw_object"]["status"]["conditions"]],
                   "the watch event carries the condition", e["raw_object"]["status"])
            self.co.patch_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, "ctl-a",
                                                   {"metadata": {"finalizers": None}})
            events = []
            while True:
                e = w.next()
                events.append(e)
                if e["type"] == "DELETED":
                    break
                expect(e["type"] == "MODIFIED" and len(events) < 3, "watch: DELETED after the finalizer is removed",
                       describe(events))
            expect_eq(e["raw_object"]["metadata"]["name"], "ctl-a", "DELETED name")
            expect_eq(e["raw_object"]["metadata"]["uid"], made["metadata"]["uid"], "DELETED uid")
        finally:
            w.stop()
        self.expect_gone("ctl-a")

    def check_watch_selector(self) -> None:
        check = "watch-selector"
        self.create(cluster("ws-a", check, {"env": "dev"}))
        self.create(cluster("ws-b", check, {"env": "dev"}))
        start = self.co.list_namespaced_custom_object(GROUP, VERSION, NS, PLURAL)["metadata"]["resourceVersion"]
        sel = "%s=%s,env=prod" % (CHECK_LABEL, check)
        w = Watcher(self.co.list_namespaced_custom_object, GROUP, VERSION, NS, PLURAL, label_selector=sel,
                    resource_version=start)
        try:
            self.merge("ws-a", {"metadata": {"labels": {"env": "prod"}}})
            e = w.wait_for(lambda e: e["type"] == "ADDED" and e["raw_object"]["metadata"]["name"] == "ws-a",
                           "ADDED ws-a when it enters the selector")
            expect_eq(e["raw_object"]["metadata"]["labels"].get("env"), "prod", "ADDED labels")
            self.merge("ws-b", {"metadata": {"labels": {"tier": "gold"}}})  # outside: no event
            self.merge("ws-a", {"metadata": {"labels": {"tier": "gold"}}})
            e = w.wait_for(lambda e: e["type"] == "MODIFIED" and e["raw_object"]["metadata"]["name"] == "ws-a",
                           "MODIFIED ws-a while it matches (nothing for ws-b, outside)")
            self.merge("ws-a", {"metadata": {"labels": {"env": "dev"}}})
            e = w.wait_for(lambda e: e["type"] == "DELETED" and e["raw_object"]["metadata"]["name"] == "ws-a",
                           "DELETED ws-a when it leaves the selector")
            self.merge("ws-b", {"metadata": {"labels": {"env": "prod"}}})
            w.wait_for(lambda e: e["type"] == "ADDED" and e["raw_object"]["metadata"]["name"] == "ws-b",
                       "ADDED ws-b when it enters")
            self.co.delete_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, "ws-b")
            w.wait_for(lambda e: e["type"] == "DELETED" and e["raw_object"]["metadata"]["name"] == "ws-b",
                       "DELETED ws-b when it is deleted")
            expect(self.get("ws-a")["metadata"]["name"] == "ws-a", "ws-a still exists (it only left the selector)")
        finally:
            w.stop()
        # the DynamicClient's own watch (by name, a field selector underneath)
        seen = [(e["type"], e["raw_object"]["metadata"]["name"])
                for e in self.dyn.watch(self.clusters, namespace=NS, name="ws-a", timeout=SHORT_WATCH_SECONDS)]
        expect_eq(seen, [("ADDED", "ws-a")], "DynamicClient.watch(name=ws-a) from now")

    def check_watch_resume(self) -> None:
        check = "watch-resume"
        self.create(cluster("wr-a", check, {"env": "prod"}))
        self.create(cluster("wr-b", check, {"env": "dev"}))
        sel = "%s=%s,env=prod" % (CHECK_LABEL, check)
        # a watch from "now" that expires; the client remembers the last resourceVersion
        first = Watcher(self.co.list_namespaced_custom_object, GROUP, VERSION, NS, PLURAL, label_selector=sel,
                        timeout_seconds=SHORT_WATCH_SECONDS)
        initial = first.drain(SHORT_WATCH_SECONDS + 20)
        expect_eq([(e["type"], e["raw_object"]["metadata"]["name"]) for e in initial], [("ADDED", "wr-a")],
                  "a watch without resourceVersion starts with ADDED for what matches")
        last = first.w.resource_version
        expect(last is not None, "the client kept the last resourceVersion")
        # changes while no watch is connected
        self.merge("wr-b", {"metadata": {"labels": {"env": "prod"}}})  # enters: ADDED
        def moved(n: str, addr: str) -> dict:  # a change of metadata and spec together
            return {"metadata": {"annotations": {"n": n}}, "spec": {"kubernetesApiEndpoints": {
                "serverEndpoints": [{"clientCIDR": "0.0.0.0/0", "serverAddress": addr}]}}}
        self.merge("wr-a", moved("1", "10.20.0.2:6443"))  # MODIFIED
        self.merge("wr-a", moved("2", "10.20.0.3:6443"))  # MODIFIED
        self.merge("wr-b", {"metadata": {"labels": {"env": "dev"}}})  # leaves: DELETED
        self.merge("wr-b", {"metadata": {"labels": {"tier": "x"}}})  # outside: nothing
        self.co.delete_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, "wr-a")  # DELETED
        again = Watcher(self.co.list_namespaced_custom_object, GROUP, VERSION, NS, PLURAL, label_selector=sel,
                        resource_version=last, timeout_seconds=SHORT_WATCH_SECONDS)
        events = again.drain(SHORT_WATCH_SECONDS + 20)
        expect(again.error is None, "the resumed watch ends cleanly", repr(again.error))
        def address(o: dict) -> Any:
            eps = (o.get("spec") or {}).get("kubernetesApiEndpoints") or {}
            return ((eps.get("serverEndpoints") or [{}])[0]).get("serverAddress")
        got = [(e["type"], e["raw_object"]["metadata"]["name"], e["raw_object"]["metadata"].get("annotations", {})
                .get("n"), address(e["raw_object"])) for e in events]
        # each change shows the object as it was (spec included); DELETED the last full object
        expect_eq(got, [("ADDED", "wr-b", None, "10.20.0.1:6443"), ("MODIFIED", "wr-a", "1", "10.20.0.2:6443"),
                        ("MODIFIED", "wr-a", "2", "10.20.0.3:6443"), ("DELETED", "wr-b", None, "10.20.0.1:6443"),
                        ("DELETED", "wr-a", "2", "10.20.0.3:6443")],
                  "the changes made while disconnected, in order, each as it was (%s)" % describe(events))
        rvs = [rv_int(e["raw_object"]) for e in events]
        expect(all(r > int(last) for r in rvs), "every resumed event is after %s" % last, rvs)
        expect(rvs == sorted(rvs) and len(set(rvs)) == len(rvs), "resourceVersions increase, none twice", rvs)
        expect_eq(again.w.resource_version, str(rvs[-1]), "the client's last resourceVersion")

    def check_clusterprofiles(self) -> None:
        check = "clusterprofiles"
        self.create(cluster("cp-a", check, {"env": "prod"}))
        self.create(cluster("cp-b", check, {"env": "dev"}))
        every = sorted(i["metadata"]["name"] for i in
                       self.co.list_namespaced_custom_object(GROUP, VERSION, NS, PLURAL)["items"])
        sel = "x-k8s.io/cluster-manager=fleetyard"
        profiles = self.co.list_namespaced_custom_object(PROFILE_GROUP, "v1alpha1", NS, "clusterprofiles",
                                                         label_selector=sel)
        expect_eq(profiles.get("kind"), "ClusterProfileList", "list kind")
        names = sorted(p["metadata"]["name"] for p in profiles["items"])
        expect_eq(names, every, "a ClusterProfile for every cluster with %s" % sel)
        for p in profiles["items"]:
            expect_eq(p["spec"]["clusterManager"]["name"], "fleetyard", "spec.clusterManager.name")
            expect_eq(p["metadata"]["labels"].get("x-k8s.io/cluster-manager"), "fleetyard", "the label")
        dyn = sorted(p["metadata"]["name"] for p in
                     self.dyn.get(self.profiles, namespace=NS, label_selector=sel).to_dict()["items"])
        expect_eq(dyn, every, "DynamicClient: a ClusterProfile for every cluster")
        none = self.co.list_namespaced_custom_object(PROFILE_GROUP, "v1alpha1", NS, "clusterprofiles",
                                                     label_selector="x-k8s.io/cluster-manager=someone-else")
        expect_eq(none["items"], [], "another cluster manager's selector finds nothing")
        one = self.co.get_namespaced_custom_object(PROFILE_GROUP, "v1alpha1", NS, "clusterprofiles", "cp-a")
        expect_eq(one["kind"], "ClusterProfile", "get kind")
        expect_api_error(lambda: self.co.create_namespaced_custom_object(
            PROFILE_GROUP, "v1alpha1", NS, "clusterprofiles",
            {"apiVersion": PROFILE_API_VERSION, "kind": "ClusterProfile", "metadata": {"name": "x"}}),
            405, "MethodNotAllowed", "create a ClusterProfile (read-only)")

    def check_status_errors(self) -> None:
        check = "status-errors"
        body = expect_api_error(lambda: self.get("no-such-cluster"), 404, "NotFound", "GET a missing cluster")
        expect_eq(body.get("details", {}).get("name"), "no-such-cluster", "details.name")
        expect_eq(body.get("details", {}).get("kind"), "clusters", "details.kind")
        self.create(cluster("err-a", check))
        expect_api_error(lambda: self.create(cluster("err-a", check)), 409, "AlreadyExists", "create a duplicate")
        body = expect_api_error(lambda: self.create(cluster("Not_A_Name", check)), 422, "Invalid",
                                "create with an invalid name")
        causes = body.get("details", {}).get("causes") or []
        expect(any(c.get("field") == "metadata.name" for c in causes), "causes name metadata.name", body)
        expect_api_error(lambda: self.co.list_namespaced_custom_object(GROUP, VERSION, NS, PLURAL,
                                                                       label_selector="env in (a"),
                         400, "BadRequest", "list with a malformed label selector")
        expect_api_error(lambda: self.co.delete_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, "no-such-cluster"),
                         404, "NotFound", "delete a missing cluster")
        expect_api_error(lambda: self.merge("no-such-cluster", {"metadata": {"labels": {"a": "b"}}}),
                         404, "NotFound", "patch a missing cluster")

    def check_auth_reviews(self) -> None:
        authz = client.AuthorizationV1Api(self.api)

        def can_i(verb: str, resource: str, group: str, namespace: str = NS) -> Any:
            review = client.V1SelfSubjectAccessReview(spec=client.V1SelfSubjectAccessReviewSpec(
                resource_attributes=client.V1ResourceAttributes(
                    namespace=namespace, verb=verb, group=group, resource=resource)))
            return authz.create_self_subject_access_review(review).status

        status = can_i("create", PLURAL, GROUP)
        expect_eq(status.allowed, True, "the admin may create clusters in its namespace")
        expect(bool(status.reason), "the answer has a reason", status)
        expect_eq(can_i("patch", PLURAL + "/status", GROUP).allowed, True, "patch clusters/status")
        expect_eq(can_i("get", "pods", "").allowed, False, "pods are not served")
        rules = authz.create_self_subject_rules_review(client.V1SelfSubjectRulesReview(
            spec=client.V1SelfSubjectRulesReviewSpec(namespace=NS))).status
        expect_eq(rules.incomplete, False, "the rules are complete")
        clusters = [r for r in rules.resource_rules if r.resources == [PLURAL] and r.api_groups == [GROUP]]
        expect_eq(len(clusters), 1, "one rule for clusters")
        expect("create" in clusters[0].verbs and "watch" in clusters[0].verbs, "clusters verbs", clusters[0].verbs)
        expect(any(r.verbs == ["impersonate"] and r.resources == ["users"] for r in rules.resource_rules),
               "the admin may impersonate users", rules.resource_rules)
        authn = client.AuthenticationV1Api(self.api)
        me = authn.create_self_subject_review(client.V1SelfSubjectReview()).status.user_info
        expect_eq(me.username, "admin", "whoami: the [noauth] user")
        expect_eq(me.groups, [NS, "system:authenticated"], "whoami: the project and system:authenticated")
        # Impersonation, which the admin is allowed: the request acts as the impersonated user.
        cfg = client.Configuration()
        cfg.host = self.server.base
        other = client.ApiClient(cfg, header_name="Impersonate-User", header_value="someone")
        other.set_default_header("Impersonate-Group", "elsewhere")
        them = client.AuthenticationV1Api(other).create_self_subject_review(client.V1SelfSubjectReview())
        expect_eq(them.status.user_info.username, "someone", "whoami as the impersonated user")
        expect_eq(them.status.user_info.groups, ["elsewhere", "system:authenticated"], "their project")
        body = expect_api_error(lambda: client.CustomObjectsApi(other).list_namespaced_custom_object(
            GROUP, VERSION, NS, PLURAL), 403, "Forbidden", "the impersonated user lists another project")
        expect('User "someone"' in body.get("message", ""), "the refusal names the impersonated user", body)

    def check_watch_expired(self) -> None:
        check = "watch-expired"
        self.create(cluster("we-a", check))
        self.merge("we-a", {"metadata": {"labels": {"n": "1"}}})
        latest = self.co.list_namespaced_custom_object(GROUP, VERSION, NS, PLURAL)["metadata"]["resourceVersion"]
        through = int(latest) - 1
        expect(through >= 2, "enough history to prune", latest)
        self.prune_change_log(through)
        w = Watcher(self.co.list_namespaced_custom_object, GROUP, VERSION, NS, PLURAL, resource_version="1",
                    timeout_seconds=SHORT_WATCH_SECONDS)
        events = w.drain(SHORT_WATCH_SECONDS + 20)
        expect_eq(events, [], "no event before the error")
        expect(isinstance(w.error, ApiException), "the client raises ApiException", repr(w.error))
        expect_eq(w.error.status, 410, "ApiException status")
        expect("Expired" in str(w.error.reason), "the reason says Expired", w.error.reason)
        # still fine from a version inside the log
        ok = Watcher(self.co.list_namespaced_custom_object, GROUP, VERSION, NS, PLURAL, resource_version=str(through),
                     timeout_seconds=SHORT_WATCH_SECONDS)
        events = ok.drain(SHORT_WATCH_SECONDS + 20)
        expect(ok.error is None, "a watch from the horizon is served", repr(ok.error))
        expect_eq([rv_int(e["raw_object"]) for e in events], [int(latest)], "the change after the horizon")

    def list_page(self, sel: str, **kw: Any) -> dict:
        return self.co.list_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, label_selector=sel, **kw)

    def check_list_pages(self) -> None:
        check = "list-pages"
        for name in ("lp-d", "lp-a", "lp-c", "lp-b"):
            self.create(cluster(name, check))
        sel = "%s=%s" % (CHECK_LABEL, check)
        first = self.list_page(sel, limit=2)
        expect_eq([i["metadata"]["name"] for i in first["items"]], ["lp-a", "lp-b"], "first page, by name")
        expect("remainingItemCount" not in first["metadata"], "no remainingItemCount with a selector",
               first["metadata"])
        token, rv = first["metadata"].get("continue"), first["metadata"]["resourceVersion"]
        expect(token, "the first page continues", first["metadata"])
        second = self.list_page(sel, limit=2, _continue=token)
        expect_eq([i["metadata"]["name"] for i in second["items"]], ["lp-c", "lp-d"], "second page")
        expect_eq(second["metadata"]["resourceVersion"], rv, "the second page is at the first page's version")
        # a change to what the list has still to show: 410 Expired with a token that goes on
        self.merge("lp-d", {"metadata": {"labels": {"env": "prod"}}})
        body = expect_api_error(lambda: self.list_page(sel, limit=2, _continue=token), 410, "Expired",
                                "a continue token across a change")
        expect(body["message"].startswith("The provided continue parameter is too old to display a consistent "
                                          "list result."), "the apiserver's sentence", body["message"])
        onward = (body.get("metadata") or {}).get("continue")
        expect(onward, "the 410 carries a token that goes on", body)
        rest = self.list_page(sel, limit=2, _continue=onward)
        expect_eq([(i["metadata"]["name"], i["metadata"]["labels"].get("env")) for i in rest["items"]],
                  [("lp-c", None), ("lp-d", "prod")], "the rest at the latest version")
        expect(int(rest["metadata"]["resourceVersion"]) > int(rv), "the rest is at a later version",
               rest["metadata"])
        # remainingItemCount when nothing filters
        every = self.co.list_namespaced_custom_object(GROUP, VERSION, NS, PLURAL)
        one = self.co.list_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, limit=1)
        expect_eq(one["metadata"].get("remainingItemCount"), len(every["items"]) - 1, "remainingItemCount")
        # resourceVersion and resourceVersionMatch
        now = every["metadata"]["resourceVersion"]
        exact = self.list_page(sel, resource_version=now, resource_version_match="Exact")
        expect_eq(exact["metadata"]["resourceVersion"], now, "an exact read of the current version")
        self.merge("lp-a", {"metadata": {"labels": {"env": "dev"}}})
        body = expect_api_error(lambda: self.list_page(sel, resource_version=now, resource_version_match="Exact"),
                                410, "Expired", "an exact read of a version changed since")
        expect_eq(body["message"], "The resourceVersion for the provided list is too old.", "410 message")
        ahead = str(int(now) + 100000)
        body = expect_api_error(lambda: self.list_page(sel, resource_version=ahead,
                                                       resource_version_match="NotOlderThan"),
                                504, "Timeout", "a version not reached yet")
        expect(body["message"].startswith("Timeout: Too large resource version: %s, current: " % ahead),
               "the apiserver's sentence", body["message"])
        expect_eq(body["details"]["causes"][0]["reason"], "ResourceVersionTooLarge", "the 504's cause")
        expect_eq(body["details"]["retryAfterSeconds"], 1, "the 504's retryAfterSeconds")
        body = expect_api_error(lambda: self.list_page(sel, resource_version_match="Exact"), 422, "Invalid",
                                "resourceVersionMatch without resourceVersion")
        expect_eq(body["details"]["causes"], [{
            "reason": "FieldValueForbidden", "field": "resourceVersionMatch",
            "message": "Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided"}],
            "the 422's causes")

    def streaming_list(self, **kw: Any) -> Any:
        """A streaming list of the namespace's clusters: sendInitialEvents=true with
        resourceVersionMatch=NotOlderThan and bookmarks (CustomObjectsApi has no sendInitialEvents).

        :return: object
        """
        query = [("watch", "true" if kw.get("watch") else "false"), ("sendInitialEvents", "true"),
                 ("resourceVersionMatch", "NotOlderThan"), ("allowWatchBookmarks", "true")]
        for arg, param in (("label_selector", "labelSelector"), ("timeout_seconds", "timeoutSeconds"),
                           ("resource_version", "resourceVersion")):
            if kw.get(arg) is not None:
                query.append((param, str(kw[arg])))
        return self.api.call_api("/apis/{group}/{version}/namespaces/{namespace}/{plural}", "GET",
                                 {"group": GROUP, "version": VERSION, "namespace": NS, "plural": PLURAL}, query,
                                 {"Accept": "application/json"}, response_type="object",
                                 auth_settings=["BearerToken"], _return_http_data_only=True,
                                 _preload_content=kw.get("_preload_content", True),
                                 _request_timeout=kw.get("_request_timeout"))

    def check_streaming_list(self) -> None:
        check = "streaming-list"
        self.create(cluster("sl-b", check))
        self.create(cluster("sl-a", check))
        latest = self.get("sl-a")["metadata"]["resourceVersion"]
        sel = "%s=%s" % (CHECK_LABEL, check)
        w = Watcher(self.streaming_list, label_selector=sel)
        try:
            w.wait_for(lambda e: e["type"] == "ADDED" and e["raw_object"]["metadata"]["name"] == "sl-a",
                       "ADDED sl-a first")
            w.wait_for(lambda e: e["type"] == "ADDED" and e["raw_object"]["metadata"]["name"] == "sl-b",
                       "then ADDED sl-b")
            mark = w.wait_for(lambda e: e["type"] == "BOOKMARK", "then the BOOKMARK that ends the initial events")
            meta = mark["raw_object"]["metadata"]
            expect_eq(meta.get("annotations"), {"k8s.io/initial-events-end": "true"}, "the bookmark's annotation")
            expect_eq(meta.get("resourceVersion"), latest, "the bookmark's resourceVersion")
            self.merge("sl-b", {"metadata": {"labels": {"env": "prod"}}})
            e = w.wait_for(lambda e: e["type"] == "MODIFIED", "then the live change")
            expect_eq(e["raw_object"]["metadata"]["name"], "sl-b", "the changed object")
        finally:
            w.stop()
        # what the apiserver refuses
        body = expect_api_error(
            lambda: self.co.list_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, watch=True, resource_version="1",
                                                          resource_version_match="NotOlderThan"),
            422, "Invalid", "resourceVersionMatch on a watch without sendInitialEvents")
        expect_eq(body["details"]["causes"][0]["message"],
                  "Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
                  "the 422's cause")

    def prune_change_log(self, through: int) -> None:
        """What the service's pruner does to changes older than its window (src/store/registry.rs)."""
        stmts = ["DELETE FROM cluster_change WHERE resource_version <= %d" % through,
                 "UPDATE cluster_change_horizon SET pruned_through = %d WHERE id = 1 AND pruned_through < %d"
                 % (through, through)]
        if self.backend == "sqlite":
            path = self.database[len("sqlite://"):]
            con = sqlite3.connect(path, timeout=20)
            try:
                with con:
                    for s in stmts:
                        con.execute(s)
            finally:
                con.close()
        else:
            psql(self.database, "BEGIN; %s; COMMIT;" % "; ".join(stmts))


CHECKS: list[tuple[str, Callable[[Suite], None]]] = [
    ("discovery", Suite.check_discovery),
    ("dynamic-crud", Suite.check_dynamic_crud),
    ("dynamic-list", Suite.check_dynamic_list),
    ("dynamic-patch", Suite.check_dynamic_patch),
    ("dynamic-apply", Suite.check_dynamic_apply),
    ("apply-conflicts", Suite.check_apply_conflicts),
    ("replace-needs-resourceversion", Suite.check_replace_needs_resourceversion),
    ("generation", Suite.check_generation),
    ("field-validation", Suite.check_field_validation),
    ("deletecollection", Suite.check_deletecollection),
    ("request-checks", Suite.check_request_checks),
    ("dry-run-writes", Suite.check_dry_run_writes),
    ("custom-objects", Suite.check_custom_objects),
    ("status-subresource", Suite.check_status_subresource),
    ("dry-run-delete", Suite.check_dry_run_delete),
    ("controller-flow", Suite.check_controller_flow),
    ("watch-selector", Suite.check_watch_selector),
    ("watch-resume", Suite.check_watch_resume),
    ("clusterprofiles", Suite.check_clusterprofiles),
    ("status-errors", Suite.check_status_errors),
    ("auth-reviews", Suite.check_auth_reviews),
    ("list-pages", Suite.check_list_pages),
    ("streaming-list", Suite.check_streaming_list),
    ("watch-expired", Suite.check_watch_expired),  # last: it prunes the change log
]


def on_alarm(signum: int, frame: Any) -> None:
    raise CheckTimeout("the check did not finish within %d s" % CHECK_TIMEOUT)


class Runner:
    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.passed = self.failed = self.xfailed = 0
        self.xfails: list[str] = []

    def report(self, name: str, error: str | None, server: Server) -> None:
        check = name.split(": ", 1)[1]
        reason = XFAIL.get(check)
        if error is None and reason is None:
            self.passed += 1
            print("PASS  %s" % name, flush=True)
        elif error is None:
            self.failed += 1
            print("XPASS %s (listed in XFAIL: %s; remove it from the list)" % (name, reason), flush=True)
        elif reason is not None:
            self.xfailed += 1
            self.xfails.append("%s: %s" % (name, reason))
            print("XFAIL %s: %s\n%s" % (name, reason, "\n".join("    " + l for l in error.splitlines())), flush=True)
        else:
            self.failed += 1
            print("FAIL  %s\n%s\n    server log:\n%s" % (name, "\n".join("    " + l for l in error.splitlines()),
                                                      "\n".join("      " + l for l in server.log().splitlines())),
                  flush=True)

    def backend(self, backend: str, root: Path) -> None:
        a = self.args
        workdir = root / backend
        workdir.mkdir()
        dbname = None
        if backend == "sqlite":
            database = "sqlite://%s" % (workdir / "fleetyard.sqlite")
        else:
            dbname = "fy_kube_conf_%s" % uuid.uuid4().hex[:12]
            try:
                psql(a.pg_url, "CREATE DATABASE %s" % dbname)
            except (subprocess.SubprocessError, OSError) as e:
                self.failed += 1
                print("FAIL  postgresql: create database %s on %s: %s" % (dbname, a.pg_url, e), flush=True)
                return
            database = pg_database_url(a.pg_url, dbname)
        server = Server(a.bin, workdir, database)
        if backend == "postgresql":
            # A conductor on PostgreSQL refuses to start without [certificates] key_file.
            key_file = workdir / "certificates.key"
            key_file.write_text(base64.b64encode(os.urandom(32)).decode())
            key_file.chmod(0o600)
            server.env["FLEETYARD__CERTIFICATES__KEY_FILE"] = str(key_file)
        # The checks create about 40 clusters in the one project; the default quota is 20.
        server.env["FLEETYARD__QUOTAS__MAX_CLUSTERS_PER_PROJECT"] = "1000"
        try:
            try:
                server.start()
            except RuntimeError as e:
                self.failed += 1
                print("FAIL  %s: fleetyard serve starts\n%s" % (backend, e), flush=True)
                return
            suite = Suite(server, backend, database)
            for check, fn in CHECKS:
                if a.only and check not in a.only:
                    continue
                name = "%s: %s" % (backend, check)
                started = time.monotonic()
                error = None
                signal.alarm(CHECK_TIMEOUT)
                try:
                    fn(suite)
                except CheckFailed as e:
                    error = str(e)
                except ApiException as e:
                    error = "unexpected ApiException %s %s\n%s" % (e.status, e.reason, e.body)
                except Exception as e:  # any other error of the client or the check is a failure
                    error = "%s: %s\n%s" % (type(e).__name__, e, traceback.format_exc(limit=4))
                finally:
                    signal.alarm(0)
                self.report(name, error, server)
                if a.verbose:
                    print("      (%.1f s)" % (time.monotonic() - started), flush=True)
        finally:
            server.stop()
            if dbname is not None:
                try:
                    psql(a.pg_url, "DROP DATABASE IF EXISTS %s WITH (FORCE)" % dbname)
                except (subprocess.SubprocessError, OSError) as e:
                    print("# note: could not drop %s: %s" % (dbname, e), flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True, help="the fleetyard binary")
    ap.add_argument("--backends", default=os.environ.get("KUBE_CONFORMANCE_BACKENDS", "sqlite,postgresql"),
                    help="comma-separated: sqlite, postgresql (env KUBE_CONFORMANCE_BACKENDS)")
    ap.add_argument("--only", default="", help="comma-separated check names to run (default: all)")
    ap.add_argument("--pg-url", default=os.environ.get("FLEETYARD_TEST_PG_URL", "postgres://postgres@127.0.0.1:5432/postgres"),
                    help="PostgreSQL URL to create the fresh database with (env FLEETYARD_TEST_PG_URL)")
    ap.add_argument("--keep", action="store_true", help="keep the work directory (logs)")
    ap.add_argument("-v", "--verbose", action="store_true", help="print each check's duration")
    args = ap.parse_args()
    args.bin = os.path.abspath(args.bin)
    args.only = {c.strip() for c in args.only.split(",") if c.strip()}
    known = {c for c, _ in CHECKS}
    for c in args.only:
        if c not in known:
            ap.error("unknown check %r (%s)" % (c, ", ".join(sorted(known))))
    for c in XFAIL:
        if c not in known:
            ap.error("XFAIL names an unknown check %r" % c)
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    for b in backends:
        if b not in ("sqlite", "postgresql"):
            ap.error("unknown backend %r (sqlite, postgresql)" % b)
    if not os.access(args.bin, os.X_OK):
        ap.error("no fleetyard binary at %s" % args.bin)

    socket.setdefaulttimeout(SOCKET_TIMEOUT)  # urllib3's default timeout, for every request
    signal.signal(signal.SIGALRM, on_alarm)
    # SIGTERM (tox.sh's caller giving up) ends the run through the finally blocks: servers stop.
    signal.signal(signal.SIGTERM, lambda s, f: sys.exit(143))
    root = Path(tempfile.mkdtemp(prefix="fy-kube-conformance-"))
    runner = Runner(args)
    try:
        for b in backends:
            runner.backend(b, root)
    finally:
        if args.keep or runner.failed:
            print("# work directory (server logs): %s" % root, flush=True)
        else:
            shutil.rmtree(root, ignore_errors=True)
    if runner.xfails:
        print("# expected failures (XFAIL, the service is wrong):", flush=True)
        for x in runner.xfails:
            print("#   %s" % x, flush=True)
    print("kube-conformance: %d passed, %d failed (%d xfailed)" % (runner.passed, runner.failed, runner.xfailed),
          flush=True)
    return 1 if runner.failed else 0


if __name__ == "__main__":
    sys.exit(main())
