//! HTTPS for the API (`[api] enabled_ssl`): rustls over each accepted connection, with the
//! server's certificate re-read when its files change and, optionally, client certificates
//! required and verified against a CA of the operator's.
//!
//! **Rotation.** Each handshake looks at the certificate and key files (`stat`, no read);
//! when either changed since they were loaded, both are read again and, when they parse and
//! the key matches the certificate, the new pair serves this handshake and every later one.
//! Connections already open keep the certificate they were made with. A pair that does not
//! load (a file half written, a key not yet replaced) is logged once and the previous pair
//! goes on serving until the files change again, so a rotation needs no restart and cannot
//! take the service down.
//!
//! **Client certificates.** With `[api] ssl_client_ca_file`, every client must present a
//! certificate that chains to one of that file's CAs, or the handshake fails. It only says the
//! client may connect: who the caller is still comes from `[DEFAULT] auth_strategy`.

use std::fmt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::SystemTime;

use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert, WebPkiClientVerifier};
use rustls::sign::CertifiedKey;
use rustls::{RootCertStore, ServerConfig};

use crate::config::ApiSection;

/// The TLS configuration `[api]` asks for, or `None` when `enabled_ssl` is off. Reads the
/// certificate, key and client CA files once now, so that a missing or bad file stops
/// start-up with a line naming its option.
///
/// `front_proxy` is the request-header CA of an aggregated deployment: client certificates
/// from it are accepted too (and optional, unless `ssl_client_ca_file` requires one), so that
/// each connection can be judged a front proxy or not once its handshake is done.
pub fn server_config(
    api: &ApiSection,
    front_proxy: Option<&RootCertStore>,
) -> anyhow::Result<Option<Arc<ServerConfig>>> {
    if !api.enabled_ssl {
        return Ok(None);
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let certificate = ReloadingCertificate::load(
        PathBuf::from(api.ssl_cert_file.trim()),
        PathBuf::from(api.ssl_key_file.trim()),
        provider.clone(),
    )
    .map_err(anyhow::Error::msg)?;
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()?;
    let client_ca = api.ssl_client_ca_file.trim();
    let required = if client_ca.is_empty() {
        None
    } else {
        Some(
            client_roots(Path::new(client_ca))
                .map_err(|e| anyhow::anyhow!("[api] ssl_client_ca_file: {e}"))?,
        )
    };
    let builder = match (required, front_proxy) {
        (None, None) => builder.with_no_client_auth(),
        (required, front_proxy) => {
            let mut roots = RootCertStore::empty();
            let optional = required.is_none();
            for store in required.iter().chain(front_proxy) {
                roots.roots.extend(store.roots.iter().cloned());
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
            let verifier = if optional {
                verifier.allow_unauthenticated()
            } else {
                verifier
            };
            let verifier = verifier
                .build()
                .map_err(|e| anyhow::anyhow!("client certificate verification: {e}"))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let mut config = builder.with_cert_resolver(Arc::new(certificate));
    // The server speaks HTTP/1.1 only; saying so lets HTTP/2-first clients (kubectl) settle
    // on it during the handshake.
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Some(Arc::new(config)))
}

/// The CA certificates of `path` (PEM), as trust roots for client certificates.
pub fn client_roots(path: &Path) -> Result<RootCertStore, String> {
    let pem = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(&pem) {
        let cert = cert.map_err(|e| format!("{}: not PEM certificates: {e}", path.display()))?;
        roots
            .add(cert)
            .map_err(|e| format!("{}: not a usable CA certificate: {e}", path.display()))?;
    }
    if roots.is_empty() {
        return Err(format!("{}: holds no PEM certificate", path.display()));
    }
    Ok(roots)
}

/// What a file looked like when it was read: a change to any of these means it was written
/// (in place: size or time; replaced by a rename: inode).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileStamp {
    modified: Option<SystemTime>,
    len: u64,
    dev: u64,
    ino: u64,
}

impl FileStamp {
    fn of(path: &Path) -> std::io::Result<FileStamp> {
        let m = std::fs::metadata(path)?;
        Ok(FileStamp {
            modified: m.modified().ok(),
            len: m.len(),
            dev: m.dev(),
            ino: m.ino(),
        })
    }
}

type Stamps = (FileStamp, FileStamp);

struct Loaded {
    stamps: Stamps,
    key: Arc<CertifiedKey>,
}

/// The server's certificate and key, re-read from their files when these change (see the
/// module's documentation).
pub struct ReloadingCertificate {
    cert_path: PathBuf,
    key_path: PathBuf,
    provider: Arc<CryptoProvider>,
    current: RwLock<Loaded>,
    /// The files as they were when they last failed to load: not tried again until they
    /// change, so a bad pair is read and logged once, not at every handshake.
    failed: Mutex<Option<Stamps>>,
}

impl fmt::Debug for ReloadingCertificate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReloadingCertificate")
            .field("cert_path", &self.cert_path)
            .field("key_path", &self.key_path)
            .finish_non_exhaustive()
    }
}

