//! The `cluster_template` table. Its writes are [`super::Write`]s like every other table's.

use std::sync::LazyLock;

use chrono::{DateTime, Utc};
use sqlx::types::Json;

use super::db::{Pool, Stmt, Tx};
use super::rows::{TemplateRow, TEMPLATE_COLUMNS};
use super::sql::{self, ByIdent};
use super::{Dialect, PageRequest, Scope, StoreError, StoreResult};
use crate::domain::template::{ClusterTemplate, NewClusterTemplate, TemplateSpec};
use crate::domain::{Ident, TemplateId};

/// Sortable columns of the cluster template table, with whether they may be NULL.
pub const TEMPLATE_SORT_KEYS: &[(&str, bool)] = &[
    ("id", false),
    ("uuid", false),
    ("name", false),
    ("project_id", false),
    ("user_id", false),
    ("coe", false),
    ("image_id", false),
    ("flavor_id", true),
    ("master_flavor_id", true),
    ("keypair_id", true),
    ("external_network_id", true),
    ("fixed_network", true),
    ("fixed_subnet", true),
    ("network_driver", true),
    ("volume_driver", true),
    ("dns_nameserver", true),
    ("docker_storage_driver", true),
    ("cluster_distro", true),
    ("http_proxy", true),
    ("https_proxy", true),
    ("no_proxy", true),
    ("insecure_registry", true),
    ("server_type", false),
    ("tags", true),
    ("driver", true),
    ("apiserver_port", true),
    ("docker_volume_size", true),
    ("registry_enabled", false),
    ("tls_disabled", false),
    ("public", false),
    ("master_lb_enabled", false),
    ("floating_ip_enabled", false),
    ("hidden", false),
    ("created_at", false),
    ("updated_at", true),
];

/// Templates the caller's project (`$1`) may see over alias `t`: its own, and public ones not
/// hidden. The every-project text names `$1` too, so the statement always binds it. The
/// built-in template of registered clusters (project `''`) is nobody's to see or change.
const VISIBLE_OWN: &str =
    "(t.project_id <> '' AND (t.project_id = $1 OR (t.public AND NOT t.hidden)))";
const VISIBLE_ALL: &str = "($1 = $1 AND t.project_id <> '')";

fn visibility(all_projects: bool) -> &'static str {
    if all_projects {
        VISIBLE_ALL
    } else {
        VISIBLE_OWN
    }
}

static BY_IDENT: ByIdent = LazyLock::new(|| {
    sql::by_ident_texts(
        "cluster_template",
        TEMPLATE_COLUMNS,
        VISIBLE_OWN,
        VISIBLE_ALL,
    )
});

/// Whether any cluster uses the template whose uuid is `$1`.
const IN_USE: &str = "SELECT EXISTS (SELECT 1 FROM cluster WHERE cluster_template_id = $1)";

/// Row `id` at `version`, shared-locked until the transaction ends.
static GUARD: LazyLock<[String; 2]> = LazyLock::new(|| {
    Dialect::both(|d| {
        format!(
            "SELECT id FROM cluster_template WHERE id = $1 AND version = $2{}",
            d.share_rows()
        )
    })
});

static INSERT: LazyLock<String> = LazyLock::new(|| {
    format!(
        "INSERT INTO cluster_template (uuid, project_id, user_id, name, coe, image_id, \
         flavor_id, master_flavor_id, keypair_id, external_network_id, fixed_network, \
         fixed_subnet, network_driver, volume_driver, dns_nameserver, \
         docker_storage_driver, cluster_distro, http_proxy, https_proxy, no_proxy, \
         insecure_registry, server_type, tags, driver, apiserver_port, \
         docker_volume_size, labels, registry_enabled, tls_disabled, public, \
         master_lb_enabled, floating_ip_enabled, hidden, version, created_at) VALUES \
         ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, \
         $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29, $30, $31, $32, \
         $33, 0, $34) RETURNING {TEMPLATE_COLUMNS}"
    )
});

