//! SQL shared by both backends. `impl_store!` expands the same bodies for PostgreSQL and
//! SQLite; the types differ, the statements do not (except where [`Dialect`] says so).

use chrono::{DateTime, Utc};
use sqlx::types::Json;

use super::{PageRequest, ServiceRecord, SortDir, StoreError, StoreResult};
use crate::domain::labels::Labels;
use crate::domain::template::{ClusterTemplate, TemplateSpec};
use crate::domain::ResourceId;

pub(super) const TEMPLATE_COLUMNS: &str = "id, uuid, project_id, user_id, name, coe, image_id, \
    flavor_id, master_flavor_id, keypair_id, external_network_id, fixed_network, fixed_subnet, \
    network_driver, volume_driver, dns_nameserver, docker_storage_driver, cluster_distro, \
    http_proxy, https_proxy, no_proxy, insecure_registry, server_type, tags, driver, \
    apiserver_port, docker_volume_size, labels, registry_enabled, tls_disabled, public, \
    master_lb_enabled, floating_ip_enabled, hidden, version, created_at, updated_at";

#[derive(sqlx::FromRow)]
pub(super) struct TemplateRow {
    pub id: i64,
    pub uuid: String,
    pub project_id: String,
    pub user_id: String,
    pub name: String,
    pub coe: String,
    pub image_id: String,
    pub flavor_id: Option<String>,
    pub master_flavor_id: Option<String>,
    pub keypair_id: Option<String>,
    pub external_network_id: Option<String>,
    pub fixed_network: Option<String>,
    pub fixed_subnet: Option<String>,
    pub network_driver: Option<String>,
    pub volume_driver: Option<String>,
    pub dns_nameserver: Option<String>,
    pub docker_storage_driver: Option<String>,
    pub cluster_distro: Option<String>,
    pub http_proxy: Option<String>,
    pub https_proxy: Option<String>,
    pub no_proxy: Option<String>,
    pub insecure_registry: Option<String>,
    pub server_type: String,
    pub tags: Option<String>,
    pub driver: Option<String>,
    pub apiserver_port: Option<i32>,
    pub docker_volume_size: Option<i32>,
    pub labels: Json<Labels>,
    pub registry_enabled: bool,
    pub tls_disabled: bool,
    pub public: bool,
    pub master_lb_enabled: bool,
    pub floating_ip_enabled: bool,
    pub hidden: bool,
    pub version: i64,
    pub created_at: DateTime<Utc>,
    pub updated_at: Option<DateTime<Utc>>,
}

impl TemplateRow {
    pub fn into_domain(self) -> StoreResult<ClusterTemplate> {
        let uuid = uuid::Uuid::try_parse(&self.uuid)
            .map_err(|_| StoreError::Corrupt(format!("cluster_template.uuid {}", self.uuid)))?;
        let template = ClusterTemplate {
            id: self.id,
            uuid: ResourceId(uuid),
            project_id: self.project_id,
            user_id: self.user_id,
            spec: TemplateSpec {
                name: self.name,
                coe: self.coe,
                image_id: self.image_id,
                flavor_id: self.flavor_id,
                master_flavor_id: self.master_flavor_id,
                dns_nameserver: self.dns_nameserver,
                keypair_id: self.keypair_id,
                external_network_id: self.external_network_id,
                fixed_network: self.fixed_network,
                fixed_subnet: self.fixed_subnet,
                network_driver: self.network_driver,
                volume_driver: self.volume_driver,
                apiserver_port: self.apiserver_port,
                docker_volume_size: self.docker_volume_size,
                docker_storage_driver: self.docker_storage_driver,
                cluster_distro: self.cluster_distro,
                http_proxy: self.http_proxy,
                https_proxy: self.https_proxy,
                no_proxy: self.no_proxy,
                insecure_registry: self.insecure_registry,
                registry_enabled: self.registry_enabled,
                tls_disabled: self.tls_disabled,
                public: self.public,
                master_lb_enabled: self.master_lb_enabled,
                floating_ip_enabled: self.floating_ip_enabled,
                hidden: self.hidden,
                server_type: self.server_type,
                labels: self.labels.0,
                tags: self.tags,
                driver: self.driver,
            },
            version: self.version,
            created_at: self.created_at,
            updated_at: self.updated_at,
        };
        Ok(template)
    }
}