impl ReloadingCertificate {
    /// Reads the pair now; the error names the option and the file at fault.
    pub fn load(
        cert_path: PathBuf,
        key_path: PathBuf,
        provider: Arc<CryptoProvider>,
    ) -> Result<ReloadingCertificate, String> {
        let stamps = stamps(&cert_path, &key_path)?;
        let key = load_pair(&cert_path, &key_path, &provider)?;
        Ok(ReloadingCertificate {
            cert_path,
            key_path,
            provider,
            current: RwLock::new(Loaded {
                stamps,
                key: Arc::new(key),
            }),
            failed: Mutex::new(None),
        })
    }

    /// The pair to serve now: the one loaded, or the files' new one when they changed and it
    /// loads.
    pub fn current(&self) -> Arc<CertifiedKey> {
        let Ok(now) = stamps(&self.cert_path, &self.key_path) else {
            // A file is being replaced (or was removed): serve what was loaded.
            return self.loaded();
        };
        if self.current.read().map(|c| c.stamps == now).unwrap_or(true) {
            return self.loaded();
        }
        let mut failed = self.failed.lock().unwrap_or_else(|e| e.into_inner());
        if *failed == Some(now) {
            return self.loaded();
        }
        match load_pair(&self.cert_path, &self.key_path, &self.provider) {
            Ok(key) => {
                let key = Arc::new(key);
                if let Ok(mut current) = self.current.write() {
                    *current = Loaded {
                        stamps: now,
                        key: key.clone(),
                    };
                }
                *failed = None;
                tracing::info!(
                    cert_file = %self.cert_path.display(),
                    "[api] ssl_cert_file changed on disk: new connections use the new certificate"
                );
                key
            }
            Err(e) => {
                *failed = Some(now);
                tracing::warn!(
                    error = %e,
                    "the changed certificate or key does not load: the previous certificate is still served"
                );
                self.loaded()
            }
        }
    }

    fn loaded(&self) -> Arc<CertifiedKey> {
        match self.current.read() {
            Ok(c) => c.key.clone(),
            Err(poisoned) => poisoned.into_inner().key.clone(),
        }
    }
}

impl ResolvesServerCert for ReloadingCertificate {
    fn resolve(&self, _client_hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current())
    }
}

fn stamps(cert: &Path, key: &Path) -> Result<Stamps, String> {
    let cert = FileStamp::of(cert)
        .map_err(|e| format!("[api] ssl_cert_file: cannot read {}: {e}", cert.display()))?;
    let key = FileStamp::of(key)
        .map_err(|e| format!("[api] ssl_key_file: cannot read {}: {e}", key.display()))?;
    Ok((cert, key))
}

