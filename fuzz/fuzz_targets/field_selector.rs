//! The cluster registry's `?fieldSelector=` (already URL-decoded, so any text): only
//! `metadata.name` and `metadata.namespace` with `=`, `==` and `!=`. A refused selector must
//! be the registry's 400; an accepted one stays within the parser's bounds, and the name it
//! hands the store as a shortcut is one its own match accepts.
#![no_main]

use fleetyard::api::kube::status::{status_value, KubeError};
use fleetyard::domain::selector::{FieldSelector, FieldTerm, MAX_REQUIREMENTS, MAX_SELECTOR_LEN};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let selector = match FieldSelector::parse(text) {
        Ok(selector) => selector,
        Err(err) => {
            let status = status_value(&KubeError::from(err));
            assert_eq!(status["code"], 400, "{status}");
            return;
        }
    };
    assert!(text.len() <= MAX_SELECTOR_LEN);
    assert!(selector.terms.len() <= MAX_REQUIREMENTS);
    assert_eq!(selector.is_empty(), selector.terms.is_empty());
    let name = selector.name();
    assert_eq!(
        name.is_some(),
        selector
            .terms
            .iter()
            .any(|t| matches!(t, FieldTerm::NameEquals(_)))
    );
    if let Some(name) = name {
        // A list pinned to `name` must not refuse that name for its name's sake: the object
        // named so matches unless another term (another name, a namespace) rules it out.
        let only_names = selector
            .terms
            .iter()
            .all(|t| matches!(t, FieldTerm::NameEquals(n) if n == name));
        if only_names {
            assert!(selector.matches(name, "any-namespace"));
        }
    }
    let _ = selector.matches("", "");
});
