//! SQL pieces every table module uses: the clock, `IN (...)` lists, and keyset pagination.

use std::sync::LazyLock;

use chrono::{DateTime, Utc};

use super::arg::Arg;
use super::db::Pool;
pub(crate) use super::db::Row;
use super::{PageRequest, Scope, SortDir, StoreError, StoreResult};
use crate::domain::Ident;

/// `$first, $first+1, ...` for `n` bound values (an `IN (...)` list both backends accept).
pub(super) fn placeholders(first: usize, n: usize) -> String {
    (first..first + n)
        .map(|i| format!("${i}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Now, truncated to microseconds (what PostgreSQL keeps), so values read back compare equal.
pub(crate) fn now() -> DateTime<Utc> {
    let n = Utc::now();
    let micros = n.timestamp_micros();
    DateTime::from_timestamp_micros(micros).unwrap_or(n)
}

/// Like [`keyset`], but the marker row's values come from scalar subqueries on `table` by
/// uuid (`marker_param`, e.g. `$3`): evaluated once, they bound an index scan, where a join
/// with the marker row made PostgreSQL filter every row before it.
///
/// With `marker_vis` (a predicate over alias `mk`), a marker the caller may not see reads as
/// NULL and the page is empty: the caller tells "no such marker" from "the last row" only
/// when the page comes back empty, so a page is one statement.
pub(crate) fn keyset_by_marker(
    page: &PageRequest,
    nullable: bool,
    table: &str,
    marker_param: &str,
    marker_vis: Option<&str>,
) -> (Option<String>, String) {
    let (cond, order) = keyset(page, nullable);
    if cond.is_none() {
        return (None, order);
    }
    let k = &page.sort_key;
    let vis = marker_vis.map(|v| format!(" AND {v}")).unwrap_or_default();
    let m = |col: &str| {
        format!("(SELECT mk.{col} FROM {table} mk WHERE mk.uuid = {marker_param}{vis})")
    };
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
        // A marker that reads as NULL (absent or not visible) must select nothing, and a NULL
        // sort value alone does not say so: the marker's id does.
        match page.sort_dir {
            SortDir::Asc => format!(
                "({mid} IS NOT NULL AND (({mk} IS NULL AND t.{k} IS NULL AND t.id > {mid}) OR \
                 ({mk} IS NOT NULL AND (t.{k} IS NULL OR t.{k} > {mk} OR (t.{k} = {mk} AND \
                 t.id > {mid})))))"
            ),
            SortDir::Desc => format!(
                "({mid} IS NOT NULL AND (({mk} IS NULL AND (t.{k} IS NOT NULL OR t.id < {mid})) \
                 OR ({mk} IS NOT NULL AND t.{k} IS NOT NULL AND (t.{k} < {mk} OR (t.{k} = {mk} \
                 AND t.id < {mid})))))"
            ),
        }
    };
    (Some(cond), order)
}

/// Builds the `WHERE`-fragment and `ORDER BY` of a keyset page over table alias `t`, where the
/// marker row is joined as alias `m`. `nullable` says whether the sort column may be NULL:
/// NULLs sort last in ascending order and first in descending order on both backends.
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

/// Prefixes each column of a column list with an alias.
pub(crate) fn aliased(columns: &str, alias: &str) -> String {
    columns
        .split(',')
        .map(|c| format!("{alias}.{}", c.trim()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The select list of a read over alias `t`: the columns, then any extra expressions.
fn select_list(columns: &str, select_extra: &str) -> String {
    let mut cols = aliased(columns, "t");
    if !select_extra.is_empty() {
        cols.push_str(", ");
        cols.push_str(select_extra);
    }
    cols
}

/// Whether a sortable column may be NULL; [`StoreError::Corrupt`] for a column not in `keys`.
pub(crate) fn nullable(keys: &[(&str, bool)], key: &str) -> StoreResult<bool> {
    keys.iter()
        .find(|(k, _)| *k == key)
        .map(|(_, n)| *n)
        .ok_or_else(|| StoreError::Corrupt(format!("unsortable column {key}")))
}

/// The texts of the single-row read of `table` (alias `t`) by uuid or name, for a caller who
/// sees its own project's rows (`own`) or every project's (`all`); `$1` is the caller's
/// project, `$2` the uuid or name. Indexed by [`by_ident_index`].
pub(crate) type ByIdent = LazyLock<[String; 4]>;

pub(crate) fn by_ident_texts(table: &str, columns: &str, own: &str, all: &str) -> [String; 4] {
    by_ident_texts_with(table, columns, "", own, all)
}

/// [`by_ident_texts`] with select expressions over alias `t` after the columns.
pub(crate) fn by_ident_texts_with(
    table: &str,
    columns: &str,
    select_extra: &str,
    own: &str,
    all: &str,
) -> [String; 4] {
    let cols = select_list(columns, select_extra);
    let text = |vis: &str, col: &str| {
        format!("SELECT {cols} FROM {table} t WHERE {vis} AND t.{col} = $2 ORDER BY t.id LIMIT 2")
    };
    [
        text(own, "uuid"),
        text(own, "name"),
        text(all, "uuid"),
        text(all, "name"),
    ]
}

/// Which of the [`by_ident_texts`] a caller's lookup of `ident` runs.
pub(crate) fn by_ident_index(scope: &Scope, ident: &Ident) -> usize {
    let by_name = usize::from(matches!(ident, Ident::Name(_)));
    2 * usize::from(scope.all_projects) + by_name
}

/// What a by-ident text binds as `$2`: the uuid, hyphenated, or the name.
pub(crate) fn by_ident_value(ident: &Ident) -> String {
    match ident {
        Ident::Uuid(u) => u.hyphenated().to_string(),
        Ident::Name(n) => n.clone(),
    }
}

/// The one row a uuid or name names among those the caller may see: [`StoreError::NotFound`]
/// for none, [`StoreError::Ambiguous`] for a name several rows share. One statement.
pub(crate) async fn one_by_ident<R: Row>(
    pool: &Pool,
    texts: &'static [String; 4],
    scope: &Scope,
    ident: &Ident,
) -> StoreResult<R> {
    let rows: Vec<R> = pool
        .read_shared(
            &texts[by_ident_index(scope, ident)],
            vec![
                Arg::Text(scope.project_id.clone()),
                Arg::Text(by_ident_value(ident)),
            ],
        )
        .await?;
    let mut rows = rows.into_iter();
    match (rows.next(), rows.next()) {
        (None, _) => Err(StoreError::NotFound),
        (Some(_), Some(_)) => Err(StoreError::Ambiguous),
        (Some(row), None) => Ok(row),
    }
}

/// One keyset page of `table` (alias `t`, marker row alias `mk`): `$1` is the caller's
/// project, `$2..` the `extra` binds used by `vis_t`/`vis_mk`, then the limit and the marker.
/// `select_extra` adds select expressions after the columns (over alias `t`). One statement;
/// a second one, only when a page after a marker comes back empty, tells whether the marker
/// is one the caller may see ([`StoreError::NotFound`] if not).
#[allow(clippy::too_many_arguments)]
pub(crate) async fn keyset_page<R: Row>(
    pool: &Pool,
    table: &str,
    columns: &str,
    select_extra: &str,
    vis_t: &str,
    vis_mk: &str,
    project: &str,
    extra: &[String],
    page: &PageRequest,
    nullable: bool,
) -> StoreResult<Vec<R>> {
    let text = keyset_page_text(
        table,
        columns,
        select_extra,
        vis_t,
        vis_mk,
        extra.len(),
        page,
        nullable,
    );
    let limit_at = 2 + extra.len();
    let marker_at = limit_at + 1;
    let mut q = pool.sql(&text).bind(project);
    for e in extra {
        q = q.bind(e);
    }
    q = q.bind(i64::from(page.limit));
    if let Some(marker) = page.marker {
        q = q.bind(marker.hyphenated().to_string());
    }
    let rows: Vec<R> = q.fetch_all(pool).await?;
    if let (true, Some(marker)) = (rows.is_empty(), page.marker) {
        let check =
            format!("SELECT COUNT(*) FROM {table} mk WHERE {vis_mk} AND mk.uuid = ${marker_at}");
        let mut q = pool.sql(&check).bind(project);
        for e in extra {
            q = q.bind(e);
        }
        // Keep the placeholder numbering: bind the unused limit position too.
        q = q.bind(0_i64).bind(marker.hyphenated().to_string());
        let found: i64 = q.scalar_one(pool).await?;
        if found == 0 {
            return Err(StoreError::NotFound);
        }
    }
    Ok(rows)
}

/// The text of a [`keyset_page`].
#[allow(clippy::too_many_arguments)]
pub(super) fn keyset_page_text(
    table: &str,
    columns: &str,
    select_extra: &str,
    vis_t: &str,
    vis_mk: &str,
    extra: usize,
    page: &PageRequest,
    nullable: bool,
) -> String {
    let limit_at = 2 + extra;
    let marker_at = limit_at + 1;
    let (cond, order) = keyset_by_marker(
        page,
        nullable,
        table,
        &format!("${marker_at}"),
        Some(vis_mk),
    );
    let cols = select_list(columns, select_extra);
    match &cond {
        None => format!(
            "SELECT {cols} FROM {table} t WHERE {vis_t} ORDER BY {order} LIMIT ${limit_at}"
        ),
        Some(cond) => format!(
            "SELECT {cols} FROM {table} t WHERE {vis_t} AND {cond} ORDER BY {order} LIMIT ${limit_at}"
        ),
    }
}

/// The visibility predicate of a project-owned table over alias `alias`, with the caller's
/// project in `$1`: its own rows, or every row (`$1` still named, so the statement binds it
/// either way).
pub(super) fn project_visible(all_projects: bool, alias: &str) -> String {
    if all_projects {
        "$1 = $1".to_string()
    } else {
        format!("{alias}.project_id = $1")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope(all_projects: bool) -> Scope {
        Scope {
            project_id: "p".into(),
            all_projects,
        }
    }

    #[test]
    fn by_ident_texts_read_one_uuid_or_name_with_the_callers_visibility() {
        let texts = by_ident_texts("cluster", "id, uuid, name", "t.project_id = $1", "$1 = $1");
        let uuid = Ident::Uuid(uuid::Uuid::nil());
        let name = Ident::Name("n".into());
        let pick = |all, ident: &Ident| texts[by_ident_index(&scope(all), ident)].as_str();
        assert_eq!(
            pick(false, &uuid),
            "SELECT t.id, t.uuid, t.name FROM cluster t WHERE t.project_id = $1 AND \
             t.uuid = $2 ORDER BY t.id LIMIT 2"
        );
        assert_eq!(
            pick(false, &name),
            "SELECT t.id, t.uuid, t.name FROM cluster t WHERE t.project_id = $1 AND \
             t.name = $2 ORDER BY t.id LIMIT 2"
        );
        assert_eq!(
            pick(true, &uuid),
            "SELECT t.id, t.uuid, t.name FROM cluster t WHERE $1 = $1 AND t.uuid = $2 \
             ORDER BY t.id LIMIT 2"
        );
        assert_eq!(
            pick(true, &name),
            "SELECT t.id, t.uuid, t.name FROM cluster t WHERE $1 = $1 AND t.name = $2 \
             ORDER BY t.id LIMIT 2"
        );
    }
}
