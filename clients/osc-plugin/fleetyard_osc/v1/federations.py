"""`openstack coe federation create | delete | list | show | update | join | unjoin | retry`.

The syntax and the output follow the Magnum federation spec's examples
(``coe federation list`` shows uuid, name, members (a count) and status;
``coe federation show`` shows the spec's property table).
"""

import sys
import time

from cliff import columns as cliff_columns
from osc_lib.cli import parseractions
from osc_lib.command import command
from osc_lib import exceptions

from fleetyard_osc import client as fclient
from fleetyard_osc import plugin

DEFAULT_WAIT_TIMEOUT = 600
POLL_INTERVAL = 1.0

# The API requires a `dns-zone` property; the spec's example says `dns`.
DNS_ZONE = "dns-zone"
PROPERTY_ALIASES = {"dns": DNS_ZONE}

PROPERTY_HELP = (
    "A property of the federation as KEY=VALUE (repeat the option for "
    "several). The API requires the DNS zone of the federation as `dns-zone`; "
    "`dns` (the Magnum federation spec's name) is accepted as an alias and "
    "sent as `dns-zone`, e.g. --property dns=cluster.local."
)

SHOW_COLUMNS = (
    "uuid",
    "name",
    "hostcluster",
    "members",
    "project_id",
    "properties",
    "status",
    "status_reason",
    "created_at",
    "updated_at",
)
LIST_COLUMNS = ("uuid", "name", "members", "status")


# --------------------------------------------------------------------------
# Output


class MembersColumn(cliff_columns.FormattableColumn):
    """Members: ['<uuid>', '<uuid>'] in a table (as in the spec), a list in json/yaml."""

    def human_readable(self):
        return str([str(m) for m in (self._value or [])])

    def machine_readable(self):
        return list(self._value or [])


class PropertiesColumn(cliff_columns.FormattableColumn):
    """Properties: dns-zone=cluster.local, k=v in a table, an object in json/yaml."""

    def human_readable(self):
        return ", ".join("%s=%s" % (k, v) for k, v in sorted((self._value or {}).items()))

    def machine_readable(self):
        return dict(self._value or {})


def show_row(fed):
    return (
        SHOW_COLUMNS,
        (
            fed.get("uuid"),
            fed.get("name"),
            fed.get("hostcluster_id"),
            MembersColumn(fed.get("member_ids")),
            fed.get("project_id"),
            PropertiesColumn(fed.get("properties")),
            fed.get("status"),
            fed.get("status_reason"),
            fed.get("created_at"),
            fed.get("updated_at"),
        ),
    )


def list_row(fed):
    members = fed.get("member_ids")
    return (fed.get("uuid"), fed.get("name"), len(members or []), fed.get("status"))


# --------------------------------------------------------------------------
# Arguments


def normalise_properties(props):
    """Map the `dns` alias to `dns-zone`; refuse the two with different values."""
    out = {}
    for key, value in (props or {}).items():
        key = PROPERTY_ALIASES.get(key, key)
        if key in out and out[key] != value:
            raise exceptions.CommandError(
                "--property dns and --property dns-zone name the same property "
                "(`dns-zone`); give one of them")
        out[key] = value
    return out


def pointer(key):
    """A JSON Pointer segment (RFC 6901) for a property name."""
    return key.replace("~", "~0").replace("/", "~1")


def add_wait_arguments(parser, what):
    parser.add_argument(
        "--wait",
        action="store_true",
        default=False,
        help="Wait until the %s is over: poll the federation every second until "
        "its status is no longer *_IN_PROGRESS%s; show the status as it changes "
        "when stderr is a terminal. Exits non-zero with the status_reason on "
        "*_FAILED." % (what, " (for a delete: until it is gone)" if what == "deletion" else ""),
    )
    parser.add_argument(
        "--wait-timeout",
        metavar="<seconds>",
        type=float,
        default=DEFAULT_WAIT_TIMEOUT,
        help="With --wait: give up (exit non-zero) after this many seconds "
        "(default %d)." % DEFAULT_WAIT_TIMEOUT,
    )


# --------------------------------------------------------------------------
# Common behaviour


