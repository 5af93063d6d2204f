"""`openstack coe machine list | show | create | delete | set | replace | reboot`: the machines
of a cluster, one per node.

They use ``/v1/clusters/{cluster}/machines`` (microversion 1.19, which the
requests ask for unless ``--os-container-infra-api-version`` gives another;
``set``, ``replace`` and ``reboot`` need 1.20) and
``/v1/clusters/{cluster}/nodegroups/{nodegroup}/machines`` for a create (1.20).
Clusters and machines are accepted by name or UUID; so is ``--nodegroup``.
"""

import time

from osc_lib import exceptions as osc_exceptions

from fleetyard_osc import client as fclient

from cliff import columns as cliff_columns
from osc_lib.command import command

from fleetyard_osc.v1 import federations as common

LIST_COLUMNS = ("uuid", "name", "nodegroup", "role", "phase", "kubelet_version", "address")
SHOW_COLUMNS = (
    "uuid",
    "name",
    "cluster_id",
    "nodegroup_id",
    "role",
    "project_id",
    "phase",
    "provider_id",
    "node_ref",
    "addresses",
    "kubelet_version",
    "control_plane_version",
    "running_kubelet_version",
    "running_control_plane_version",
    "container_runtime",
    "os_image",
    "flavor",
    "taints",
    "labels",
    "error_reason",
    "error_message",
    "last_change",
    "last_updated",
    "created_at",
    "updated_at",
)
ROLES = ("master", "worker")
PHASES = ("Pending", "Provisioning", "Running", "Deleting", "Failed")


# --------------------------------------------------------------------------
# Output


class AddressesColumn(cliff_columns.FormattableColumn):
    """InternalIP=10.0.0.5, Hostname=n1 in a table; the list of {type, address} in json/yaml."""

    def human_readable(self):
        return ", ".join("%s=%s" % (a.get("type"), a.get("address")) for a in (self._value or []))

    def machine_readable(self):
        return list(self._value or [])


class TaintsColumn(cliff_columns.FormattableColumn):
    """key=value:effect (key:effect without a value) in a table; the list in json/yaml."""

    def human_readable(self):
        out = []
        for t in self._value or []:
            key = t.get("key")
            if t.get("value") is not None:
                key = "%s=%s" % (key, t.get("value"))
            out.append("%s:%s" % (key, t.get("effect")))
        return ", ".join(out)

    def machine_readable(self):
        return list(self._value or [])


class LabelsColumn(cliff_columns.FormattableColumn):
    """k=v, k2=v2 in a table; the object in json/yaml."""

    def human_readable(self):
        return ", ".join("%s=%s" % (k, v) for k, v in sorted((self._value or {}).items()))

    def machine_readable(self):
        return dict(self._value or {})


def _spec(machine):
    return machine.get("spec") or {}


def _status(machine):
    return machine.get("status") or {}


def kubelet_version(machine):
    """The kubelet version the node runs, else the one it should run."""
    running = (_status(machine).get("versions") or {}).get("kubelet")
    return running or (_spec(machine).get("versions") or {}).get("kubelet")


def address(machine):
    """The node's first InternalIP, else its first address ("" without one)."""
    addresses = _status(machine).get("addresses") or []
    for a in addresses:
        if a.get("type") == "InternalIP":
            return a.get("address")
    return addresses[0].get("address") if addresses else ""


def runtime(machine):
    r = _spec(machine).get("container_runtime")
    if not r:
        return None
    return "%s %s" % (r.get("name"), r["version"]) if r.get("version") else r.get("name")


def list_row(machine, nodegroup_names):
    group = machine.get("nodegroup_id")
    return (
        machine.get("uuid"),
        machine.get("name"),
        nodegroup_names.get(group, group),
        machine.get("role"),
        _status(machine).get("phase"),
        kubelet_version(machine),
        address(machine),
    )


def show_row(machine):
    spec, status = _spec(machine), _status(machine)
    wanted, running = spec.get("versions") or {}, status.get("versions") or {}
    return (
        SHOW_COLUMNS,
        (
            machine.get("uuid"),
            machine.get("name"),
            machine.get("cluster_id"),
            machine.get("nodegroup_id"),
            machine.get("role"),
            machine.get("project_id"),
            status.get("phase"),
            status.get("provider_id"),
            status.get("node_ref"),
            AddressesColumn(status.get("addresses")),
            wanted.get("kubelet"),
            wanted.get("control_plane"),
            running.get("kubelet"),
            running.get("control_plane"),
            runtime(machine),
            spec.get("os_image"),
            spec.get("flavor"),
            TaintsColumn(spec.get("taints")),
            LabelsColumn(spec.get("labels")),
            status.get("error_reason"),
            status.get("error_message"),
            status.get("last_change"),
            status.get("last_updated"),
            machine.get("created_at"),
            machine.get("updated_at"),
        ),
    )


# --------------------------------------------------------------------------
# Commands


