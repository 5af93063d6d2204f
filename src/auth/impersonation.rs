//! Kubernetes user information for a Fleetyard caller, both ways: the `userInfo` a
//! `SelfSubjectReview` (`kubectl auth whoami`) reports for an [`Identity`], and the
//! [`Identity`] the `Impersonate-*` headers of a request name.
//!
//! The mapping follows OpenStack's Keystone webhook for Kubernetes (`k8s-keystone-auth`), so a
//! tool that knows one knows the other:
//!
//! | Kubernetes                                           | Fleetyard                 |
//! |------------------------------------------------------|---------------------------|
//! | `username`, `uid` (`Impersonate-User`, `-Uid`)       | the user id               |
//! | a group that is not `system:…` (`Impersonate-Group`) | the project id            |
//! | extra `alpha.kubernetes.io/identity/project/id`      | the project id            |
//! | extra `alpha.kubernetes.io/identity/roles`           | the roles                 |
//! | extra `alpha.kubernetes.io/identity/user/domain/id`  | the domain id             |
//! | group `system:authenticated`                         | every caller has it       |
//!
//! Whether a caller may impersonate at all is a policy decision the API layer takes
//! (`registry:impersonate`); this module only reads and writes the identity.

use std::collections::BTreeMap;

use super::Identity;

/// The group every authenticated caller is in.
pub const AUTHENTICATED_GROUP: &str = "system:authenticated";
/// The extra key holding the project id.
pub const EXTRA_PROJECT_ID: &str = "alpha.kubernetes.io/identity/project/id";
/// The extra key holding the roles.
pub const EXTRA_ROLES: &str = "alpha.kubernetes.io/identity/roles";
/// The extra key holding the user's domain id.
pub const EXTRA_DOMAIN_ID: &str = "alpha.kubernetes.io/identity/user/domain/id";

/// The headers of impersonation.
pub const USER_HEADER: &str = "impersonate-user";
pub const GROUP_HEADER: &str = "impersonate-group";
pub const UID_HEADER: &str = "impersonate-uid";
pub const EXTRA_HEADER_PREFIX: &str = "impersonate-extra-";

/// The most groups or extra values one request may name.
const MAX_VALUES: usize = 64;

/// A caller as Kubernetes describes one (`authentication.k8s.io/v1` `UserInfo`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct UserInfo {
    pub username: String,
    pub uid: String,
    pub groups: Vec<String>,
    pub extra: BTreeMap<String, Vec<String>>,
}

/// The user information of `identity`.
pub fn user_info(identity: &Identity) -> UserInfo {
    let mut groups = Vec::new();
    if !identity.project_id.is_empty() {
        groups.push(identity.project_id.clone());
    }
    groups.push(AUTHENTICATED_GROUP.to_string());
    let mut extra = BTreeMap::new();
    if !identity.project_id.is_empty() {
        extra.insert(
            EXTRA_PROJECT_ID.to_string(),
            vec![identity.project_id.clone()],
        );
    }
    extra.insert(EXTRA_ROLES.to_string(), identity.roles.clone());
    if let Some(domain) = &identity.domain_id {
        extra.insert(EXTRA_DOMAIN_ID.to_string(), vec![domain.clone()]);
    }
    UserInfo {
        username: identity.user_id.clone(),
        uid: identity.user_id.clone(),
        groups,
        extra,
    }
}

/// What a request's `Impersonate-*` headers ask for, as sent.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Request {
    pub user: Option<String>,
    pub uid: Option<String>,
    pub groups: Vec<String>,
    /// Keys lower-cased and percent-decoded, as kube-apiserver reads them.
    pub extra: BTreeMap<String, Vec<String>>,
}

/// Why impersonation headers cannot be taken (a 400).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Malformed(pub String);