class FederationMixin:
    def fed_client(self):
        return getattr(self.app.client_manager, plugin.API_NAME)

    def progress_printer(self, label):
        """Status transitions on stderr, only when stderr is a terminal."""
        stream = sys.stderr
        if not stream.isatty():
            return None
        start = time.monotonic()

        def report(status):
            stream.write("%s: %s (%ds)\n" % (label, status or "-", time.monotonic() - start))
            stream.flush()

        return report

    def wait(self, uuid, label, parsed_args, gone_ok=False):
        try:
            return self.fed_client().wait(
                uuid,
                label,
                gone_ok=gone_ok,
                timeout=parsed_args.wait_timeout,
                interval=POLL_INTERVAL,
                progress=self.progress_printer(label),
            )
        except KeyboardInterrupt:
            sys.stderr.write("Stopped waiting; the operation on federation %s goes on "
                             "(see `openstack coe federation show %s`)\n" % (label, uuid))
            raise

    def patch(self, fed, ops, parsed_args):
        """PATCH, waiting out an update still in progress if the server says 409 to that."""
        client = self.fed_client()
        deadline = time.monotonic() + parsed_args.wait_timeout
        while True:
            try:
                return client.patch_federation(fed["uuid"], ops)
            except fclient.ApiError as e:
                if e.status_code != 409 or time.monotonic() >= deadline:
                    raise
                current = client.get_federation(fed["uuid"])
                if not fclient.in_progress(current.get("status")):
                    raise
                time.sleep(POLL_INTERVAL)


# --------------------------------------------------------------------------
# Commands


class CreateFederation(FederationMixin, command.ShowOne):
    _description = "Create a federation of clusters"

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("name", metavar="<name>", help="Name of the federation to create.")
        parser.add_argument(
            "--hostcluster",
            metavar="<cluster>",
            required=True,
            help="The cluster (name or UUID) hosting the federation control plane.",
        )
        parser.add_argument(
            "--member",
            metavar="<cluster>",
            action="append",
            default=[],
            help="A member cluster (name or UUID); repeat the option for several.",
        )
        parser.add_argument(
            "--property",
            metavar="<key=value>",
            action=parseractions.KeyValueAction,
            default={},
            help=PROPERTY_HELP,
        )
        add_wait_arguments(parser, "creation")
        return parser

    def take_action(self, parsed_args):
        client = self.fed_client()
        # The cluster API resolves names; members are stored as sent, so send uuids.
        host = client.cluster_uuid(parsed_args.hostcluster)
        members = []
        for ident in parsed_args.member:
            uuid = client.cluster_uuid(ident)
            if uuid not in members:
                members.append(uuid)
        body = {
            "name": parsed_args.name,
            "hostcluster_id": host,
            "member_ids": members,
            "properties": normalise_properties(parsed_args.property),
        }
        uuid = client.create_federation(body)
        if parsed_args.wait:
            fed = self.wait(uuid, parsed_args.name, parsed_args)
        else:
            fed = client.get_federation(uuid)
        return show_row(fed)


class ListFederation(FederationMixin, command.Lister):
    _description = "List federations"

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("--limit", metavar="<limit>", type=int,
                            help="Maximum number of federations to return.")
        parser.add_argument("--marker", metavar="<uuid>",
                            help="The UUID of the last federation of the previous page.")
        parser.add_argument("--sort-key", metavar="<sort-key>",
                            help="Column to sort results by (e.g. name, created_at).")
        parser.add_argument("--sort-dir", metavar="<sort-dir>", choices=["desc", "asc"],
                            help="Direction to sort: desc or asc.")
        return parser

    def take_action(self, parsed_args):
        feds = self.fed_client().list_federations(
            limit=parsed_args.limit,
            marker=parsed_args.marker,
            sort_key=parsed_args.sort_key,
            sort_dir=parsed_args.sort_dir,
        )
        return LIST_COLUMNS, [list_row(f) for f in feds]


class ShowFederation(FederationMixin, command.ShowOne):
    _description = "Show a federation"

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("federation", metavar="<federation>",
                            help="Name or UUID of the federation.")
        return parser

    def take_action(self, parsed_args):
        return show_row(self.fed_client().get_federation(parsed_args.federation))


