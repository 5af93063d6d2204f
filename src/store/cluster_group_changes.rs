//! The cluster groups' and bindings' change log (`cluster_group_change`, written by the
//! triggers of the cluster group change migration): each line the object as it was at the
//! change (a `DELETED` line: its last state), a group with its explicit members as its object
//! shows them, a binding with its group's name, numbered by the registry's one
//! resourceVersion counter.

use chrono::{DateTime, Utc};
use serde::Deserialize;
use sqlx::types::Json;

use super::cluster_groups::{BindingRow, GroupRow};
use super::db::Pool;
use super::registry::ChangeKind;
use super::{StoreError, StoreResult};
use crate::domain::cluster_group::{ClusterGroup, ClusterGroupBinding};

/// One explicit member as a group's object shows it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct MemberShown {
    pub namespace: String,
    pub name: String,
    pub state: String,
}

/// What one line of the log kept.
#[derive(Debug, Clone, PartialEq)]
pub enum GroupObject {
    /// A group (its `resource_version` the line's) and its explicit members.
    Group(ClusterGroup, Vec<MemberShown>),
    /// A binding (its `resource_version` the line's) and its group's name.
    Binding(ClusterGroupBinding, String),
}

impl GroupObject {
    /// The project the object is in (its namespace).
    pub fn project_id(&self) -> &str {
        match self {
            GroupObject::Group(g, _) => &g.project_id,
            GroupObject::Binding(b, _) => &b.project_id,
        }
    }
}

/// One line of the groups' change log.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupChange {
    pub change: ChangeKind,
    pub resource_version: i64,
    pub object: GroupObject,
}

#[derive(sqlx::FromRow)]
struct ChangeRow {
    resource_version: i64,
    change: String,
    kind: String,
    id: i64,
    uuid: String,
    project_id: String,
    group_name: String,
    created_at: DateTime<Utc>,
    description: Option<String>,
    selector: Option<String>,
    members: Option<Json<Vec<MemberShown>>>,
    group_id: Option<String>,
    grantee_project_id: Option<String>,
    roles: Option<Json<Vec<String>>>,
    access: Option<String>,
}

/// The kind of the lines of groups (the other kind is bindings').
pub const GROUP_KIND: &str = "ClusterGroup";
pub const BINDING_KIND: &str = "ClusterGroupBinding";

impl ChangeRow {
    fn into_change(self) -> StoreResult<GroupChange> {
        let corrupt = |what: &str| StoreError::Corrupt(format!("cluster_group_change.{what}"));
        let change = ChangeKind::parse(&self.change).ok_or_else(|| corrupt("change"))?;
        let rv = self.resource_version;
        let object = match self.kind.as_str() {
            GROUP_KIND => {
                let g = GroupRow {
                    id: self.id,
                    uuid: self.uuid,
                    project_id: self.project_id,
                    user_id: String::new(),
                    name: self.group_name,
                    description: self.description,
                    selector: self.selector,
                    version: 0,
                    resource_version: rv,
                    created_at: self.created_at,
                    updated_at: None,
                }
                .into_domain()?;
                let mut members = self.members.map(|m| m.0).unwrap_or_default();
                members.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
                GroupObject::Group(g, members)
            }
            BINDING_KIND => {
                let b = BindingRow {
                    id: self.id,
                    uuid: self.uuid,
                    group_id: self.group_id.ok_or_else(|| corrupt("group_id"))?,
                    project_id: self.project_id,
                    grantee_project_id: self
                        .grantee_project_id
                        .ok_or_else(|| corrupt("grantee_project_id"))?,
                    roles: self.roles,
                    access: self.access.ok_or_else(|| corrupt("access"))?,
                    resource_version: rv,
                    created_at: self.created_at,
                }
                .into_domain()?;
                GroupObject::Binding(b, self.group_name)
            }
            _ => return Err(corrupt("kind")),
        };
        Ok(GroupChange {
            change,
            resource_version: rv,
            object,
        })
    }
}

const CHANGES: &str = "SELECT resource_version, change, kind, id, uuid, project_id, group_name, \
     created_at, description, selector, members, group_id, grantee_project_id, roles, access \
     FROM cluster_group_change WHERE resource_version > $1 ORDER BY resource_version LIMIT $2";

/// Changes after `after`, oldest first, at most `limit`.
#[tracing::instrument(level = "debug", skip_all, fields(after = after, limit = limit))]
pub(super) async fn changes(pool: &Pool, after: i64, limit: u32) -> StoreResult<Vec<GroupChange>> {
    let rows: Vec<ChangeRow> = pool
        .sql(CHANGES)
        .bind(after)
        .bind(i64::from(limit))
        .fetch_all(pool)
        .await?;
    rows.into_iter().map(ChangeRow::into_change).collect()
}
