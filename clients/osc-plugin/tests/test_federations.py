"""Unit tests of the plugin, without a server: python -m unittest discover -s tests.

(tools/federation_cli_check.py runs them, then drives the real `openstack`
executable against `fleetyard serve`.)
"""

import argparse
import io
import json
import sys
import unittest
from unittest import mock

from keystoneauth1 import noauth
from keystoneauth1 import session as ksa_session
from osc_lib import exceptions

from fleetyard_osc import client as fclient
from fleetyard_osc import plugin
from fleetyard_osc.v1 import federations as fed
from fleetyard_osc.v1 import retries


class FakeResponse:
    def __init__(self, status, body=None, text=None, headers=None, reason="Not Found"):
        self.status_code = status
        self._body = body
        self.text = text if text is not None else (json.dumps(body) if body is not None else "")
        self.content = self.text.encode()
        self.headers = headers or {}
        self.reason = reason

    def json(self):
        if self._body is None:
            return json.loads(self.text)
        return self._body


class HeaderVersionTest(unittest.TestCase):
    def test_a_bare_major_version_means_latest_like_magnumclient(self):
        self.assertEqual(fclient.header_version("1"), "latest")
        self.assertEqual(fclient.header_version(""), "latest")
        self.assertEqual(fclient.header_version(None), "latest")

    def test_a_microversion_or_latest_is_sent_as_given(self):
        self.assertEqual(fclient.header_version("1.10"), "1.10")
        self.assertEqual(fclient.header_version("latest"), "latest")


class ErrorSentenceTest(unittest.TestCase):
    def sentence(self, resp):
        return str(fclient.ApiError.from_response(resp))

    def test_the_detail_of_the_first_error_is_the_message(self):
        body = {"errors": [{"status": 404, "title": "Not Found",
                            "detail": "Cluster x could not be found."}]}
        err = fclient.ApiError.from_response(
            FakeResponse(404, body, headers={"x-openstack-request-id": "req-1"}))
        self.assertEqual(str(err), "Cluster x could not be found.")
        self.assertEqual(err.status_code, 404)
        self.assertEqual(err.request_id, "req-1")

    def test_the_title_when_there_is_no_detail(self):
        self.assertEqual(self.sentence(FakeResponse(409, {"errors": [{"title": "Conflict here"}]})),
                         "Conflict here")

    def test_older_magnum_error_message_with_a_faultstring(self):
        body = {"error_message": json.dumps({"faultstring": "Federation f could not be found."})}
        self.assertEqual(self.sentence(FakeResponse(404, body)), "Federation f could not be found.")

    def test_a_body_that_is_not_json_gives_its_first_line_or_the_status(self):
        self.assertEqual(self.sentence(FakeResponse(502, text="Bad gateway\nmore")), "Bad gateway")
        self.assertEqual(self.sentence(FakeResponse(500, text="", reason="Internal Server Error")),
                         "HTTP 500: Internal Server Error")

    def test_an_api_error_is_a_command_error_so_osc_prints_one_line(self):
        self.assertIsInstance(fclient.ApiError(404, "x"), exceptions.CommandError)


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


