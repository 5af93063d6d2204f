"""Unit tests of `openstack coe cluster group ...`, without a server."""

import unittest
from unittest import mock

from fleetyard_osc import client as fclient
from fleetyard_osc import plugin
from fleetyard_osc.v1 import cluster_groups as groups

GROUP = {
    "uuid": "g-uuid", "name": "prod", "description": "Production", "selector": "env=prod",
    "project_id": "p", "user_id": "u", "created_at": "2026-11-27T09:00:00+00:00",
    "updated_at": None, "links": [],
}
MEMBER = {
    "clustergroup_id": "g-uuid", "cluster_id": "c-uuid", "cluster_project_id": "other",
    "state": "Proposed", "proposed_by": "p", "consented_at": None,
    "created_at": "2026-11-27T09:00:00+00:00",
}
BINDING = {
    "uuid": "b-uuid", "clustergroup_id": "g-uuid", "project_id": "sre", "roles": None,
    "access": "read", "created_at": "2026-11-27T09:00:00+00:00", "links": [],
}


class FakeResponse:
    def __init__(self, status, body):
        self.status_code = status
        self._body = body
        self.content = b"{}" if body is not None else b""
        self.text = "{}"
        self.headers = {}
        self.reason = "Error"

    def json(self):
        return self._body


def http_client(api_version, answers):
    """A client whose HTTP answers `answers` in turn and records (method, path, version, body)."""
    c = fclient.FederationClient.__new__(fclient.FederationClient)
    c.api_version = api_version
    c.calls = []
    seq = list(answers)

    def request(path, method, headers=None, raise_exc=True, **kw):
        c.calls.append((method, path, headers.get("OpenStack-API-Version"), kw.get("json")))
        return seq.pop(0)

    c.http = mock.Mock()
    c.http.request = request
    return c


class ClusterGroupClientTest(unittest.TestCase):
    def test_requests_go_to_the_group_routes_at_1_20_with_quoted_names(self):
        c = http_client("latest", [
            FakeResponse(201, GROUP),
            FakeResponse(201, MEMBER),
            FakeResponse(200, dict(MEMBER, state="Accepted")),
            FakeResponse(204, None),
            FakeResponse(201, BINDING),
            FakeResponse(200, {"bindings": [BINDING]}),
            FakeResponse(204, None),
            FakeResponse(204, None),
        ])
        c.create_cluster_group({"name": "prod"})
        c.add_group_member("prod", "k8s one")
        c.accept_group_member("g-uuid", "c/1")
        c.remove_group_member("g-uuid", "c-uuid")
        c.create_group_binding("prod", {"project_id": "sre", "access": "read"})
        self.assertEqual(c.list_group_bindings("prod"), [BINDING])
        c.delete_group_binding("prod", "b-uuid")
        c.delete_cluster_group("prod")
        v = "container-infra 1.20"
        self.assertEqual(c.calls, [
            ("POST", "/clustergroups", v, {"name": "prod"}),
            ("POST", "/clustergroups/prod/members", v, {"cluster": "k8s one"}),
            ("POST", "/clustergroups/g-uuid/members/c%2F1/actions/accept", v, None),
            ("DELETE", "/clustergroups/g-uuid/members/c-uuid", v, None),
            ("POST", "/clustergroups/prod/bindings", v, {"project_id": "sre", "access": "read"}),
            ("GET", "/clustergroups/prod/bindings", v, None),
            ("DELETE", "/clustergroups/prod/bindings/b-uuid", v, None),
            ("DELETE", "/clustergroups/prod", v, None),
        ])

    def test_the_list_follows_next_and_sends_the_page_options(self):
        c = http_client("latest", [
            FakeResponse(200, {"clustergroups": [GROUP],
                               "next": "http://x/v1/clustergroups?limit=1&marker=g-uuid"}),
            FakeResponse(200, {"clustergroups": []}),
        ])
        self.assertEqual(c.list_cluster_groups(sort_key="name"), [GROUP])
        self.assertEqual([call[1] for call in c.calls], [
            "/clustergroups?sort_key=name", "/clustergroups?limit=1&marker=g-uuid"])

    def test_an_older_microversion_is_sent_as_given_and_its_406_says_what_is_needed(self):
        c = http_client("1.19", [FakeResponse(406, {"errors": [{"title": "", "detail": ""}]})])
        with self.assertRaises(fclient.ApiError) as cm:
            c.get_cluster_group("prod")
        self.assertEqual(c.calls[0][2], "container-infra 1.19")
        self.assertEqual(str(cm.exception),
                         "Cluster groups need microversion 1.20 or later; this request was sent "
                         "at container-infra 1.19 (see --os-container-infra-api-version).")

    def test_the_apis_sentence_is_the_message(self):
        body = {"errors": [{"title": "ClusterGroup nope could not be found",
                            "detail": "ClusterGroup nope could not be found."}]}
        c = http_client("latest", [FakeResponse(404, body)])
        with self.assertRaises(fclient.ApiError) as cm:
            c.get_cluster_group("nope")
        self.assertEqual(str(cm.exception), "ClusterGroup nope could not be found.")


class FakeGroupClient:
    def __init__(self):
        self.calls = []

    def __getattr__(self, name):
        def record(*args):
            self.calls.append((name,) + args)
            if name == "delete_cluster_group" and args[0] == "nope":
                raise fclient.ApiError(404, "ClusterGroup nope could not be found.")
            return {"create_cluster_group": GROUP, "get_cluster_group": GROUP,
                    "add_group_member": MEMBER, "accept_group_member": MEMBER,
                    "create_group_binding": dict(BINDING, roles=["reader", "member"]),
                    "list_group_members": [MEMBER], "list_group_bindings": [BINDING],
                    }.get(name)
        return record

    def list_cluster_groups(self, **kw):
        self.calls.append(("list_cluster_groups", kw))
        return [GROUP]