#[derive(sqlx::FromRow)]
pub(super) struct ServiceRow {
    pub id: i64,
    pub host: String,
    pub binary: String,
    pub disabled: bool,
    pub disabled_reason: Option<String>,
    pub last_seen_up: Option<DateTime<Utc>>,
    pub forced_down: bool,
    pub report_count: i32,
    pub created_at: DateTime<Utc>,
    pub updated_at: Option<DateTime<Utc>>,
}

impl From<ServiceRow> for ServiceRecord {
    fn from(r: ServiceRow) -> Self {
        ServiceRecord {
            id: r.id,
            host: r.host,
            binary: r.binary,
            disabled: r.disabled,
            disabled_reason: r.disabled_reason,
            last_seen_up: r.last_seen_up,
            forced_down: r.forced_down,
            report_count: r.report_count,
            created_at: r.created_at,
            updated_at: r.updated_at,
        }
    }
}

#[derive(sqlx::FromRow)]
pub(super) struct OutboxRow {
    pub id: i64,
    pub message_id: String,
    pub resource_uuid: String,
    pub event_type: String,
    pub priority: String,
    pub message: Json<serde_json::Value>,
    pub created_at: DateTime<Utc>,
    pub attempts: i32,
}

pub(super) const OUTBOX_COLUMNS: &str =
    "id, message_id, resource_uuid, event_type, priority, message, created_at, attempts";

impl OutboxRow {
    pub fn into_event(self) -> StoreResult<super::OutboxEvent> {
        let message_id = uuid::Uuid::try_parse(&self.message_id)
            .map_err(|_| StoreError::Corrupt(format!("outbox.message_id {}", self.message_id)))?;
        Ok(super::OutboxEvent {
            id: self.id,
            message_id,
            resource_uuid: self.resource_uuid,
            event_type: self.event_type,
            priority: self.priority,
            message: self.message.0,
            created_at: self.created_at,
            attempts: self.attempts,
        })
    }
}