static UPDATE: LazyLock<String> = LazyLock::new(|| {
    format!(
        "UPDATE cluster_template SET name = $1, coe = $2, image_id = $3, flavor_id = $4, \
         master_flavor_id = $5, keypair_id = $6, external_network_id = $7, \
         fixed_network = $8, fixed_subnet = $9, network_driver = $10, \
         volume_driver = $11, dns_nameserver = $12, docker_storage_driver = $13, \
         cluster_distro = $14, http_proxy = $15, https_proxy = $16, no_proxy = $17, \
         insecure_registry = $18, server_type = $19, tags = $20, driver = $21, \
         apiserver_port = $22, docker_volume_size = $23, labels = $24, \
         registry_enabled = $25, tls_disabled = $26, public = $27, \
         master_lb_enabled = $28, floating_ip_enabled = $29, hidden = $30, \
         updated_at = $31, version = version + 1 \
         WHERE id = $32 AND version = $33 RETURNING {TEMPLATE_COLUMNS}"
    )
});

fn domain(rows: Vec<TemplateRow>) -> StoreResult<Vec<ClusterTemplate>> {
    rows.into_iter().map(TemplateRow::into_domain).collect()
}

#[tracing::instrument(level = "debug", skip_all, fields(project = %scope.project_id, ident = ?ident))]
pub(super) async fn get(pool: &Pool, scope: &Scope, ident: &Ident) -> StoreResult<ClusterTemplate> {
    sql::one_by_ident::<TemplateRow>(pool, &BY_IDENT, scope, ident)
        .await?
        .into_domain()
}

#[tracing::instrument(level = "debug", skip_all, fields(project = %scope.project_id, marker = ?page.marker))]
pub(super) async fn list(
    pool: &Pool,
    scope: &Scope,
    page: &PageRequest,
) -> StoreResult<Vec<ClusterTemplate>> {
    let nullable = sql::nullable(TEMPLATE_SORT_KEYS, &page.sort_key)?;
    let vis = visibility(scope.all_projects);
    let (cond, order) = sql::keyset_by_marker(page, nullable, "cluster_template", "$3", None);
    let text = match &cond {
        None => format!(
            "SELECT {TEMPLATE_COLUMNS} FROM cluster_template t WHERE {vis} ORDER BY {order} \
             LIMIT $2"
        ),
        Some(cond) => format!(
            "SELECT {cols} FROM cluster_template t \
             WHERE {vis} AND {cond} ORDER BY {order} LIMIT $2",
            cols = sql::aliased(TEMPLATE_COLUMNS, "t")
        ),
    };
    if let Some(marker) = page.marker {
        let check = format!("SELECT COUNT(*) FROM cluster_template t WHERE {vis} AND t.uuid = $2");
        let found: i64 = pool
            .sql(&check)
            .bind(&scope.project_id)
            .bind(marker.hyphenated().to_string())
            .scalar_one(pool)
            .await?;
        if found == 0 {
            return Err(StoreError::NotFound);
        }
    }
    let mut q = pool
        .sql(&text)
        .bind(&scope.project_id)
        .bind(i64::from(page.limit));
    if let Some(marker) = page.marker {
        q = q.bind(marker.hyphenated().to_string());
    }
    domain(q.fetch_all(pool).await?)
}

#[tracing::instrument(level = "debug", skip_all, fields(count = uuids.len()))]
pub(super) async fn by_uuids(
    pool: &Pool,
    uuids: &[TemplateId],
) -> StoreResult<Vec<ClusterTemplate>> {
    if uuids.is_empty() {
        return Ok(Vec::new());
    }
    let text = format!(
        "SELECT {TEMPLATE_COLUMNS} FROM cluster_template WHERE uuid IN ({})",
        sql::placeholders(1, uuids.len())
    );
    let q = pool.sql(&text).bind_ids(uuids);
    domain(q.fetch_all(pool).await?)
}

/// Whether any cluster uses the template.
#[tracing::instrument(level = "debug", skip_all, fields(template = %uuid))]
pub(super) async fn in_use(pool: &Pool, uuid: &TemplateId) -> StoreResult<bool> {
    pool.sql(IN_USE).bind_id(uuid).scalar_one(pool).await
}

