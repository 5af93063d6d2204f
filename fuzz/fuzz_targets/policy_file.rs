//! Policy files: any text as a YAML/JSON policy document, then every rule it defines (and the
//! defaults) evaluated for a member and an admin.
#![no_main]

use fleetyard::auth::policy::{Credentials, Enforcer};
use libfuzzer_sys::fuzz_target;
use serde_json::Map;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(enforcer) = Enforcer::from_yaml_str(text) else {
        return;
    };
    let member = Credentials {
        user_id: Some("u1".into()),
        project_id: Some("p1".into()),
        roles: vec!["member".into()],
        ..Credentials::default()
    };
    let admin = Credentials {
        roles: vec!["admin".into()],
        is_admin: true,
        ..member.clone()
    };
    let target = Map::new();
    for default in Enforcer::defaults().iter().take(8) {
        for creds in [&member, &admin] {
            let _ = enforcer.enforce(default.name, &target, creds);
        }
    }
    for name in ["default", "context_is_admin", "admin_or_owner"] {
        let _ = enforcer.enforce(name, &target, &member);
    }
    let _ = enforcer.is_admin(&admin);
});
