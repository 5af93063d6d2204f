//! The drills read the database directly: what was committed is the evidence, whatever the
//! killed processes answered or failed to answer.

use sqlx::Row;

/// A read-only view of a drill's database, on either backend.
pub enum Db {
    Pg(sqlx::PgPool),
    Lite(sqlx::SqlitePool),
}

impl Db {
    pub async fn open(url: &str) -> Db {
        if url.starts_with("sqlite:") {
            Db::Lite(sqlx::SqlitePool::connect(url).await.expect("sqlite opens"))
        } else {
            Db::Pg(
                sqlx::postgres::PgPoolOptions::new()
                    .max_connections(2)
                    .connect(url)
                    .await
                    .expect("postgres connects"),
            )
        }
    }

    /// The single integer a query returns.
    pub async fn count(&self, sql: &str) -> i64 {
        match self {
            Db::Pg(p) => sqlx::query_scalar::<_, i64>(sql).fetch_one(p).await,
            Db::Lite(p) => sqlx::query_scalar::<_, i64>(sql).fetch_one(p).await,
        }
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
    }

    /// Every row of a query whose columns are all text (NULL as "").
    pub async fn rows(&self, sql: &str) -> Vec<Vec<String>> {
        fn text<R: Row>(row: &R) -> Vec<String>
        where
            usize: sqlx::ColumnIndex<R>,
            for<'r> Option<String>: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
        {
            (0..row.len())
                .map(|i| {
                    row.try_get::<Option<String>, usize>(i)
                        .unwrap_or_else(|e| panic!("column {i}: {e}"))
                        .unwrap_or_default()
                })
                .collect()
        }
        match self {
            Db::Pg(p) => sqlx::query(sql)
                .fetch_all(p)
                .await
                .map(|rows| rows.iter().map(text).collect()),
            Db::Lite(p) => sqlx::query(sql)
                .fetch_all(p)
                .await
                .map(|rows| rows.iter().map(text).collect()),
        }
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
    }

    /// The first column of every row.
    pub async fn column(&self, sql: &str) -> Vec<String> {
        self.rows(sql)
            .await
            .into_iter()
            .filter_map(|r| r.into_iter().next())
            .collect()
    }

    /// No resource has two notifications of one type and outcome (PostgreSQL: the outcome
    /// is read from the stored JSON message).
    pub async fn assert_each_event_written_once(&self) {
        let repeated = self
            .rows(
                "SELECT resource_uuid, event_type, message->'payload'->>'outcome', \
                 CAST(COUNT(*) AS TEXT) FROM outbox \
                 GROUP BY resource_uuid, event_type, message->'payload'->>'outcome' \
                 HAVING COUNT(*) > 1",
            )
            .await;
        assert!(repeated.is_empty(), "events written twice: {repeated:?}");
    }
}

/// Waits until `ready` holds, polling every 200 ms, for at most `limit`; false when it never
/// did.
pub async fn eventually<F, Fut>(limit: std::time::Duration, mut ready: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        if ready().await {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}
