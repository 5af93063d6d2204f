//! The cluster registry's `?continue=` token (base64 of JSON, client input once it has left
//! the server): a token that decodes must be within the length bound and survive a round trip;
//! one that does not must be the registry's 400.
#![no_main]

use fleetyard::api::kube::list::ContinueToken;
use fleetyard::api::kube::status::status_value;
use libfuzzer_sys::fuzz_target;

/// `MAX_TOKEN_LEN` of `src/api/kube/list.rs` (private there).
const MAX_TOKEN_LEN: usize = 2048;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match ContinueToken::decode(text) {
        Ok(token) => {
            assert!(text.len() <= MAX_TOKEN_LEN);
            assert_eq!(token.v, "meta.k8s.io/v1");
            // The server's own encoding (compact JSON, `ns` always written) is never longer
            // than a token it issues can be; a client's token may leave `ns` out, so one near
            // the bound can re-encode past it.
            let encoded = token.encode();
            if encoded.len() <= MAX_TOKEN_LEN {
                let again = ContinueToken::decode(&encoded);
                assert_eq!(again.as_ref().ok(), Some(&token), "{text:?}");
            }
            let rebuilt = ContinueToken::new(token.rv, &token.ns, &token.start);
            assert_eq!(rebuilt, token);
        }
        Err(err) => {
            let status = status_value(&err);
            assert_eq!(status["code"], 400, "{status}");
        }
    }
});
