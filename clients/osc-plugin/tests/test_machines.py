"""Unit tests of `openstack coe machine list | show`, without a server.

(tools/machine_cli_check.py drives the real `openstack` executable against
`fleetyard serve`.)
"""

import unittest
from unittest import mock

from fleetyard_osc import client as fclient
from fleetyard_osc import plugin
from fleetyard_osc.v1 import machines


MASTER = {
    "uuid": "m-uuid", "name": "default-master-1", "cluster_id": "c-uuid",
    "nodegroup_id": "ng-master", "role": "master", "project_id": "p",
    "spec": {"versions": {"kubelet": "v1.30.1", "control_plane": "v1.30.1"},
             "container_runtime": {"name": "containerd", "version": "1.7.22"},
             "os_image": "fedora-coreos-40", "flavor": "m1.medium",
             "taints": [{"key": "node-role.kubernetes.io/control-plane", "value": None,
                         "effect": "NoSchedule"},
                        {"key": "dedicated", "value": "cp", "effect": "NoExecute"}],
             "labels": {"tier": "cp", "a": "b"}},
    "status": {"phase": "Running", "provider_id": "openstack:///s1", "node_ref": "n1",
               "addresses": [{"type": "Hostname", "address": "n1"},
                             {"type": "InternalIP", "address": "10.0.0.5"}],
               "versions": {"kubelet": "v1.30.2", "control_plane": "v1.30.1"},
               "error_reason": None, "error_message": None, "last_change": "InPlace",
               "last_updated": "2026-11-27T10:00:00+00:00"},
    "created_at": "2026-11-27T09:00:00+00:00", "updated_at": None,
}

PENDING = {
    "uuid": "w-uuid", "name": "default-worker-1", "nodegroup_id": "ng-worker", "role": "worker",
    "spec": {"versions": {"kubelet": "v1.30.1", "control_plane": None}, "container_runtime": None,
             "taints": [], "labels": {}},
    "status": {"phase": "Pending", "addresses": [], "versions": {"kubelet": None}},
}


class FakeResponse:
    def __init__(self, status, body):
        self.status_code = status
        self._body = body
        self.content = b"{}"
        self.text = "{}"
        self.headers = {}
        self.reason = "Not Acceptable"

    def json(self):
        return self._body


class MachineClientTest(unittest.TestCase):
    def client(self, api_version, answers):
        """A client whose HTTP answers `answers` in turn and records (path, headers)."""
        c = fclient.FederationClient.__new__(fclient.FederationClient)
        c.api_version = api_version
        c.calls = []
        seq = list(answers)

        def request(path, method, headers=None, raise_exc=True, **kw):
            c.calls.append((method, path, headers.get("OpenStack-API-Version")))
            return seq.pop(0)

        c.http = mock.Mock()
        c.http.request = request
        return c

    def test_list_sends_the_filters_and_microversion_1_19_and_follows_next(self):
        c = self.client("latest", [
            FakeResponse(200, {"machines": [MASTER],
                               "next": "http://elsewhere/v1/clusters/c-uuid/machines?"
                                       "sort_key=id&sort_dir=asc&limit=1&marker=m-uuid&role=master"}),
            FakeResponse(200, {"machines": []}),
        ])
        got = c.list_machines("k 1", nodegroup="default-master", role="master", phase="Running",
                              sort_key="name", sort_dir="desc")
        self.assertEqual(got, [MASTER])
        self.assertEqual(c.calls, [
            ("GET", "/clusters/k%201/machines?nodegroup=default-master&role=master&phase=Running"
                    "&sort_key=name&sort_dir=desc", "container-infra 1.19"),
            ("GET", "/clusters/k%201/machines?sort_key=id&sort_dir=asc&limit=1&marker=m-uuid"
                    "&role=master", "container-infra 1.19"),
        ])

    def test_a_limit_and_a_marker_are_sent_and_stop_the_walk(self):
        c = self.client("latest", [FakeResponse(200, {"machines": [MASTER, PENDING],
                                                      "next": "http://x/v1/c?marker=w-uuid"})])
        self.assertEqual(len(c.list_machines("k1", limit=2, marker="a-uuid")), 2)
        self.assertEqual(c.calls, [("GET", "/clusters/k1/machines?limit=2&marker=a-uuid",
                                    "container-infra 1.19")])

    def test_show_takes_names_or_uuids_quoted(self):
        c = self.client("latest", [FakeResponse(200, MASTER)])
        self.assertEqual(c.get_machine("k1", "default master/1"), MASTER)
        self.assertEqual(c.calls, [("GET", "/clusters/k1/machines/default%20master%2F1",
                                    "container-infra 1.19")])

    def test_a_given_microversion_is_sent_as_given_and_its_406_says_what_is_needed(self):
        c = self.client("1.10", [FakeResponse(406, {"errors": [{"title": "", "detail": ""}]})])
        with self.assertRaises(fclient.ApiError) as cm:
            c.get_machine("k1", "m1")
        self.assertEqual(c.calls[0][2], "container-infra 1.10")
        self.assertEqual(str(cm.exception),
                         "Machines need microversion 1.19 or later; this request was sent at "
                         "container-infra 1.10 (see --os-container-infra-api-version).")
        self.assertEqual(cm.exception.status_code, 406)

    def test_the_apis_404_sentence_is_the_message(self):
        body = {"errors": [{"title": "Machine nope could not be found",
                            "detail": "Machine nope could not be found."}]}
        c = self.client("latest", [FakeResponse(404, body)])
        with self.assertRaises(fclient.ApiError) as cm:
            c.get_machine("k1", "nope")
        self.assertEqual(str(cm.exception), "Machine nope could not be found.")


