"""`openstack coe cluster group ...`: cluster groups, their members and bindings.

They use ``/v1/clustergroups`` (microversion 1.20, which the requests ask for
unless ``--os-container-infra-api-version`` gives another). A group is named by
name or UUID in its own project; the owner of a member cluster names another
project's group by UUID (``member accept`` and ``member remove``).
"""

from cliff import columns as cliff_columns
from osc_lib import exceptions as osc_exceptions
from osc_lib.command import command

from fleetyard_osc import client as fclient
from fleetyard_osc.v1 import federations as common

LIST_COLUMNS = ("uuid", "name", "selector", "description")
SHOW_COLUMNS = (
    "uuid",
    "name",
    "description",
    "selector",
    "project_id",
    "user_id",
    "created_at",
    "updated_at",
)
MEMBER_COLUMNS = ("cluster_id", "cluster_project_id", "state", "proposed_by", "consented_at")
BINDING_COLUMNS = ("uuid", "project_id", "access", "roles", "created_at")
ACCESS = ("read", "write")


class RolesColumn(cliff_columns.FormattableColumn):
    """reader, member in a table ("(every member)" without roles); the list in json/yaml."""

    def human_readable(self):
        return ", ".join(self._value) if self._value else "(every member)"

    def machine_readable(self):
        return list(self._value) if self._value else None


def show_row(group):
    return SHOW_COLUMNS, tuple(group.get(c) for c in SHOW_COLUMNS)


def member_row(member):
    return tuple(member.get(c) for c in MEMBER_COLUMNS)


def binding_row(binding):
    return tuple(
        RolesColumn(binding.get(c)) if c == "roles" else binding.get(c) for c in BINDING_COLUMNS)


def create_body(parsed_args):
    body = {"name": parsed_args.name}
    if parsed_args.description is not None:
        body["description"] = parsed_args.description
    if parsed_args.selector is not None:
        body["selector"] = parsed_args.selector
    if parsed_args.clusters:
        body["clusters"] = list(parsed_args.clusters)
    return body


def binding_body(parsed_args):
    body = {"project_id": parsed_args.project, "access": parsed_args.access}
    if parsed_args.roles:
        body["roles"] = list(parsed_args.roles)
    return body


def each(items, act, what):
    """Runs `act` on every item, then raises one error naming those that failed."""
    failures = []
    for item in items:
        try:
            act(item)
        except fclient.ApiError as e:
            failures.append("%s: %s" % (item, e))
    if failures:
        raise osc_exceptions.CommandError(
            "%d of %d %s failed:\n%s" % (len(failures), len(items), what, "\n".join(failures)))


# --------------------------------------------------------------------------
# Groups


class CreateClusterGroup(common.FederationMixin, command.ShowOne):
    _description = "Create a cluster group (microversion 1.20)"

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("name", metavar="<name>",
                            help="Name of the group (a Kubernetes name, unique in the project).")
        parser.add_argument("--description", metavar="<description>",
                            help="Free text, at most 255 characters.")
        parser.add_argument("--selector", metavar="<selector>",
                            help="Label selector over the clusters' registry labels, e.g. "
                                 "'env=prod,tier in (web,db)'. It picks clusters of the "
                                 "group's own project only.")
        parser.add_argument("--cluster", metavar="<cluster>", dest="clusters", action="append",
                            default=[],
                            help="An explicit member (name or UUID; repeatable). A cluster of "
                                 "another project is proposed until its project accepts.")
        return parser

    def take_action(self, parsed_args):
        return show_row(self.fed_client().create_cluster_group(create_body(parsed_args)))


class ListClusterGroup(common.FederationMixin, command.Lister):
    _description = "List the project's cluster groups (microversion 1.20)"

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("--limit", metavar="<limit>", type=int,
                            help="Maximum number of groups to return.")
        parser.add_argument("--marker", metavar="<uuid>",
                            help="The UUID of the last group of the previous page.")
        parser.add_argument("--sort-key", metavar="<sort-key>",
                            help="Column to sort results by (id, uuid, name, created_at, "
                                 "updated_at).")
        parser.add_argument("--sort-dir", metavar="<sort-dir>", choices=["desc", "asc"],
                            help="Direction to sort: desc or asc.")
        return parser

    def take_action(self, parsed_args):
        groups = self.fed_client().list_cluster_groups(
            limit=parsed_args.limit, marker=parsed_args.marker,
            sort_key=parsed_args.sort_key, sort_dir=parsed_args.sort_dir)
        return LIST_COLUMNS, [tuple(g.get(c) for c in LIST_COLUMNS) for g in groups]


class ShowClusterGroup(common.FederationMixin, command.ShowOne):
    _description = "Show a cluster group (microversion 1.20)"

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("group", metavar="<group>", help="Name or UUID of the group.")
        return parser

    def take_action(self, parsed_args):
        return show_row(self.fed_client().get_cluster_group(parsed_args.group))


def set_ops(parsed_args):
    """The JSON patch of `cluster group set`: replace what is given, remove what is unset."""
    ops = []
    for attr in ("description", "selector"):
        value = getattr(parsed_args, attr)
        unset = getattr(parsed_args, "unset_" + attr)
        if value is not None and unset:
            raise osc_exceptions.CommandError(
                "--%s and --unset-%s: give one of them" % (attr, attr))
        if value is not None:
            ops.append({"op": "replace", "path": "/" + attr, "value": value})
        elif unset:
            ops.append({"op": "remove", "path": "/" + attr})
    if not ops:
        raise osc_exceptions.CommandError(
            "Nothing to change: give --description, --selector, --unset-description or "
            "--unset-selector")
    return ops


