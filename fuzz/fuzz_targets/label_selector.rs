//! The cluster registry's `?labelSelector=` (already URL-decoded, so any text): parsed once,
//! then every requirement matched against the labels it describes. A refused selector must be
//! the registry's 400, and an accepted one must stay within the parser's bounds.
#![no_main]

use std::collections::BTreeMap;

use fleetyard::api::kube::status::{status_value, KubeError};
use fleetyard::domain::selector::{
    LabelSelector, Op, MAX_REQUIREMENTS, MAX_SELECTOR_LEN, MAX_VALUES,
};
use libfuzzer_sys::fuzz_target;

fn labels(key: &str, value: &str) -> BTreeMap<String, String> {
    BTreeMap::from([(key.to_string(), value.to_string())])
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let selector = match LabelSelector::parse(text) {
        Ok(selector) => selector,
        Err(err) => {
            let status = status_value(&KubeError::from(err));
            assert_eq!(status["code"], 400, "{status}");
            return;
        }
    };
    assert!(text.len() <= MAX_SELECTOR_LEN);
    assert!(selector.requirements.len() <= MAX_REQUIREMENTS);
    assert_eq!(selector.is_empty(), selector.requirements.is_empty());
    let none = BTreeMap::new();
    for req in &selector.requirements {
        assert!(!req.key.is_empty(), "an empty key was accepted: {text:?}");
        match &req.op {
            Op::Equals(v) => {
                assert!(req.matches(&labels(&req.key, v)));
                assert!(!req.matches(&none));
            }
            Op::NotEquals(v) => {
                assert!(!req.matches(&labels(&req.key, v)));
                assert!(req.matches(&none));
            }
            Op::In(vs) => {
                assert!(!vs.is_empty() && vs.len() <= MAX_VALUES);
                assert!(vs.iter().all(|v| req.matches(&labels(&req.key, v))));
                assert!(!req.matches(&none));
            }
            Op::NotIn(vs) => {
                assert!(!vs.is_empty() && vs.len() <= MAX_VALUES);
                assert!(vs.iter().all(|v| !req.matches(&labels(&req.key, v))));
                assert!(req.matches(&none));
            }
            Op::Exists => {
                assert!(req.matches(&labels(&req.key, "")));
                assert!(!req.matches(&none));
            }
            Op::DoesNotExist => {
                assert!(!req.matches(&labels(&req.key, "")));
                assert!(req.matches(&none));
            }
            Op::GreaterThan(n) => {
                assert!(!req.matches(&labels(&req.key, &n.to_string())));
                assert!(!req.matches(&none));
            }
            Op::LessThan(n) => {
                assert!(!req.matches(&labels(&req.key, &n.to_string())));
                assert!(!req.matches(&none));
            }
        }
    }
    // The whole selector is the AND of its requirements.
    let _ = selector.matches(&none);
});