class FakeMachineClient:
    def __init__(self, machines_list):
        self.machines = machines_list
        self.listed = []
        self.nodegroup_lists = 0

    def list_machines(self, cluster, **kw):
        self.listed.append((cluster, kw))
        return list(self.machines)

    def list_nodegroups(self, cluster):
        self.nodegroup_lists += 1
        return [{"uuid": "ng-master", "name": "default-master"}]

    def get_machine(self, cluster, ident):
        self.shown = (cluster, ident)
        return MASTER

    def delete_machine(self, cluster, ident):
        self.deleted = getattr(self, "deleted", []) + [(cluster, ident)]
        if ident == "nope":
            raise fclient.ApiError(404, "Machine nope could not be found.")


def run_command(cls, argv, fake):
    app = mock.Mock()
    setattr(app.client_manager, plugin.API_NAME, fake)
    cmd = cls(app, None)
    parsed = cmd.get_parser("openstack coe machine x").parse_args(argv)
    return cmd.take_action(parsed)


class MachineCommandTest(unittest.TestCase):
    def test_list_passes_every_option_and_names_node_groups(self):
        fake = FakeMachineClient([MASTER, PENDING])
        cols, rows = run_command(machines.ListMachine,
                                 ["k1", "--nodegroup", "default-master", "--role", "master",
                                  "--phase", "Running", "--limit", "5", "--marker", "a-uuid",
                                  "--sort-key", "name", "--sort-dir", "desc"], fake)
        self.assertEqual(fake.listed, [("k1", {"nodegroup": "default-master", "role": "master",
                                               "phase": "Running", "limit": 5, "marker": "a-uuid",
                                               "sort_key": "name", "sort_dir": "desc"})])
        self.assertEqual(cols, ("uuid", "name", "nodegroup", "role", "phase", "kubelet_version",
                                "address"))
        self.assertEqual(rows, [
            ("m-uuid", "default-master-1", "default-master", "master", "Running", "v1.30.2",
             "10.0.0.5"),
            # A group the name list lacks shows its uuid; no running version: the spec's.
            ("w-uuid", "default-worker-1", "ng-worker", "worker", "Pending", "v1.30.1", ""),
        ])

    def test_an_empty_list_asks_nothing_more(self):
        fake = FakeMachineClient([])
        cols, rows = run_command(machines.ListMachine, ["k1"], fake)
        self.assertEqual(rows, [])
        self.assertEqual(fake.nodegroup_lists, 0)

    def test_role_and_phase_take_the_apis_values_only(self):
        for bad in (["k1", "--role", "boss"], ["k1", "--phase", "running"],
                    ["k1", "--sort-dir", "up"]):
            with self.assertRaises(SystemExit):
                with mock.patch("sys.stderr"):
                    run_command(machines.ListMachine, bad, FakeMachineClient([]))

    def test_show_flattens_spec_and_status(self):
        fake = FakeMachineClient([])
        cols, values = run_command(machines.ShowMachine, ["k1", "default-master-1"], fake)
        self.assertEqual(fake.shown, ("k1", "default-master-1"))
        row = dict(zip(cols, values))
        self.assertEqual(cols, machines.SHOW_COLUMNS)
        plain = {k: v for k, v in row.items()
                 if k not in ("addresses", "taints", "labels")}
        self.assertEqual(plain, {
            "uuid": "m-uuid", "name": "default-master-1", "cluster_id": "c-uuid",
            "nodegroup_id": "ng-master", "role": "master", "project_id": "p", "phase": "Running",
            "provider_id": "openstack:///s1", "node_ref": "n1", "kubelet_version": "v1.30.1",
            "control_plane_version": "v1.30.1", "running_kubelet_version": "v1.30.2",
            "running_control_plane_version": "v1.30.1", "container_runtime": "containerd 1.7.22",
            "os_image": "fedora-coreos-40", "flavor": "m1.medium", "error_reason": None,
            "error_message": None, "last_change": "InPlace",
            "last_updated": "2026-11-27T10:00:00+00:00",
            "created_at": "2026-11-27T09:00:00+00:00", "updated_at": None,
        })
        self.assertEqual(row["addresses"].human_readable(), "Hostname=n1, InternalIP=10.0.0.5")
        self.assertEqual(row["addresses"].machine_readable(), MASTER["status"]["addresses"])
        self.assertEqual(row["taints"].human_readable(),
                         "node-role.kubernetes.io/control-plane:NoSchedule, dedicated=cp:NoExecute")
        self.assertEqual(row["labels"].human_readable(), "a=b, tier=cp")
        self.assertEqual(row["labels"].machine_readable(), {"tier": "cp", "a": "b"})

    def test_show_of_a_machine_with_nothing_recorded(self):
        cols, values = machines.show_row(PENDING)
        row = dict(zip(cols, values))
        self.assertIsNone(row["container_runtime"])
        self.assertEqual(row["addresses"].human_readable(), "")
        self.assertEqual(row["taints"].machine_readable(), [])


