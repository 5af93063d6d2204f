//! Identifiers: one uuid newtype per resource ([`ClusterId`], [`TemplateId`], ...) and the "uuid
//! or name" form every path accepts.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// What every resource id is: a uuid with a type of its own, so a cluster's id cannot be passed
/// where a template's is expected. Stored and shown in the hyphenated lower-case form.
pub trait Id: Copy + Eq + std::fmt::Display + Send + Sync + 'static {
    fn uuid(&self) -> Uuid;
}

macro_rules! uuid_ids {
    ($($(#[$doc:meta])* $name:ident),+ $(,)?) => {$(
        $(#[$doc])*
        #[derive(
            Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
        )]
        #[serde(transparent)]
        pub struct $name(pub Uuid);

        impl $name {
            /// A fresh random (v4) id.
            pub fn new() -> Self {
                $name(Uuid::new_v4())
            }
        }

        impl Default for $name {
            fn default() -> Self {
                Self::new()
            }
        }

        impl Id for $name {
            fn uuid(&self) -> Uuid {
                self.0
            }
        }

        impl From<Uuid> for $name {
            fn from(uuid: Uuid) -> Self {
                $name(uuid)
            }
        }

        impl std::str::FromStr for $name {
            type Err = uuid::Error;
            /// Only the canonical forms a uuid column holds (see [`parse_uuid_like`] for the
            /// forms a path accepts).
            fn from_str(text: &str) -> Result<Self, Self::Err> {
                Uuid::try_parse(text).map($name)
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                std::fmt::Display::fmt(&self.0.hyphenated(), f)
            }
        }
    )+};
}

uuid_ids! {
    /// A cluster's uuid.
    ClusterId,
    /// A cluster template's uuid.
    TemplateId,
    /// A node group's uuid.
    NodeGroupId,
    /// A federation's uuid.
    FederationId,
    /// A conductor job's uuid.
    JobId,
    /// A machine's (one node's) uuid.
    MachineId,
    /// A cluster group's uuid.
    ClusterGroupId,
    /// A cluster group binding's uuid.
    ClusterGroupBindingId,
}

/// Parses a uuid the way Magnum's `uuid_like` does: hyphenated or 32 hex digits, any case,
/// optionally in braces or with a `urn:uuid:` prefix.
pub fn parse_uuid_like(text: &str) -> Option<Uuid> {
    let t = text.trim();
    let t = t.strip_prefix("urn:uuid:").unwrap_or(t);
    let t = t
        .strip_prefix('{')
        .and_then(|s| s.strip_suffix('}'))
        .unwrap_or(t);
    let hex: String = t.chars().filter(|c| *c != '-').collect();
    if hex.len() != 32 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    // Hyphens, when present, must be where a uuid has them.
    if t.contains('-') && Uuid::try_parse(t).is_err() {
        return None;
    }
    Uuid::try_parse(&hex).ok()
}

/// What a path segment names: a uuid (looked up only as a uuid) or a name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ident {
    Uuid(Uuid),
    Name(String),
}

impl Ident {
    pub fn parse(text: &str) -> Ident {
        match parse_uuid_like(text) {
            Some(u) => Ident::Uuid(u),
            None => Ident::Name(text.to_string()),
        }
    }
    /// The text as the client wrote it, for error messages.
    pub fn display(&self) -> String {
        match self {
            Ident::Uuid(u) => u.hyphenated().to_string(),
            Ident::Name(n) => n.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuid_like_accepts_the_forms_magnum_accepts() {
        let canonical = "746e779a-751a-456b-a3e9-c883d734946f";
        for form in [
            canonical,
            "746E779A-751A-456B-A3E9-C883D734946F",
            "746e779a751a456ba3e9c883d734946f",
            "{746e779a-751a-456b-a3e9-c883d734946f}",
            "urn:uuid:746e779a-751a-456b-a3e9-c883d734946f",
        ] {
            assert_eq!(
                parse_uuid_like(form).map(|u| u.to_string()),
                Some(canonical.to_string()),
                "{form}"
            );
        }
    }

    #[test]
    fn names_are_not_uuids() {
        assert_eq!(Ident::parse("k8s"), Ident::Name("k8s".into()));
        assert_eq!(parse_uuid_like("746e779a-751a-456b-a3e9-c883d734946"), None);
        assert_eq!(
            parse_uuid_like("746e-779a751a-456b-a3e9-c883d734946f"),
            None
        );
    }
}