class ListMachine(common.FederationMixin, command.Lister):
    _description = "List the machines (nodes) of a cluster (microversion 1.19)"

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("cluster", metavar="<cluster>", help="Name or UUID of the cluster.")
        parser.add_argument("--nodegroup", metavar="<nodegroup>",
                            help="Only the machines of this node group (name or UUID).")
        parser.add_argument("--role", metavar="<role>", choices=ROLES,
                            help="Only the machines of this role: master or worker.")
        parser.add_argument("--phase", metavar="<phase>", choices=PHASES,
                            help="Only the machines in this phase: %s." % ", ".join(PHASES))
        parser.add_argument("--limit", metavar="<limit>", type=int,
                            help="Maximum number of machines to return.")
        parser.add_argument("--marker", metavar="<uuid>",
                            help="The UUID of the last machine of the previous page.")
        parser.add_argument("--sort-key", metavar="<sort-key>",
                            help="Column to sort results by (e.g. name, phase, created_at).")
        parser.add_argument("--sort-dir", metavar="<sort-dir>", choices=["desc", "asc"],
                            help="Direction to sort: desc or asc.")
        return parser

    def take_action(self, parsed_args):
        client = self.fed_client()
        machines = client.list_machines(
            parsed_args.cluster,
            nodegroup=parsed_args.nodegroup,
            role=parsed_args.role,
            phase=parsed_args.phase,
            limit=parsed_args.limit,
            marker=parsed_args.marker,
            sort_key=parsed_args.sort_key,
            sort_dir=parsed_args.sort_dir,
        )
        # Node groups by name: one more request, only when there is something to name.
        names = {}
        if machines:
            names = {g.get("uuid"): g.get("name") for g in client.list_nodegroups(parsed_args.cluster)}
        return LIST_COLUMNS, [list_row(m, names) for m in machines]


class ShowMachine(common.FederationMixin, command.ShowOne):
    _description = "Show a machine (node) of a cluster (microversion 1.19)"

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("cluster", metavar="<cluster>", help="Name or UUID of the cluster.")
        parser.add_argument("machine", metavar="<machine>", help="Name or UUID of the machine.")
        return parser

    def take_action(self, parsed_args):
        return show_row(self.fed_client().get_machine(parsed_args.cluster, parsed_args.machine))


def create_body(name=None, kubelet_version=None, container_runtime=None, os_image=None):
    """The create's body: only what was given (the rest is the node group's).
    `container_runtime` is NAME or NAME=VERSION."""
    body = {}
    if name:
        body["name"] = name
    if kubelet_version:
        body["versions"] = {"kubelet": kubelet_version}
    if container_runtime:
        runtime_name, _, version = container_runtime.partition("=")
        body["container_runtime"] = {"name": runtime_name}
        if version:
            body["container_runtime"]["version"] = version
    if os_image:
        body["os_image"] = os_image
    return body


class CreateMachine(common.FederationMixin, command.ShowOne):
    _description = ("Create a machine (node) in a node group of a cluster: the group grows by "
                    "one (microversion 1.20)")

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("cluster", metavar="<cluster>", help="Name or UUID of the cluster.")
        parser.add_argument("--nodegroup", metavar="<nodegroup>", required=True,
                            help="Name or UUID of the node group that grows.")
        parser.add_argument("--name", metavar="<name>",
                            help="The machine's name (a Kubernetes name, unique in the cluster); "
                                 "the group's next <group>-<n> when absent.")
        parser.add_argument("--kubelet-version", metavar="<version>",
                            help="The kubelet version (e.g. v1.31.4), within the skew policy of "
                                 "the cluster's control plane.")
        parser.add_argument("--container-runtime", metavar="<name[=version]>",
                            help="The container runtime, e.g. containerd=1.7.22.")
        parser.add_argument("--os-image", metavar="<image>", help="The node's image.")
        parser.add_argument("--wait", action="store_true",
                            help="Wait until the machine is Running.")
        parser.add_argument("--timeout", metavar="<seconds>", type=int, default=1800,
                            help="How long --wait waits (default 1800).")
        return parser

    def take_action(self, parsed_args):
        client = self.fed_client()
        body = create_body(parsed_args.name, parsed_args.kubelet_version,
                           parsed_args.container_runtime, parsed_args.os_image)
        machine = client.create_machine(parsed_args.cluster, parsed_args.nodegroup, body)
        if parsed_args.wait:
            machine = wait_running(client, parsed_args.cluster, machine.get("uuid"),
                                   parsed_args.timeout)
        return show_row(machine)


def wait_running(client, cluster, machine, timeout, interval=2.0, clock=time.monotonic,
                 sleep=time.sleep):
    """Polls until the machine is Running (its body, as last shown), or raises: Failed, gone
    (a create failed and the group got its count back), or still not Running after `timeout`
    seconds. Used by create and by set, replace and reboot."""
    deadline = clock() + timeout
    while True:
        try:
            body = client.get_machine(cluster, machine)
        except fclient.ApiError as e:
            if e.status_code != 404:
                raise
            raise fclient.WaitFailed(
                "Machine %s is gone: its node group's change failed (see the cluster's "
                "status_reason)." % machine)
        phase = _status(body).get("phase")
        if phase == "Running":
            return body
        if phase == "Failed":
            raise fclient.WaitFailed(
                "Machine %s failed: %s" % (machine, _status(body).get("error_message")
                                           or _status(body).get("error_reason") or "no reason given"))
        if clock() >= deadline:
            raise fclient.WaitFailed(
                "Machine %s is still %s after %s seconds" % (machine, phase, timeout))
        sleep(interval)