class WaitTest(unittest.TestCase):
    def client_with(self, answers):
        """A FederationClient whose get_federation returns/raises the answers in turn."""
        c = fclient.FederationClient.__new__(fclient.FederationClient)
        seq = list(answers)

        def get(uuid):
            item = seq.pop(0) if len(seq) > 1 else seq[0]
            if isinstance(item, Exception):
                raise item
            return item

        c.get_federation = get
        return c

    def wait(self, c, **kw):
        clock = FakeClock()
        seen = []
        result = c.wait("u", "f", progress=seen.append, clock=clock, sleep=clock.sleep, **kw)
        return result, seen, clock

    def test_follows_the_status_until_it_is_no_longer_in_progress(self):
        c = self.client_with([{"status": "CREATE_IN_PROGRESS"}, {"status": "CREATE_IN_PROGRESS"},
                              {"status": "CREATE_COMPLETE", "uuid": "u"}])
        result, seen, clock = self.wait(c)
        self.assertEqual(result["status"], "CREATE_COMPLETE")
        self.assertEqual(seen, ["CREATE_IN_PROGRESS", "CREATE_COMPLETE"])  # transitions only
        self.assertEqual(clock.now, 2.0)

    def test_failed_raises_with_the_status_reason(self):
        c = self.client_with([{"status": "UPDATE_IN_PROGRESS"},
                              {"status": "UPDATE_FAILED", "status_reason": "driver said no"}])
        with self.assertRaises(fclient.WaitFailed) as cm:
            self.wait(c)
        self.assertIn("UPDATE_FAILED", str(cm.exception))
        self.assertIn("driver said no", str(cm.exception))

    def test_a_delete_is_over_when_the_federation_is_gone(self):
        gone = fclient.ApiError(404, "Federation u could not be found.")
        c = self.client_with([{"status": "DELETE_IN_PROGRESS"}, gone])
        result, seen, _ = self.wait(c, gone_ok=True)
        self.assertIsNone(result)
        self.assertEqual(seen, ["DELETE_IN_PROGRESS", "deleted"])

    def test_a_delete_waits_through_statuses_that_are_not_in_progress(self):
        gone = fclient.ApiError(404, "gone")
        c = self.client_with([{"status": "CREATE_COMPLETE"}, {"status": "DELETE_IN_PROGRESS"}, gone])
        result, _, _ = self.wait(c, gone_ok=True)
        self.assertIsNone(result)

    def test_a_404_outside_a_delete_is_an_error(self):
        c = self.client_with([fclient.ApiError(404, "Federation u could not be found.")])
        with self.assertRaises(fclient.ApiError):
            self.wait(c)

    def test_gives_up_after_the_timeout(self):
        c = self.client_with([{"status": "CREATE_IN_PROGRESS"}])
        with self.assertRaises(fclient.WaitFailed) as cm:
            self.wait(c, timeout=5)
        self.assertIn("Timed out after 5s", str(cm.exception))


class ListTest(unittest.TestCase):
    def test_follows_next_through_its_own_endpoint_with_the_query_only(self):
        c = fclient.FederationClient.__new__(fclient.FederationClient)
        pages = {
            "/federations": {"federations": [{"uuid": "a"}],
                             "next": "http://elsewhere:1/v1/federations?limit=1&marker=a"},
            "/federations?limit=1&marker=a": {"federations": [{"uuid": "b"}]},
        }
        calls = []

        def request(method, path, body=None):
            calls.append(path)
            return pages[path]

        c.request = request
        self.assertEqual([f["uuid"] for f in c.list_federations()], ["a", "b"])
        self.assertEqual(calls, ["/federations", "/federations?limit=1&marker=a"])

    def test_a_limit_stops_early(self):
        c = fclient.FederationClient.__new__(fclient.FederationClient)
        c.request = mock.Mock(return_value={"federations": [{"uuid": "a"}, {"uuid": "b"}],
                                            "next": "http://x/v1/federations?marker=b"})
        self.assertEqual(len(c.list_federations(limit=2)), 2)
        c.request.assert_called_once_with("GET", "/federations?limit=2")


class PluginTest(unittest.TestCase):
    def make(self, version):
        instance = mock.Mock()
        instance._api_version = {plugin.API_NAME: version}
        instance.session = ksa_session.Session(auth=noauth.NoAuth(endpoint="http://h:1/v1"))
        instance.region_name = None
        instance.interface = "publicURL"
        return plugin.make_client(instance)

    def test_the_microversion_header_follows_the_container_infra_option(self):
        self.assertEqual(self.make("1").http.additional_headers["OpenStack-API-Version"],
                         "container-infra latest")
        self.assertEqual(self.make("1.10").http.additional_headers["OpenStack-API-Version"],
                         "container-infra 1.10")

    def test_service_type_and_interface_as_magnumclient(self):
        c = self.make("1")
        self.assertEqual(c.http.service_type, "container-infra")
        self.assertEqual(c.http.interface, "public")

    def test_reads_magnumclients_option_without_defining_it(self):
        self.assertEqual(plugin.API_VERSION_OPTION, "os_container_infra_api_version")
        self.assertNotEqual(plugin.API_NAME, "container_infra")
        parser = argparse.ArgumentParser()
        plugin.build_option_parser(parser)
        self.assertNotIn("--os-container-infra-api-version", parser._option_string_actions)


