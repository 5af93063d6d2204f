//! A cluster's key pairs as the store keeps them: the kind, and rows whose private keys are
//! already sealed. Types only; making and sealing keys is `crate::certificates`.

use chrono::{DateTime, Utc};

/// The key pairs a cluster has, as the `kind` column stores them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KeyPairKind {
    /// The Kubernetes CA (`ca_cert_type` absent or `kubernetes`).
    Ca,
    EtcdCa,
    FrontProxyCa,
    /// The service's own client certificate (CN=admin, O=system:masters), signed by the CA.
    Client,
}

impl KeyPairKind {
    pub const ALL: [KeyPairKind; 4] = [
        KeyPairKind::Ca,
        KeyPairKind::EtcdCa,
        KeyPairKind::FrontProxyCa,
        KeyPairKind::Client,
    ];

    pub fn as_str(&self) -> &'static str {
        match self {
            KeyPairKind::Ca => "ca",
            KeyPairKind::EtcdCa => "etcd_ca",
            KeyPairKind::FrontProxyCa => "front_proxy_ca",
            KeyPairKind::Client => "client",
        }
    }

    pub fn parse(text: &str) -> Option<KeyPairKind> {
        Self::ALL.into_iter().find(|k| k.as_str() == text)
    }

    /// The CA a `ca_cert_type` names, as Magnum reads it: `etcd`, `front_proxy` or
    /// `front-proxy`; anything else (or nothing) is the Kubernetes CA.
    pub fn for_ca_cert_type(ca_cert_type: Option<&str>) -> KeyPairKind {
        match ca_cert_type {
            Some("etcd") => KeyPairKind::EtcdCa,
            Some("front_proxy") | Some("front-proxy") => KeyPairKind::FrontProxyCa,
            _ => KeyPairKind::Ca,
        }
    }
}

/// A key pair row; `private_key` is sealed.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredKeyPair {
    pub uuid: String,
    pub cluster_uuid: String,
    pub kind: String,
    pub certificate: String,
    pub private_key: String,
    pub project_id: String,
    pub user_id: String,
    pub created_at: DateTime<Utc>,
}

/// A key pair to insert; `private_key` is sealed.
#[derive(Debug, Clone, PartialEq)]
pub struct NewKeyPair {
    pub uuid: String,
    pub cluster_uuid: super::ClusterId,
    pub kind: KeyPairKind,
    pub certificate: String,
    pub private_key: String,
    pub project_id: String,
    pub user_id: String,
}
