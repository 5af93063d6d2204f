//! Magnum's JSON-Patch dialect: any body parsed as JSON, checked by `parse_patch` under the
//! rules of each resource kind, then applied to a cluster-like document.
#![no_main]

use fleetyard::api::v1::patch::{apply, parse_patch, PatchRules};
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Map, Value};

/// Rules shaped like the resources' own (clusters, templates, federations).
const RULES: [PatchRules; 3] = [
    PatchRules {
        internal: &["/api_address", "/node_addresses", "/stack_id"],
        non_removable: &["/name", "/node_count"],
        literal: &["/labels"],
    },
    PatchRules {
        internal: &[],
        non_removable: &["/coe", "/image_id"],
        literal: &["/labels"],
    },
    PatchRules {
        internal: &[],
        non_removable: &[],
        literal: &["/properties"],
    },
];

fn document() -> Map<String, Value> {
    let doc = json!({
        "name": "k8s",
        "coe": "kubernetes",
        "image_id": "fedora-coreos",
        "node_count": 3,
        "flavor_id": null,
        "labels": {"kube_tag": "v1.30", "nested": {"a": [1, 2, {"b": null}]}},
        "properties": {"dns-zone": "example.com."},
        "node_addresses": ["10.0.0.1", "10.0.0.2"],
        "health_status_reason": {},
    });
    match doc {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(body) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let doc = document();
    for rules in &RULES {
        if let Ok(ops) = parse_patch(body.clone(), rules) {
            for op in &ops {
                let _ = op.root();
            }
            let _ = apply(&doc, &ops, rules);
        }
    }
});
