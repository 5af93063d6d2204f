//! Certificate signing requests under the default `[certificates]` policy: the input as PEM
//! text, and the input as the DER inside a PEM block (so the fuzzer reaches the PKCS#10 parser
//! without having to learn base64).
#![no_main]

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use fleetyard::certificates::x509::{check_csr, CsrPolicy};
use fleetyard::config::CertificatesSection;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let policy = CsrPolicy::from_settings(&CertificatesSection::default());
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = check_csr(text, &policy);
    }
    let pem = format!(
        "-----BEGIN CERTIFICATE REQUEST-----\n{}\n-----END CERTIFICATE REQUEST-----\n",
        STANDARD.encode(data)
    );
    if let Ok(checked) = check_csr(&pem, &policy) {
        let _ = checked.subject_text.len();
    }
});
