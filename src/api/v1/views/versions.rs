//! Version discovery documents: `GET /` and `GET /v1`.

use serde::Serialize;
use utoipa::ToSchema;

use super::Link;
use crate::api::http::microversion::{MAX_VERSION, MIN_VERSION};

/// One API version of the root document.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct VersionView {
    pub id: String,
    pub links: Vec<Link>,
    pub status: String,
    pub min_version: String,
    pub max_version: String,
}

/// `GET /`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RootView {
    pub name: String,
    pub description: String,
    pub versions: Vec<VersionView>,
}

impl RootView {
    pub fn new(base: &str) -> Self {
        RootView {
            name: "OpenStack Magnum API".into(),
            description:
                "Magnum is an OpenStack project which aims to provide container cluster management."
                    .into(),
            versions: vec![VersionView {
                id: "v1".into(),
                links: vec![Link::new(format!("{base}/v1/"), "self")],
                status: "CURRENT".into(),
                min_version: MIN_VERSION.to_string(),
                max_version: MAX_VERSION.to_string(),
            }],
        }
    }
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct MediaTypeView {
    pub base: String,
    #[serde(rename = "type")]
    pub media_type: String,
}

/// `GET /v1`: the media type, the links, and a `self`/`bookmark` pair per collection.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct V1View {
    pub id: String,
    pub media_types: Vec<MediaTypeView>,
    pub links: Vec<Link>,
    pub clustertemplates: Vec<Link>,
    pub clusters: Vec<Link>,
    pub quotas: Vec<Link>,
    pub certificates: Vec<Link>,
    pub mservices: Vec<Link>,
    pub stats: Vec<Link>,
    pub federations: Vec<Link>,
    pub credentials: Vec<Link>,
    /// The hrefs contain the literal text `{cluster_id}`.
    pub nodegroups: Vec<Link>,
}

impl V1View {
    pub fn new(base: &str) -> Self {
        // Collection links end with a slash, as Magnum writes them.
        let collection = |name: &str| Link::pair(base, &format!("{name}/"));
        V1View {
            id: "v1".into(),
            media_types: vec![MediaTypeView {
                base: "application/json".into(),
                media_type: "application/vnd.openstack.magnum.v1+json".into(),
            }],
            links: vec![
                Link::new(format!("{base}/v1/"), "self"),
                Link {
                    href: "http://docs.openstack.org/developer/magnum/dev/api-spec-v1.html".into(),
                    rel: "describedby".into(),
                    media_type: Some("text/html".into()),
                },
            ],
            clustertemplates: collection("clustertemplates"),
            clusters: collection("clusters"),
            quotas: collection("quotas"),
            certificates: collection("certificates"),
            mservices: collection("mservices"),
            stats: collection("stats"),
            federations: collection("federations"),
            credentials: collection("credentials"),
            nodegroups: Link::pair(base, "clusters/{cluster_id}/nodegroups"),
        }
    }
}