if __name__ == "__main__":
    unittest.main()


class MachineDeleteTest(unittest.TestCase):
    def test_the_client_deletes_at_1_19_by_quoted_names(self):
        c = MachineClientTest.client(None, "latest", [FakeResponse(204, None)])
        self.assertIsNone(c.delete_machine("my cluster", "w/1"))
        self.assertEqual(c.calls, [("DELETE", "/clusters/my%20cluster/machines/w%2F1",
                                    "container-infra 1.19")])

    def test_every_machine_is_asked_and_failures_are_reported_together(self):
        fake = FakeMachineClient([])
        with self.assertRaises(machines.osc_exceptions.CommandError) as ctx:
            run_command(machines.DeleteMachine, ["k8s", "w-1", "nope", "w-2"], fake)
        self.assertEqual(fake.deleted, [("k8s", "w-1"), ("k8s", "nope"), ("k8s", "w-2")])
        self.assertIn("1 of 3 machines could not be deleted", str(ctx.exception))
        self.assertIn("nope: Machine nope could not be found.", str(ctx.exception))

    def test_wait_polls_until_every_machine_is_a_404(self):
        answers = {"w-1": [MASTER, None], "w-2": [None]}

        class Polled:
            def get_machine(self, cluster, ident):
                if answers[ident].pop(0) is None:
                    raise fclient.ApiError(404, "gone")
                return MASTER

        naps = []
        machines.wait_gone(Polled(), "k8s", ["w-1", "w-2"], 60, sleep=naps.append,
                           clock=lambda: 0.0)
        self.assertEqual(naps, [2.0])

    def test_wait_gives_up_after_its_timeout_naming_what_is_left(self):
        class Stays:
            def get_machine(self, cluster, ident):
                return MASTER

        ticks = iter([0.0, 10.0, 20.0])
        with self.assertRaises(machines.osc_exceptions.CommandError) as ctx:
            machines.wait_gone(Stays(), "k8s", ["w-1"], 15, sleep=lambda s: None,
                               clock=lambda: next(ticks))
        self.assertIn("Machines still there after 15 seconds: w-1", str(ctx.exception))


