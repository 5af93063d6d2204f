//! Cluster certificates: every cluster gets its own CAs (Kubernetes, etcd, front-proxy) and
//! the client certificate the service itself uses, made by the conductor in the job that
//! creates the cluster, before the driver runs. Private keys are sealed with AES-256-GCM
//! ([`keys`]) before they reach the database; CSRs are checked against a subject policy and
//! signed ([`x509`]).
//!
//! Nothing secret is logged, put in a notification or returned: private keys live in
//! [`Secret`]s (redacted in debug output) and leave this module only sealed, or in
//! [`crate::drivers::CaMaterial`] for the driver that hands the CA to the cluster.

pub mod keys;
pub mod x509;

use std::sync::Arc;

use chrono::Utc;

pub use crate::domain::keypair::{KeyPairKind, NewKeyPair, StoredKeyPair};
pub use keys::{KeyCipher, KeyError};
pub use x509::{CheckedCsr, CsrError, CsrPolicy, Issued, KeyType, X509Error};

use crate::config::{split_list, CertificatesSection, Secret, Settings};
use crate::domain::cluster::Cluster;

/// The associated data a row's private key is sealed with: a ciphertext copied onto another
/// row (or another cluster, or another kind) does not open.
fn aad(uuid: &str, cluster_uuid: &str, kind: &str) -> String {
    format!("fleetyard x509keypair {uuid} {cluster_uuid} {kind}")
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CertificateError {
    /// No key to seal or open private keys with; the sentence says how to configure one.
    #[error("{0}")]
    NoKey(String),
    #[error("cannot decrypt the {kind} private key of cluster {cluster}: {source}")]
    Open {
        cluster: String,
        kind: String,
        #[source]
        source: KeyError,
    },
    #[error("{0}")]
    Key(#[from] KeyError),
    #[error("{0}")]
    X509(#[from] X509Error),
}

/// The certificate settings and, when configured, the key that seals private keys.
#[derive(Debug, Clone)]
pub struct Certificates {
    cipher: Option<Arc<KeyCipher>>,
    pub settings: CertificatesSection,
    pub policy: CsrPolicy,
}

/// Why a process on PostgreSQL without `[certificates] key_file` has no certificates.
pub const UNAVAILABLE: &str = "certificates are unavailable: [certificates] key_file is not set (required with PostgreSQL), so no cluster CA can be made nor any private key decrypted; set it to a file holding 32 random bytes, base64-encoded (head -c 32 /dev/urandom | base64), the same file for every API and conductor process";

const NO_KEY: &str = "no [certificates] key_file is configured in this process, so private keys can be neither encrypted nor decrypted: set it to a file holding 32 random bytes, base64-encoded (the same file for every API and conductor process)";

impl Certificates {
    pub fn new(cipher: Option<Arc<KeyCipher>>, settings: CertificatesSection) -> Certificates {
        Certificates {
            cipher,
            policy: CsrPolicy::from_settings(&settings),
            settings,
        }
    }

    /// No key: reads of CA certificates work, nothing that needs a private key does.
    pub fn disabled() -> Certificates {
        Self::new(None, CertificatesSection::default())
    }

    /// The key from `[certificates] key_file`; unset, the embedded default's key beside the
    /// SQLite database (generated, and logged, on first start); unset with PostgreSQL, none.
    pub fn from_settings(s: &Settings) -> Result<Certificates, String> {
        let c = &s.certificates;
        validate_settings(c)?;
        let cipher = if !c.key_file.is_empty() {
            Some(KeyCipher::load(std::path::Path::new(&c.key_file)).map_err(|e| e.to_string())?)
        } else if let Some(path) = keys::default_key_path(s.database.connection.expose()) {
            if path.exists() {
                Some(KeyCipher::load(&path).map_err(|e| e.to_string())?)
            } else {
                let made = KeyCipher::generate_file(&path).map_err(|e| e.to_string())?;
                tracing::info!(
                    path = %path.display(),
                    key_id = made.id(),
                    "generated the key that encrypts cluster private keys at rest, beside the SQLite database; back it up with the database: without it no private key can be decrypted"
                );
                Some(made)
            }
        } else {
            tracing::warn!("{}", UNAVAILABLE);
            None
        };
        Ok(Self::new(cipher.map(Arc::new), c.clone()))
    }

    pub fn is_enabled(&self) -> bool {
        self.cipher.is_some()
    }

    /// What a conductor needs before it starts: a key, since every cluster it creates gets
    /// its CAs from it (a conductor without one would create clusters that never get one).
    pub fn conductor_preflight(&self) -> Result<(), String> {
        if self.is_enabled() {
            Ok(())
        } else {
            Err(format!("a conductor cannot start: {UNAVAILABLE}"))
        }
    }

    pub fn cipher(&self) -> Result<&KeyCipher, CertificateError> {
        self.cipher
            .as_deref()
            .ok_or_else(|| CertificateError::NoKey(NO_KEY.into()))
    }

    /// Seals freshly made key pairs for a cluster. The first one gets `first_uuid` when given
    /// (a rotation names its new row in advance, which makes a retried rotation a no-op).
    pub fn seal(
        &self,
        cluster: &Cluster,
        issued: &[Issued],
        first_uuid: Option<&str>,
    ) -> Result<Vec<NewKeyPair>, CertificateError> {
        let cipher = self.cipher()?;
        let cluster_uuid = cluster.uuid.to_string();
        issued
            .iter()
            .enumerate()
            .map(|(n, i)| {
                let uuid = match first_uuid {
                    Some(u) if n == 0 => u.to_string(),
                    _ => uuid::Uuid::new_v4().to_string(),
                };
                let private_key = cipher.seal(
                    i.private_key.expose().as_bytes(),
                    &aad(&uuid, &cluster_uuid, i.kind.as_str()),
                )?;
                Ok(NewKeyPair {
                    uuid,
                    cluster_uuid: cluster.uuid,
                    kind: i.kind,
                    certificate: i.certificate.clone(),
                    private_key,
                    project_id: cluster.project_id.clone(),
                    user_id: cluster.user_id.clone(),
                })
            })
            .collect()
    }

    /// A stored private key in clear.
    pub fn open(&self, row: &StoredKeyPair) -> Result<Secret, CertificateError> {
        let cipher = self.cipher()?;
        cipher
            .open(
                &row.private_key,
                &aad(&row.uuid, &row.cluster_uuid, &row.kind),
            )
            .map(Secret::new)
            .map_err(|source| CertificateError::Open {
                cluster: row.cluster_uuid.clone(),
                kind: row.kind.clone(),
                source,
            })
    }

    /// A new CA set for a cluster, sealed; the Kubernetes CA row gets `ca_uuid` when given.
    pub fn new_cluster_pki(
        &self,
        cluster: &Cluster,
        ca_uuid: Option<&str>,
    ) -> Result<Vec<NewKeyPair>, CertificateError> {
        self.cipher()?;
        let issued = x509::cluster_pki(&cluster.name, Utc::now(), self.settings.ca_validity_days)?;
        self.seal(cluster, &issued, ca_uuid)
    }

    /// A new client certificate for the service, signed by the cluster's current CA.
    pub fn new_client(
        &self,
        cluster: &Cluster,
        ca: &StoredKeyPair,
        uuid: Option<&str>,
    ) -> Result<NewKeyPair, CertificateError> {
        let ca_key = self.open(ca)?;
        let issued = x509::client_certificate(
            &ca.certificate,
            ca_key.expose(),
            Utc::now(),
            self.settings.ca_validity_days,
        )?;
        let mut sealed = self.seal(cluster, &[issued], uuid)?;
        sealed
            .pop()
            .ok_or_else(|| CertificateError::X509(X509Error("nothing was issued".into())))
    }
}

/// The row of a kind, if the cluster has one.
pub fn find(rows: &[StoredKeyPair], kind: KeyPairKind) -> Option<&StoredKeyPair> {
    rows.iter().find(|r| r.kind == kind.as_str())
}

/// Checks `[certificates]` once at start-up.
pub fn validate_settings(c: &CertificatesSection) -> Result<(), String> {
    if c.max_validity_days == 0 {
        return Err("[certificates] max_validity_days: must be at least 1".into());
    }
    if c.ca_validity_days == 0 {
        return Err("[certificates] ca_validity_days: must be at least 1".into());
    }
    let types = split_list(&c.allowed_key_types);
    if types.is_empty() {
        return Err("[certificates] allowed_key_types: name at least one key type".into());
    }
    if let Some(bad) = types.iter().find(|t| KeyType::parse(t).is_none()) {
        let known: Vec<&str> = KeyType::ALL.iter().map(|k| k.as_str()).collect();
        return Err(format!(
            "[certificates] allowed_key_types: unknown key type '{bad}' (known: {})",
            known.join(", ")
        ));
    }
    if !(2048..=x509::MAX_RSA_KEY_BITS).contains(&c.min_rsa_key_bits) {
        return Err(format!(
            "[certificates] min_rsa_key_bits: must be between 2048 and {}",
            x509::MAX_RSA_KEY_BITS
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_settings_are_valid_and_bad_ones_are_named() {
        assert_eq!(validate_settings(&CertificatesSection::default()), Ok(()));
        let c = CertificatesSection {
            allowed_key_types: "rsa,dsa".into(),
            ..CertificatesSection::default()
        };
        assert_eq!(
            validate_settings(&c).expect_err("dsa"),
            "[certificates] allowed_key_types: unknown key type 'dsa' (known: rsa, ecdsa-p256, ecdsa-p384, ed25519)"
        );
        let c = CertificatesSection {
            min_rsa_key_bits: 1024,
            ..CertificatesSection::default()
        };
        assert!(validate_settings(&c)
            .expect_err("1024")
            .starts_with("[certificates] min_rsa_key_bits"));
    }

    #[test]
    fn without_a_key_nothing_is_sealed_and_the_reason_is_given() {
        let c = Certificates::disabled();
        let e = c.cipher().expect_err("no key");
        assert!(e.to_string().contains("[certificates] key_file"), "{e}");
    }
}