/// [`StoreError::Stale`] unless the template is still at `version`; its row stays
/// shared-locked until the transaction ends.
#[tracing::instrument(level = "debug", skip_all, fields(template_id = id, version = version))]
pub(super) async fn guard(tx: &mut Tx, id: i64, version: i64) -> StoreResult<()> {
    let found: Option<i64> = tx
        .sql(tx.dialect().pick(&GUARD))
        .bind(id)
        .bind(version)
        .scalar_optional(&mut *tx)
        .await?;
    found.map(|_| ()).ok_or(StoreError::Stale)
}

/// Binds the template's 30 spec columns, from `name` to `hidden`, in the order both [`INSERT`]
/// (after uuid, project and user) and [`UPDATE`] (before its timestamp and keys) list them.
fn bind_spec<'q>(stmt: Stmt<'q>, s: &'q TemplateSpec) -> Stmt<'q> {
    stmt.bind(&s.name)
        .bind(&s.coe)
        .bind(&s.image_id)
        .bind(&s.flavor_id)
        .bind(&s.master_flavor_id)
        .bind(&s.keypair_id)
        .bind(&s.external_network_id)
        .bind(&s.fixed_network)
        .bind(&s.fixed_subnet)
        .bind(&s.network_driver)
        .bind(&s.volume_driver)
        .bind(&s.dns_nameserver)
        .bind(&s.docker_storage_driver)
        .bind(&s.cluster_distro)
        .bind(&s.http_proxy)
        .bind(&s.https_proxy)
        .bind(&s.no_proxy)
        .bind(&s.insecure_registry)
        .bind(&s.server_type)
        .bind(&s.tags)
        .bind(&s.driver)
        .bind(s.apiserver_port)
        .bind(s.docker_volume_size)
        .bind(Json(&s.labels))
        .bind(s.registry_enabled)
        .bind(s.tls_disabled)
        .bind(s.public)
        .bind(s.master_lb_enabled)
        .bind(s.floating_ip_enabled)
        .bind(s.hidden)
}

#[tracing::instrument(level = "debug", skip_all, fields(template = %t.uuid))]
pub(super) async fn insert(
    tx: &mut Tx,
    t: &NewClusterTemplate,
    now: DateTime<Utc>,
) -> StoreResult<TemplateRow> {
    let s = &t.spec;
    let stmt = tx
        .sql(&INSERT)
        .bind_id(&t.uuid)
        .bind(&t.project_id)
        .bind(&t.user_id);
    let row: TemplateRow = bind_spec(stmt, s).bind(now).fetch_one(&mut *tx).await?;
    Ok(row)
}

/// Writes `spec` if the row is still at `expected_version`, else [`StoreError::Stale`]. With
/// `refuse_if_referenced`, [`StoreError::Conflict`] `cluster_template_referenced` when a
/// cluster uses the template, checked after the update locked the row.
#[tracing::instrument(level = "debug", skip_all, fields(template_id = id, version = expected_version))]
pub(super) async fn update(
    tx: &mut Tx,
    id: i64,
    expected_version: i64,
    s: &TemplateSpec,
    refuse_if_referenced: bool,
    now: DateTime<Utc>,
) -> StoreResult<TemplateRow> {
    let row: Option<TemplateRow> = bind_spec(tx.sql(&UPDATE), s)
        .bind(now)
        .bind(id)
        .bind(expected_version)
        .fetch_optional(&mut *tx)
        .await?;
    let Some(row) = row else {
        return Err(StoreError::Stale);
    };
    if refuse_if_referenced {
        let referenced: bool = tx.sql(IN_USE).bind(&row.uuid).scalar_one(&mut *tx).await?;
        if referenced {
            return Err(StoreError::Conflict {
                constraint: "cluster_template_referenced".into(),
            });
        }
    }
    Ok(row)
}

/// Deletes the template; [`StoreError::NotFound`] when there is none, [`StoreError::Conflict`]
/// `fk_cluster_cluster_template` while a cluster uses it.
#[tracing::instrument(level = "debug", skip_all, fields(template_id = id))]
pub(super) async fn delete(tx: &mut Tx, id: i64) -> StoreResult<()> {
    let done = tx
        .sql("DELETE FROM cluster_template WHERE id = $1")
        .bind(id)
        .execute(&mut *tx)
        .await?;
    if done == 0 {
        return Err(StoreError::NotFound);
    }
    Ok(())
}