class MachineCreateTest(unittest.TestCase):
    def test_the_client_posts_at_1_20_to_the_quoted_node_group(self):
        c = MachineClientTest.client(None, "latest", [FakeResponse(202, PENDING)])
        got = c.create_machine("my cluster", "gpu/pool", {"name": "g-1"})
        self.assertEqual(got, PENDING)
        self.assertEqual(c.calls, [("POST", "/clusters/my%20cluster/nodegroups/gpu%2Fpool/machines",
                                    "container-infra 1.20")])

    def test_its_406_names_1_20(self):
        c = MachineClientTest.client(None, "1.19",
                                     [FakeResponse(406, {"errors": [{"title": "", "detail": ""}]})])
        with self.assertRaises(fclient.ApiError) as cm:
            c.create_machine("k1", "default-worker", {})
        self.assertEqual(str(cm.exception),
                         "A machine's create needs microversion 1.20 or later; this request was "
                         "sent at container-infra 1.19 (see --os-container-infra-api-version).")

    def test_the_body_has_only_what_was_given(self):
        self.assertEqual(machines.create_body(), {})
        self.assertEqual(
            machines.create_body("g-1", "v1.30.2", "containerd=1.7.22", "ubuntu-24.04"),
            {"name": "g-1", "versions": {"kubelet": "v1.30.2"},
             "container_runtime": {"name": "containerd", "version": "1.7.22"},
             "os_image": "ubuntu-24.04"})
        self.assertEqual(machines.create_body(container_runtime="crio"),
                         {"container_runtime": {"name": "crio"}})

    def test_the_command_sends_its_options_and_shows_the_machine(self):
        class Creating(FakeMachineClient):
            def create_machine(self, cluster, nodegroup, body):
                self.created = (cluster, nodegroup, body)
                return PENDING

        fake = Creating([])
        cols, values = run_command(machines.CreateMachine,
                                   ["k1", "--nodegroup", "default-worker", "--name", "w-9",
                                    "--kubelet-version", "v1.30.1"], fake)
        self.assertEqual(fake.created, ("k1", "default-worker",
                                        {"name": "w-9", "versions": {"kubelet": "v1.30.1"}}))
        self.assertEqual(dict(zip(cols, values))["phase"], "Pending")
        with self.assertRaises(SystemExit):
            with mock.patch("sys.stderr"):
                run_command(machines.CreateMachine, ["k1"], fake)

    def test_wait_polls_until_running_and_refuses_failed_or_gone(self):
        running = dict(PENDING, status={"phase": "Running"})
        answers = [PENDING, running]

        class Polled:
            def get_machine(self, cluster, ident):
                return answers.pop(0)

        naps = []
        got = machines.wait_running(Polled(), "k8s", "w-uuid", 60, sleep=naps.append,
                                    clock=lambda: 0.0)
        self.assertEqual((got, naps), (running, [2.0]))

        class Gone:
            def get_machine(self, cluster, ident):
                raise fclient.ApiError(404, "gone")

        with self.assertRaises(machines.osc_exceptions.CommandError) as ctx:
            machines.wait_running(Gone(), "k8s", "w-uuid", 60, clock=lambda: 0.0)
        self.assertIn("Machine w-uuid is gone", str(ctx.exception))

        class Failed:
            def get_machine(self, cluster, ident):
                return dict(PENDING, status={"phase": "Failed", "error_message": "no capacity"})

        with self.assertRaises(machines.osc_exceptions.CommandError) as ctx:
            machines.wait_running(Failed(), "k8s", "w-uuid", 60, clock=lambda: 0.0)
        self.assertEqual(str(ctx.exception), "Machine w-uuid failed: no capacity")


