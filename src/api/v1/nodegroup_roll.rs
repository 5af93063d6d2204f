//! A node group's flavor or image change (microversion 1.20 and later): `PATCH
//! /v1/clusters/{c}/nodegroups/{ng}` with `/flavor_id`, `/image_id` and `/max_batch_size` (how
//! many machines are replaced at once, 1 when not given; a parameter of the change, not stored)
//! is a rolling replacement of the group's machines. It commits the group's new flavor and
//! image, the group and its cluster `UPDATE_IN_PROGRESS`, a `nodegroup.roll` job and the
//! pending `magnum.nodegroup.update` in one transaction. The same request again after a failure
//! (`UPDATE_FAILED`) resumes the roll: only the machines not yet replaced are.

use serde_json::{json, Map, Value};

use super::patch::{PatchOp, PatchRules};
use crate::api::http::body::{invalid, Fields};
use crate::api::http::error::ApiError;
use crate::domain::cluster::NodeGroup;
use crate::domain::machine::roll::{self, RollState, RollTarget};
use crate::domain::machine::Machine;

/// The paths of a roll.
const ROLL_PATHS: &[&str] = &["/flavor_id", "/image_id", "/max_batch_size"];

/// From 1.20: as before, with the flavor and image changeable (never removed).
pub const PATCH_RULES: PatchRules = PatchRules {
    internal: &[
        "/name",
        "/cluster_id",
        "/project_id",
        "/docker_volume_size",
        "/labels",
        "/node_addresses",
        "/node_count",
        "/role",
        "/is_default",
        "/stack_id",
        "/status",
        "/status_reason",
        "/version",
    ],
    non_removable: &["/flavor_id", "/image_id"],
    literal: &["/node_labels", "/node_taints"],
};

/// Adds what a roll may change to the group's PATCH-able document.
pub fn extend_document(doc: &mut Map<String, Value>, ng: &NodeGroup) {
    doc.insert("flavor_id".into(), json!(ng.flavor_id));
    doc.insert("image_id".into(), json!(ng.image_id));
    doc.insert("max_batch_size".into(), json!(1));
}

/// A roll's part of a PATCH, parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct RollRequest {
    pub flavor_id: Option<String>,
    pub image_id: Option<String>,
    pub max_batch_size: i32,
    /// Whether the patch names a roll's path at all.
    pub named: bool,
}

impl RollRequest {
    /// The flavor, image and batch size of the patched document `f` of `ng`: a flavor or image
    /// the group has may not become empty, and the batch is at least one machine.
    pub fn parse(f: &mut Fields, ng: &NodeGroup, ops: &[PatchOp]) -> Result<RollRequest, ApiError> {
        let flavor_id = f.string("flavor_id", 1, 255)?;
        let image_id = f.string("image_id", 1, 255)?;
        for (key, old, new) in [
            ("flavor_id", &ng.flavor_id, &flavor_id),
            ("image_id", &ng.image_id, &image_id),
        ] {
            if old.is_some() && new.is_none() {
                return Err(invalid(key, &Value::Null, "Mandatory field missing."));
            }
        }
        let max_batch_size = f.int32("max_batch_size", Some(1), None)?.unwrap_or(1);
        Ok(RollRequest {
            flavor_id,
            image_id,
            max_batch_size,
            named: ops.iter().any(|op| ROLL_PATHS.contains(&op.root())),
        })
    }

    /// Whether the flavor or image changes.
    pub fn changes(&self, ng: &NodeGroup) -> bool {
        self.flavor_id != ng.flavor_id || self.image_id != ng.image_id
    }
}

/// A roll is one change: nothing else of the group may change in the same request.
pub fn alone(before: &NodeGroup, after: &NodeGroup) -> Result<(), ApiError> {
    let mut rest = after.clone();
    rest.flavor_id = before.flavor_id.clone();
    rest.image_id = before.image_id.clone();
    if rest == *before {
        Ok(())
    } else {
        Err(ApiError::bad_request(format!(
            "Changing the flavor or image of node group {} replaces its machines and cannot \
             be combined with other changes; send the other changes in another request.",
            before.name
        )))
    }
}

