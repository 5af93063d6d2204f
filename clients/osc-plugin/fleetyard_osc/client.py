"""A small HTTP client for /v1/federations, the cluster look-ups it needs, the
retry actions of clusters, node groups and federations, and the machines of a
cluster (/v1/clusters/{c}/machines).

It talks through the keystoneauth session OpenStackClient built, the way
python-magnumclient's SessionClient does: service type ``container-infra``,
paths relative to the endpoint (which includes ``/v1``), and the
``OpenStack-API-Version: container-infra <version>`` header on every request.
"""

import json
import logging
import time
import urllib.parse

from keystoneauth1 import adapter
from osc_lib import exceptions as osc_exceptions

import fleetyard_osc

LOG = logging.getLogger(__name__)

SERVICE_TYPE = "container-infra"
USER_AGENT = "fleetyard-osc/%s" % fleetyard_osc.__version__


def header_version(requested):
    """The microversion to send for an API version option, as magnumclient does.

    A bare major version ("1", the option's default) means "latest"; anything
    else ("1.10", "latest") is sent as given.
    """
    requested = (requested or "").strip()
    if not requested or "." not in requested:
        return "latest" if requested in ("", "1") else requested
    return requested


class ApiError(osc_exceptions.CommandError):
    """An error answer from the API; str() is the API's own sentence."""

    def __init__(self, status_code, detail, title=None, request_id=None):
        super().__init__(detail)
        self.status_code = status_code
        self.detail = detail
        self.title = title
        self.request_id = request_id

    def __str__(self):
        return self.detail

    @classmethod
    def from_response(cls, resp):
        request_id = resp.headers.get("x-openstack-request-id")
        title, detail = _error_sentence(resp)
        return cls(resp.status_code, detail, title=title, request_id=request_id)


def _error_sentence(resp):
    """(title, detail) from the error body shapes Magnum-like servers send.

    Fleetyard and Magnum: {"errors": [{"title", "detail", ...}]}. Also
    understood: {"error_message": "<json with faultstring>"} (older Magnum /
    WSME), {"error": {"title", "message"}}, {"message": ...}; otherwise the
    HTTP reason.
    """
    fallback = "HTTP %s: %s" % (resp.status_code, resp.reason or "error")
    try:
        body = resp.json()
    except ValueError:
        text = (resp.text or "").strip()
        return None, (text.splitlines()[0] if text and len(text) < 300 else fallback)
    if isinstance(body, dict):
        errors = body.get("errors")
        if isinstance(errors, list) and errors and isinstance(errors[0], dict):
            first = errors[0]
            return first.get("title"), first.get("detail") or first.get("title") or fallback
        em = body.get("error_message")
        if isinstance(em, str):
            try:
                em = json.loads(em)
            except ValueError:
                return None, em
        if isinstance(em, dict) and em.get("faultstring"):
            return None, em["faultstring"]
        err = body.get("error")
        if isinstance(err, dict) and (err.get("message") or err.get("title")):
            return err.get("title"), err.get("message") or err.get("title")
        if isinstance(body.get("message"), str):
            return None, body["message"]
    return None, fallback


class WaitFailed(osc_exceptions.CommandError):
    """A --wait ended in *_FAILED or ran out of time."""


# The microversion each retry action needs (406 below it).
RETRY_VERSIONS = {"cluster": "1.16", "nodegroup": "1.17", "federation": "1.17"}
# The microversion of the machine API (406 below it); machine requests ask for it unless a
# version was given (--os-container-infra-api-version), so their bodies are the ones the
# commands know.
MACHINES_VERSION = "1.19"
# The microversion of a machine's create, changes, replacement and reboot (406 below it).
MACHINE_WRITES_VERSION = "1.20"
# Cluster groups and their bindings (/v1/clustergroups).
CLUSTER_GROUPS_VERSION = "1.20"


def in_progress(status):
    return bool(status) and status.endswith("_IN_PROGRESS")


def failed(status):
    return bool(status) and status.endswith("_FAILED")