class FakeFederationClient:
    """Records PATCHes; clusters resolve by name; one federation."""

    def __init__(self):
        self.patches = []
        self.fed = {"uuid": "f-uuid", "name": "f", "hostcluster_id": "h", "member_ids": [],
                    "properties": {"dns-zone": "z.", "old": "1"}, "status": "UPDATE_COMPLETE"}

    def cluster_uuid(self, ident):
        if ident.startswith("missing"):
            raise fclient.ApiError(404, "Cluster %s could not be found." % ident)
        return ident if ident.endswith("-uuid") else ident + "-uuid"

    def get_federation(self, ident):
        return dict(self.fed)

    def patch_federation(self, ident, ops):
        self.patches.append((ident, ops))
        return {"uuid": ident}


def run_command(cls, argv, fake):
    app = mock.Mock()
    setattr(app.client_manager, plugin.API_NAME, fake)
    cmd = cls(app, None)
    parsed = cmd.get_parser("openstack coe federation x").parse_args(argv)
    return cmd.take_action(parsed)


class CommandTest(unittest.TestCase):
    def test_join_sends_one_patch_per_cluster_with_resolved_uuids(self):
        fake = FakeFederationClient()
        run_command(fed.JoinFederation, ["f", "c2", "c3-uuid", "c2"], fake)
        self.assertEqual(fake.patches, [
            ("f-uuid", [{"op": "add", "path": "/member_ids", "value": "c2-uuid"}]),
            ("f-uuid", [{"op": "add", "path": "/member_ids", "value": "c3-uuid"}]),
        ])

    def test_unjoin_removes(self):
        fake = FakeFederationClient()
        run_command(fed.UnjoinFederation, ["f", "c2"], fake)
        self.assertEqual(fake.patches, [
            ("f-uuid", [{"op": "remove", "path": "/member_ids", "value": "c2-uuid"}])])

    def test_join_of_an_unknown_cluster_sends_nothing_and_says_the_apis_sentence(self):
        fake = FakeFederationClient()
        with self.assertRaises(fclient.ApiError) as cm:
            run_command(fed.JoinFederation, ["f", "c2", "missing1"], fake)
        self.assertEqual(str(cm.exception), "Cluster missing1 could not be found.")
        self.assertEqual(fake.patches, [])

    def test_update_maps_dns_and_escapes_keys(self):
        fake = FakeFederationClient()
        run_command(fed.UpdateFederation,
                    ["f", "--property", "dns=new.", "--property", "a/b=1", "--remove-property", "old"], fake)
        self.assertEqual(fake.patches, [("f-uuid", [
            {"op": "add", "path": "/properties/dns-zone", "value": "new."},
            {"op": "add", "path": "/properties/a~1b", "value": "1"},
            {"op": "remove", "path": "/properties/old"},
        ])])

    def test_removing_a_property_the_federation_lacks_is_refused_before_any_patch(self):
        fake = FakeFederationClient()
        with self.assertRaises(exceptions.CommandError) as cm:
            run_command(fed.UpdateFederation, ["f", "--remove-property", "nope"], fake)
        self.assertIn("has no property nope", str(cm.exception))
        self.assertEqual(fake.patches, [])

    def test_update_needs_something_to_do(self):
        with self.assertRaises(exceptions.CommandError):
            run_command(fed.UpdateFederation, ["f"], FakeFederationClient())

    def test_dns_and_dns_zone_with_different_values_are_refused(self):
        with self.assertRaises(exceptions.CommandError):
            fed.normalise_properties({"dns": "a.", "dns-zone": "b."})
        self.assertEqual(fed.normalise_properties({"dns": "a.", "x": "y"}), {"dns-zone": "a.", "x": "y"})

    def test_create_sends_uuids_and_dns_zone(self):
        fake = FakeFederationClient()
        fake.create_federation = mock.Mock(return_value="new-uuid")
        cols, values = run_command(fed.CreateFederation,
                                   ["f2", "--hostcluster", "h", "--member", "m1", "--member", "m1",
                                    "--property", "dns=z."], fake)
        fake.create_federation.assert_called_once_with({
            "name": "f2", "hostcluster_id": "h-uuid", "member_ids": ["m1-uuid"],
            "properties": {"dns-zone": "z."}})
        self.assertEqual(cols, fed.SHOW_COLUMNS)