class SetClusterGroup(common.FederationMixin, command.ShowOne):
    _description = "Change a cluster group's description or selector (microversion 1.20)"

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("group", metavar="<group>", help="Name or UUID of the group.")
        parser.add_argument("--description", metavar="<description>",
                            help="Free text, at most 255 characters.")
        parser.add_argument("--selector", metavar="<selector>",
                            help="Label selector over the clusters' registry labels; the "
                                 "matches are the group's own project's clusters.")
        parser.add_argument("--unset-description", action="store_true",
                            help="Remove the description.")
        parser.add_argument("--unset-selector", action="store_true",
                            help="Remove the selector (only explicit members remain).")
        return parser

    def take_action(self, parsed_args):
        ops = set_ops(parsed_args)
        return show_row(self.fed_client().patch_cluster_group(parsed_args.group, ops))


class DeleteClusterGroup(common.FederationMixin, command.Command):
    _description = "Delete cluster groups with their memberships and bindings (microversion 1.20)"

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("groups", metavar="<group>", nargs="+",
                            help="Name or UUID of a group to delete.")
        return parser

    def take_action(self, parsed_args):
        client = self.fed_client()

        def delete(group):
            client.delete_cluster_group(group)
            print("Cluster group %s has been deleted." % group)

        each(parsed_args.groups, delete, "deletes")


# --------------------------------------------------------------------------
# Members


class _MemberCommand(common.FederationMixin):
    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("group", metavar="<group>",
                            help="Name or UUID of the group (UUID for another project's group).")
        parser.add_argument("cluster", metavar="<cluster>", help="Name or UUID of the cluster.")
        return parser


class AddClusterGroupMember(_MemberCommand, command.ShowOne):
    _description = ("Add a cluster to a group: one of the project's own joins at once, one of "
                    "another project is proposed (microversion 1.20)")

    def take_action(self, parsed_args):
        m = self.fed_client().add_group_member(parsed_args.group, parsed_args.cluster)
        return MEMBER_COLUMNS, member_row(m)


class AcceptClusterGroupMember(_MemberCommand, command.ShowOne):
    _description = ("Accept the proposed membership of one of the project's clusters in a "
                    "group (microversion 1.20)")

    def take_action(self, parsed_args):
        m = self.fed_client().accept_group_member(parsed_args.group, parsed_args.cluster)
        return MEMBER_COLUMNS, member_row(m)


class RemoveClusterGroupMember(_MemberCommand, command.Command):
    _description = ("Remove a cluster from a group (by the group's project, or by the "
                    "cluster's withdrawing its consent; microversion 1.20)")

    def take_action(self, parsed_args):
        self.fed_client().remove_group_member(parsed_args.group, parsed_args.cluster)
        print("Cluster %s has been removed from cluster group %s."
              % (parsed_args.cluster, parsed_args.group))


class ListClusterGroupMember(common.FederationMixin, command.Lister):
    _description = "List the explicit members of a cluster group (microversion 1.20)"

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("group", metavar="<group>", help="Name or UUID of the group.")
        return parser

    def take_action(self, parsed_args):
        members = self.fed_client().list_group_members(parsed_args.group)
        return MEMBER_COLUMNS, [member_row(m) for m in members]


# --------------------------------------------------------------------------
# Bindings


class CreateClusterGroupBinding(common.FederationMixin, command.ShowOne):
    _description = ("Bind a cluster group to a project: grant it read or write over the "
                    "group's clusters (microversion 1.20)")

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("group", metavar="<group>", help="Name or UUID of the group.")
        parser.add_argument("--project", metavar="<project>", required=True,
                            help="The grantee project's ID.")
        parser.add_argument("--role", metavar="<role>", dest="roles", action="append",
                            default=[],
                            help="Only the grantee's members holding this role (repeatable; "
                                 "every member when absent).")
        parser.add_argument("--access", metavar="<access>", choices=ACCESS, default="read",
                            help="read (show and list; the default) or write (also update "
                                 "and delete).")
        return parser

    def take_action(self, parsed_args):
        b = self.fed_client().create_group_binding(parsed_args.group, binding_body(parsed_args))
        return BINDING_COLUMNS, binding_row(b)


class ListClusterGroupBinding(common.FederationMixin, command.Lister):
    _description = "List the bindings of a cluster group (microversion 1.20)"

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("group", metavar="<group>", help="Name or UUID of the group.")
        return parser

    def take_action(self, parsed_args):
        bindings = self.fed_client().list_group_bindings(parsed_args.group)
        return BINDING_COLUMNS, [binding_row(b) for b in bindings]


class DeleteClusterGroupBinding(common.FederationMixin, command.Command):
    _description = "Delete bindings of a cluster group (microversion 1.20)"

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("group", metavar="<group>", help="Name or UUID of the group.")
        parser.add_argument("bindings", metavar="<binding>", nargs="+",
                            help="UUID of a binding to delete.")
        return parser

    def take_action(self, parsed_args):
        client = self.fed_client()

        def delete(binding):
            client.delete_group_binding(parsed_args.group, binding)
            print("Binding %s has been deleted." % binding)

        each(parsed_args.bindings, delete, "deletes")
