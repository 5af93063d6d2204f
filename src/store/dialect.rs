//! What differs between the backends: the SQL fragments each dialect writes differently, the
//! migration folders, and how a constraint's name is read from an error. A leaf: it imports
//! no other module of the store.

use super::Dialect;

pub(crate) fn pg_migrator() -> sqlx::migrate::Migrator {
    sqlx::migrate!("./migrations")
}

/// PostgreSQL reports constraint names itself.
pub(crate) fn pg_constraint_name(_message: &str) -> Option<String> {
    None
}

/// SQLite names no constraint in its errors; map the column lists of our unique constraints.
const UNIQUE_COLUMNS: &[(&str, &str)] = &[
    ("cluster_template.uuid", "uniq_cluster_template0uuid"),
    ("cluster.uuid", "uniq_cluster0uuid"),
    (
        "cluster.project_id, cluster.registry_name",
        "uniq_cluster0project_id0registry_name",
    ),
    ("nodegroup.uuid", "uniq_nodegroup0uuid"),
    (
        "nodegroup.cluster_id, nodegroup.name",
        "uniq_nodegroup0cluster_id0name",
    ),
    ("machine.uuid", "uniq_machine0uuid"),
    (
        "machine.cluster_id, machine.name",
        "uniq_machine0cluster_id0name",
    ),
    ("federation.uuid", "uniq_federation0uuid"),
    ("x509keypair.uuid", "uniq_x509keypair0uuid"),
    (
        "quotas.project_id, quotas.resource",
        "uniq_quotas0project_id0resource",
    ),
    (
        "magnum_service.host, magnum_service.binary",
        "uniq_magnum_service0host0binary",
    ),
    ("job.uuid", "uniq_job0uuid"),
    ("outbox.message_id", "uniq_outbox0message_id"),
    ("cluster_group.uuid", "uniq_cluster_group0uuid"),
    (
        "cluster_group.project_id, cluster_group.name",
        "uniq_cluster_group0project_id0name",
    ),
    (
        "cluster_group_member.group_id, cluster_group_member.cluster_id",
        "uniq_cluster_group_member0group_id0cluster_id",
    ),
    (
        "cluster_group_match.group_id, cluster_group_match.cluster_id",
        "cluster_group_match_pkey",
    ),
    (
        "cluster_group_binding.uuid",
        "uniq_cluster_group_binding0uuid",
    ),
    (
        "cluster_group_binding.group_id, cluster_group_binding.grantee_project_id",
        "uniq_cluster_group_binding0group_id0grantee_project_id",
    ),
];

pub(crate) fn sqlite_migrator() -> sqlx::migrate::Migrator {
    sqlx::migrate!("./migrations-sqlite")
}

/// SQLite names no constraint in its errors: the name from the message.
pub(crate) fn sqlite_constraint_name(message: &str) -> Option<String> {
    if let Some(cols) = message.strip_prefix("UNIQUE constraint failed: ") {
        return UNIQUE_COLUMNS
            .iter()
            .find(|(c, _)| *c == cols.trim())
            .map(|(_, name)| name.to_string());
    }
    if message.contains("FOREIGN KEY constraint failed") {
        return Some("foreign_key".into());
    }
    if let Some(rest) = message.strip_prefix("CHECK constraint failed: ") {
        return Some(rest.trim().to_string());
    }
    None
}

/// What differs between the backends' SQL, in one place.
impl Dialect {
    /// Row locks for read-then-write inside a transaction (SQLite has one writer at a time,
    /// `BEGIN IMMEDIATE`: no row locks needed).
    pub(crate) fn lock_rows(self) -> &'static str {
        match self {
            Dialect::Postgres => " FOR UPDATE",
            Dialect::Sqlite => "",
        }
    }

    /// Shared row locks: rows a transaction depends on stay as read until it commits.
    pub(crate) fn share_rows(self) -> &'static str {
        match self {
            Dialect::Postgres => " FOR SHARE",
            Dialect::Sqlite => "",
        }
    }

    /// Claimers skip rows another claimer holds.
    pub(crate) fn skip_locked(self) -> &'static str {
        match self {
            Dialect::Postgres => " FOR UPDATE SKIP LOCKED",
            Dialect::Sqlite => "",
        }
    }

    /// Whether `federation.member_ids` contains the cluster uuid in `$1`.
    pub(crate) fn member_contains(self) -> &'static str {
        match self {
            Dialect::Postgres => "member_ids @> jsonb_build_array(CAST($1 AS TEXT))",
            Dialect::Sqlite => {
                "EXISTS (SELECT 1 FROM json_each(federation.member_ids) WHERE json_each.value = $1)"
            }
        }
    }

    /// `IN` a list of integer ids bound as one text parameter `param` ([`Dialect::id_list`]):
    /// one statement and one plan for a list of any length.
    pub(crate) fn in_id_list(self, param: &str) -> String {
        match self {
            Dialect::Postgres => format!("= ANY(CAST({param} AS BIGINT[]))"),
            Dialect::Sqlite => format!("IN (SELECT value FROM json_each({param}))"),
        }
    }

    /// The text to bind for [`Dialect::in_id_list`]: a PostgreSQL array literal or a JSON
    /// array.
    pub(crate) fn id_list(self, ids: &[i64]) -> String {
        let (open, close) = match self {
            Dialect::Postgres => ('{', '}'),
            Dialect::Sqlite => ('[', ']'),
        };
        let mut text = String::with_capacity(2 + ids.len() * 8);
        text.push(open);
        for (i, id) in ids.iter().enumerate() {
            if i > 0 {
                text.push(',');
            }
            text.push_str(&id.to_string());
        }
        text.push(close);
        text
    }

    /// Whether sqlx's migrations table exists.
    pub(crate) fn migrations_table_exists(self) -> &'static str {
        match self {
            Dialect::Postgres => {
                "SELECT EXISTS (SELECT 1 FROM information_schema.tables \
                 WHERE table_name = '_sqlx_migrations')"
            }
            Dialect::Sqlite => {
                "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' \
                 AND name = '_sqlx_migrations')"
            }
        }
    }

    /// Both dialects' texts of one statement, built by `text` (for a `LazyLock`).
    pub(crate) fn both(text: impl Fn(Dialect) -> String) -> [String; 2] {
        [text(Dialect::Postgres), text(Dialect::Sqlite)]
    }

    /// This dialect's text from a pair built by [`Dialect::both`].
    pub(crate) fn pick(self, texts: &[String; 2]) -> &str {
        match self {
            Dialect::Postgres => &texts[0],
            Dialect::Sqlite => &texts[1],
        }
    }
}
