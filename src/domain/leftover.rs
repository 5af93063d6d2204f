//! What a delete left behind on the infrastructure: objects by kind and id, as the driver
//! names them. A delete that cannot finish ends `DELETE_FAILED` with them in its
//! `status_reason` and its notification; a forced delete reports them in its audit
//! notification.

use std::fmt;

use serde::{Deserialize, Serialize};

/// One object a delete could not remove (`kind` as the infrastructure calls it, e.g.
/// `server`, `load_balancer`, `Cluster.cluster.x-k8s.io`; `id` its id or name there).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Leftover {
    pub kind: String,
    pub id: String,
}

impl Leftover {
    pub fn new(kind: impl Into<String>, id: impl Into<String>) -> Leftover {
        Leftover {
            kind: kind.into(),
            id: id.into(),
        }
    }
}

impl fmt::Display for Leftover {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.kind, self.id)
    }
}

/// The most leftovers a `status_reason` names one by one; the rest are counted. The
/// notification lists them all.
pub const NAMED_IN_REASON: usize = 20;

/// The sentence that names what was left behind, appended to a failure's reason: empty when
/// nothing was.
pub fn left_behind(leftovers: &[Leftover]) -> String {
    if leftovers.is_empty() {
        return String::new();
    }
    let named: Vec<String> = leftovers
        .iter()
        .take(NAMED_IN_REASON)
        .map(ToString::to_string)
        .collect();
    let more = leftovers.len().saturating_sub(NAMED_IN_REASON);
    let tail = if more > 0 {
        format!(" and {more} more")
    } else {
        String::new()
    };
    format!(
        "Left behind on the infrastructure: {}{tail}.",
        named.join(", ")
    )
}

/// A delete's failure reason with what it left behind: `reason`, then the leftovers sentence.
pub fn delete_failed_reason(reason: &str, leftovers: &[Leftover]) -> String {
    let tail = left_behind(leftovers);
    match (reason.trim().is_empty(), tail.is_empty()) {
        (_, true) => reason.to_string(),
        (true, false) => tail,
        (false, false) => format!("{} {tail}", reason.trim_end()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reason_names_the_leftovers_by_kind_and_id() {
        let left = [
            Leftover::new("server", "k1-master-0"),
            Leftover::new("load_balancer", "lb-7"),
        ];
        assert_eq!(
            delete_failed_reason("The network refused.", &left),
            "The network refused. Left behind on the infrastructure: server k1-master-0, load_balancer lb-7."
        );
        assert_eq!(delete_failed_reason("Gone wrong.", &[]), "Gone wrong.");
        assert_eq!(
            delete_failed_reason("", &left[..1]),
            "Left behind on the infrastructure: server k1-master-0."
        );
    }

    #[test]
    fn a_long_list_is_cut_in_the_reason_and_counted() {
        let left: Vec<Leftover> = (0..25)
            .map(|i| Leftover::new("server", format!("s-{i}")))
            .collect();
        let text = left_behind(&left);
        assert!(text.contains("server s-19 and 5 more."), "{text}");
        assert!(!text.contains("s-20"), "{text}");
    }
}
