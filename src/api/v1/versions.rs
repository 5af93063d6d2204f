//! Version discovery: `GET /` and `GET /v1`, both unauthenticated (openstacksdk's discovery
//! sends no token and fails on anything but these documents). Neither handler takes a
//! `RequestContext`, which is what authenticates a request.

use actix_web::{HttpRequest, HttpResponse};

use super::views::{RootView, V1View};
use crate::api::http::links::app_url;

pub async fn root(req: HttpRequest) -> HttpResponse {
    HttpResponse::Ok().json(RootView::new(&app_url(&req)))
}

pub async fn v1(req: HttpRequest) -> HttpResponse {
    HttpResponse::Ok().json(V1View::new(&app_url(&req)))
}
