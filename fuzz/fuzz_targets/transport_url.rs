//! oslo's `transport_url` (`rabbit://user:pass@host:port,.../vhost?options`).
#![no_main]

use fleetyard::notify::amqp::{parse_transport_url, redacted};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(url) = parse_transport_url(text) {
        for host in &url.hosts {
            let _ = redacted(host);
        }
        let _ = format!("{url:?}");
    }
});
