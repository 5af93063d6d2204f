//! `/v1/certificates`: a cluster's CA certificate, CSR signing under the subject policy, and
//! CA rotation through the cluster's driver.
//!
//! Clusters are looked up in the caller's project only (admins included, as in Magnum), so
//! another project's cluster is exactly as unknown as a missing one. Access follows the
//! project (policy `certificate:get` / `certificate:create`: readers / members of the
//! cluster's project), not only the cluster's creator as in Magnum; operators can tighten it.

use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};
use chrono::Utc;

use super::lookup::{self, cluster_target as target, driver_for, template_of};
use super::views::{CertificateView, SignedCertificateView};
use crate::api::http::body::{json_object, query_params, Fields};
use crate::api::http::error::ApiError;
use crate::api::http::links::app_url;
use crate::api::http::retry::{self};
use crate::api::initiator;
use crate::api::AppState;
use crate::api::RequestContext;
use crate::certificates::{self, x509, CertificateError, KeyPairKind, StoredKeyPair};
use crate::domain::cluster::Cluster;
use crate::domain::job::JobPayload;
use crate::domain::status::Verb;
use crate::notify::events::{self, Action, Outcome};
use crate::store::Write;

/// The routes under `/v1/certificates`, relative to the scope [`super::routes`] mounts them in.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("")
            .route(web::post().to(sign))
            .default_service(web::to(super::method_not_allowed)),
    )
    .service(
        web::resource("/{cluster_ident}")
            .route(web::get().to(show))
            .route(web::patch().to(rotate))
            .default_service(web::to(super::method_not_allowed)),
    );
}

/// A cluster without a CA: still being created, or created when no `[certificates] key_file`
/// was set (then only a CA rotation makes one, once the setting is there).
fn no_ca(state: &AppState, c: &Cluster) -> ApiError {
    if !state.certificates.is_enabled() {
        tracing::error!(cluster = %c.uuid, "{}", certificates::UNAVAILABLE);
        return ApiError::conflict(format!(
            "Cluster {} has no CA certificate, and none can be made: this service has no [certificates] key_file (required with PostgreSQL); an operator must set it in every API and conductor process, then the cluster's CA can be rotated (PATCH /v1/certificates/{}) to make one.",
            c.name, c.uuid
        ));
    }
    if c.status == Verb::Create.in_progress() {
        return ApiError::conflict(format!(
            "Cluster {} has no CA certificate yet: the conductor makes it when it starts creating the cluster.",
            c.name
        ));
    }
    ApiError::conflict(format!(
        "Cluster {} has no CA certificate: it was created while no [certificates] key_file was set; rotate its CA (PATCH /v1/certificates/{}) to make one.",
        c.name, c.uuid
    ))
}

/// Turns a certificate failure into what the client may know; the log line has the cause.
fn unusable(err: CertificateError) -> ApiError {
    match err {
        CertificateError::NoKey(msg) => {
            tracing::error!(error = %msg, "certificate request refused");
            ApiError::ServiceUnavailable(
                "Certificates are unavailable: the service has no [certificates] key_file to decrypt private keys with; an operator must configure it.".into(),
            )
        }
        CertificateError::Open { .. } | CertificateError::Key(_) => {
            tracing::error!(error = %err, "a cluster private key cannot be decrypted");
            ApiError::ServiceUnavailable(
                "The cluster's CA private key cannot be decrypted with the configured [certificates] key_file (the key was replaced or the data altered); an operator must restore the original key file.".into(),
            )
        }
        CertificateError::X509(e) => ApiError::internal(e),
    }
}

async fn keypair(
    state: &AppState,
    c: &Cluster,
    kind: KeyPairKind,
) -> Result<StoredKeyPair, ApiError> {
    let rows = state.store.get_keypairs(&c.uuid).await?;
    certificates::find(&rows, kind)
        .cloned()
        .ok_or_else(|| no_ca(state, c))
}

/// `GET /v1/certificates/{cluster_ident}[?ca_cert_type=T]`: the CA certificate (never a key).
#[tracing::instrument(name = "certificates.show", skip_all, fields(project = %ctx.project_id, ident = %path.as_str()))]
async fn show(
    req: HttpRequest,
    ctx: RequestContext,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let params = query_params(&req, &["ca_cert_type"])?;
    let c = lookup::cluster(&state, &ctx, &path, false).await?;
    ctx.authorize("certificate:get", &target(&c))?;
    let kind = KeyPairKind::for_ca_cert_type(params.get("ca_cert_type").map(String::as_str));
    let ca = keypair(&state, &c, kind).await?;
    Ok(HttpResponse::Ok().json(CertificateView::new(
        &app_url(&req),
        c.uuid.to_string(),
        ca.certificate,
    )))
}

/// A signing request body, parsed.
struct CertificateSigning {
    cluster_ident: String,
    csr: String,
    ca_cert_type: Option<String>,
}