class MachineChangeTest(unittest.TestCase):
    """`openstack coe machine set | replace | reboot` (microversion 1.20)."""

    def test_the_client_patches_and_acts_at_1_20(self):
        c = MachineClientTest.client(None, "latest", [FakeResponse(202, MASTER),
                                                      FakeResponse(202, MASTER),
                                                      FakeResponse(202, MASTER)])
        ops = [{"op": "replace", "path": "/versions/kubelet", "value": "v1.30.2"}]
        self.assertEqual(c.update_machine("my cluster", "w/1", ops), MASTER)
        self.assertEqual(c.machine_action("k1", "m1", "replace"), MASTER)
        self.assertEqual(c.machine_action("k1", "m1", "reboot"), MASTER)
        self.assertEqual(c.calls, [
            ("PATCH", "/clusters/my%20cluster/machines/w%2F1", "container-infra 1.20"),
            ("POST", "/clusters/k1/machines/m1/actions/replace", "container-infra 1.20"),
            ("POST", "/clusters/k1/machines/m1/actions/reboot", "container-infra 1.20"),
        ])

    def test_below_1_20_the_406_says_what_is_needed(self):
        c = MachineClientTest.client(None, "1.19", [FakeResponse(406, {"errors": [{}]})])
        with self.assertRaises(fclient.ApiError) as cm:
            c.machine_action("k1", "m1", "reboot")
        self.assertEqual(str(cm.exception),
                         "Changing, replacing or rebooting a machine needs microversion 1.20 or "
                         "later; this request was sent at container-infra 1.19 (see "
                         "--os-container-infra-api-version).")

    def test_set_sends_only_the_options_given(self):
        sent = []

        class Fake(FakeMachineClient):
            def update_machine(self, cluster, ident, ops):
                sent.append((cluster, ident, ops))
                return MASTER

        cols, values = run_command(machines.SetMachine,
                                   ["k1", "default-master-1", "--kubelet-version", "v1.30.2",
                                    "--os-image", "fedora-coreos-41"], Fake([]))
        self.assertEqual(sent, [("k1", "default-master-1", [
            {"op": "replace", "path": "/versions/kubelet", "value": "v1.30.2"},
            {"op": "replace", "path": "/os_image", "value": "fedora-coreos-41"},
        ])])
        self.assertEqual(dict(zip(cols, values))["name"], "default-master-1")
        with self.assertRaises(machines.osc_exceptions.CommandError) as ctx:
            run_command(machines.SetMachine, ["k1", "m"], Fake([]))
        self.assertIn("Nothing to change", str(ctx.exception))

    def test_replace_and_reboot_wait_until_the_machine_runs(self):
        acted = []
        provisioning = dict(MASTER, status=dict(MASTER["status"], phase="Provisioning"))
        shown = [provisioning, MASTER]

        class Fake(FakeMachineClient):
            def machine_action(self, cluster, ident, action):
                acted.append(action)
                return provisioning

            def get_machine(self, cluster, ident):
                return shown.pop(0)

        with mock.patch.object(machines.time, "sleep"):
            cols, values = run_command(machines.ReplaceMachine, ["k1", "m", "--wait"], Fake([]))
        self.assertEqual(acted, ["replace"])
        self.assertEqual(dict(zip(cols, values))["phase"], "Running")
        cols, values = run_command(machines.RebootMachine, ["k1", "m"], Fake([]))
        self.assertEqual(acted, ["replace", "reboot"])
        self.assertEqual(dict(zip(cols, values))["phase"], "Provisioning")

    def test_wait_ends_with_the_failure_of_the_driver(self):
        failed = dict(MASTER, status=dict(MASTER["status"], phase="Failed",
                                          error_message="no capacity"))

        class Fails:
            def get_machine(self, cluster, ident):
                return failed

        with self.assertRaises(fclient.WaitFailed) as ctx:
            machines.wait_running(Fails(), "k1", "m", 60, sleep=lambda s: None, clock=lambda: 0.0)
        self.assertEqual(str(ctx.exception), "Machine m failed: no capacity")