/// Whether any of the group's machines (`machines`) is still to replace for `after`'s flavor
/// and image, or being replaced.
pub fn machines_left(after: &NodeGroup, machines: &[Machine]) -> bool {
    let target = RollTarget::of(after);
    machines.iter().any(|m| {
        matches!(
            roll::state(m, &target),
            RollState::Left | RollState::InFlight
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::v1::patch;

    fn group() -> NodeGroup {
        NodeGroup {
            id: 1,
            uuid: crate::domain::NodeGroupId::new(),
            name: "workers".into(),
            cluster_id: crate::domain::ClusterId::new(),
            project_id: "p".into(),
            docker_volume_size: None,
            labels: Default::default(),
            flavor_id: Some("m1.small".into()),
            image_id: Some("fedora-coreos-40".into()),
            node_addresses: vec![],
            node_count: 2,
            role: "worker".into(),
            min_node_count: 0,
            max_node_count: None,
            is_default: false,
            stack_id: None,
            status: crate::domain::status::ClusterStatus::UpdateComplete,
            status_reason: None,
            version: None,
            node_labels: Default::default(),
            node_taints: vec![],
            created_at: chrono::Utc::now(),
            updated_at: None,
        }
    }

    fn parse(ops: Value) -> Result<RollRequest, ApiError> {
        let ng = group();
        let ops = patch::parse_patch(ops, &PATCH_RULES)?;
        let mut doc = Map::new();
        extend_document(&mut doc, &ng);
        let after = patch::apply(&doc, &ops, &PATCH_RULES)?;
        let mut f = Fields::new("nodegroup", after);
        let r = RollRequest::parse(&mut f, &ng, &ops)?;
        f.finish()?;
        Ok(r)
    }

    fn detail(e: ApiError) -> String {
        e.to_string()
    }

    #[test]
    fn a_flavor_change_is_a_roll_one_machine_at_a_time_unless_told() {
        let r = parse(json!([{"op": "replace", "path": "/flavor_id", "value": "m1.large"}]))
            .expect("valid");
        assert_eq!(r.flavor_id.as_deref(), Some("m1.large"));
        assert_eq!(r.image_id.as_deref(), Some("fedora-coreos-40"));
        assert_eq!(r.max_batch_size, 1);
        assert!(r.named && r.changes(&group()));
        let r = parse(json!([
            {"op": "replace", "path": "/image_id", "value": "fedora-coreos-41"},
            {"op": "replace", "path": "/max_batch_size", "value": 3}
        ]))
        .expect("valid");
        assert_eq!(r.max_batch_size, 3);
        assert_eq!(r.image_id.as_deref(), Some("fedora-coreos-41"));
    }

    #[test]
    fn bad_rolls_are_refused_with_a_sentence() {
        let cases = [
            (
                json!([{"op": "replace", "path": "/max_batch_size", "value": 0}]),
                "max_batch_size",
            ),
            (
                json!([{"op": "replace", "path": "/flavor_id", "value": ""}]),
                "flavor_id",
            ),
            (
                json!([{"op": "replace", "path": "/image_id", "value": 7}]),
                "image_id",
            ),
            (
                json!([{"op": "replace", "path": "/flavor_id", "value": null}]),
                "'/flavor_id' is a mandatory attribute and can not be removed",
            ),
            (json!([{"op": "remove", "path": "/image_id"}]), "image_id"),
        ];
        for (ops, expected) in cases {
            let err = parse(ops.clone()).expect_err("refused");
            assert!(detail(err).contains(expected), "{ops}");
        }
    }

    #[test]
    fn a_roll_cannot_carry_other_changes() {
        let before = group();
        let mut after = before.clone();
        after.flavor_id = Some("m1.large".into());
        assert!(alone(&before, &after).is_ok());
        after.max_node_count = Some(9);
        assert!(alone(&before, &after).is_err());
    }
}