class FederationClient:
    """The federation API (and GET /v1/clusters/{ident}) over an OSC session."""

    def __init__(self, session, region_name=None, interface=None, api_version="latest",
                 service_type=SERVICE_TYPE, endpoint_override=None):
        # The same normalisation as magnumclient.v1.client.Client.
        interface = interface or "public"
        if interface.endswith("URL"):
            interface = interface[:-3]
        self.api_version = api_version
        self.http = adapter.Adapter(
            session=session,
            service_type=service_type,
            interface=interface,
            region_name=region_name,
            endpoint_override=endpoint_override,
            user_agent=USER_AGENT,
            additional_headers={"OpenStack-API-Version": "%s %s" % (SERVICE_TYPE, api_version)},
        )

    # -- HTTP --------------------------------------------------------------

    def request(self, method, path, body=None, version=None):
        headers = {"Accept": "application/json"}
        if version is not None:
            # Wins over the adapter's header for this request only.
            headers["OpenStack-API-Version"] = "%s %s" % (SERVICE_TYPE, version)
        kwargs = {}
        if body is not None:
            kwargs["json"] = body
        resp = self.http.request(path, method, headers=headers, raise_exc=False, **kwargs)
        if resp.status_code >= 400:
            err = ApiError.from_response(resp)
            LOG.debug("%s %s -> %s %r (request id %s)", method, path, resp.status_code,
                      err.detail, err.request_id)
            raise err
        if resp.status_code == 204 or not resp.content:
            return None
        try:
            return resp.json()
        except ValueError:
            raise osc_exceptions.CommandError(
                "%s %s answered %s with a body that is not JSON" % (method, path, resp.status_code))

    @staticmethod
    def _ident(value):
        return urllib.parse.quote(str(value), safe="")

    # -- clusters ----------------------------------------------------------

    def get_cluster(self, ident):
        return self.request("GET", "/clusters/%s" % self._ident(ident))

    def cluster_uuid(self, ident):
        """A cluster's uuid from its name or uuid (the API's 404/409 sentences on failure)."""
        return self.get_cluster(ident)["uuid"]

    def get_nodegroup(self, cluster, ident):
        return self.request("GET", "/clusters/%s/nodegroups/%s" % (self._ident(cluster), self._ident(ident)))

    # -- retries of a failed create ----------------------------------------

    def retry_cluster(self, ident):
        """POST /clusters/{ident}/actions/retry (microversion 1.16): the cluster's uuid."""
        return self._retry("/clusters/%s/actions/retry" % self._ident(ident), RETRY_VERSIONS["cluster"])

    def retry_nodegroup(self, cluster, ident):
        """POST /clusters/{c}/nodegroups/{ng}/actions/retry (1.17): the node group's uuid."""
        path = "/clusters/%s/nodegroups/%s/actions/retry" % (self._ident(cluster), self._ident(ident))
        return self._retry(path, RETRY_VERSIONS["nodegroup"])

    def retry_federation(self, ident):
        """POST /federations/{ident}/actions/retry (1.17): the federation's uuid."""
        return self._retry("/federations/%s/actions/retry" % self._ident(ident), RETRY_VERSIONS["federation"])

    def _retry(self, path, needed):
        try:
            return (self.request("POST", path) or {}).get("uuid")
        except ApiError as e:
            if e.status_code != 406:
                raise
            # The server is the judge of microversions; below the retry's it answers 406 with
            # no sentence, so say which version the command needs.
            raise ApiError(406, "The retry needs microversion %s or later; this request was sent at "
                                "container-infra %s (see --os-container-infra-api-version)."
                                % (needed, self.api_version), title=e.title, request_id=e.request_id)

    # -- machines ----------------------------------------------------------

    def machines_version(self, needed=MACHINES_VERSION):
        """The microversion machine requests are sent at: `needed` (1.19, or 1.20 for a
        create) unless one was given."""
        return needed if self.api_version == "latest" else self.api_version

    def _machines_request(self, path, method="GET", body=None, needed=MACHINES_VERSION):
        version = self.machines_version(needed)
        try:
            return self.request(method, path, body=body, version=version)
        except ApiError as e:
            if e.status_code != 406:
                raise
            what = "Machines need" if needed == MACHINES_VERSION else "A machine's create needs"
            raise ApiError(406, "%s microversion %s or later; this request was sent at "
                                "container-infra %s (see --os-container-infra-api-version)."
                                % (what, needed, version),
                           title=e.title, request_id=e.request_id)

    def list_machines(self, cluster, nodegroup=None, role=None, phase=None, limit=None,
                      marker=None, sort_key=None, sort_dir=None):
        """A cluster's machines, filtered (following `next`), or at most `limit` of them."""
        params = {}
        for key, value in (("nodegroup", nodegroup), ("role", role), ("phase", phase)):
            if value:
                params[key] = value
        path = "/clusters/%s/machines" % self._ident(cluster)
        return self._pages(path, "machines", params, limit, marker, sort_key, sort_dir,
                           fetch=self._machines_request)

    def get_machine(self, cluster, ident):
        return self._machines_request("/clusters/%s/machines/%s" % (self._ident(cluster), self._ident(ident)))

    def delete_machine(self, cluster, ident):
        """Deletes that machine (its node group shrinks by one); 204, nothing to return."""
        return self._machines_request(
            "/clusters/%s/machines/%s" % (self._ident(cluster), self._ident(ident)), method="DELETE")

    def create_machine(self, cluster, nodegroup, body):
        """Creates a machine in the node group (it grows by one, microversion 1.20): the
        machine, Pending."""
        path = "/clusters/%s/nodegroups/%s/machines" % (self._ident(cluster), self._ident(nodegroup))
        return self._machines_request(path, method="POST", body=body,
                                      needed=MACHINE_WRITES_VERSION)

    def _machine_write(self, method, path, body):
        version = MACHINE_WRITES_VERSION if self.api_version == "latest" else self.api_version
        try:
            return self.request(method, path, body=body, version=version)
        except ApiError as e:
            if e.status_code != 406:
                raise
            raise ApiError(406, "Changing, replacing or rebooting a machine needs microversion %s "
                                "or later; this request was sent at container-infra %s (see "
                                "--os-container-infra-api-version)." % (MACHINE_WRITES_VERSION, version),
                           title=e.title, request_id=e.request_id)

    def update_machine(self, cluster, ident, ops):
        """PATCH of the machine's spec (Magnum's JSON patch); the machine, Provisioning."""
        return self._machine_write(
            "PATCH", "/clusters/%s/machines/%s" % (self._ident(cluster), self._ident(ident)), ops)

    def machine_action(self, cluster, ident, action):
        """POST …/machines/{ident}/actions/<replace|reboot>; the machine, Provisioning."""
        return self._machine_write(
            "POST", "/clusters/%s/machines/%s/actions/%s"
            % (self._ident(cluster), self._ident(ident), action), {})

    def roll_nodegroup(self, cluster, ident, ops):
        """PATCH of a node group's /flavor_id, /image_id and /max_batch_size (1.20): its
        machines are replaced, max_batch_size at a time; the node group, UPDATE_IN_PROGRESS."""
        version = MACHINE_WRITES_VERSION if self.api_version == "latest" else self.api_version
        path = "/clusters/%s/nodegroups/%s" % (self._ident(cluster), self._ident(ident))
        try:
            return self.request("PATCH", path, body=ops, version=version)
        except ApiError as e:
            if e.status_code != 406:
                raise
            raise ApiError(406, "A node group's rolling replacement needs microversion %s or "
                                "later; this request was sent at container-infra %s (see "
                                "--os-container-infra-api-version)." % (MACHINE_WRITES_VERSION, version),
                           title=e.title, request_id=e.request_id)

    def list_nodegroups(self, cluster):
        """The cluster's node groups (summaries), at the machine API's microversion."""
        body = self._machines_request("/clusters/%s/nodegroups" % self._ident(cluster)) or {}
        return body.get("nodegroups") or []

    # -- cluster groups (microversion 1.20) --------------------------------

    def groups_version(self):
        """The microversion cluster group requests are sent at: 1.20 unless one was given."""
        return CLUSTER_GROUPS_VERSION if self.api_version == "latest" else self.api_version

    def _groups_request(self, method, path, body=None):
        try:
            return self.request(method, path, body, version=self.groups_version())
        except ApiError as e:
            if e.status_code != 406:
                raise
            raise ApiError(406, "Cluster groups need microversion %s or later; this request was "
                                "sent at container-infra %s (see --os-container-infra-api-version)."
                                % (CLUSTER_GROUPS_VERSION, self.groups_version()),
                           title=e.title, request_id=e.request_id)

    def _group_path(self, group, *rest):
        return "/".join(["/clustergroups", self._ident(group)] + [self._ident(r) for r in rest])

    def list_cluster_groups(self, limit=None, marker=None, sort_key=None, sort_dir=None):
        """The project's cluster groups (following `next`), or at most `limit` of them."""
        fetch = lambda path: self._groups_request("GET", path)  # noqa: E731
        return self._pages("/clustergroups", "clustergroups", {}, limit, marker, sort_key,
                           sort_dir, fetch=fetch)

    def get_cluster_group(self, ident):
        return self._groups_request("GET", self._group_path(ident))

    def create_cluster_group(self, body):
        return self._groups_request("POST", "/clustergroups", body)

    def patch_cluster_group(self, ident, ops):
        return self._groups_request("PATCH", self._group_path(ident), ops)

    def delete_cluster_group(self, ident):
        self._groups_request("DELETE", self._group_path(ident))

    def list_group_members(self, group):
        return (self._groups_request("GET", self._group_path(group, "members")) or {}).get(
            "members") or []

    def add_group_member(self, group, cluster):
        return self._groups_request("POST", self._group_path(group, "members"),
                                    {"cluster": cluster})

    def accept_group_member(self, group, cluster):
        return self._groups_request(
            "POST", self._group_path(group, "members", cluster, "actions", "accept"))

    def remove_group_member(self, group, cluster):
        self._groups_request("DELETE", self._group_path(group, "members", cluster))

    def create_group_binding(self, group, body):
        return self._groups_request("POST", self._group_path(group, "bindings"), body)

    def list_group_bindings(self, group):
        return (self._groups_request("GET", self._group_path(group, "bindings")) or {}).get(
            "bindings") or []

    def delete_group_binding(self, group, binding):
        self._groups_request("DELETE", self._group_path(group, "bindings", binding))

    # -- federations -------------------------------------------------------

    def list_federations(self, limit=None, marker=None, sort_key=None, sort_dir=None, detail=False):
        """Every federation (following `next`), or at most `limit` of them."""
        path = "/federations/detail" if detail else "/federations"
        return self._pages(path, "federations", {}, limit, marker, sort_key, sort_dir)

    def _pages(self, path, key, params, limit, marker, sort_key, sort_dir, fetch=None):
        """The items under `key` of a Magnum list, following `next`, at most `limit` of them."""
        fetch = fetch or (lambda p: self.request("GET", p))
        params = dict(params)
        if limit is not None:
            params["limit"] = limit
        if marker:
            params["marker"] = marker
        if sort_key:
            params["sort_key"] = sort_key
        if sort_dir:
            params["sort_dir"] = sort_dir
        items = []
        query = urllib.parse.urlencode(params)
        seen = set()
        while True:
            body = fetch(path + ("?" + query if query else "")) or {}
            items.extend(body.get(key) or [])
            if limit is not None and len(items) >= limit:
                return items[:limit]
            nxt = body.get("next")
            if not nxt:
                return items
            # Follow `next` through our own endpoint: keep only its query.
            query = urllib.parse.urlsplit(nxt).query
            if not query or query in seen:
                return items
            seen.add(query)
            if limit is not None:
                q = dict(urllib.parse.parse_qsl(query))
                q["limit"] = str(limit - len(items))
                query = urllib.parse.urlencode(q)

    def get_federation(self, ident):
        return self.request("GET", "/federations/%s" % self._ident(ident))

    def create_federation(self, body):
        return self.request("POST", "/federations", body)["uuid"]

    def patch_federation(self, ident, ops):
        return self.request("PATCH", "/federations/%s" % self._ident(ident), ops)

    def delete_federation(self, ident):
        self.request("DELETE", "/federations/%s" % self._ident(ident))

    # -- waiting -----------------------------------------------------------

    def wait(self, uuid, label, *, gone_ok=False, timeout=600.0, interval=1.0,
             progress=None, clock=time.monotonic, sleep=time.sleep):
        """Poll GET /v1/federations/{uuid} until the status is terminal.

        Terminal: any status that is not ``*_IN_PROGRESS`` (``*_FAILED`` raises
        WaitFailed with the status_reason), or, with ``gone_ok`` (delete), the
        federation answering 404; then None is returned. ``progress(status)`` is
        called on every change of status.
        """
        return self.wait_for(lambda: self.get_federation(uuid), "Federation", label, gone_ok=gone_ok,
                             timeout=timeout, interval=interval, progress=progress, clock=clock,
                             sleep=sleep)

    def wait_for(self, fetch, kind, label, *, gone_ok=False, timeout=600.0, interval=1.0,
                 progress=None, clock=time.monotonic, sleep=time.sleep):
        """Like wait(), for any resource: ``fetch()`` returns its body, ``kind`` names it."""
        start = clock()
        last = object()
        while True:
            try:
                fed = fetch()
            except ApiError as e:
                if gone_ok and e.status_code == 404:
                    if progress is not None:
                        progress("deleted")
                    return None
                raise
            status = fed.get("status")
            if status != last:
                last = status
                if progress is not None:
                    progress(status)
            if failed(status):
                reason = fed.get("status_reason") or "no status_reason given"
                raise WaitFailed("%s %s is %s: %s" % (kind, label, status, reason))
            done = not in_progress(status)
            if gone_ok:
                # A delete is over when the row is gone (or says DELETE_COMPLETE).
                done = status == "DELETE_COMPLETE"
            if done:
                return fed
            if clock() - start >= timeout:
                raise WaitFailed("Timed out after %ds waiting for %s %s (status %s)"
                                 % (timeout, kind.lower(), label, status))
            sleep(interval)