class RetryClientTest(unittest.TestCase):
    def client(self, answer):
        c = fclient.FederationClient.__new__(fclient.FederationClient)
        c.api_version = "1.10"
        c.calls = []

        def request(method, path, body=None):
            c.calls.append((method, path, body))
            if isinstance(answer, Exception):
                raise answer
            return answer

        c.request = request
        return c

    def test_each_retry_posts_its_action_without_a_body_and_returns_the_uuid(self):
        c = self.client({"uuid": "u-1"})
        self.assertEqual(c.retry_cluster("k 1"), "u-1")
        self.assertEqual(c.retry_nodegroup("k1", "gpu"), "u-1")
        self.assertEqual(c.retry_federation("f1"), "u-1")
        self.assertEqual(c.calls, [
            ("POST", "/clusters/k%201/actions/retry", None),
            ("POST", "/clusters/k1/nodegroups/gpu/actions/retry", None),
            ("POST", "/federations/f1/actions/retry", None),
        ])

    def test_a_406_says_which_microversion_the_retry_needs(self):
        c = self.client(fclient.ApiError(406, "HTTP 406: Not Acceptable"))
        with self.assertRaises(fclient.ApiError) as cm:
            c.retry_nodegroup("k1", "gpu")
        self.assertEqual(str(cm.exception),
                         "The retry needs microversion 1.17 or later; this request was sent at "
                         "container-infra 1.10 (see --os-container-infra-api-version).")
        self.assertEqual(cm.exception.status_code, 406)
        with self.assertRaises(fclient.ApiError) as cm:
            c.retry_cluster("k1")
        self.assertIn("needs microversion 1.16 or later", str(cm.exception))

    def test_the_apis_409_naming_the_way_forward_is_the_message(self):
        sentence = ("Retrying a cluster when status is \"DELETE_FAILED\" is not supported; only a "
                    "cluster whose create failed (CREATE_FAILED) is retried: delete the cluster again.")
        c = self.client(fclient.ApiError(409, sentence))
        with self.assertRaises(fclient.ApiError) as cm:
            c.retry_cluster("k1")
        self.assertEqual(str(cm.exception), sentence)


class FakeRetryClient(FakeFederationClient):
    """Retries are accepted; the resource then shows `statuses` in turn."""

    def __init__(self, statuses):
        super().__init__()
        self.retried = []
        self.statuses = list(statuses)
        self.fetched = []

    def retry_cluster(self, ident):
        self.retried.append(("cluster", ident))
        return "c-uuid"

    def retry_nodegroup(self, cluster, ident):
        self.retried.append(("nodegroup", cluster, ident))
        return "ng-uuid"

    def retry_federation(self, ident):
        self.retried.append(("federation", ident))
        return "f-uuid"

    def _next(self, what):
        self.fetched.append(what)
        status = self.statuses.pop(0) if len(self.statuses) > 1 else self.statuses[0]
        return {"uuid": what, "status": status, "status_reason": "driver said no"}

    def get_cluster(self, ident):
        return self._next(ident)

    def get_nodegroup(self, cluster, ident):
        return self._next((cluster, ident))

    def get_federation(self, ident):
        fed_body = dict(self.fed)
        fed_body.update(self._next(ident))
        return fed_body

    def wait_for(self, fetch, kind, label, **kw):
        clock = FakeClock()
        kw.update(clock=clock, sleep=clock.sleep)
        return fclient.FederationClient.wait_for(self, fetch, kind, label, **kw)

    def wait(self, uuid, label, **kw):
        return fclient.FederationClient.wait(self, uuid, label, **kw)


def run_quiet(cls, argv, fake):
    out = io.StringIO()
    with mock.patch.object(sys, "stdout", out), mock.patch.object(sys, "stderr", io.StringIO()):
        result = run_command(cls, argv, fake)
    return result, out.getvalue()


