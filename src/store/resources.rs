//! Clusters, node groups, federations, jobs, quotas and stats: the [`super::ResourceStore`]
//! implementation shared by both backends (expanded by `impl_resource_store!`).

/// `$1, $2, ...` starting at `first`, `n` of them.
pub(crate) fn placeholders(first: usize, n: usize) -> String {
    (first..first + n)
        .map(|i| format!("${i}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The text of a statement assembled from `'static` parts, built on first use and kept for the
/// life of the process: the single-row reads behind every GET neither re-join their column
/// lists nor format their text per request. Parts are told apart by address and length (a
/// `'static` string never changes), so a lookup hashes a few words, not the statement, and
/// allocates nothing.
pub(crate) fn statement(
    parts: [&'static str; 4],
    build: impl FnOnce() -> String,
) -> std::sync::Arc<str> {
    use std::collections::HashMap;
    use std::sync::{Arc, OnceLock, RwLock};
    type Key = [(usize, usize); 4];
    static TEXTS: OnceLock<RwLock<HashMap<Key, Arc<str>>>> = OnceLock::new();
    let texts = TEXTS.get_or_init(Default::default);
    let key: Key = parts.map(|p| (p.as_ptr() as usize, p.len()));
    if let Some(text) = texts.read().ok().and_then(|t| t.get(&key).cloned()) {
        return text;
    }
    let text: Arc<str> = build().into();
    if let Ok(mut t) = texts.write() {
        t.entry(key).or_insert_with(|| text.clone());
    }
    text
}

/// Prefixes each column of a column list with an alias.
pub(crate) fn aliased(columns: &str, alias: &str) -> String {
    columns
        .split(',')
        .map(|c| format!("{alias}.{}", c.trim()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Sortable columns of the cluster table, with whether they may be NULL.
pub const CLUSTER_SORT_KEYS: &[(&str, bool)] = &[
    ("id", false),
    ("uuid", false),
    ("name", false),
    ("project_id", false),
    ("user_id", false),
    ("cluster_template_id", false),
    ("keypair", true),
    ("docker_volume_size", true),
    ("master_flavor_id", true),
    ("flavor_id", true),
    ("stack_id", true),
    ("api_address", true),
    ("status", false),
    ("status_reason", true),
    ("health_status", true),
    ("create_timeout", true),
    ("discovery_url", true),
    ("coe_version", true),
    ("container_version", true),
    ("fixed_network", true),
    ("fixed_subnet", true),
    ("floating_ip_enabled", false),
    ("master_lb_enabled", false),
    ("created_at", false),
    ("updated_at", true),
];

pub const NODEGROUP_SORT_KEYS: &[(&str, bool)] = &[
    ("id", false),
    ("uuid", false),
    ("name", false),
    ("cluster_id", false),
    ("project_id", false),
    ("docker_volume_size", true),
    ("flavor_id", true),
    ("image_id", true),
    ("node_count", false),
    ("role", false),
    ("min_node_count", false),
    ("max_node_count", true),
    ("is_default", false),
    ("stack_id", true),
    ("status", false),
    ("status_reason", true),
    ("version", true),
    ("created_at", false),
    ("updated_at", true),
];

pub const FEDERATION_SORT_KEYS: &[(&str, bool)] = &[
    ("id", false),
    ("uuid", false),
    ("name", false),
    ("project_id", false),
    ("hostcluster_id", false),
    ("status", false),
    ("status_reason", true),
    ("created_at", false),
    ("updated_at", true),
];

pub const QUOTA_SORT_KEYS: &[(&str, bool)] = &[
    ("id", false),
    ("project_id", false),
    ("resource", false),
    ("hard_limit", false),
    ("created_at", false),
    ("updated_at", true),
];

pub(crate) fn nullable(keys: &[(&str, bool)], key: &str) -> Result<bool, super::StoreError> {
    keys.iter()
        .find(|(k, _)| *k == key)
        .map(|(_, n)| *n)
        .ok_or_else(|| super::StoreError::Corrupt(format!("unsortable column {key}")))
}

macro_rules! impl_resource_store {
    ($store:ty) => {
        #[async_trait::async_trait]
        impl $crate::store::ResourceStore for $store {
            async fn commit(&self, writes: &[$crate::store::Write]) -> $crate::store::StoreResult<()> {
                use sqlx::types::Json;
                use $crate::store::{StoreError, Write};
                let mut tx = self.begin_write().await?;
                let now = $crate::store::sql::now();
                for w in writes {
                    match w {
                        Write::CheckClusterQuota { project_id, default_limit } => {
                            // Creates in one project take turns, so two of them cannot both
                            // count room for one more, whether or not a quota row exists to
                            // lock. (SQLite write transactions are serial already.)
                            if Self::DIALECT == $crate::store::Dialect::Postgres {
                                sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended('cluster-quota:' || $1, 0))")
                                    .bind(project_id)
                                    .execute(&mut *tx)
                                    .await
                                    .map_err(Self::err)?;
                            }
                            let limit: Option<i32> = sqlx::query_scalar(&format!(
                                "SELECT hard_limit FROM quotas WHERE project_id = $1 AND resource = 'Cluster'{}",
                                Self::LOCK_ROWS
                            ))
                            .bind(project_id)
                            .fetch_optional(&mut *tx)
                            .await
                            .map_err(Self::err)?;
                            let limit = limit.map(i64::from).unwrap_or(*default_limit);
                            let count: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM cluster WHERE project_id = $1")
                                .bind(project_id)
                                .fetch_one(&mut *tx)
                                .await
                                .map_err(Self::err)?;
                            if count >= limit {
                                return Err(StoreError::LimitExceeded { limit });
                            }
                        }
                        Write::InsertCluster(c) => {
                            sqlx::query(
                                "INSERT INTO cluster (uuid, project_id, user_id, name, cluster_template_id, \
                                 keypair, docker_volume_size, labels, master_flavor_id, flavor_id, status, \
                                 create_timeout, discovery_url, fixed_network, fixed_subnet, \
                                 floating_ip_enabled, master_lb_enabled, version, created_at) VALUES \
                                 ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 'CREATE_IN_PROGRESS', $11, $12, \
                                 $13, $14, $15, $16, 0, $17)",
                            )
                            .bind(c.uuid.to_string())
                            .bind(&c.project_id)
                            .bind(&c.user_id)
                            .bind(&c.name)
                            .bind(c.cluster_template_id.to_string())
                            .bind(&c.keypair)
                            .bind(c.docker_volume_size)
                            .bind(Json(&c.labels))
                            .bind(&c.master_flavor_id)
                            .bind(&c.flavor_id)
                            .bind(c.create_timeout)
                            .bind(&c.discovery_url)
                            .bind(&c.fixed_network)
                            .bind(&c.fixed_subnet)
                            .bind(c.floating_ip_enabled)
                            .bind(c.master_lb_enabled)
                            .bind(now)
                            .execute(&mut *tx)
                            .await
                            .map_err(Self::err)?;
                            for ng in &c.nodegroups {
                                Self::insert_nodegroup(&mut tx, &c.uuid.to_string(), ng, now).await?;
                            }
                        }
                        Write::UpdateCluster(c) => {
                            let done = sqlx::query(
                                "UPDATE cluster SET name = $1, keypair = $2, docker_volume_size = $3, \
                                 labels = $4, master_flavor_id = $5, flavor_id = $6, stack_id = $7, \
                                 api_address = $8, status = $9, status_reason = $10, health_status = $11, \
                                 health_status_reason = $12, create_timeout = $13, discovery_url = $14, \
                                 coe_version = $15, container_version = $16, fixed_network = $17, \
                                 fixed_subnet = $18, floating_ip_enabled = $19, master_lb_enabled = $20, \
                                 cluster_template_id = $21, updated_at = $22, version = version + 1 \
                                 WHERE id = $23 AND version = $24",
                            )
                            .bind(&c.name)
                            .bind(&c.keypair)
                            .bind(c.docker_volume_size)
                            .bind(Json(&c.labels))
                            .bind(&c.master_flavor_id)
                            .bind(&c.flavor_id)
                            .bind(&c.stack_id)
                            .bind(&c.api_address)
                            .bind(c.status.as_str())
                            .bind(&c.status_reason)
                            .bind(c.health_status.map(|h| h.as_str()))
                            .bind(Json(&c.health_status_reason))
                            .bind(c.create_timeout)
                            .bind(&c.discovery_url)
                            .bind(&c.coe_version)
                            .bind(&c.container_version)
                            .bind(&c.fixed_network)
                            .bind(&c.fixed_subnet)
                            .bind(c.floating_ip_enabled)
                            .bind(c.master_lb_enabled)
                            .bind(c.cluster_template_id.to_string())
                            .bind(now)
                            .bind(c.id)
                            .bind(c.version)
                            .execute(&mut *tx)
                            .await
                            .map_err(Self::err)?;
                            if done.rows_affected() == 0 {
                                return Err(StoreError::Stale);
                            }
                        }
                        Write::GuardCluster { id, version } => {
                            Self::guard_row(&mut tx, "cluster", *id, *version).await?;
                        }
                        Write::GuardTemplate { id, version } => {
                            Self::guard_row(&mut tx, "cluster_template", *id, *version).await?;
                        }
                        Write::RefuseIfFederated { cluster_uuid } => {
                            let found: Option<i64> = sqlx::query_scalar(&format!(
                                "SELECT id FROM federation WHERE hostcluster_id = $1 OR {} LIMIT 1",
                                Self::MEMBER_CONTAINS
                            ))
                            .bind(cluster_uuid)
                            .fetch_optional(&mut *tx)
                            .await
                            .map_err(Self::err)?;
                            if found.is_some() {
                                return Err(StoreError::Conflict {
                                    constraint: "federation_membership".into(),
                                });
                            }
                        }
                        Write::DeleteCluster { uuid } => {
                            sqlx::query("DELETE FROM x509keypair WHERE cluster_uuid = $1")
                                .bind(uuid)
                                .execute(&mut *tx)
                                .await
                                .map_err(Self::err)?;
                            sqlx::query("DELETE FROM nodegroup WHERE cluster_id = $1")
                                .bind(uuid)
                                .execute(&mut *tx)
                                .await
                                .map_err(Self::err)?;
                            sqlx::query("DELETE FROM cluster WHERE uuid = $1")
                                .bind(uuid)
                                .execute(&mut *tx)
                                .await
                                .map_err(Self::err)?;
                        }
                        Write::InsertNodeGroup { cluster_uuid, nodegroup } => {
                            Self::insert_nodegroup(&mut tx, cluster_uuid, nodegroup, now).await?;
                        }
                        Write::UpdateNodeGroup(n) => {
                            sqlx::query(
                                "UPDATE nodegroup SET docker_volume_size = $1, labels = $2, flavor_id = $3, \
                                 image_id = $4, node_addresses = $5, node_count = $6, min_node_count = $7, \
                                 max_node_count = $8, stack_id = $9, status = $10, status_reason = $11, \
                                 version = $12, node_labels = $13, node_taints = $14, updated_at = $15 \
                                 WHERE id = $16",
                            )
                            .bind(n.docker_volume_size)
                            .bind(Json(&n.labels))
                            .bind(&n.flavor_id)
                            .bind(&n.image_id)
                            .bind(Json(&n.node_addresses))
                            .bind(n.node_count)
                            .bind(n.min_node_count)
                            .bind(n.max_node_count)
                            .bind(&n.stack_id)
                            .bind(n.status.as_str())
                            .bind(&n.status_reason)
                            .bind(&n.version)
                            .bind(Json(&n.node_labels))
                            .bind(Json(&n.node_taints))
                            .bind(now)
                            .bind(n.id)
                            .execute(&mut *tx)
                            .await
                            .map_err(Self::err)?;
                        }
                        Write::DeleteNodeGroup { id } => {
                            sqlx::query("DELETE FROM nodegroup WHERE id = $1")
                                .bind(id)
                                .execute(&mut *tx)
                                .await
                                .map_err(Self::err)?;
                        }
                        Write::InsertFederation { federation: f, status } => {
                            sqlx::query(
                                "INSERT INTO federation (uuid, project_id, user_id, name, hostcluster_id, \
                                 member_ids, status, properties, version, created_at) VALUES \
                                 ($1, $2, $3, $4, $5, $6, $7, $8, 0, $9)",
                            )
                            .bind(f.uuid.to_string())
                            .bind(&f.project_id)
                            .bind(&f.user_id)
                            .bind(&f.name)
                            .bind(&f.hostcluster_id)
                            .bind(Json(&f.member_ids))
                            .bind(status.as_str())
                            .bind(Json(&f.properties))
                            .bind(now)
                            .execute(&mut *tx)
                            .await
                            .map_err(Self::err)?;
                        }
                        Write::UpdateFederation(f) => {
                            let done = sqlx::query(
                                "UPDATE federation SET name = $1, hostcluster_id = $2, member_ids = $3, \
                                 status = $4, status_reason = $5, properties = $6, updated_at = $7, \
                                 version = version + 1 WHERE id = $8 AND version = $9",
                            )
                            .bind(&f.name)
                            .bind(&f.hostcluster_id)
                            .bind(Json(&f.member_ids))
                            .bind(f.status.as_str())
                            .bind(&f.status_reason)
                            .bind(Json(&f.properties))
                            .bind(now)
                            .bind(f.id)
                            .bind(f.version)
                            .execute(&mut *tx)
                            .await
                            .map_err(Self::err)?;
                            if done.rows_affected() == 0 {
                                return Err(StoreError::Stale);
                            }
                        }
                        Write::DeleteFederation { id } => {
                            sqlx::query("DELETE FROM federation WHERE id = $1")
                                .bind(id)
                                .execute(&mut *tx)
                                .await
                                .map_err(Self::err)?;
                        }
                        Write::InsertJob(j) => {
                            sqlx::query(
                                "INSERT INTO job (uuid, operation, resource_type, resource_uuid, driver, \
                                 payload, state, attempts, max_attempts, run_after, deadline_at, created_at) \
                                 VALUES ($1, $2, $3, $4, $5, $6, 'pending', 0, $7, $8, $9, $8)",
                            )
                            .bind(j.uuid.to_string())
                            .bind(j.operation.as_str())
                            .bind(j.operation.resource_type())
                            .bind(&j.resource_uuid)
                            .bind(&j.driver)
                            .bind(Json(&j.payload))
                            .bind(j.max_attempts)
                            .bind(now)
                            .bind(j.deadline_at)
                            .execute(&mut *tx)
                            .await
                            .map_err(Self::err)?;
                        }
                        Write::FinishJob { id, owner, failed, error } => {
                            let done = sqlx::query(
                                "UPDATE job SET state = $1, last_error = $2, lease_owner = NULL, \
                                 lease_expires_at = NULL, updated_at = $3 WHERE id = $4 AND lease_owner = $5 \
                                 AND state = 'pending'",
                            )
                            .bind(if *failed { "failed" } else { "done" })
                            .bind(error)
                            .bind(now)
                            .bind(id)
                            .bind(owner)
                            .execute(&mut *tx)
                            .await
                            .map_err(Self::err)?;
                            if done.rows_affected() == 0 {
                                return Err(StoreError::Stale);
                            }
                        }
                        Write::RetryJob { id, owner, run_after, error } => {
                            let done = sqlx::query(
                                "UPDATE job SET run_after = $1, last_error = $2, lease_owner = NULL, \
                                 lease_expires_at = NULL, updated_at = $3 WHERE id = $4 AND lease_owner = $5 \
                                 AND state = 'pending'",
                            )
                            .bind(run_after)
                            .bind(error)
                            .bind(now)
                            .bind(id)
                            .bind(owner)
                            .execute(&mut *tx)
                            .await
                            .map_err(Self::err)?;
                            if done.rows_affected() == 0 {
                                return Err(StoreError::Stale);
                            }
                        }
                        Write::Event(e) => {
                            Self::insert_events(&mut tx, std::slice::from_ref(e.as_ref())).await?;
                        }
                        Write::InsertKeypair(k) => {
                            sqlx::query(
                                "INSERT INTO x509keypair (uuid, cluster_uuid, kind, certificate, private_key, \
                                 project_id, user_id, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
                            )
                            .bind(&k.uuid)
                            .bind(&k.cluster_uuid)
                            .bind(k.kind.as_str())
                            .bind(&k.certificate)
                            .bind(&k.private_key)
                            .bind(&k.project_id)
                            .bind(&k.user_id)
                            .bind(now)
                            .execute(&mut *tx)
                            .await
                            .map_err(Self::err)?;
                        }
                        Write::DeleteKeypairs { cluster_uuid, kind } => {
                            sqlx::query("DELETE FROM x509keypair WHERE cluster_uuid = $1 AND ($2 IS NULL OR kind = $2)")
                                .bind(cluster_uuid)
                                .bind(kind)
                                .execute(&mut *tx)
                                .await
                                .map_err(Self::err)?;
                        }
                    }
                }
                tx.commit().await.map_err(Self::err)?;
                Ok(())
            }

            async fn get_cluster(
                &self,
                scope: &$crate::store::Scope,
                ident: &$crate::domain::Ident,
            ) -> $crate::store::StoreResult<$crate::domain::cluster::Cluster> {
                let vis = if scope.all_projects { "$1 = $1" } else { "t.project_id = $1" };
                Self::one_by_ident::<$crate::store::rows::ClusterRow>(
                    &self.pool,
                    "cluster",
                    $crate::store::rows::CLUSTER_COLUMNS,
                    vis,
                    &scope.project_id,
                    ident,
                )
                .await?
                .into_domain()
            }

            async fn find_cluster(
                &self,
                uuid: &str,
            ) -> $crate::store::StoreResult<Option<$crate::domain::cluster::Cluster>> {
                let sql = format!("SELECT {} FROM cluster WHERE uuid = $1", $crate::store::rows::CLUSTER_COLUMNS);
                let row: Option<$crate::store::rows::ClusterRow> = sqlx::query_as(&sql)
                    .bind(uuid)
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(Self::err)?;
                row.map(|r| r.into_domain()).transpose()
            }

            async fn clusters_by_uuid(
                &self,
                uuids: &[String],
            ) -> $crate::store::StoreResult<Vec<$crate::domain::cluster::Cluster>> {
                if uuids.is_empty() {
                    return Ok(Vec::new());
                }
                let sql = format!(
                    "SELECT {} FROM cluster WHERE uuid IN ({})",
                    $crate::store::rows::CLUSTER_COLUMNS,
                    $crate::store::resources::placeholders(1, uuids.len())
                );
                let mut q = sqlx::query_as::<_, $crate::store::rows::ClusterRow>(&sql);
                for u in uuids {
                    q = q.bind(u);
                }
                let rows = q.fetch_all(&self.pool).await.map_err(Self::err)?;
                rows.into_iter().map(|r| r.into_domain()).collect()
            }

            async fn list_clusters(
                &self,
                scope: &$crate::store::Scope,
                page: &$crate::store::PageRequest,
            ) -> $crate::store::StoreResult<Vec<$crate::domain::cluster::Cluster>> {
                let nullable = $crate::store::resources::nullable($crate::store::resources::CLUSTER_SORT_KEYS, &page.sort_key)?;
                let vis = |a: &str| if scope.all_projects { "$1 = $1".to_string() } else { format!("{a}.project_id = $1") };
                let rows: Vec<$crate::store::rows::ClusterRow> = Self::keyset_page(
                    &self.pool,
                    "cluster",
                    $crate::store::rows::CLUSTER_COLUMNS,
                    &vis("t"),
                    &vis("m"),
                    &scope.project_id,
                    &[],
                    page,
                    nullable,
                )
                .await?;
                rows.into_iter().map(|r| r.into_domain()).collect()
            }

            async fn nodegroups_of(
                &self,
                cluster_uuids: &[String],
            ) -> $crate::store::StoreResult<Vec<$crate::domain::cluster::NodeGroup>> {
                if cluster_uuids.is_empty() {
                    return Ok(Vec::new());
                }
                let sql = format!(
                    "SELECT {} FROM nodegroup WHERE cluster_id IN ({}) ORDER BY id",
                    $crate::store::rows::NODEGROUP_COLUMNS,
                    $crate::store::resources::placeholders(1, cluster_uuids.len())
                );
                let mut q = sqlx::query_as::<_, $crate::store::rows::NodeGroupRow>(&sql);
                for u in cluster_uuids {
                    q = q.bind(u);
                }
                let rows = q.fetch_all(&self.pool).await.map_err(Self::err)?;
                rows.into_iter().map(|r| r.into_domain()).collect()
            }

            async fn list_nodegroups(
                &self,
                cluster_uuid: &str,
                scope: &$crate::store::Scope,
                role: Option<&str>,
                page: &$crate::store::PageRequest,
            ) -> $crate::store::StoreResult<Vec<$crate::domain::cluster::NodeGroup>> {
                let nullable = $crate::store::resources::nullable($crate::store::resources::NODEGROUP_SORT_KEYS, &page.sort_key)?;
                let vis = |a: &str| {
                    let mut v = format!("{a}.cluster_id = $2");
                    if !scope.all_projects {
                        v.push_str(&format!(" AND {a}.project_id = $1"));
                    } else {
                        v.push_str(" AND $1 = $1");
                    }
                    if role.is_some() {
                        v.push_str(&format!(" AND {a}.role = $3"));
                    }
                    v
                };
                let mut extra = vec![cluster_uuid.to_string()];
                if let Some(r) = role {
                    extra.push(r.to_string());
                }
                let rows: Vec<$crate::store::rows::NodeGroupRow> = Self::keyset_page(
                    &self.pool,
                    "nodegroup",
                    $crate::store::rows::NODEGROUP_COLUMNS,
                    &vis("t"),
                    &vis("m"),
                    &scope.project_id,
                    &extra,
                    page,
                    nullable,
                )
                .await?;
                rows.into_iter().map(|r| r.into_domain()).collect()
            }

            async fn get_nodegroup(
                &self,
                cluster_uuid: &str,
                ident: &str,
            ) -> $crate::store::StoreResult<$crate::domain::cluster::NodeGroup> {
                let sql = format!(
                    "SELECT {} FROM nodegroup WHERE cluster_id = $1 AND (uuid = $2 OR name = $3 OR id = $4) \
                     ORDER BY (uuid = $2) DESC, id LIMIT 2",
                    $crate::store::rows::NODEGROUP_COLUMNS
                );
                let as_uuid = $crate::domain::ids::parse_uuid_like(ident)
                    .map(|u| u.hyphenated().to_string())
                    .unwrap_or_default();
                let as_id: i64 = ident.parse().unwrap_or(-1);
                let rows: Vec<$crate::store::rows::NodeGroupRow> = sqlx::query_as(&sql)
                    .bind(cluster_uuid)
                    .bind(as_uuid)
                    .bind(ident)
                    .bind(as_id)
                    .fetch_all(&self.pool)
                    .await
                    .map_err(Self::err)?;
                let mut rows = rows.into_iter();
                match (rows.next(), rows.next()) {
                    (None, _) => Err($crate::store::StoreError::NotFound),
                    (Some(first), _) => first.into_domain(),
                }
            }

            async fn templates_by_uuid(
                &self,
                uuids: &[String],
            ) -> $crate::store::StoreResult<Vec<$crate::domain::template::ClusterTemplate>> {
                if uuids.is_empty() {
                    return Ok(Vec::new());
                }
                let sql = format!(
                    "SELECT {} FROM cluster_template WHERE uuid IN ({})",
                    $crate::store::sql::TEMPLATE_COLUMNS,
                    $crate::store::resources::placeholders(1, uuids.len())
                );
                let mut q = sqlx::query_as::<_, $crate::store::sql::TemplateRow>(&sql);
                for u in uuids {
                    q = q.bind(u);
                }
                let rows = q.fetch_all(&self.pool).await.map_err(Self::err)?;
                rows.into_iter().map(|r| r.into_domain()).collect()
            }

            async fn clusters_in_progress(
                &self,
                after_id: i64,
                limit: u32,
            ) -> $crate::store::StoreResult<Vec<$crate::domain::cluster::Cluster>> {
                let sql = format!(
                    "SELECT {} FROM cluster WHERE status IN ('CREATE_IN_PROGRESS', 'UPDATE_IN_PROGRESS', \
                     'DELETE_IN_PROGRESS', 'ROLLBACK_IN_PROGRESS') AND id > $1 ORDER BY id LIMIT $2",
                    $crate::store::rows::CLUSTER_COLUMNS
                );
                let rows: Vec<$crate::store::rows::ClusterRow> = sqlx::query_as(&sql)
                    .bind(after_id)
                    .bind(i64::from(limit))
                    .fetch_all(&self.pool)
                    .await
                    .map_err(Self::err)?;
                rows.into_iter().map(|r| r.into_domain()).collect()
            }

            async fn get_federation(
                &self,
                scope: &$crate::store::Scope,
                ident: &$crate::domain::Ident,
            ) -> $crate::store::StoreResult<$crate::domain::federation::Federation> {
                let vis = if scope.all_projects { "$1 = $1" } else { "t.project_id = $1" };
                Self::one_by_ident::<$crate::store::rows::FederationRow>(
                    &self.pool,
                    "federation",
                    $crate::store::rows::FEDERATION_COLUMNS,
                    vis,
                    &scope.project_id,
                    ident,
                )
                .await?
                .into_domain()
            }

            async fn find_federation(
                &self,
                uuid: &str,
            ) -> $crate::store::StoreResult<Option<$crate::domain::federation::Federation>> {
                let sql = format!("SELECT {} FROM federation WHERE uuid = $1", $crate::store::rows::FEDERATION_COLUMNS);
                let row: Option<$crate::store::rows::FederationRow> = sqlx::query_as(&sql)
                    .bind(uuid)
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(Self::err)?;
                row.map(|r| r.into_domain()).transpose()
            }

            async fn list_federations(
                &self,
                scope: &$crate::store::Scope,
                page: &$crate::store::PageRequest,
            ) -> $crate::store::StoreResult<Vec<$crate::domain::federation::Federation>> {
                let nullable = $crate::store::resources::nullable($crate::store::resources::FEDERATION_SORT_KEYS, &page.sort_key)?;
                let vis = |a: &str| if scope.all_projects { "$1 = $1".to_string() } else { format!("{a}.project_id = $1") };
                let rows: Vec<$crate::store::rows::FederationRow> = Self::keyset_page(
                    &self.pool,
                    "federation",
                    $crate::store::rows::FEDERATION_COLUMNS,
                    &vis("t"),
                    &vis("m"),
                    &scope.project_id,
                    &[],
                    page,
                    nullable,
                )
                .await?;
                rows.into_iter().map(|r| r.into_domain()).collect()
            }

            async fn federations_of_cluster(
                &self,
                cluster_uuid: &str,
            ) -> $crate::store::StoreResult<Vec<$crate::domain::federation::Federation>> {
                let sql = format!(
                    "SELECT {} FROM federation WHERE hostcluster_id = $1 OR {} ORDER BY id",
                    $crate::store::rows::FEDERATION_COLUMNS,
                    Self::MEMBER_CONTAINS
                );
                let rows: Vec<$crate::store::rows::FederationRow> = sqlx::query_as(&sql)
                    .bind(cluster_uuid)
                    .fetch_all(&self.pool)
                    .await
                    .map_err(Self::err)?;
                rows.into_iter().map(|r| r.into_domain()).collect()
            }

            async fn federations_in_progress(
                &self,
                limit: u32,
            ) -> $crate::store::StoreResult<Vec<$crate::domain::federation::Federation>> {
                let sql = format!(
                    "SELECT {} FROM federation WHERE status IN ('CREATE_IN_PROGRESS', 'UPDATE_IN_PROGRESS', \
                     'DELETE_IN_PROGRESS') ORDER BY id LIMIT $1",
                    $crate::store::rows::FEDERATION_COLUMNS
                );
                let rows: Vec<$crate::store::rows::FederationRow> = sqlx::query_as(&sql)
                    .bind(i64::from(limit))
                    .fetch_all(&self.pool)
                    .await
                    .map_err(Self::err)?;
                rows.into_iter().map(|r| r.into_domain()).collect()
            }

            async fn claim_job(
                &self,
                owner: &str,
                lease: std::time::Duration,
            ) -> $crate::store::StoreResult<Option<$crate::domain::job::Job>> {
                let now = $crate::store::sql::now();
                let expires = now + chrono::Duration::from_std(lease).unwrap_or(chrono::Duration::seconds(60));
                let mut tx = self.begin_write().await?;
                // Due, not leased (or the lease expired), and no earlier pending job for the
                // same resource: a resource's jobs run one at a time, in order.
                let sql = format!(
                    "SELECT id FROM job j WHERE j.state = 'pending' AND j.run_after <= $1 \
                     AND (j.lease_expires_at IS NULL OR j.lease_expires_at < $1) \
                     AND NOT EXISTS (SELECT 1 FROM job e WHERE e.resource_uuid = j.resource_uuid \
                     AND e.state = 'pending' AND e.id < j.id) \
                     ORDER BY j.run_after, j.id LIMIT 1{}",
                    Self::SKIP_LOCKED
                );
                let id: Option<i64> = sqlx::query_scalar(&sql)
                    .bind(now)
                    .fetch_optional(&mut *tx)
                    .await
                    .map_err(Self::err)?;
                let Some(id) = id else {
                    return Ok(None);
                };
                let sql = format!(
                    "UPDATE job SET lease_owner = $1, lease_expires_at = $2, attempts = attempts + 1, \
                     updated_at = $3 WHERE id = $4 RETURNING {}",
                    $crate::store::rows::JOB_COLUMNS
                );
                let row: $crate::store::rows::JobRow = sqlx::query_as(&sql)
                    .bind(owner)
                    .bind(expires)
                    .bind(now)
                    .bind(id)
                    .fetch_one(&mut *tx)
                    .await
                    .map_err(Self::err)?;
                tx.commit().await.map_err(Self::err)?;
                row.into_domain().map(Some)
            }

            async fn renew_lease(
                &self,
                job_id: i64,
                owner: &str,
                lease: std::time::Duration,
            ) -> $crate::store::StoreResult<bool> {
                let expires = $crate::store::sql::now()
                    + chrono::Duration::from_std(lease).unwrap_or(chrono::Duration::seconds(60));
                let done = sqlx::query(
                    "UPDATE job SET lease_expires_at = $1 WHERE id = $2 AND lease_owner = $3 AND state = 'pending'",
                )
                .bind(expires)
                .bind(job_id)
                .bind(owner)
                .execute(&self.pool)
                .await
                .map_err(Self::err)?;
                Ok(done.rows_affected() == 1)
            }

            async fn other_pending_job(
                &self,
                resource_uuid: &str,
                job_id: i64,
            ) -> $crate::store::StoreResult<bool> {
                sqlx::query_scalar(
                    "SELECT EXISTS (SELECT 1 FROM job WHERE resource_uuid = $1 AND state = 'pending' AND id <> $2)",
                )
                .bind(resource_uuid)
                .bind(job_id)
                .fetch_one(&self.pool)
                .await
                .map_err(Self::err)
            }

            async fn resources_with_pending_jobs(
                &self,
                uuids: &[String],
            ) -> $crate::store::StoreResult<Vec<String>> {
                if uuids.is_empty() {
                    return Ok(Vec::new());
                }
                let sql = format!(
                    "SELECT DISTINCT resource_uuid FROM job WHERE state = 'pending' AND resource_uuid IN ({})",
                    $crate::store::resources::placeholders(1, uuids.len())
                );
                let mut q = sqlx::query_scalar::<_, String>(&sql);
                for u in uuids {
                    q = q.bind(u);
                }
                q.fetch_all(&self.pool).await.map_err(Self::err)
            }

            async fn jobs_for(
                &self,
                resource_uuid: &str,
            ) -> $crate::store::StoreResult<Vec<($crate::domain::job::Job, String)>> {
                let sql = format!(
                    "SELECT {}, state FROM job WHERE resource_uuid = $1 ORDER BY id",
                    $crate::store::rows::JOB_COLUMNS
                );
                let rows = sqlx::query(&sql)
                    .bind(resource_uuid)
                    .fetch_all(&self.pool)
                    .await
                    .map_err(Self::err)?;
                let mut out = Vec::with_capacity(rows.len());
                for row in rows {
                    use sqlx::{FromRow, Row};
                    let job = $crate::store::rows::JobRow::from_row(&row).map_err(Self::err)?.into_domain()?;
                    let state: String = row.try_get("state").map_err(Self::err)?;
                    out.push((job, state));
                }
                Ok(out)
            }

            async fn get_keypairs(
                &self,
                cluster_uuid: &str,
            ) -> $crate::store::StoreResult<Vec<$crate::certificates::StoredKeyPair>> {
                let rows: Vec<(String, String, String, String, String, String, String, chrono::DateTime<chrono::Utc>)> =
                    sqlx::query_as(
                        "SELECT uuid, cluster_uuid, kind, certificate, private_key, project_id, user_id, created_at \
                         FROM x509keypair WHERE cluster_uuid = $1 ORDER BY id",
                    )
                    .bind(cluster_uuid)
                    .fetch_all(&self.pool)
                    .await
                    .map_err(Self::err)?;
                Ok(rows
                    .into_iter()
                    .map(|(uuid, cluster_uuid, kind, certificate, private_key, project_id, user_id, created_at)| {
                        $crate::certificates::StoredKeyPair {
                            uuid,
                            cluster_uuid,
                            kind,
                            certificate,
                            private_key,
                            project_id,
                            user_id,
                            created_at,
                        }
                    })
                    .collect())
            }

            async fn get_quota(
                &self,
                project_id: &str,
                resource: &str,
            ) -> $crate::store::StoreResult<Option<$crate::store::QuotaRow>> {
                sqlx::query_as(
                    "SELECT id, project_id, resource, hard_limit, created_at, updated_at FROM quotas \
                     WHERE project_id = $1 AND resource = $2",
                )
                .bind(project_id)
                .bind(resource)
                .fetch_optional(&self.pool)
                .await
                .map_err(Self::err)
            }

            async fn list_quotas(
                &self,
                project_id: Option<&str>,
                marker: Option<i64>,
                page: &$crate::store::PageRequest,
            ) -> $crate::store::StoreResult<Vec<$crate::store::QuotaRow>> {
                let nullable = $crate::store::resources::nullable($crate::store::resources::QUOTA_SORT_KEYS, &page.sort_key)?;
                let vis = |a: &str| match project_id {
                    Some(_) => format!("{a}.project_id = $1"),
                    None => "$1 = $1".to_string(),
                };
                let keyed = $crate::store::PageRequest { marker: None, ..page.clone() };
                let (_, order) = $crate::store::sql::keyset(&keyed, nullable);
                let mut cond = String::new();
                if marker.is_some() {
                    let with_marker = $crate::store::PageRequest { marker: Some(uuid::Uuid::nil()), ..page.clone() };
                    let (c, _) = $crate::store::sql::keyset(&with_marker, nullable);
                    cond = format!(" AND {}", c.unwrap_or_else(|| "TRUE".into()));
                }
                let from = if marker.is_some() {
                    format!("quotas t, (SELECT * FROM quotas m WHERE {} AND m.id = $3) m", vis("m"))
                } else {
                    "quotas t".to_string()
                };
                let sql = format!(
                    "SELECT {} FROM {from} WHERE {}{cond} ORDER BY {order} LIMIT $2",
                    $crate::store::resources::aliased("id, project_id, resource, hard_limit, created_at, updated_at", "t"),
                    vis("t")
                );
                if let Some(m) = marker {
                    let exists: i64 = sqlx::query_scalar(&format!("SELECT COUNT(*) FROM quotas m WHERE {} AND m.id = $2", vis("m")))
                        .bind(project_id.unwrap_or(""))
                        .bind(m)
                        .fetch_one(&self.pool)
                        .await
                        .map_err(Self::err)?;
                    if exists == 0 {
                        return Err($crate::store::StoreError::NotFound);
                    }
                }
                let mut q = sqlx::query_as::<_, $crate::store::QuotaRow>(&sql)
                    .bind(project_id.unwrap_or(""))
                    .bind(i64::from(page.limit));
                if let Some(m) = marker {
                    q = q.bind(m);
                }
                q.fetch_all(&self.pool).await.map_err(Self::err)
            }

            async fn create_quota(
                &self,
                project_id: &str,
                resource: &str,
                hard_limit: i32,
            ) -> $crate::store::StoreResult<$crate::store::QuotaRow> {
                let mut tx = self.begin_write().await?;
                let row = sqlx::query_as(
                    "INSERT INTO quotas (project_id, resource, hard_limit, created_at) VALUES ($1, $2, $3, $4) \
                     RETURNING id, project_id, resource, hard_limit, created_at, updated_at",
                )
                .bind(project_id)
                .bind(resource)
                .bind(hard_limit)
                .bind($crate::store::sql::now())
                .fetch_one(&mut *tx)
                .await
                .map_err(Self::err)?;
                tx.commit().await.map_err(Self::err)?;
                Ok(row)
            }

            async fn update_quota(
                &self,
                project_id: &str,
                resource: &str,
                hard_limit: i32,
            ) -> $crate::store::StoreResult<$crate::store::QuotaRow> {
                let mut tx = self.begin_write().await?;
                let row: Option<$crate::store::QuotaRow> = sqlx::query_as(
                    "UPDATE quotas SET hard_limit = $1, updated_at = $2 WHERE project_id = $3 AND resource = $4 \
                     RETURNING id, project_id, resource, hard_limit, created_at, updated_at",
                )
                .bind(hard_limit)
                .bind($crate::store::sql::now())
                .bind(project_id)
                .bind(resource)
                .fetch_optional(&mut *tx)
                .await
                .map_err(Self::err)?;
                tx.commit().await.map_err(Self::err)?;
                row.ok_or($crate::store::StoreError::NotFound)
            }

            async fn delete_quota(&self, project_id: &str, resource: &str) -> $crate::store::StoreResult<()> {
                let mut tx = self.begin_write().await?;
                let done = sqlx::query("DELETE FROM quotas WHERE project_id = $1 AND resource = $2")
                    .bind(project_id)
                    .bind(resource)
                    .execute(&mut *tx)
                    .await
                    .map_err(Self::err)?;
                tx.commit().await.map_err(Self::err)?;
                if done.rows_affected() == 0 {
                    return Err($crate::store::StoreError::NotFound);
                }
                Ok(())
            }

            async fn stats(&self, project_id: Option<&str>) -> $crate::store::StoreResult<(i64, i64)> {
                let (clusters, nodes): (i64, Option<i64>) = match project_id {
                    Some(p) => sqlx::query_as(
                        "SELECT (SELECT COUNT(*) FROM cluster WHERE project_id = $1), \
                         (SELECT CAST(SUM(node_count) AS BIGINT) FROM nodegroup WHERE project_id = $1)",
                    )
                    .bind(p)
                    .fetch_one(&self.pool)
                    .await
                    .map_err(Self::err)?,
                    None => sqlx::query_as(
                        "SELECT (SELECT COUNT(*) FROM cluster), (SELECT CAST(SUM(node_count) AS BIGINT) FROM nodegroup)",
                    )
                    .fetch_one(&self.pool)
                    .await
                    .map_err(Self::err)?,
                };
                Ok((clusters, nodes.unwrap_or(0)))
            }
        }

        impl $store {
            async fn insert_nodegroup(
                tx: &mut sqlx::Transaction<'_, <Self as $crate::store::sql::Backend>::Db>,
                cluster_uuid: &str,
                ng: &$crate::domain::cluster::NewNodeGroup,
                now: chrono::DateTime<chrono::Utc>,
            ) -> $crate::store::StoreResult<()> {
                use sqlx::types::Json;
                sqlx::query(
                    "INSERT INTO nodegroup (uuid, name, cluster_id, project_id, docker_volume_size, labels, \
                     flavor_id, image_id, node_addresses, node_count, role, min_node_count, max_node_count, \
                     is_default, status, node_labels, node_taints, created_at) VALUES \
                     ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)",
                )
                .bind(ng.uuid.to_string())
                .bind(&ng.name)
                .bind(cluster_uuid)
                .bind(&ng.project_id)
                .bind(ng.docker_volume_size)
                .bind(Json(&ng.labels))
                .bind(&ng.flavor_id)
                .bind(&ng.image_id)
                .bind(Json(Vec::<String>::new()))
                .bind(ng.node_count)
                .bind(&ng.role)
                .bind(ng.min_node_count)
                .bind(ng.max_node_count)
                .bind(ng.is_default)
                .bind(ng.status.as_str())
                .bind(Json(&ng.node_labels))
                .bind(Json(&ng.node_taints))
                .bind(now)
                .execute(&mut **tx)
                .await
                .map_err(Self::err)?;
                Ok(())
            }

            /// The one row of `table` (alias `t`) a uuid or name names among those `vis` lets
            /// the caller see (`$1` is the caller's project): [`StoreError::NotFound`] for
            /// none, [`StoreError::Ambiguous`] for a name several rows share.
            async fn one_by_ident<R>(
                pool: &sqlx::Pool<<Self as $crate::store::sql::Backend>::Db>,
                table: &'static str,
                columns: &'static str,
                vis: &'static str,
                project: &str,
                ident: &$crate::domain::Ident,
            ) -> $crate::store::StoreResult<R>
            where
                R: for<'r> sqlx::FromRow<'r, <<Self as $crate::store::sql::Backend>::Db as sqlx::Database>::Row> + Send + Unpin,
            {
                let (col, value) = match ident {
                    $crate::domain::Ident::Uuid(u) => ("uuid", u.hyphenated().to_string()),
                    $crate::domain::Ident::Name(n) => ("name", n.clone()),
                };
                let sql = $crate::store::resources::statement([table, columns, vis, col], || {
                    let cols = $crate::store::resources::aliased(columns, "t");
                    format!(
                        "SELECT {cols} FROM {table} t WHERE {vis} AND t.{col} = $2 ORDER BY t.id LIMIT 2"
                    )
                });
                let rows: Vec<R> = sqlx::query_as(&sql)
                    .bind(project)
                    .bind(value)
                    .fetch_all(pool)
                    .await
                    .map_err(Self::err)?;
                let mut rows = rows.into_iter();
                match (rows.next(), rows.next()) {
                    (None, _) => Err($crate::store::StoreError::NotFound),
                    (Some(_), Some(_)) => Err($crate::store::StoreError::Ambiguous),
                    (Some(row), None) => Ok(row),
                }
            }

            /// One keyset page of `table` (alias `t`, marker row alias `m`): `$1` is the
            /// caller's project, `$2.. ` the `extra` binds used by `vis_t`/`vis_m`, then the
            /// limit and the marker.
            #[allow(clippy::too_many_arguments)]
            async fn keyset_page<R>(
                pool: &sqlx::Pool<<Self as $crate::store::sql::Backend>::Db>,
                table: &str,
                columns: &str,
                vis_t: &str,
                vis_m: &str,
                project: &str,
                extra: &[String],
                page: &$crate::store::PageRequest,
                nullable: bool,
            ) -> $crate::store::StoreResult<Vec<R>>
            where
                R: for<'r> sqlx::FromRow<'r, <<Self as $crate::store::sql::Backend>::Db as sqlx::Database>::Row> + Send + Unpin,
            {
                let limit_at = 2 + extra.len();
                let marker_at = limit_at + 1;
                // The marker's visibility is checked below; its values bound the scan.
                let (cond, order) = $crate::store::sql::keyset_by_marker(
                    page,
                    nullable,
                    table,
                    &format!("${marker_at}"),
                );
                let cols = $crate::store::resources::aliased(columns, "t");
                let sql = match &cond {
                    None => format!("SELECT {cols} FROM {table} t WHERE {vis_t} ORDER BY {order} LIMIT ${limit_at}"),
                    Some(cond) => format!(
                        "SELECT {cols} FROM {table} t WHERE {vis_t} AND {cond} ORDER BY {order} LIMIT ${limit_at}"
                    ),
                };
                if let Some(marker) = page.marker {
                    let check = format!("SELECT COUNT(*) FROM {table} m WHERE {vis_m} AND m.uuid = ${marker_at}");
                    let mut q = sqlx::query_scalar::<_, i64>(&check).bind(project);
                    for e in extra {
                        q = q.bind(e);
                    }
                    // Keep the placeholder numbering: bind the unused limit position too.
                    q = q.bind(0_i64).bind(marker.hyphenated().to_string());
                    let found = q.fetch_one(pool).await.map_err(Self::err)?;
                    if found == 0 {
                        return Err($crate::store::StoreError::NotFound);
                    }
                }
                let mut q = sqlx::query_as::<_, R>(&sql).bind(project);
                for e in extra {
                    q = q.bind(e);
                }
                q = q.bind(i64::from(page.limit));
                if let Some(marker) = page.marker {
                    q = q.bind(marker.hyphenated().to_string());
                }
                q.fetch_all(pool).await.map_err(Self::err)
            }
        }
    };
}

pub(crate) use impl_resource_store;

#[cfg(test)]
mod tests {
    use super::statement;
    use std::sync::Arc;

    #[test]
    fn statement_texts_are_built_once_per_distinct_parts() {
        static A: &str = "cluster";
        static B: &str = "federation";
        let mut builds = 0;
        let first = statement([A, "t", "v", "uuid"], || {
            builds += 1;
            format!("SELECT 1 FROM {A}")
        });
        let again = statement([A, "t", "v", "uuid"], || {
            builds += 1;
            "never used".to_string()
        });
        assert!(Arc::ptr_eq(&first, &again));
        assert_eq!(builds, 1);
        let other = statement([B, "t", "v", "uuid"], || format!("SELECT 1 FROM {B}"));
        assert_eq!(&*other, "SELECT 1 FROM federation");
        assert_eq!(&*first, "SELECT 1 FROM cluster");
    }
}
