//! `GET /v1/mservices`: the conductors, from their heartbeats. A service is `up` unless it is
//! forced down or its last heartbeat is older than `[conductor] service_down_time`.

use actix_web::web;
use actix_web::{HttpRequest, HttpResponse};
use chrono::{DateTime, Utc};

use super::views::{MserviceCollection, MserviceView};
use crate::api::http::body::query_params;
use crate::api::http::error::ApiError;
use crate::api::AppState;
use crate::api::RequestContext;
use crate::store::ServiceRecord;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/mservices")
            .route(web::get().to(get_all))
            .default_service(web::to(super::method_not_allowed)),
    );
}

/// Whether the service reported within `down_time` seconds of `now` (either way, as Magnum
/// compares the absolute difference) and is not forced down.
pub fn is_up(s: &ServiceRecord, now: DateTime<Utc>, down_time: u64) -> bool {
    if s.forced_down {
        return false;
    }
    let last = s.last_seen_up.or(s.updated_at).unwrap_or(s.created_at);
    let elapsed_ms = (now - last).num_milliseconds().unsigned_abs();
    elapsed_ms <= down_time.saturating_mul(1000)
}

#[tracing::instrument(name = "mservices.get_all", skip_all, fields(project = %ctx.project_id))]
async fn get_all(
    req: HttpRequest,
    ctx: RequestContext,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    query_params(&req, &[])?;
    ctx.authorize_own("magnum-service:get_all")?;
    let services = state.store.list_services().await?;
    let now = Utc::now();
    let down_time = state.settings.conductor.service_down_time;
    let mservices = services
        .iter()
        .map(|s| MserviceView::new(s, is_up(s, now, down_time)))
        .collect();
    Ok(HttpResponse::Ok().json(MserviceCollection { mservices }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Duration;

    fn record(last_seen_up: Option<DateTime<Utc>>, forced_down: bool) -> ServiceRecord {
        let created = Utc::now() - Duration::hours(1);
        ServiceRecord {
            id: 1,
            host: "h".into(),
            binary: "magnum-conductor".into(),
            disabled: false,
            disabled_reason: None,
            last_seen_up,
            forced_down,
            report_count: 3,
            created_at: created,
            updated_at: None,
        }
    }

    #[test]
    fn a_service_is_up_within_the_down_time_and_down_after_it() {
        let now = Utc::now();
        assert!(is_up(
            &record(Some(now - Duration::seconds(59)), false),
            now,
            60
        ));
        assert!(is_up(
            &record(Some(now - Duration::seconds(60)), false),
            now,
            60
        ));
        assert!(!is_up(
            &record(Some(now - Duration::seconds(61)), false),
            now,
            60
        ));
    }

    #[test]
    fn a_forced_down_service_is_down_however_fresh() {
        let now = Utc::now();
        assert!(!is_up(&record(Some(now), true), now, 60));
    }

    #[test]
    fn without_a_heartbeat_the_creation_time_counts() {
        let now = Utc::now();
        assert!(!is_up(&record(None, false), now, 60));
        assert!(is_up(&record(None, false), now, 7200));
    }
}