impl Request {
    /// The impersonation a request's headers ask for, or None when it names none.
    /// `headers` yields every (lower-cased name, value) pair, a repeated header once per value;
    /// a value that is not text is `None`.
    pub fn from_headers<'a>(
        headers: impl IntoIterator<Item = (&'a str, Option<&'a str>)>,
    ) -> Result<Option<Request>, Malformed> {
        let mut r = Request::default();
        let mut any = false;
        let mut count = 0usize;
        for (name, value) in headers {
            let name = name.to_ascii_lowercase();
            if !name.starts_with("impersonate-") {
                continue;
            }
            any = true;
            count += 1;
            if count > MAX_VALUES {
                return Err(Malformed(format!(
                    "a request may carry at most {MAX_VALUES} impersonation headers"
                )));
            }
            let value = value
                .map(str::trim)
                .filter(|v| !v.chars().any(char::is_control))
                .ok_or_else(|| Malformed(format!("the {name} header must be printable text")))?
                .to_string();
            match name.as_str() {
                USER_HEADER => {
                    if r.user.replace(value).is_some() {
                        return Err(Malformed(
                            "only one Impersonate-User header is allowed".into(),
                        ));
                    }
                }
                UID_HEADER => {
                    if r.uid.replace(value).is_some() {
                        return Err(Malformed(
                            "only one Impersonate-Uid header is allowed".into(),
                        ));
                    }
                }
                GROUP_HEADER => r.groups.push(value),
                other => match other.strip_prefix(EXTRA_HEADER_PREFIX) {
                    Some(key) if !key.is_empty() => {
                        let key = percent_decode(key).ok_or_else(|| {
                            Malformed(format!("the header {name} has an invalid key encoding"))
                        })?;
                        r.extra.entry(key).or_default().push(value);
                    }
                    _ => {
                        return Err(Malformed(format!(
                            "unknown impersonation header {name}: Impersonate-User, \
                             Impersonate-Group, Impersonate-Uid and Impersonate-Extra-<key> \
                             are understood"
                        )))
                    }
                },
            }
        }
        Ok(any.then_some(r))
    }

    /// The Fleetyard identity this impersonation names (see the module's table).
    pub fn identity(&self) -> Result<Identity, Malformed> {
        let Some(user) = self.user.clone().filter(|u| !u.is_empty()) else {
            return Err(Malformed(format!(
                "requested {} without impersonating a user",
                self.describe()
            )));
        };
        if let Some(uid) = &self.uid {
            if uid != &user {
                return Err(Malformed(format!(
                    "Impersonate-Uid {uid:?} is not Impersonate-User {user:?}: a Fleetyard user's \
                     uid is its user id"
                )));
            }
        }
        let mut projects: Vec<String> = self
            .groups
            .iter()
            .filter(|g| !g.starts_with("system:"))
            .cloned()
            .collect();
        let mut roles = Vec::new();
        let mut domain_id = None;
        for (key, values) in &self.extra {
            match key.as_str() {
                EXTRA_PROJECT_ID => projects.extend(values.iter().cloned()),
                EXTRA_ROLES => roles.extend(
                    values
                        .iter()
                        .flat_map(|v| v.split(','))
                        .map(|r| r.trim().to_lowercase())
                        .filter(|r| !r.is_empty()),
                ),
                EXTRA_DOMAIN_ID => match values.as_slice() {
                    [one] => domain_id = Some(one.clone()),
                    _ => return Err(Malformed(format!("{EXTRA_DOMAIN_ID} takes one value"))),
                },
                other => {
                    return Err(Malformed(format!(
                        "the extra key {other:?} means nothing to Fleetyard: {EXTRA_PROJECT_ID}, \
                         {EXTRA_ROLES} and {EXTRA_DOMAIN_ID} are understood"
                    )))
                }
            }
        }
        projects.sort();
        projects.dedup();
        let project_id = match projects.as_slice() {
            [] => String::new(),
            [one] => one.clone(),
            many => {
                return Err(Malformed(format!(
                    "a Fleetyard caller acts in one project; the impersonation names {}",
                    many.join(", ")
                )))
            }
        };
        roles.sort();
        roles.dedup();
        Ok(Identity {
            user_id: user,
            project_id,
            domain_id,
            roles,
            system_scope: None,
            is_admin_project: true,
        })
    }

    /// The impersonated attributes, as kube-apiserver lists them in its refusals.
    fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(uid) = &self.uid {
            parts.push(format!("uid {uid}"));
        }
        for g in &self.groups {
            parts.push(format!("group {g}"));
        }
        for k in self.extra.keys() {
            parts.push(format!("extra {k}"));
        }
        format!("[{}]", parts.join(" "))
    }
}