class RetryCommandTest(unittest.TestCase):
    def test_cluster_retry_prints_magnumclients_acceptance(self):
        fake = FakeRetryClient(["CREATE_IN_PROGRESS"])
        _, out = run_quiet(retries.RetryCluster, ["k1"], fake)
        self.assertEqual(fake.retried, [("cluster", "k1")])
        self.assertEqual(out, "Request to retry cluster k1 has been accepted.\n")
        self.assertEqual(fake.fetched, [])

    def test_cluster_retry_waits_for_the_create_by_uuid(self):
        fake = FakeRetryClient(["CREATE_IN_PROGRESS", "CREATE_IN_PROGRESS", "CREATE_COMPLETE"])
        _, out = run_quiet(retries.RetryCluster, ["k1", "--wait"], fake)
        self.assertEqual(out, "Request to retry cluster k1 has been accepted.\n"
                              "Cluster k1 is CREATE_COMPLETE.\n")
        self.assertEqual(fake.fetched, ["c-uuid"] * 3)

    def test_a_create_that_fails_again_exits_non_zero_with_the_reason(self):
        fake = FakeRetryClient(["CREATE_IN_PROGRESS", "CREATE_FAILED"])
        with self.assertRaises(fclient.WaitFailed) as cm:
            run_quiet(retries.RetryCluster, ["k1", "--wait"], fake)
        self.assertEqual(str(cm.exception), "Cluster k1 is CREATE_FAILED: driver said no")

    def test_nodegroup_retry_names_the_cluster_and_the_group(self):
        fake = FakeRetryClient(["CREATE_COMPLETE"])
        _, out = run_quiet(retries.RetryNodeGroup, ["k1", "gpu", "--wait"], fake)
        self.assertEqual(fake.retried, [("nodegroup", "k1", "gpu")])
        self.assertEqual(fake.fetched, [("k1", "ng-uuid")])
        self.assertEqual(out, "Request to retry nodegroup gpu has been accepted.\n"
                              "Nodegroup gpu is CREATE_COMPLETE.\n")

    def test_federation_retry_shows_the_federation(self):
        fake = FakeRetryClient(["CREATE_IN_PROGRESS"])
        cols, values = run_command(fed.RetryFederation, ["f"], fake)
        self.assertEqual(fake.retried, [("federation", "f")])
        self.assertEqual(cols, fed.SHOW_COLUMNS)
        self.assertEqual(dict(zip(cols, values))["status"], "CREATE_IN_PROGRESS")

    def test_federation_retry_waits(self):
        fake = FakeRetryClient(["CREATE_IN_PROGRESS", "CREATE_COMPLETE"])
        cols, values = run_command(fed.RetryFederation, ["f", "--wait"], fake)
        self.assertEqual(dict(zip(cols, values))["status"], "CREATE_COMPLETE")


class OutputTest(unittest.TestCase):
    def test_show_has_the_specs_rows_and_formats(self):
        cols, values = fed.show_row({"uuid": "u", "name": "n", "hostcluster_id": "h",
                                     "member_ids": ["a", "b"], "properties": {"dns-zone": "c.l", "k": "v"},
                                     "status": "UPDATE_COMPLETE", "status_reason": "ok"})
        row = dict(zip(cols, values))
        self.assertEqual(list(cols[:8]), ["uuid", "name", "hostcluster", "members", "project_id",
                                          "properties", "status", "status_reason"])
        self.assertEqual(row["members"].human_readable(), "['a', 'b']")
        self.assertEqual(row["members"].machine_readable(), ["a", "b"])
        self.assertEqual(row["properties"].human_readable(), "dns-zone=c.l, k=v")
        self.assertEqual(row["properties"].machine_readable(), {"dns-zone": "c.l", "k": "v"})

    def test_list_counts_members(self):
        self.assertEqual(fed.list_row({"uuid": "u", "name": "n", "member_ids": ["a", "b", "c"],
                                       "status": "S"}), ("u", "n", 3, "S"))
        self.assertEqual(fed.list_row({"uuid": "u", "name": "n", "member_ids": None, "status": "S"})[2], 0)

    def test_progress_goes_to_stderr_only_on_a_terminal(self):
        mixin = fed.FederationMixin()
        with mock.patch.object(sys, "stderr", io.StringIO()):
            self.assertIsNone(mixin.progress_printer("f"))


if __name__ == "__main__":
    unittest.main()
