//! Python-literal labels and properties as python-magnumclient sends them: parsed as a request's
//! literal, and rendered back with Python's `str()` when it parses.
#![no_main]

use fleetyard::api::http::pyliteral::{
    holds_nul, parse_literal, parse_request_literal, python_str,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = parse_request_literal(text);
    if let Ok(value) = parse_literal(text) {
        let _ = holds_nul(&value);
        let _ = python_str(&value);
    }
});