class DeleteMachine(common.FederationMixin, command.Command):
    _description = ("Delete machines (nodes) of a cluster: each one goes and its node group "
                    "shrinks by one (microversion 1.19)")

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("cluster", metavar="<cluster>", help="Name or UUID of the cluster.")
        parser.add_argument("machines", metavar="<machine>", nargs="+",
                            help="Name or UUID of a machine to delete.")
        parser.add_argument("--wait", action="store_true",
                            help="Wait until every deleted machine is gone.")
        parser.add_argument("--timeout", metavar="<seconds>", type=int, default=1800,
                            help="How long --wait waits (default 1800).")
        return parser

    def take_action(self, parsed_args):
        client = self.fed_client()
        failures = []
        deleted = []
        for machine in parsed_args.machines:
            try:
                client.delete_machine(parsed_args.cluster, machine)
                deleted.append(machine)
                print("Request to delete machine %s has been accepted." % machine)
            except fclient.ApiError as e:
                failures.append("%s: %s" % (machine, e))
        if parsed_args.wait and deleted:
            wait_gone(client, parsed_args.cluster, deleted, parsed_args.timeout)
        if failures:
            raise osc_exceptions.CommandError(
                "%d of %d machines could not be deleted:\n%s"
                % (len(failures), len(parsed_args.machines), "\n".join(failures)))


def wait_gone(client, cluster, machines, timeout, interval=2.0, clock=time.monotonic,
              sleep=time.sleep):
    """Polls until each machine is a 404 (gone), or raises once `timeout` seconds passed."""
    deadline = clock() + timeout
    left = list(machines)
    while left:
        still = []
        for machine in left:
            try:
                client.get_machine(cluster, machine)
                still.append(machine)
            except fclient.ApiError as e:
                if e.status_code != 404:
                    raise
        left = still
        if not left:
            return
        if clock() >= deadline:
            raise osc_exceptions.CommandError(
                "Machines still there after %s seconds: %s" % (timeout, ", ".join(left)))
        sleep(interval)


# --------------------------------------------------------------------------
# One machine's changes (microversion 1.20)


def set_ops(parsed_args):
    """The JSON patch of `machine set`'s options (only those given)."""
    ops = []
    for value, path in ((parsed_args.kubelet_version, "/versions/kubelet"),
                        (parsed_args.container_runtime, "/container_runtime/name"),
                        (parsed_args.container_runtime_version, "/container_runtime/version"),
                        (parsed_args.os_image, "/os_image")):
        if value is not None:
            ops.append({"op": "replace", "path": path, "value": value})
    return ops


class _MachineWrite(common.FederationMixin, command.ShowOne):
    """A change of one machine: answers with the machine, or as it ended with --wait."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("cluster", metavar="<cluster>", help="Name or UUID of the cluster.")
        parser.add_argument("machine", metavar="<machine>", help="Name or UUID of the machine.")
        parser.add_argument("--wait", action="store_true",
                            help="Wait until the machine runs again (or failed).")
        parser.add_argument("--timeout", metavar="<seconds>", type=int, default=1800,
                            help="How long --wait waits (default 1800).")
        return parser

    def send(self, client, parsed_args):
        raise NotImplementedError

    def take_action(self, parsed_args):
        client = self.fed_client()
        machine = self.send(client, parsed_args)
        if parsed_args.wait:
            machine = wait_running(client, parsed_args.cluster, parsed_args.machine,
                                   parsed_args.timeout)
        return show_row(machine)


class SetMachine(_MachineWrite):
    _description = ("Change a machine's kubelet version, container runtime or OS image; the "
                    "driver applies it in place or by replacement (microversion 1.20)")

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("--kubelet-version", metavar="<version>",
                            help="The kubelet version (e.g. v1.31.4).")
        parser.add_argument("--container-runtime", metavar="<name>",
                            help="The container runtime's name (e.g. containerd).")
        parser.add_argument("--container-runtime-version", metavar="<version>",
                            help="The container runtime's version.")
        parser.add_argument("--os-image", metavar="<image>", help="The node's OS image.")
        return parser

    def send(self, client, parsed_args):
        ops = set_ops(parsed_args)
        if not ops:
            raise osc_exceptions.CommandError(
                "Nothing to change: give --kubelet-version, --container-runtime, "
                "--container-runtime-version or --os-image.")
        return client.update_machine(parsed_args.cluster, parsed_args.machine, ops)


class ReplaceMachine(_MachineWrite):
    _description = ("Replace a machine by a new one, the new one first (microversion 1.20)")

    def send(self, client, parsed_args):
        return client.machine_action(parsed_args.cluster, parsed_args.machine, "replace")


class RebootMachine(_MachineWrite):
    _description = "Reboot a machine (microversion 1.20)"

    def send(self, client, parsed_args):
        return client.machine_action(parsed_args.cluster, parsed_args.machine, "reboot")