def run_command(cls, argv, fake):
    app = mock.Mock()
    setattr(app.client_manager, plugin.API_NAME, fake)
    cmd = cls(app, None)
    parsed = cmd.get_parser("openstack coe cluster group x").parse_args(argv)
    return cmd.take_action(parsed)


class ClusterGroupCommandTest(unittest.TestCase):
    def test_create_sends_what_was_given(self):
        fake = FakeGroupClient()
        cols, values = run_command(groups.CreateClusterGroup,
                                   ["prod", "--selector", "env=prod", "--cluster", "a",
                                    "--cluster", "b"], fake)
        self.assertEqual(fake.calls, [("create_cluster_group",
                                       {"name": "prod", "selector": "env=prod",
                                        "clusters": ["a", "b"]})])
        self.assertEqual(dict(zip(cols, values))["selector"], "env=prod")
        fake = FakeGroupClient()
        run_command(groups.CreateClusterGroup, ["prod", "--description", "x"], fake)
        self.assertEqual(fake.calls, [("create_cluster_group",
                                       {"name": "prod", "description": "x"})])

    def test_list_passes_the_page_options(self):
        fake = FakeGroupClient()
        cols, rows = run_command(groups.ListClusterGroup,
                                 ["--limit", "5", "--sort-key", "name", "--sort-dir", "desc"],
                                 fake)
        self.assertEqual(fake.calls, [("list_cluster_groups",
                                       {"limit": 5, "marker": None, "sort_key": "name",
                                        "sort_dir": "desc"})])
        self.assertEqual(rows, [("g-uuid", "prod", "env=prod", "Production")])

    def test_member_commands_name_the_group_and_the_cluster(self):
        fake = FakeGroupClient()
        cols, values = run_command(groups.AddClusterGroupMember, ["prod", "c-uuid"], fake)
        self.assertEqual(dict(zip(cols, values))["state"], "Proposed")
        run_command(groups.AcceptClusterGroupMember, ["g-uuid", "mine"], fake)
        with mock.patch("builtins.print"):
            run_command(groups.RemoveClusterGroupMember, ["g-uuid", "mine"], fake)
        cols, rows = run_command(groups.ListClusterGroupMember, ["prod"], fake)
        self.assertEqual(fake.calls, [
            ("add_group_member", "prod", "c-uuid"),
            ("accept_group_member", "g-uuid", "mine"),
            ("remove_group_member", "g-uuid", "mine"),
            ("list_group_members", "prod"),
        ])
        self.assertEqual(rows, [("c-uuid", "other", "Proposed", "p", None)])

    def test_a_binding_is_read_by_default_and_takes_roles(self):
        fake = FakeGroupClient()
        cols, values = run_command(groups.CreateClusterGroupBinding,
                                   ["prod", "--project", "sre", "--role", "reader", "--role",
                                    "member"], fake)
        self.assertEqual(fake.calls, [("create_group_binding", "prod",
                                       {"project_id": "sre", "access": "read",
                                        "roles": ["reader", "member"]})])
        row = dict(zip(cols, values))
        self.assertEqual(row["roles"].human_readable(), "reader, member")
        cols, rows = run_command(groups.ListClusterGroupBinding, ["prod"], fake)
        self.assertEqual(rows[0][3].human_readable(), "(every member)")
        self.assertIsNone(rows[0][3].machine_readable())
        with self.assertRaises(SystemExit):
            with mock.patch("sys.stderr"):
                run_command(groups.CreateClusterGroupBinding,
                            ["prod", "--project", "sre", "--access", "admin"], fake)

    def test_deletes_ask_for_every_one_and_report_failures_together(self):
        fake = FakeGroupClient()
        with self.assertRaises(groups.osc_exceptions.CommandError) as ctx:
            with mock.patch("builtins.print"):
                run_command(groups.DeleteClusterGroup, ["a", "nope", "b"], fake)
        self.assertEqual([c[1] for c in fake.calls], ["a", "nope", "b"])
        self.assertIn("1 of 3 deletes failed", str(ctx.exception))
        self.assertIn("nope: ClusterGroup nope could not be found.", str(ctx.exception))
        fake = FakeGroupClient()
        with mock.patch("builtins.print"):
            run_command(groups.DeleteClusterGroupBinding, ["prod", "b1", "b2"], fake)
        self.assertEqual(fake.calls, [("delete_group_binding", "prod", "b1"),
                                      ("delete_group_binding", "prod", "b2")])

class SetOpsTest(unittest.TestCase):
    def args(self, **kw):
        base = {"description": None, "selector": None, "unset_description": False,
                "unset_selector": False}
        base.update(kw)
        return mock.Mock(**base)

    def test_given_attributes_are_replaced_and_unset_ones_removed(self):
        self.assertEqual(groups.set_ops(self.args(description="d", unset_selector=True)), [
            {"op": "replace", "path": "/description", "value": "d"},
            {"op": "remove", "path": "/selector"},
        ])

    def test_nothing_or_both_of_one_attribute_is_refused(self):
        for kw in ({}, {"selector": "a=b", "unset_selector": True}):
            with self.assertRaises(groups.osc_exceptions.CommandError):
                groups.set_ops(self.args(**kw))


if __name__ == "__main__":
    unittest.main()
