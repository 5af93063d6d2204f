//! Certificate bodies: a cluster's CA certificate and a signed CSR.

use serde::Serialize;
use utoipa::ToSchema;

use super::Link;

/// `GET /v1/certificates/{cluster_ident}`: the CA certificate (never a key).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct CertificateView {
    pub cluster_uuid: String,
    pub pem: String,
    pub links: Vec<Link>,
}

impl CertificateView {
    pub fn new(base: &str, cluster_uuid: String, pem: String) -> Self {
        CertificateView {
            links: Link::pair(base, &format!("certificates/{cluster_uuid}")),
            cluster_uuid,
            pem,
        }
    }
}

/// `POST /v1/certificates`: the CSR and the certificate signed for it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SignedCertificateView {
    pub cluster_uuid: String,
    pub csr: String,
    pub pem: String,
    pub links: Vec<Link>,
    /// Echoed when the request named a CA type.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ca_cert_type: Option<String>,
}

impl SignedCertificateView {
    pub fn new(
        base: &str,
        cluster_uuid: String,
        csr: String,
        pem: String,
        ca_cert_type: Option<String>,
    ) -> Self {
        SignedCertificateView {
            links: Link::pair(base, &format!("certificates/{cluster_uuid}")),
            cluster_uuid,
            csr,
            pem,
            ca_cert_type,
        }
    }
}
