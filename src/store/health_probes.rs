//! The `cluster_health_probe` table: the active health prober's candidates, claims and
//! results (`crate::conductor::probe`), and the records the cluster registry reads.
//!
//! Lists of uuids and of results are bound as one JSON text parameter (one statement and one
//! plan for a batch of any size): `jsonb_array_elements_text` / `jsonb_to_recordset` on
//! PostgreSQL, `json_each` on SQLite.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use chrono::{DateTime, Utc};
use serde_json::json;
use sqlx::types::Json;

use super::db::Pool;
use super::{Dialect, StoreError, StoreResult};
use crate::domain::health_probe::{HealthProbe, ProbeCandidate, ProbeResult};
use crate::domain::status::{ClusterStatus, HealthStatus};
use crate::domain::ClusterId;

const PROBE_COLUMNS: &str = "cluster_uuid, last_probe_at, last_ok_at, last_transition_at, \
    consecutive_failures, consecutive_successes, last_reason";

/// `IN` the text values of a JSON array bound as `param`.
fn in_json_texts(d: Dialect, param: &str) -> String {
    match d {
        Dialect::Postgres => {
            format!("IN (SELECT jsonb_array_elements_text(CAST({param} AS JSONB)))")
        }
        Dialect::Sqlite => format!("IN (SELECT value FROM json_each({param}))"),
    }
}

