//! `metadata.managedFields` of a machine's writes, kept as a registry cluster's are
//! ([`crate::api::kube::managed_writes`] with the [`MACHINE`] kind): a create records its manager's
//! `Update` entry; a replace or a merge/JSON patch records its manager's `Update` entry on the
//! fields it changed; a server-side apply takes the fields it names for its manager (409 when
//! another manager owns one it would change, unless `force`); writes through `/status`
//! record entries with subresource `status`. Writes through `/v1` and the service's own
//! (the driver's reports, the conductor's operations) leave the entries as they are, as a
//! registry cluster's `/v1` writes do.

use super::object::MACHINE_NAME_ANNOTATION;
use crate::api::kube::managed::Kind;
pub(super) use crate::api::kube::managed_writes::Writer;
use crate::api::kube::status::MACHINES;
use crate::domain::machine::MachinePhase;
use crate::domain::managed_fields::ManagedFields;
use crate::store::{MachineEntry, Write};

/// A `Machine`: its machine-name annotation and its owner (its cluster) are the server's.
pub(super) const MACHINE: Kind = Kind {
    resource: &MACHINES,
    api_version: "cluster.k8s.io/v1alpha1",
    kind: "Machine",
    derived_annotations: &[MACHINE_NAME_ANNOTATION],
    derived_metadata: &["ownerReferences"],
    server_conditions: &[],
    keeps_last_applied: false,
};

/// The writes that leave machine `e` as `next` with the entries `fields`: `change` (the
/// writes of its operation) with its machine write carrying them too, or, when it has none,
/// one write of the object; no writes when nothing changes.
pub(super) fn owned_writes(
    e: &MachineEntry,
    next: &MachineEntry,
    change: Option<Vec<Write>>,
    fields: &ManagedFields,
) -> Vec<Write> {
    let object = |machine, from| Write::UpdateMachineObject {
        machine,
        from,
        resource_version: e.resource_version,
        managed_fields: fields.clone(),
        annotations: next.annotations.clone(),
    };
    match change {
        Some(writes) => writes
            .into_iter()
            .map(|w| match w {
                Write::UpdateMachine { machine, from } => object(machine, from),
                other => other,
            })
            .collect(),
        None if next.machine == e.machine
            && *fields == e.managed_fields
            && next.annotations == e.annotations =>
        {
            Vec::new()
        }
        None => {
            let from: Vec<MachinePhase> = vec![e.machine.status.phase];
            vec![object(Box::new(next.machine.clone()), from)]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::kube::managed::{self, Part};
    use crate::api::kube::managed_writes::whole;
    use serde_json::json;
    use serde_json::Value;

    fn shown() -> Value {
        json!({"apiVersion": "cluster.k8s.io/v1alpha1", "kind": "Machine",
            "metadata": {"name": "kc-w-1", "namespace": "p", "uid": "u", "resourceVersion": "7",
                "labels": {"cluster.k8s.io/cluster-name": "kc"},
                "annotations": {MACHINE_NAME_ANNOTATION: "w-1"},
                "ownerReferences": [{"uid": "c"}]},
            "spec": {"versions": {"kubelet": "v1.31.4"}, "osImage": "fcos"},
            "status": {"phase": "Running"}})
    }

    #[test]
    fn a_machines_derived_annotation_and_owner_are_no_managers() {
        assert_eq!(
            managed::tracked(&MACHINE, &shown(), Part::Main),
            json!({"metadata": {"labels": {"cluster.k8s.io/cluster-name": "kc"}},
                "spec": {"versions": {"kubelet": "v1.31.4"}, "osImage": "fcos"}})
        );
        assert_eq!(
            managed::tracked(&MACHINE, &shown(), Part::Status),
            json!({"status": {"phase": "Running"}})
        );
    }

    #[test]
    fn an_applied_part_goes_back_into_the_whole_object_with_its_preconditions() {
        let merged = json!({"metadata": {"labels": {"cluster.k8s.io/cluster-name": "kc"}},
            "spec": {"versions": {"kubelet": "v1.31.5"}}});
        let applied = json!({"metadata": {"name": "kc-w-1", "resourceVersion": "6"}});
        let out = whole(&MACHINE, Part::Main, &merged, &shown(), &applied);
        assert_eq!(out["spec"], json!({"versions": {"kubelet": "v1.31.5"}}));
        assert_eq!(
            out["metadata"]["annotations"],
            json!({MACHINE_NAME_ANNOTATION: "w-1"})
        );
        assert_eq!(out["metadata"]["ownerReferences"], json!([{"uid": "c"}]));
        assert_eq!(out["metadata"]["resourceVersion"], "6");
        assert_eq!(out["status"], json!({"phase": "Running"}));
        let status = whole(
            &MACHINE,
            Part::Status,
            &json!({"status": {"phase": "Running", "errorReason": "X"}}),
            &shown(),
            &json!({}),
        );
        assert_eq!(status["status"]["errorReason"], "X");
        assert_eq!(status["spec"], shown()["spec"]);
    }
}
