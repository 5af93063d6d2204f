//! The certificate step of a cluster job, before the driver runs: a create makes the
//! cluster's CAs and the service's client certificate, a CA rotation replaces them, a
//! credential rotation renews the client certificate. Each step commits on its own and is
//! skipped when a retry finds it done (the new rows carry uuids fixed by the request), so a
//! job that dies between the step and the driver loses nothing and makes nothing twice.

use super::Conductor;
use crate::certificates::{self, KeyPairKind, StoredKeyPair};
use crate::domain::cluster::Cluster;
use crate::domain::job::{Job, JobPayload, Operation};
use crate::drivers::{CaMaterial, CertKeyPair, DriverError};
use crate::store::Write;

fn transient(e: impl std::fmt::Display) -> DriverError {
    DriverError::Transient(format!("The certificate store is unavailable: {e}"))
}

fn permanent(e: impl std::fmt::Display) -> DriverError {
    DriverError::Permanent(format!("The cluster's certificates could not be made: {e}"))
}

impl Conductor {
    /// Makes or renews what the job needs, then returns the CA material the driver gets.
    /// An error fails (or retries) the job like a driver error.
    pub(crate) async fn prepare_certificates(
        &self,
        job: &Job,
        cluster: &Cluster,
    ) -> Result<Option<CaMaterial>, DriverError> {
        let uuid = cluster.uuid;
        match job.operation {
            Operation::ClusterDelete => return Ok(None),
            Operation::ClusterCreate if !self.make_cluster_pki(cluster).await? => return Ok(None),
            Operation::CaRotate => self.rotate_cluster_pki(job, cluster).await?,
            Operation::CredentialRotate => self.renew_client(job, cluster).await?,
            _ => {}
        }
        let rows = self.store.get_keypairs(&uuid).await.map_err(transient)?;
        match self.ca_material(&rows) {
            Ok(ca) => Ok(ca),
            // Operations that made or need the CA fail; the others go on without it (the
            // driver leaves the backend's copy alone) and the log says why.
            Err(e)
                if matches!(
                    job.operation,
                    Operation::ClusterCreate | Operation::CaRotate
                ) =>
            {
                Err(DriverError::Permanent(e))
            }
            Err(e) => {
                tracing::error!(cluster = %uuid, error = %e, "the cluster's CA is not passed to the driver");
                Ok(None)
            }
        }
    }

    /// A create's CAs and client certificate, made once (a retried create finds them). False
    /// when this conductor has no `[certificates]` key: the cluster is created without a CA.
    async fn make_cluster_pki(&self, cluster: &Cluster) -> Result<bool, DriverError> {
        let uuid = cluster.uuid;
        let certs = &self.certificates;
        let rows = self.store.get_keypairs(&uuid).await.map_err(transient)?;
        if certificates::find(&rows, KeyPairKind::Ca).is_some() {
            return Ok(true);
        }
        if !certs.is_enabled() {
            tracing::warn!(cluster = %uuid, "no [certificates] key_file in this conductor: the cluster is created without a CA");
            return Ok(false);
        }
        let new = certs.new_cluster_pki(cluster, None).map_err(permanent)?;
        let writes: Vec<Write> = new
            .into_iter()
            .map(|k| Write::InsertKeypair(Box::new(k)))
            .collect();
        self.store.commit(&writes).await.map_err(transient)?;
        tracing::info!(cluster = %uuid, "made the cluster's CAs and client certificate");
        Ok(true)
    }

    /// A CA rotation replaces every key pair once: the new CA's uuid is the rotation's id
    /// (the job's `rotation`, else its own uuid), so a retry finds the work done.
    async fn rotate_cluster_pki(&self, job: &Job, cluster: &Cluster) -> Result<(), DriverError> {
        let uuid = cluster.uuid;
        let rotation = match &job.payload {
            JobPayload::CaRotate {
                rotation: Some(rotation),
            } => rotation.to_string(),
            _ => job.uuid.to_string(),
        };
        let rows = self.store.get_keypairs(&uuid).await.map_err(transient)?;
        if certificates::find(&rows, KeyPairKind::Ca).map(|r| r.uuid.as_str())
            == Some(rotation.as_str())
        {
            return Ok(());
        }
        let new = self
            .certificates
            .new_cluster_pki(cluster, Some(&rotation))
            .map_err(permanent)?;
        let mut writes = vec![Write::DeleteKeypairs {
            cluster_uuid: uuid,
            kind: None,
        }];
        writes.extend(new.into_iter().map(|k| Write::InsertKeypair(Box::new(k))));
        self.store.commit(&writes).await.map_err(transient)?;
        tracing::info!(cluster = %uuid, ca = %rotation, "replaced the cluster's CAs and client certificate");
        Ok(())
    }

    /// A credential rotation renews the service's client certificate once under the current
    /// CA (the renewal's id is the job's `client`, else its own uuid).
    async fn renew_client(&self, job: &Job, cluster: &Cluster) -> Result<(), DriverError> {
        let uuid = cluster.uuid;
        let renewal = match &job.payload {
            JobPayload::CredentialRotate {
                client: Some(client),
            } => client.to_string(),
            _ => job.uuid.to_string(),
        };
        let rows = self.store.get_keypairs(&uuid).await.map_err(transient)?;
        let client = certificates::find(&rows, KeyPairKind::Client);
        let Some(ca) = certificates::find(&rows, KeyPairKind::Ca) else {
            return Ok(());
        };
        if client.map(|c| c.uuid.as_str()) == Some(renewal.as_str()) {
            return Ok(());
        }
        let new = self
            .certificates
            .new_client(cluster, ca, Some(&renewal))
            .map_err(permanent)?;
        let writes = vec![
            Write::DeleteKeypairs {
                cluster_uuid: uuid,
                kind: Some(KeyPairKind::Client.as_str().to_string()),
            },
            Write::InsertKeypair(Box::new(new)),
        ];
        self.store.commit(&writes).await.map_err(transient)?;
        tracing::info!(cluster = %uuid, "renewed the service's client certificate");
        Ok(())
    }

    /// The stored CAs in clear, for the driver. `Ok(None)` when the cluster has none.
    fn ca_material(&self, rows: &[StoredKeyPair]) -> Result<Option<CaMaterial>, String> {
        let Some(ca) = certificates::find(rows, KeyPairKind::Ca) else {
            return Ok(None);
        };
        let open = |row: &StoredKeyPair| -> Result<CertKeyPair, String> {
            Ok(CertKeyPair {
                certificate: row.certificate.clone(),
                private_key: self.certificates.open(row).map_err(|e| e.to_string())?,
            })
        };
        let main = open(ca)?;
        let optional = |kind| certificates::find(rows, kind).map(open).transpose();
        Ok(Some(CaMaterial {
            certificate: main.certificate,
            private_key: main.private_key,
            etcd: optional(KeyPairKind::EtcdCa)?,
            front_proxy: optional(KeyPairKind::FrontProxyCa)?,
        }))
    }
}