/// `$first, $first+1, ...` for `n` bound values (an `IN (...)` list both backends accept).
pub(super) fn placeholders(first: usize, n: usize) -> String {
    (first..first + n)
        .map(|i| format!("${i}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The outbox rows a relay may deliver from the rows it could lock (`candidates`), given every
/// unsent row up to the last candidate, in id order (`unsent`: id and resource): a resource's
/// rows are kept up to its first unsent row that is not a candidate (held by another relay), so
/// a later event of a resource never overtakes an earlier one.
pub(super) fn deliverable(
    candidates: &std::collections::HashSet<i64>,
    unsent: &[(i64, String)],
) -> std::collections::HashSet<i64> {
    let mut blocked = std::collections::HashSet::new();
    let mut kept = std::collections::HashSet::new();
    for (id, resource) in unsent {
        if blocked.contains(resource) {
            continue;
        }
        if candidates.contains(id) {
            kept.insert(*id);
        } else {
            blocked.insert(resource.clone());
        }
    }
    kept
}

/// Now, truncated to microseconds (what PostgreSQL keeps), so values read back compare equal.
pub(crate) fn now() -> DateTime<Utc> {
    let n = Utc::now();
    let micros = n.timestamp_micros();
    DateTime::from_timestamp_micros(micros).unwrap_or(n)
}

/// Builds the `WHERE`-fragment and `ORDER BY` of a keyset page over table alias `t`, where the
/// marker row is joined as alias `m`. `nullable` says whether the sort column may be NULL:
/// NULLs sort last in ascending order and first in descending order on both backends.
/// Like [`keyset`], but the marker row's values come from scalar subqueries on `table` by
/// uuid (`marker_param`, e.g. `$3`): evaluated once, they bound an index scan, where a join
/// with the marker row made PostgreSQL filter every row before it.
pub(crate) fn keyset_by_marker(
    page: &PageRequest,
    nullable: bool,
    table: &str,
    marker_param: &str,
) -> (Option<String>, String) {
    let (cond, order) = keyset(page, nullable);
    if cond.is_none() {
        return (None, order);
    }
    let k = &page.sort_key;
    let m = |col: &str| format!("(SELECT mk.{col} FROM {table} mk WHERE mk.uuid = {marker_param})");
    let (mk, mid) = (m(k), m("id"));
    let cmp = match page.sort_dir {
        SortDir::Asc => ">",
        SortDir::Desc => "<",
    };
    let cond = if k == "id" {
        format!("t.id {cmp} {mid}")
    } else if !nullable {
        format!("(t.{k}, t.id) {cmp} ({mk}, {mid})")
    } else {
        match page.sort_dir {
            SortDir::Asc => format!(
                "(({mk} IS NULL AND t.{k} IS NULL AND t.id > {mid}) OR ({mk} IS NOT NULL AND \
                 (t.{k} IS NULL OR t.{k} > {mk} OR (t.{k} = {mk} AND t.id > {mid}))))"
            ),
            SortDir::Desc => format!(
                "(({mk} IS NULL AND (t.{k} IS NOT NULL OR t.id < {mid})) OR ({mk} IS NOT NULL \
                 AND t.{k} IS NOT NULL AND (t.{k} < {mk} OR (t.{k} = {mk} AND t.id < {mid}))))"
            ),
        }
    };
    (Some(cond), order)
}

pub(super) fn keyset(page: &PageRequest, nullable: bool) -> (Option<String>, String) {
    let k = &page.sort_key;
    let (cmp, dir) = match page.sort_dir {
        SortDir::Asc => (">", "ASC"),
        SortDir::Desc => ("<", "DESC"),
    };
    let order = if k == "id" {
        format!("t.id {dir}")
    } else if nullable {
        format!("(t.{k} IS NULL) {dir}, t.{k} {dir}, t.id {dir}")
    } else {
        format!("t.{k} {dir}, t.id {dir}")
    };
    if page.marker.is_none() {
        return (None, order);
    }
    let cond = if k == "id" {
        format!("t.id {cmp} m.id")
    } else if !nullable {
        format!("(t.{k} {cmp} m.{k} OR (t.{k} = m.{k} AND t.id {cmp} m.id))")
    } else {
        match page.sort_dir {
            SortDir::Asc => format!(
                "((m.{k} IS NULL AND t.{k} IS NULL AND t.id > m.id) OR (m.{k} IS NOT NULL AND \
                 (t.{k} IS NULL OR t.{k} > m.{k} OR (t.{k} = m.{k} AND t.id > m.id))))"
            ),
            SortDir::Desc => format!(
                "((m.{k} IS NULL AND (t.{k} IS NOT NULL OR t.id < m.id)) OR (m.{k} IS NOT NULL \
                 AND t.{k} IS NOT NULL AND (t.{k} < m.{k} OR (t.{k} = m.{k} AND t.id < m.id))))"
            ),
        }
    };
    (Some(cond), order)
}

/// The visibility predicate of templates over alias `t` with the caller's project in `$1`.
/// `$1` is the caller's project; the text names it even when every project is visible, so
/// the statement always binds it.
pub(super) fn template_visibility(all_projects: bool) -> &'static str {
    if all_projects {
        "($1 = $1)"
    } else {
        "(t.project_id = $1 OR (t.public AND NOT t.hidden))"
    }
}

/// Whether any cluster uses the template whose uuid is `$1`.
pub(super) const TEMPLATE_IN_USE: &str =
    "SELECT EXISTS (SELECT 1 FROM cluster WHERE cluster_template_id = $1)";

/// Expands the [`super::Store`] implementation for one backend. `$store` has a `pool` field
/// and the associated items `DIALECT`, `constraint_name` and `begin_write`.
macro_rules! impl_store {
    ($store:ty) => {
        #[async_trait::async_trait]
        impl $crate::store::Store for $store {
            fn dialect(&self) -> $crate::store::Dialect {
                Self::DIALECT
            }

            async fn migrate(&self) -> $crate::store::StoreResult<()> {
                Self::migrator().run(&self.pool).await?;
                Ok(())
            }

            async fn schema_version(&self) -> $crate::store::StoreResult<Option<i64>> {
                let exists: bool = sqlx::query_scalar(Self::MIGRATIONS_TABLE_EXISTS)
                    .fetch_one(&self.pool)
                    .await
                    .map_err(Self::err)?;
                if !exists {
                    return Ok(None);
                }
                sqlx::query_scalar("SELECT MAX(version) FROM _sqlx_migrations WHERE success")
                    .fetch_one(&self.pool)
                    .await
                    .map_err(Self::err)
            }

            async fn ping(&self) -> $crate::store::StoreResult<()> {
                sqlx::query("SELECT 1")
                    .execute(&self.pool)
                    .await
                    .map_err(Self::err)?;
                Ok(())
            }

            async fn create_cluster_template(
                &self,
                t: &$crate::domain::template::NewClusterTemplate,
                events: &[$crate::store::NewEvent],
            ) -> $crate::store::StoreResult<$crate::domain::template::ClusterTemplate> {
                use sqlx::types::Json;
                let mut tx = self.begin_write().await?;
                let s = &t.spec;
                let sql = format!(
                    "INSERT INTO cluster_template (uuid, project_id, user_id, name, coe, image_id, \
                     flavor_id, master_flavor_id, keypair_id, external_network_id, fixed_network, \
                     fixed_subnet, network_driver, volume_driver, dns_nameserver, \
                     docker_storage_driver, cluster_distro, http_proxy, https_proxy, no_proxy, \
                     insecure_registry, server_type, tags, driver, apiserver_port, \
                     docker_volume_size, labels, registry_enabled, tls_disabled, public, \
                     master_lb_enabled, floating_ip_enabled, hidden, version, created_at) VALUES \
                     ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, \
                     $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29, $30, $31, $32, \
                     $33, 0, $34) RETURNING {}",
                    $crate::store::sql::TEMPLATE_COLUMNS
                );
                let row: $crate::store::sql::TemplateRow = sqlx::query_as(&sql)
                    .bind(t.uuid.as_string())
                    .bind(&t.project_id)
                    .bind(&t.user_id)
                    .bind(&s.name)
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
                    .bind($crate::store::sql::now())
                    .fetch_one(&mut *tx)
                    .await
                    .map_err(Self::err)?;
                Self::insert_events(&mut tx, events).await?;
                tx.commit().await.map_err(Self::err)?;
                row.into_domain()
            }

            async fn get_cluster_template(
                &self,
                scope: &$crate::store::Scope,
                ident: &$crate::domain::Ident,
            ) -> $crate::store::StoreResult<$crate::domain::template::ClusterTemplate> {
                let vis = $crate::store::sql::template_visibility(scope.all_projects);
                Self::one_by_ident::<$crate::store::sql::TemplateRow>(
                    &self.pool,
                    "cluster_template",
                    $crate::store::sql::TEMPLATE_COLUMNS,
                    vis,
                    &scope.project_id,
                    ident,
                )
                .await?
                .into_domain()
            }

            async fn list_cluster_templates(
                &self,
                scope: &$crate::store::Scope,
                page: &$crate::store::PageRequest,
            ) -> $crate::store::StoreResult<Vec<$crate::domain::template::ClusterTemplate>> {
                let nullable = $crate::store::TEMPLATE_SORT_KEYS
                    .iter()
                    .find(|(k, _)| *k == page.sort_key)
                    .map(|(_, n)| *n)
                    .ok_or_else(|| {
                        $crate::store::StoreError::Corrupt(format!(
                            "unsortable column {}",
                            page.sort_key
                        ))
                    })?;
                let vis = $crate::store::sql::template_visibility(scope.all_projects);
                let (cond, order) =
                    $crate::store::sql::keyset_by_marker(page, nullable, "cluster_template", "$3");
                let sql = match &cond {
                    None => format!(
                        "SELECT {} FROM cluster_template t WHERE {vis} ORDER BY {order} LIMIT $2",
                        $crate::store::sql::TEMPLATE_COLUMNS
                    ),
                    Some(cond) => format!(
                        "SELECT {cols} FROM cluster_template t \
                         WHERE {vis} AND {cond} ORDER BY {order} LIMIT $2",
                        cols = $crate::store::resources::aliased(
                            $crate::store::sql::TEMPLATE_COLUMNS,
                            "t"
                        )
                    ),
                };
                if let Some(marker) = page.marker {
                    let sql_marker = format!(
                        "SELECT COUNT(*) FROM cluster_template t WHERE {vis} AND t.uuid = $2"
                    );
                    let found: i64 = sqlx::query_scalar(&sql_marker)
                        .bind(&scope.project_id)
                        .bind(marker.hyphenated().to_string())
                        .fetch_one(&self.pool)
                        .await
                        .map_err(Self::err)?;
                    if found == 0 {
                        return Err($crate::store::StoreError::NotFound);
                    }
                }
                let mut q = sqlx::query_as::<_, $crate::store::sql::TemplateRow>(&sql)
                    .bind(&scope.project_id)
                    .bind(i64::from(page.limit));
                if let Some(marker) = page.marker {
                    q = q.bind(marker.hyphenated().to_string());
                }
                let rows = q.fetch_all(&self.pool).await.map_err(Self::err)?;
                rows.into_iter().map(|r| r.into_domain()).collect()
            }

            async fn update_cluster_template(
                &self,
                id: i64,
                expected_version: i64,
                s: &$crate::domain::template::TemplateSpec,
                refuse_if_referenced: bool,
                events: &[$crate::store::NewEvent],
            ) -> $crate::store::StoreResult<$crate::domain::template::ClusterTemplate> {
                use sqlx::types::Json;
                let mut tx = self.begin_write().await?;
                let sql = format!(
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
                     WHERE id = $32 AND version = $33 RETURNING {}",
                    $crate::store::sql::TEMPLATE_COLUMNS
                );
                let row: Option<$crate::store::sql::TemplateRow> = sqlx::query_as(&sql)
                    .bind(&s.name)
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
                    .bind($crate::store::sql::now())
                    .bind(id)
                    .bind(expected_version)
                    .fetch_optional(&mut *tx)
                    .await
                    .map_err(Self::err)?;
                let Some(row) = row else {
                    return Err($crate::store::StoreError::Stale);
                };
                if refuse_if_referenced {
                    let referenced: bool =
                        sqlx::query_scalar($crate::store::sql::TEMPLATE_IN_USE)
                    .bind(&row.uuid)
                    .fetch_one(&mut *tx)
                    .await
                    .map_err(Self::err)?;
                    if referenced {
                        return Err($crate::store::StoreError::Conflict {
                            constraint: "cluster_template_referenced".into(),
                        });
                    }
                }
                Self::insert_events(&mut tx, events).await?;
                tx.commit().await.map_err(Self::err)?;
                row.into_domain()
            }

            async fn delete_cluster_template(
                &self,
                id: i64,
                events: &[$crate::store::NewEvent],
            ) -> $crate::store::StoreResult<()> {
                let mut tx = self.begin_write().await?;
                let done = sqlx::query("DELETE FROM cluster_template WHERE id = $1")
                    .bind(id)
                    .execute(&mut *tx)
                    .await
                    .map_err(Self::err)?;
                if done.rows_affected() == 0 {
                    return Err($crate::store::StoreError::NotFound);
                }
                Self::insert_events(&mut tx, events).await?;
                tx.commit().await.map_err(Self::err)?;
                Ok(())
            }

            async fn template_in_use(&self, uuid: &str) -> $crate::store::StoreResult<bool> {
                sqlx::query_scalar($crate::store::sql::TEMPLATE_IN_USE)
                .bind(uuid)
                .fetch_one(&self.pool)
                .await
                .map_err(Self::err)
            }


            async fn heartbeat_service(
                &self,
                host: &str,
                binary: &str,
            ) -> $crate::store::StoreResult<()> {
                let now = $crate::store::sql::now();
                let mut tx = self.begin_write().await?;
                sqlx::query(
                    "INSERT INTO magnum_service (host, \"binary\", disabled, forced_down, \
                     report_count, last_seen_up, created_at) VALUES ($1, $2, FALSE, FALSE, 1, $3, $3) \
                     ON CONFLICT (host, \"binary\") DO UPDATE SET \
                     report_count = magnum_service.report_count + 1, \
                     last_seen_up = excluded.last_seen_up, updated_at = excluded.last_seen_up",
                )
                .bind(host)
                .bind(binary)
                .bind(now)
                .execute(&mut *tx)
                .await
                .map_err(Self::err)?;
                tx.commit().await.map_err(Self::err)?;
                Ok(())
            }

            async fn list_services(
                &self,
            ) -> $crate::store::StoreResult<Vec<$crate::store::ServiceRecord>> {
                let rows: Vec<$crate::store::sql::ServiceRow> = sqlx::query_as(
                    "SELECT id, host, \"binary\", disabled, disabled_reason, last_seen_up, \
                     forced_down, report_count, created_at, updated_at FROM magnum_service ORDER BY id",
                )
                .fetch_all(&self.pool)
                .await
                .map_err(Self::err)?;
                Ok(rows.into_iter().map(Into::into).collect())
            }

            async fn pending_events(
                &self,
                limit: u32,
            ) -> $crate::store::StoreResult<Vec<$crate::store::OutboxEvent>> {
                let rows: Vec<$crate::store::sql::OutboxRow> = sqlx::query_as(
                    "SELECT id, message_id, resource_uuid, event_type, priority, message, \
                     created_at, attempts FROM outbox WHERE sent_at IS NULL ORDER BY id LIMIT $1",
                )
                .bind(i64::from(limit))
                .fetch_all(&self.pool)
                .await
                .map_err(Self::err)?;
                rows.into_iter().map(|r| r.into_event()).collect()
            }

            async fn mark_events_sent(&self, ids: &[i64]) -> $crate::store::StoreResult<()> {
                if ids.is_empty() {
                    return Ok(());
                }
                let now = $crate::store::sql::now();
                let mut tx = self.begin_write().await?;
                // Chunks keep the bind count far below both backends' limits.
                for chunk in ids.chunks(500) {
                    let sql = format!(
                        "UPDATE outbox SET sent_at = $1, attempts = attempts + 1, \
                         claimed_by = NULL, claim_expires_at = NULL \
                         WHERE sent_at IS NULL AND id IN ({})",
                        $crate::store::sql::placeholders(2, chunk.len())
                    );
                    let mut q = sqlx::query(&sql).bind(now);
                    for id in chunk {
                        q = q.bind(*id);
                    }
                    q.execute(&mut *tx).await.map_err(Self::err)?;
                }
                tx.commit().await.map_err(Self::err)?;
                Ok(())
            }

            async fn prune_sent_events(
                &self,
                older_than: chrono::DateTime<chrono::Utc>,
            ) -> $crate::store::StoreResult<u64> {
                let done = sqlx::query("DELETE FROM outbox WHERE sent_at IS NOT NULL AND sent_at < $1")
                    .bind(older_than)
                    .execute(&self.pool)
                    .await
                    .map_err(Self::err)?;
                Ok(done.rows_affected())
            }

            async fn claim_events(
                &self,
                owner: &str,
                limit: u32,
                claim: std::time::Duration,
            ) -> $crate::store::StoreResult<Vec<$crate::store::OutboxEvent>> {
                const CLAIMABLE: &str = "sent_at IS NULL AND (claimed_by IS NULL \
                    OR claimed_by = $1 OR claim_expires_at < $2)";
                let now = $crate::store::sql::now();
                // A plain read first: an idle relay never opens a write transaction.
                let any: bool = sqlx::query_scalar(&format!(
                    "SELECT EXISTS (SELECT 1 FROM outbox WHERE {CLAIMABLE})"
                ))
                .bind(owner)
                .bind(now)
                .fetch_one(&self.pool)
                .await
                .map_err(Self::err)?;
                if !any {
                    return Ok(Vec::new());
                }
                let mut tx = self.begin_write().await?;
                let sql = format!(
                    "SELECT {} FROM outbox WHERE {CLAIMABLE} ORDER BY id LIMIT $3{}",
                    $crate::store::sql::OUTBOX_COLUMNS,
                    Self::SKIP_LOCKED
                );
                let rows: Vec<$crate::store::sql::OutboxRow> = sqlx::query_as(&sql)
                    .bind(owner)
                    .bind(now)
                    .bind(i64::from(limit.max(1)))
                    .fetch_all(&mut *tx)
                    .await
                    .map_err(Self::err)?;
                let Some(last) = rows.last().map(|r| r.id) else {
                    return Ok(Vec::new());
                };
                // Every unsent row up to the last candidate, locked or claimed by others too:
                // those hold their resource's later rows back.
                let unsent: Vec<(i64, String)> = sqlx::query_as(
                    "SELECT id, resource_uuid FROM outbox WHERE sent_at IS NULL AND id <= $1 \
                     ORDER BY id",
                )
                .bind(last)
                .fetch_all(&mut *tx)
                .await
                .map_err(Self::err)?;
                let candidates = rows.iter().map(|r| r.id).collect();
                let kept = $crate::store::sql::deliverable(&candidates, &unsent);
                let rows: Vec<_> = rows.into_iter().filter(|r| kept.contains(&r.id)).collect();
                if rows.is_empty() {
                    return Ok(Vec::new());
                }
                let expires = now
                    + chrono::Duration::from_std(claim)
                        .unwrap_or_else(|_| chrono::Duration::seconds(60));
                let sql = format!(
                    "UPDATE outbox SET claimed_by = $1, claim_expires_at = $2 WHERE id IN ({})",
                    $crate::store::sql::placeholders(3, rows.len())
                );
                let mut q = sqlx::query(&sql).bind(owner).bind(expires);
                for r in &rows {
                    q = q.bind(r.id);
                }
                q.execute(&mut *tx).await.map_err(Self::err)?;
                tx.commit().await.map_err(Self::err)?;
                rows.into_iter().map(|r| r.into_event()).collect()
            }

            async fn release_events(
                &self,
                owner: &str,
                ids: &[i64],
                attempted: bool,
            ) -> $crate::store::StoreResult<()> {
                if ids.is_empty() {
                    return Ok(());
                }
                let mut tx = self.begin_write().await?;
                for chunk in ids.chunks(500) {
                    let sql = format!(
                        "UPDATE outbox SET claimed_by = NULL, claim_expires_at = NULL, \
                         attempts = attempts + $2 WHERE claimed_by = $1 AND sent_at IS NULL \
                         AND id IN ({})",
                        $crate::store::sql::placeholders(3, chunk.len())
                    );
                    let mut q = sqlx::query(&sql).bind(owner).bind(i32::from(attempted));
                    for id in chunk {
                        q = q.bind(*id);
                    }
                    q.execute(&mut *tx).await.map_err(Self::err)?;
                }
                tx.commit().await.map_err(Self::err)?;
                Ok(())
            }

            async fn outbox_backlog(
                &self,
            ) -> $crate::store::StoreResult<(i64, Option<chrono::DateTime<chrono::Utc>>)> {
                let count: i64 =
                    sqlx::query_scalar("SELECT COUNT(*) FROM outbox WHERE sent_at IS NULL")
                        .fetch_one(&self.pool)
                        .await
                        .map_err(Self::err)?;
                let oldest: Option<chrono::DateTime<chrono::Utc>> = sqlx::query_scalar(
                    "SELECT created_at FROM outbox WHERE sent_at IS NULL ORDER BY id LIMIT 1",
                )
                .fetch_optional(&self.pool)
                .await
                .map_err(Self::err)?;
                Ok((count, oldest))
            }
        }

        impl $store {
            fn err(e: sqlx::Error) -> $crate::store::StoreError {
                $crate::store::map_sqlx(e, Self::constraint_name)
            }

            /// [`StoreError::Stale`] unless row `id` of `table` is still at `version`; the row
            /// stays shared-locked until the transaction ends.
            async fn guard_row(
                tx: &mut sqlx::Transaction<'_, <Self as $crate::store::sql::Backend>::Db>,
                table: &str,
                id: i64,
                version: i64,
            ) -> $crate::store::StoreResult<()> {
                let found: Option<i64> = sqlx::query_scalar(&format!(
                    "SELECT id FROM {table} WHERE id = $1 AND version = $2{}",
                    Self::SHARE_ROWS
                ))
                .bind(id)
                .bind(version)
                .fetch_optional(&mut **tx)
                .await
                .map_err(Self::err)?;
                match found {
                    Some(_) => Ok(()),
                    None => Err($crate::store::StoreError::Stale),
                }
            }

            async fn insert_events(
                tx: &mut sqlx::Transaction<'_, <Self as $crate::store::sql::Backend>::Db>,
                events: &[$crate::store::NewEvent],
            ) -> $crate::store::StoreResult<()> {
                for e in events {
                    sqlx::query(
                        "INSERT INTO outbox (message_id, resource_type, resource_uuid, event_type, \
                         priority, message, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)",
                    )
                    .bind(e.message_id.hyphenated().to_string())
                    .bind(&e.resource_type)
                    .bind(&e.resource_uuid)
                    .bind(&e.event_type)
                    .bind(&e.priority)
                    .bind(sqlx::types::Json(&e.message))
                    .bind($crate::store::sql::now())
                    .execute(&mut **tx)
                    .await
                    .map_err(Self::err)?;
                }
                Ok(())
            }
        }
    };
}

pub(super) use impl_store;

/// Ties a store type to its sqlx database.
pub(super) trait Backend {
    type Db: sqlx::Database;
}