impl TryFrom<Fields> for CertificateSigning {
    type Error = ApiError;

    fn try_from(mut f: Fields) -> Result<Self, ApiError> {
        // Output fields a client may echo back; Magnum accepts and ignores them.
        f.ignore(&["pem", "links"]);
        let parsed = CertificateSigning {
            cluster_ident: f.required_string("cluster_uuid", 1, 255)?,
            csr: f.required_string("csr", 1, 65536)?,
            ca_cert_type: f.string("ca_cert_type", 0, 255)?,
        };
        f.finish()?;
        Ok(parsed)
    }
}

/// `POST /v1/certificates`: signs a CSR with the cluster's CA, under the subject policy.
#[tracing::instrument(name = "certificates.sign", skip_all, fields(project = %ctx.project_id))]
async fn sign(
    req: HttpRequest,
    ctx: RequestContext,
    state: web::Data<AppState>,
    body: Bytes,
) -> Result<HttpResponse, ApiError> {
    query_params(&req, &[])?;
    let obj = json_object(&req, &body, "certificate")?;
    let CertificateSigning {
        cluster_ident,
        csr,
        ca_cert_type,
    } = Fields::new("certificate", obj).try_into()?;
    // Unknown and other projects' clusters are one answer: 404 (Magnum says 400 for unknown).
    let c = lookup::cluster(&state, &ctx, &cluster_ident, false).await?;
    ctx.authorize("certificate:create", &target(&c))?;
    let checked = x509::check_csr(&csr, &state.certificates.policy)
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    if let Some(what) = &checked.privileged {
        if !ctx.allowed("certificate:create_privileged", &target(&c)) {
            return Err(ApiError::forbidden(format!(
                "The CSR subject names {what}, which only callers allowed certificate:create_privileged may have signed."
            )));
        }
    }
    let kind = KeyPairKind::for_ca_cert_type(ca_cert_type.as_deref());
    let ca = keypair(&state, &c, kind).await?;
    let ca_key = state.certificates.open(&ca).map_err(unusable)?;
    let pem = x509::sign(
        &checked,
        &ca.certificate,
        ca_key.expose(),
        Utc::now(),
        state.certificates.settings.max_validity_days,
    )
    .map_err(ApiError::internal)?;
    tracing::info!(
        cluster = %c.uuid,
        ca = kind.as_str(),
        subject = %checked.subject_text,
        privileged = checked.privileged.is_some(),
        user_id = %ctx.user_id,
        "signed a certificate"
    );
    Ok(HttpResponse::Created().json(SignedCertificateView::new(
        &app_url(&req),
        c.uuid.to_string(),
        csr,
        pem,
        ca_cert_type,
    )))
}

/// `PATCH /v1/certificates/{cluster_ident}` (no body): replaces the cluster's CAs through its
/// driver; the cluster goes `UPDATE_IN_PROGRESS` and the conductor makes the new CAs.
#[tracing::instrument(name = "certificates.rotate", skip_all, fields(project = %ctx.project_id, ident = %path.as_str()))]
async fn rotate(
    req: HttpRequest,
    ctx: RequestContext,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    query_params(&req, &[])?;
    retry::until_committed(async || {
        let c = lookup::cluster(&state, &ctx, &path, false).await?;
        ctx.authorize("certificate:rotate_ca", &target(&c))?;
        let template = template_of(&state, &c).await?;
        if template.spec.tls_disabled {
            return Err(ApiError::bad_request(
                "Rotating the CA certificate on a non-TLS cluster is not supported.",
            ));
        }
        let driver = driver_for(&state, &template)?;
        if !driver.capabilities().rotate_ca {
            return Err(ApiError::bad_request(format!(
                "Rotating the CA certificate is not supported by the cluster's driver ({}).",
                driver.name()
            )));
        }
        if !c.status.is_complete_like() {
            return Err(ApiError::bad_request(format!(
                "Rotating the CA certificate of a cluster when status is \"{}\" is not supported.",
                c.status
            )));
        }
        state.certificates.cipher().map_err(unusable)?;
        let ngs = state.store.nodegroups_of(&[c.uuid]).await?;
        let mut next = c.clone();
        next.begin(Verb::Update);
        // The new CA's row uuid, fixed now: a retried job finds it and does not rotate twice.
        let rotation = Some(uuid::Uuid::new_v4());
        let job = state.job(JobPayload::CaRotate { rotation }, c.uuid, driver.name());
        let writes = vec![
            Write::update_cluster(&next),
            Write::job(job),
            Write::event(events::cluster_event(
                &state.settings.default.host,
                Action::Update,
                Outcome::Pending,
                &next,
                &ngs,
                Some(&initiator(&ctx)),
            )),
        ];
        super::commit_accepted(&state, &writes, c.uuid).await
    })
    .await
}
