//! Policy check strings: the first line names the rule, the rest is its check string, parsed as
//! a policy file's rule and then evaluated for a few callers against a target.
#![no_main]

use fleetyard::auth::policy::{Credentials, Enforcer};
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Map, Value};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (name, check_str) = text.split_once('\n').unwrap_or(("fuzz", text));
    let Ok(enforcer) = Enforcer::with_rule(name, check_str) else {
        return;
    };
    let target: Map<String, Value> = match json!({
        "project_id": "p1", "user_id": "u1", "cluster.project_id": "p1", "%": "%(x)s"
    }) {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    let callers = [
        Credentials::default(),
        Credentials {
            user_id: Some("u1".into()),
            project_id: Some("p1".into()),
            domain_id: Some("default".into()),
            roles: vec!["member".into(), "Reader".into()],
            is_admin: false,
            system_scope: None,
            is_admin_project: false,
        },
        Credentials {
            user_id: Some("admin".into()),
            project_id: Some("admin".into()),
            domain_id: None,
            roles: vec!["admin".into()],
            is_admin: true,
            system_scope: Some("all".into()),
            is_admin_project: true,
        },
    ];
    for creds in &callers {
        let _ = enforcer.enforce(name, &target, creds);
        let _ = enforcer.enforce("cluster:create", &target, creds);
        let _ = enforcer.is_admin(creds);
    }
});
