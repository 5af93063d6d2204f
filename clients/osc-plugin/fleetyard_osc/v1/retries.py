"""`openstack coe cluster retry` and `openstack coe nodegroup retry`.

Both send the retry action of a failed create (``POST .../actions/retry``:
microversion 1.16 for a cluster, 1.17 for a node group) and print
python-magnumclient's sentence for an accepted request ("Request to retry
cluster k1 has been accepted."). With ``--wait`` they then poll the resource
until its status is no longer ``*_IN_PROGRESS`` and print where it ended
(exit 1 with the ``status_reason`` on ``*_FAILED``), as the federation
commands do. A cluster in another state is refused by the API with a 409
whose sentence names the way forward from that state; that sentence is the
error printed.
"""

import sys

from osc_lib.command import command

from fleetyard_osc.v1 import federations as common


class _Retry(common.FederationMixin, command.Command):
    kind = None  # "cluster" or "nodegroup"

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        self.add_idents(parser)
        parser.add_argument(
            "--wait",
            action="store_true",
            default=False,
            help="Wait until the create is over: poll the %s every second until its status is "
            "no longer *_IN_PROGRESS; show the status as it changes when stderr is a terminal. "
            "Exits non-zero with the status_reason on *_FAILED." % self.kind,
        )
        parser.add_argument(
            "--wait-timeout",
            metavar="<seconds>",
            type=float,
            default=common.DEFAULT_WAIT_TIMEOUT,
            help="With --wait: give up (exit non-zero) after this many seconds "
            "(default %d)." % common.DEFAULT_WAIT_TIMEOUT,
        )
        return parser

    def take_action(self, parsed_args):
        label = self.label(parsed_args)
        uuid = self.retry(parsed_args)
        sys.stdout.write("Request to retry %s %s has been accepted.\n" % (self.kind, label))
        if parsed_args.wait:
            client = self.fed_client()
            try:
                body = client.wait_for(
                    lambda: self.fetch(parsed_args, uuid),
                    self.kind.capitalize(),
                    label,
                    timeout=parsed_args.wait_timeout,
                    interval=common.POLL_INTERVAL,
                    progress=self.progress_printer(label),
                )
            except KeyboardInterrupt:
                sys.stderr.write("Stopped waiting; the create of %s %s goes on\n" % (self.kind, label))
                raise
            sys.stdout.write("%s %s is %s.\n" % (self.kind.capitalize(), label, body.get("status")))


class RetryCluster(_Retry):
    _description = ("Retry the create of a cluster whose create failed (CREATE_FAILED), "
                    "in place (microversion 1.16)")
    kind = "cluster"

    def add_idents(self, parser):
        parser.add_argument("cluster", metavar="<cluster>",
                            help="Name or UUID of the cluster whose create failed.")

    def label(self, parsed_args):
        return parsed_args.cluster

    def retry(self, parsed_args):
        return self.fed_client().retry_cluster(parsed_args.cluster)

    def fetch(self, parsed_args, uuid):
        return self.fed_client().get_cluster(uuid)


class RetryNodeGroup(_Retry):
    _description = ("Retry the create of a node group whose create failed (CREATE_FAILED), "
                    "in place (microversion 1.17)")
    kind = "nodegroup"

    def add_idents(self, parser):
        parser.add_argument("cluster", metavar="<cluster>",
                            help="Name or UUID of the node group's cluster.")
        parser.add_argument("nodegroup", metavar="<nodegroup>",
                            help="Name or UUID of the node group whose create failed.")

    def label(self, parsed_args):
        return parsed_args.nodegroup

    def retry(self, parsed_args):
        return self.fed_client().retry_nodegroup(parsed_args.cluster, parsed_args.nodegroup)

    def fetch(self, parsed_args, uuid):
        return self.fed_client().get_nodegroup(parsed_args.cluster, uuid)
