"""`openstack coe nodegroup set`: a node group's new flavor or image, by rolling replacement.

python-magnumclient's `openstack coe nodegroup update` takes only the autoscaling bounds,
labels and taints; this command sends the node group's JSON patch of ``/flavor_id``,
``/image_id`` and ``/max_batch_size`` (``PATCH /v1/clusters/{cluster}/nodegroups/{nodegroup}``,
microversion 1.20). The API answers at once (UPDATE_IN_PROGRESS); its machines are then
replaced ``--max-batch-size`` at a time, each new one before its old one goes. With ``--wait``
the command polls the node group until the roll is over and exits non-zero with the
``status_reason`` if it stopped (the same command again resumes it).
"""

import sys

from osc_lib import exceptions as osc_exceptions
from osc_lib.command import command

from fleetyard_osc.v1 import federations as common


def roll_ops(parsed_args):
    """The JSON patch the options ask for (max_batch_size is sent as the API's string)."""
    ops = []
    if parsed_args.flavor:
        ops.append({"op": "replace", "path": "/flavor_id", "value": parsed_args.flavor})
    if parsed_args.image:
        ops.append({"op": "replace", "path": "/image_id", "value": parsed_args.image})
    if ops and parsed_args.max_batch_size is not None:
        ops.append({"op": "replace", "path": "/max_batch_size",
                    "value": str(parsed_args.max_batch_size)})
    return ops


class SetNodeGroup(common.FederationMixin, command.Command):
    _description = ("Give a node group a new flavor or image: its machines are replaced, "
                    "new before old, --max-batch-size at a time (microversion 1.20)")

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("cluster", metavar="<cluster>", help="Name or UUID of the cluster.")
        parser.add_argument("nodegroup", metavar="<nodegroup>",
                            help="Name or UUID of the node group.")
        parser.add_argument("--flavor", metavar="<flavor>", help="The machines' new flavor.")
        parser.add_argument("--image", metavar="<image>", help="The machines' new image.")
        parser.add_argument("--max-batch-size", metavar="<count>", type=int,
                            help="How many machines are replaced at a time (default 1).")
        parser.add_argument("--wait", action="store_true", default=False,
                            help="Wait until the roll is over; exit non-zero with the "
                            "status_reason when it stopped.")
        parser.add_argument("--wait-timeout", metavar="<seconds>", type=float,
                            default=common.DEFAULT_WAIT_TIMEOUT,
                            help="With --wait: give up (exit non-zero) after this many seconds "
                            "(default %d)." % common.DEFAULT_WAIT_TIMEOUT)
        return parser

    def take_action(self, parsed_args):
        ops = roll_ops(parsed_args)
        if not ops:
            raise osc_exceptions.CommandError("Nothing to change: give --flavor or --image.")
        client = self.fed_client()
        body = client.roll_nodegroup(parsed_args.cluster, parsed_args.nodegroup, ops) or {}
        label = parsed_args.nodegroup
        sys.stdout.write("Request to update nodegroup %s has been accepted.\n" % label)
        if parsed_args.wait:
            uuid = body.get("uuid") or parsed_args.nodegroup
            done = client.wait_for(
                lambda: client.get_nodegroup(parsed_args.cluster, uuid),
                "Nodegroup", label,
                timeout=parsed_args.wait_timeout,
                interval=common.POLL_INTERVAL,
                progress=self.progress_printer(label),
            )
            sys.stdout.write("Nodegroup %s is %s.\n" % (label, done.get("status")))