/// The certificate chain (leaf first) and the key, checked to belong together.
fn load_pair(cert: &Path, key: &Path, provider: &CryptoProvider) -> Result<CertifiedKey, String> {
    let cert_option = |e: String| format!("[api] ssl_cert_file: {}: {e}", cert.display());
    let key_option = |e: String| format!("[api] ssl_key_file: {}: {e}", key.display());
    let pem = std::fs::read(cert).map_err(|e| cert_option(format!("cannot read it: {e}")))?;
    let chain = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| cert_option(format!("not PEM certificates: {e}")))?;
    if chain.is_empty() {
        return Err(cert_option("holds no PEM certificate".into()));
    }
    let pem = std::fs::read(key).map_err(|e| key_option(format!("cannot read it: {e}")))?;
    let der = PrivateKeyDer::from_pem_slice(&pem).map_err(|e| {
        key_option(format!(
            "no PEM private key (PKCS#8, PKCS#1 or SEC1) in it: {e}"
        ))
    })?;
    let signing = provider
        .key_provider
        .load_private_key(der)
        .map_err(|e| key_option(format!("unusable key: {e}")))?;
    let certified = CertifiedKey::new(chain, signing);
    match certified.keys_match() {
        Ok(()) | Err(rustls::Error::InconsistentKeys(rustls::InconsistentKeys::Unknown)) => {
            Ok(certified)
        }
        Err(e) => Err(key_option(format!(
            "does not belong to the certificate of ssl_cert_file ({e})"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(name: &str) -> (String, String) {
        let ck = rcgen::generate_simple_self_signed(vec![name.to_string()]).expect("cert");
        (ck.cert.pem(), ck.signing_key.serialize_pem())
    }

    fn dir() -> PathBuf {
        let d = std::env::temp_dir().join(format!("fy-tls-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&d).expect("dir");
        d
    }

    fn leaf(ck: &CertifiedKey) -> Vec<u8> {
        ck.cert[0].to_vec()
    }

    #[test]
    fn a_changed_pair_is_served_and_a_broken_one_leaves_the_previous_in_place() {
        let d = dir();
        let (cert, key) = (d.join("tls.crt"), d.join("tls.key"));
        let (c1, k1) = pair("one.example");
        std::fs::write(&cert, &c1).expect("cert");
        std::fs::write(&key, &k1).expect("key");
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let r = ReloadingCertificate::load(cert.clone(), key.clone(), provider).expect("loads");
        let first = leaf(&r.current());

        // A new certificate without its key yet: the old pair goes on.
        let (c2, k2) = pair("two.example");
        std::fs::write(&cert, &c2).expect("cert");
        assert_eq!(leaf(&r.current()), first);
        // The key follows: the new pair is served.
        std::fs::write(&key, &k2).expect("key");
        let second = leaf(&r.current());
        assert_ne!(second, first);
        // A half-written certificate: the new pair stays.
        std::fs::write(&cert, &c2[..c2.len() / 2]).expect("cert");
        assert_eq!(leaf(&r.current()), second);
        // A removed file: the loaded pair stays.
        std::fs::remove_file(&key).expect("rm");
        assert_eq!(leaf(&r.current()), second);
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn bad_files_are_refused_at_start_naming_the_option() {
        let d = dir();
        let (cert, key) = (d.join("tls.crt"), d.join("tls.key"));
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let load = |p: &Arc<CryptoProvider>| {
            ReloadingCertificate::load(cert.clone(), key.clone(), p.clone()).map(|_| ())
        };
        let err = load(&provider).expect_err("no files");
        assert!(err.starts_with("[api] ssl_cert_file: cannot read"), "{err}");
        let (c1, k1) = pair("one.example");
        let (_, k2) = pair("two.example");
        std::fs::write(&cert, "not a certificate").expect("cert");
        std::fs::write(&key, &k1).expect("key");
        let err = load(&provider).expect_err("no certificate");
        assert!(err.starts_with("[api] ssl_cert_file:"), "{err}");
        assert!(err.contains("no PEM certificate"), "{err}");
        std::fs::write(&cert, &c1).expect("cert");
        std::fs::write(&key, "nope").expect("key");
        let err = load(&provider).expect_err("no key");
        assert!(err.starts_with("[api] ssl_key_file:"), "{err}");
        std::fs::write(&key, &k2).expect("key");
        let err = load(&provider).expect_err("another key");
        assert!(err.contains("does not belong to the certificate"), "{err}");
        std::fs::write(&key, &k1).expect("key");
        load(&provider).expect("the pair loads");
        let _ = std::fs::remove_dir_all(&d);
    }
}