class UpdateFederation(FederationMixin, command.ShowOne):
    _description = "Set or remove properties of a federation"

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("federation", metavar="<federation>",
                            help="Name or UUID of the federation.")
        parser.add_argument(
            "--property",
            metavar="<key=value>",
            action=parseractions.KeyValueAction,
            default={},
            help="Set a property: " + PROPERTY_HELP,
        )
        parser.add_argument(
            "--remove-property",
            metavar="<key>",
            action="append",
            default=[],
            help="Remove a property (repeat the option for several; `dns` means `dns-zone`).",
        )
        add_wait_arguments(parser, "update")
        return parser

    def take_action(self, parsed_args):
        sets = normalise_properties(parsed_args.property)
        removes = []
        for key in parsed_args.remove_property:
            key = PROPERTY_ALIASES.get(key, key)
            if key in sets:
                raise exceptions.CommandError(
                    "Property %s is both set and removed; give one of them" % key)
            if key not in removes:
                removes.append(key)
        if not sets and not removes:
            raise exceptions.CommandError(
                "Nothing to update: give --property KEY=VALUE or --remove-property KEY")
        ops = [{"op": "add", "path": "/properties/%s" % pointer(k), "value": v}
               for k, v in sets.items()]
        ops += [{"op": "remove", "path": "/properties/%s" % pointer(k)} for k in removes]
        client = self.fed_client()
        fed = client.get_federation(parsed_args.federation)
        missing = [k for k in removes if k not in (fed.get("properties") or {})]
        if missing:
            # Said here: the API's JSON-Patch error for this names patch operations, not the key.
            raise exceptions.CommandError("Federation %s has no property %s"
                                          % (parsed_args.federation, ", ".join(missing)))
        self.patch(fed, ops, parsed_args)
        if parsed_args.wait:
            fed = self.wait(fed["uuid"], parsed_args.federation, parsed_args)
        else:
            fed = client.get_federation(fed["uuid"])
        return show_row(fed)


class _MembershipCommand(FederationMixin, command.ShowOne):
    op = None  # "add" (join) or "remove" (unjoin)
    verb = None  # "join" or "unjoin"
    cluster_help = None

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("federation", metavar="<federation>",
                            help="Name or UUID of the federation.")
        parser.add_argument("clusters", metavar="<cluster>", nargs="+",
                            help=self.cluster_help)
        add_wait_arguments(parser, self.verb)
        return parser

    def take_action(self, parsed_args):
        client = self.fed_client()
        fed = client.get_federation(parsed_args.federation)
        uuids = []
        for ident in parsed_args.clusters:
            uuid = client.cluster_uuid(ident)
            if uuid not in uuids:
                uuids.append(uuid)
        # The API's membership dialect: one cluster uuid per PATCH.
        for uuid in uuids:
            self.patch(fed, [{"op": self.op, "path": "/member_ids", "value": uuid}], parsed_args)
        if parsed_args.wait:
            fed = self.wait(fed["uuid"], parsed_args.federation, parsed_args)
        else:
            fed = client.get_federation(fed["uuid"])
        return show_row(fed)


class JoinFederation(_MembershipCommand):
    _description = "Add clusters to a federation"
    op = "add"
    verb = "join"
    cluster_help = "Name or UUID of a cluster to add to the federation (one or more)."


class UnjoinFederation(_MembershipCommand):
    _description = "Remove clusters from a federation"
    op = "remove"
    verb = "unjoin"
    cluster_help = "Name or UUID of a member cluster to remove from the federation (one or more)."


class DeleteFederation(FederationMixin, command.Command):
    _description = "Delete federations"

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("federations", metavar="<federation>", nargs="+",
                            help="Name or UUID of a federation to delete (one or more).")
        add_wait_arguments(parser, "deletion")
        return parser

    def take_action(self, parsed_args):
        client = self.fed_client()
        if len(parsed_args.federations) == 1:
            # One federation: its error is the message, as is (the API's sentence).
            ident = parsed_args.federations[0]
            fed = client.get_federation(ident)
            client.delete_federation(fed["uuid"])
            if parsed_args.wait:
                self.wait(fed["uuid"], ident, parsed_args, gone_ok=True)
            return
        failures = []
        started = []
        for ident in parsed_args.federations:
            try:
                fed = client.get_federation(ident)
                client.delete_federation(fed["uuid"])
                started.append((fed["uuid"], ident))
            except exceptions.CommandError as e:
                failures.append(ident)
                sys.stderr.write("Failed to delete federation %s: %s\n" % (ident, e))
        if parsed_args.wait:
            for uuid, ident in started:
                try:
                    self.wait(uuid, ident, parsed_args, gone_ok=True)
                except exceptions.CommandError as e:
                    failures.append(ident)
                    sys.stderr.write("%s\n" % e)
        if failures:
            raise exceptions.CommandError(
                "%d of %d federations were not deleted: %s"
                % (len(failures), len(parsed_args.federations), ", ".join(failures)))


class RetryFederation(FederationMixin, command.ShowOne):
    _description = ("Retry the create of a federation whose create failed (CREATE_FAILED), "
                    "in place (microversion 1.17)")

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("federation", metavar="<federation>",
                            help="Name or UUID of the federation whose create failed.")
        add_wait_arguments(parser, "creation")
        return parser

    def take_action(self, parsed_args):
        client = self.fed_client()
        uuid = client.retry_federation(parsed_args.federation)
        if parsed_args.wait:
            fed = self.wait(uuid, parsed_args.federation, parsed_args)
        else:
            fed = client.get_federation(uuid)
        return show_row(fed)
