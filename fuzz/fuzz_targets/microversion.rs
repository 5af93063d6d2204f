//! `OpenStack-API-Version` header values.
#![no_main]

use fleetyard::api::http::microversion::negotiate;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The middleware turns a header that is not visible ASCII into a NUL; any text gets here.
    let text = String::from_utf8_lossy(data);
    let _ = negotiate(Some(&text));
});