/// The statuses whose clusters are probed: complete-like (never `*_IN_PROGRESS`).
fn probed_statuses() -> String {
    ClusterStatus::ALL
        .iter()
        .filter(|s| s.is_complete_like() && !s.is_in_progress())
        .map(|s| format!("'{}'", s.as_str()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Due clusters after id `$1` whose template's driver is in the JSON array `$2`, not probed
/// (nor claimed) since `$3`, in id order, at most `$4`; with their newest Kubernetes CA.
static CANDIDATES: LazyLock<[String; 2]> = LazyLock::new(|| {
    Dialect::both(|d| {
        format!(
            "SELECT c.id, c.uuid, c.api_address, c.health_status, c.health_status_reason, \
             c.version, COALESCE(c.ca_bundle, (SELECT k.certificate FROM x509keypair k \
             WHERE k.cluster_uuid = c.uuid AND k.kind = 'ca' ORDER BY k.id DESC LIMIT 1)) \
             AS ca_certificate \
             FROM cluster c JOIN cluster_template t ON t.uuid = c.cluster_template_id \
             LEFT JOIN cluster_health_probe p ON p.cluster_uuid = c.uuid \
             WHERE c.id > $1 AND c.api_address IS NOT NULL AND c.status IN ({}) \
             AND t.driver {} AND (p.last_probe_at IS NULL OR p.last_probe_at < $3) \
             ORDER BY c.id LIMIT $4",
            probed_statuses(),
            in_json_texts(d, "$2"),
        )
    })
});

/// Claims the clusters of the JSON array `$1` whose last probe is older than `$3` (or that
/// have none) by setting their `last_probe_at` to `$2`; returns the uuids claimed. A
/// concurrent claim of the same row waits for the first and then finds it fresh.
static CLAIM: LazyLock<[String; 2]> = LazyLock::new(|| {
    Dialect::both(|d| {
        let source = match d {
            Dialect::Postgres => {
                "SELECT c.uuid, $2 FROM cluster c WHERE c.uuid IN \
                 (SELECT jsonb_array_elements_text(CAST($1 AS JSONB)))"
            }
            Dialect::Sqlite => {
                "SELECT c.uuid, $2 FROM cluster c WHERE c.uuid IN \
                 (SELECT value FROM json_each($1))"
            }
        };
        format!(
            "INSERT INTO cluster_health_probe (cluster_uuid, last_probe_at) {source} \
             ON CONFLICT (cluster_uuid) DO UPDATE SET last_probe_at = excluded.last_probe_at \
             WHERE cluster_health_probe.last_probe_at IS NULL \
             OR cluster_health_probe.last_probe_at < $3 \
             RETURNING cluster_uuid"
        )
    })
});

/// Applies a batch of results (the JSON array `$1` of `{uuid, ok, reason}`) received at `$2`:
/// counters move in SQL, so the returned records are what the table holds. `last_probe_at`
/// stays the time the probe was claimed (its start): a hanging probe does not push the
/// cluster's next probe later.
static RECORD: LazyLock<[String; 2]> = LazyLock::new(|| {
    Dialect::both(|d| {
        let (source, t) = match d {
            Dialect::Postgres => (
                "jsonb_to_recordset(CAST($1 AS JSONB)) AS v(uuid TEXT, ok BOOLEAN, reason TEXT)",
                "p",
            ),
            Dialect::Sqlite => (
                "(SELECT json_extract(value, '$.uuid') AS uuid, json_extract(value, '$.ok') \
                 AS ok, json_extract(value, '$.reason') AS reason FROM json_each($1)) AS v",
                "cluster_health_probe",
            ),
        };
        let alias = match d {
            Dialect::Postgres => " p",
            Dialect::Sqlite => "",
        };
        format!(
            "UPDATE cluster_health_probe{alias} SET \
             last_ok_at = CASE WHEN v.ok THEN $2 ELSE {t}.last_ok_at END, \
             consecutive_failures = CASE WHEN v.ok THEN 0 ELSE {t}.consecutive_failures + 1 END, \
             consecutive_successes = CASE WHEN v.ok THEN {t}.consecutive_successes + 1 ELSE 0 END, \
             last_reason = v.reason FROM {source} WHERE {t}.cluster_uuid = v.uuid \
             RETURNING {}",
            PROBE_COLUMNS
                .split(", ")
                .map(|c| format!("{t}.{c}"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    })
});

static TRANSITIONS: LazyLock<[String; 2]> = LazyLock::new(|| {
    Dialect::both(|d| {
        format!(
            "UPDATE cluster_health_probe SET last_transition_at = $2 WHERE cluster_uuid {}",
            in_json_texts(d, "$1")
        )
    })
});

static OF: LazyLock<[String; 2]> = LazyLock::new(|| {
    Dialect::both(|d| {
        format!(
            "SELECT {PROBE_COLUMNS} FROM cluster_health_probe WHERE cluster_uuid {} \
             ORDER BY cluster_uuid",
            in_json_texts(d, "$1")
        )
    })
});

#[derive(sqlx::FromRow)]
struct CandidateRow {
    id: i64,
    uuid: String,
    api_address: Option<String>,
    health_status: Option<String>,
    health_status_reason: Json<BTreeMap<String, String>>,
    version: i64,
    ca_certificate: Option<String>,
}

#[derive(sqlx::FromRow)]
struct ProbeRow {
    cluster_uuid: String,
    last_probe_at: Option<DateTime<Utc>>,
    last_ok_at: Option<DateTime<Utc>>,
    last_transition_at: Option<DateTime<Utc>>,
    consecutive_failures: i32,
    consecutive_successes: i32,
    last_reason: Option<String>,
}

fn cluster_id(table: &str, text: &str) -> StoreResult<ClusterId> {
    uuid::Uuid::try_parse(text)
        .map(ClusterId::from)
        .map_err(|_| StoreError::Corrupt(format!("{table} uuid {text}")))
}

impl ProbeRow {
    fn into_domain(self) -> StoreResult<HealthProbe> {
        Ok(HealthProbe {
            cluster_uuid: cluster_id("cluster_health_probe", &self.cluster_uuid)?,
            last_probe_at: self.last_probe_at,
            last_ok_at: self.last_ok_at,
            last_transition_at: self.last_transition_at,
            consecutive_failures: self.consecutive_failures,
            consecutive_successes: self.consecutive_successes,
            last_reason: self.last_reason,
        })
    }
}

fn probes(rows: Vec<ProbeRow>) -> StoreResult<Vec<HealthProbe>> {
    rows.into_iter().map(ProbeRow::into_domain).collect()
}

fn uuid_list(uuids: &[ClusterId]) -> String {
    serde_json::Value::from(uuids.iter().map(|u| u.to_string()).collect::<Vec<_>>()).to_string()
}

#[tracing::instrument(level = "debug", skip_all, fields(after_id = after_id, limit = limit))]
pub(super) async fn candidates(
    pool: &Pool,
    drivers: &[String],
    due_before: DateTime<Utc>,
    after_id: i64,
    limit: u32,
) -> StoreResult<Vec<ProbeCandidate>> {
    let rows: Vec<CandidateRow> = pool
        .sql(pool.dialect().pick(&CANDIDATES))
        .bind(after_id)
        .bind(serde_json::Value::from(drivers.to_vec()).to_string())
        .bind(due_before)
        .bind(i64::from(limit))
        .fetch_all(pool)
        .await?;
    let mut out = Vec::with_capacity(rows.len());
    for r in rows {
        let Some(api_address) = r.api_address else {
            continue;
        };
        let health_status = match r.health_status {
            None => None,
            Some(h) => Some(
                HealthStatus::parse(&h)
                    .ok_or_else(|| StoreError::Corrupt(format!("cluster.health_status {h}")))?,
            ),
        };
        out.push(ProbeCandidate {
            id: r.id,
            uuid: cluster_id("cluster", &r.uuid)?,
            api_address,
            ca_certificate: r.ca_certificate,
            health_status,
            health_status_reason: r.health_status_reason.0,
            version: r.version,
        });
    }
    Ok(out)
}

#[tracing::instrument(level = "debug", skip_all, fields(count = uuids.len()))]
pub(super) async fn claim(
    pool: &Pool,
    uuids: &[ClusterId],
    due_before: DateTime<Utc>,
    now: DateTime<Utc>,
) -> StoreResult<Vec<ClusterId>> {
    if uuids.is_empty() {
        return Ok(Vec::new());
    }
    let claimed: Vec<String> = pool
        .sql(pool.dialect().pick(&CLAIM))
        .bind(uuid_list(uuids))
        .bind(now)
        .bind(due_before)
        .scalar_all(pool)
        .await?;
    claimed
        .iter()
        .map(|u| cluster_id("cluster_health_probe", u))
        .collect()
}

#[tracing::instrument(level = "debug", skip_all, fields(count = results.len()))]
pub(super) async fn record(
    pool: &Pool,
    results: &[ProbeResult],
    at: DateTime<Utc>,
) -> StoreResult<Vec<HealthProbe>> {
    if results.is_empty() {
        return Ok(Vec::new());
    }
    let batch: Vec<serde_json::Value> = results
        .iter()
        .map(|r| json!({"uuid": r.cluster_uuid.to_string(), "ok": r.ok, "reason": r.reason}))
        .collect();
    let rows: Vec<ProbeRow> = pool
        .sql(pool.dialect().pick(&RECORD))
        .bind(serde_json::Value::from(batch).to_string())
        .bind(at)
        .fetch_all(pool)
        .await?;
    probes(rows)
}

#[tracing::instrument(level = "debug", skip_all, fields(count = uuids.len()))]
pub(super) async fn mark_transitions(
    pool: &Pool,
    uuids: &[ClusterId],
    at: DateTime<Utc>,
) -> StoreResult<()> {
    if uuids.is_empty() {
        return Ok(());
    }
    pool.sql(pool.dialect().pick(&TRANSITIONS))
        .bind(uuid_list(uuids))
        .bind(at)
        .execute(pool)
        .await?;
    Ok(())
}

#[tracing::instrument(level = "debug", skip_all, fields(count = uuids.len()))]
pub(super) async fn of_clusters(pool: &Pool, uuids: &[ClusterId]) -> StoreResult<Vec<HealthProbe>> {
    if uuids.is_empty() {
        return Ok(Vec::new());
    }
    let rows: Vec<ProbeRow> = pool
        .sql(pool.dialect().pick(&OF))
        .bind(uuid_list(uuids))
        .fetch_all(pool)
        .await?;
    probes(rows)
}