/// Whether an extra key is one Fleetyard understands (the project id, the roles, the domain id).
pub fn is_understood_extra(key: &str) -> bool {
    matches!(key, EXTRA_PROJECT_ID | EXTRA_ROLES | EXTRA_DOMAIN_ID)
}

/// `%XX` sequences decoded (kube-apiserver's `Impersonate-Extra-` key escaping); None for a
/// broken escape or bytes that are not UTF-8.
pub fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn identity() -> Identity {
        Identity {
            user_id: "alice".into(),
            project_id: "p1".into(),
            domain_id: Some("default".into()),
            roles: vec!["member".into(), "reader".into()],
            system_scope: None,
            is_admin_project: true,
        }
    }

    fn request(pairs: &[(&str, &str)]) -> Result<Option<Request>, Malformed> {
        Request::from_headers(pairs.iter().map(|(k, v)| (*k, Some(*v))))
    }

    #[test]
    fn user_info_carries_the_project_as_a_group_and_the_roles_as_extra() {
        let info = user_info(&identity());
        assert_eq!(info.username, "alice");
        assert_eq!(info.uid, "alice");
        assert_eq!(info.groups, vec!["p1", AUTHENTICATED_GROUP]);
        assert_eq!(info.extra[EXTRA_PROJECT_ID], vec!["p1"]);
        assert_eq!(info.extra[EXTRA_ROLES], vec!["member", "reader"]);
        assert_eq!(info.extra[EXTRA_DOMAIN_ID], vec!["default"]);
    }

    #[test]
    fn the_headers_of_a_user_info_give_its_identity_back() {
        let got = request(&[
            ("Impersonate-User", "alice"),
            ("Impersonate-Group", "p1"),
            ("Impersonate-Group", "system:authenticated"),
            (
                "Impersonate-Extra-alpha.kubernetes.io%2fidentity%2froles",
                "member",
            ),
            (
                "Impersonate-Extra-Alpha.Kubernetes.io%2Fidentity%2Froles",
                "reader",
            ),
            (
                "impersonate-extra-alpha.kubernetes.io%2Fidentity%2Fuser%2Fdomain%2Fid",
                "default",
            ),
        ])
        .expect("parses")
        .expect("asks");
        assert_eq!(got.identity().expect("identity"), identity());
    }

    #[test]
    fn no_impersonation_header_is_no_impersonation() {
        assert_eq!(request(&[("Authorization", "Bearer x")]), Ok(None));
    }

    #[test]
    fn impersonation_that_fleetyard_cannot_represent_is_refused() {
        let refused = |pairs: &[(&str, &str)]| {
            request(pairs)
                .and_then(|r| r.expect("asks").identity())
                .expect_err("refused")
                .0
        };
        assert_eq!(
            refused(&[("Impersonate-Group", "p1")]),
            "requested [group p1] without impersonating a user"
        );
        assert!(refused(&[
            ("Impersonate-User", "a"),
            ("Impersonate-Group", "p1"),
            ("Impersonate-Group", "p2")
        ])
        .contains("one project"));
        assert!(
            refused(&[("Impersonate-User", "a"), ("Impersonate-Uid", "b")])
                .contains("uid is its user id")
        );
        assert!(
            refused(&[("Impersonate-User", "a"), ("Impersonate-Extra-scopes", "x")])
                .contains("means nothing")
        );
        assert!(
            refused(&[("Impersonate-User", "a"), ("Impersonate-User", "b")]).contains("only one")
        );
        assert!(refused(&[("Impersonate-Who", "a")]).contains("unknown impersonation header"));
        assert!(
            refused(&[("Impersonate-User", "a"), ("Impersonate-Extra-%zz", "x")])
                .contains("key encoding")
        );
    }

    #[test]
    fn a_user_alone_has_no_project_and_no_roles() {
        let id = request(&[("Impersonate-User", "bob")])
            .expect("parses")
            .expect("asks")
            .identity()
            .expect("identity");
        assert_eq!(id.user_id, "bob");
        assert_eq!(id.project_id, "");
        assert!(id.roles.is_empty());
    }
}
