"""Unit tests of `openstack coe nodegroup set`, without a server.

(tools/machine_cli_check.py drives the real `openstack` executable against `fleetyard serve`.)
"""

import argparse
import unittest
from unittest import mock

from fleetyard_osc import client as fclient
from fleetyard_osc.v1 import nodegroups


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


def args(**kw):
    base = {"flavor": None, "image": None, "max_batch_size": None}
    base.update(kw)
    return argparse.Namespace(**base)


class RollOpsTest(unittest.TestCase):
    def test_flavor_image_and_batch_make_one_patch(self):
        self.assertEqual(nodegroups.roll_ops(args(flavor="m1.large", image="img", max_batch_size=2)), [
            {"op": "replace", "path": "/flavor_id", "value": "m1.large"},
            {"op": "replace", "path": "/image_id", "value": "img"},
            {"op": "replace", "path": "/max_batch_size", "value": "2"},
        ])

    def test_a_batch_size_alone_changes_nothing(self):
        self.assertEqual(nodegroups.roll_ops(args(max_batch_size=2)), [])


class RollClientTest(unittest.TestCase):
    def client(self, api_version, answers):
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

    def test_the_patch_is_sent_at_1_20_to_the_named_group(self):
        c = self.client("latest", [FakeResponse(202, {"uuid": "ng-uuid",
                                                      "status": "UPDATE_IN_PROGRESS"})])
        ops = [{"op": "replace", "path": "/flavor_id", "value": "m1.large"}]
        self.assertEqual(c.roll_nodegroup("k 1", "default-worker", ops)["uuid"], "ng-uuid")
        self.assertEqual([call[:3] for call in c.calls],
                         [("PATCH", "/clusters/k%201/nodegroups/default-worker",
                           "container-infra 1.20")])

    def test_below_1_20_the_406_says_what_is_needed(self):
        c = self.client("1.19", [FakeResponse(406, {"errors": [{"title": "", "detail": ""}]})])
        with self.assertRaises(fclient.ApiError) as cm:
            c.roll_nodegroup("k1", "ng", [])
        self.assertEqual(str(cm.exception),
                         "A node group's rolling replacement needs microversion 1.20 or later; "
                         "this request was sent at container-infra 1.19 (see "
                         "--os-container-infra-api-version).")


if __name__ == "__main__":
    unittest.main()
