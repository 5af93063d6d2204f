//! Kubernetes label and field selectors (`?labelSelector=`, `?fieldSelector=`): parsed once,
//! bounded, then matched against an object's labels or name and namespace.

use std::collections::BTreeMap;

use super::kube_names::{is_label_value, is_qualified_name, LABEL_VALUE_MSG, QUALIFIED_NAME_MSG};

/// The longest selector string taken.
pub const MAX_SELECTOR_LEN: usize = 4096;
/// The most requirements (comma-separated terms) in one selector.
pub const MAX_REQUIREMENTS: usize = 100;
/// The most values in one `in (...)` / `notin (...)`.
pub const MAX_VALUES: usize = 100;

/// Why a selector was refused; the message is the apiserver's where it has one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SelectorError(pub String);

fn err(msg: impl Into<String>) -> SelectorError {
    SelectorError(msg.into())
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// `k=v` or `k==v`.
    Equals(String),
    /// `k!=v`: also matches objects without `k`.
    NotEquals(String),
    /// `k in (a,b)`.
    In(Vec<String>),
    /// `k notin (a,b)`: also matches objects without `k`.
    NotIn(Vec<String>),
    /// `k`.
    Exists,
    /// `!k`.
    DoesNotExist,
    /// `k>n`: the label is an integer greater than `n`.
    GreaterThan(i64),
    /// `k<n`: the label is an integer less than `n`.
    LessThan(i64),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    pub key: String,
    pub op: Op,
}

impl Requirement {
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.matches_value(labels.get(&self.key).map(String::as_str))
    }

    /// Whether an object whose label `self.key` is `value` (or absent) matches.
    fn matches_value(&self, value: Option<&str>) -> bool {
        match &self.op {
            Op::Equals(v) => value == Some(v.as_str()),
            Op::NotEquals(v) => value != Some(v.as_str()),
            Op::In(vs) => value.is_some_and(|x| vs.iter().any(|v| v == x)),
            Op::NotIn(vs) => !value.is_some_and(|x| vs.iter().any(|v| v == x)),
            Op::Exists => value.is_some(),
            Op::DoesNotExist => value.is_none(),
            Op::GreaterThan(n) => value
                .and_then(|x| x.parse::<i64>().ok())
                .is_some_and(|x| x > *n),
            Op::LessThan(n) => value
                .and_then(|x| x.parse::<i64>().ok())
                .is_some_and(|x| x < *n),
        }
    }
}

/// A parsed label selector: the AND of its requirements (empty = everything).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelSelector {
    pub requirements: Vec<Requirement>,
}

/// Splits on commas outside parentheses.
fn split_terms(s: &str) -> Result<Vec<&str>, SelectorError> {
    let mut terms = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '(' => {
                depth += 1;
                if depth > 1 {
                    return Err(err(
                        "unable to parse requirement: found '(', expected: identifier",
                    ));
                }
            }
            ')' => {
                if depth == 0 {
                    return Err(err(
                        "found ')', expected: !, identifier, or 'end of string'",
                    ));
                }
                depth -= 1;
            }
            ',' if depth == 0 => {
                terms.push(&s[start..i]);
                start = i + 1;
                if terms.len() > MAX_REQUIREMENTS {
                    return Err(err(format!(
                        "a selector may have at most {MAX_REQUIREMENTS} requirements"
                    )));
                }
            }
            _ => {}
        }
    }
    if depth != 0 {
        return Err(err("unable to parse requirement: found '', expected: ')'"));
    }
    terms.push(&s[start..]);
    Ok(terms)
}

fn check_key(key: &str) -> Result<(), SelectorError> {
    if is_qualified_name(key) {
        Ok(())
    } else {
        Err(err(format!(
            "unable to parse requirement: <nil>: Invalid value: {}: name part {QUALIFIED_NAME_MSG}",
            quote(key)
        )))
    }
}

fn check_value(key: &str, index: usize, value: &str) -> Result<(), SelectorError> {
    if is_label_value(value) {
        Ok(())
    } else {
        Err(err(format!(
            "unable to parse requirement: values[{index}][{key}]: Invalid value: {}: \
             {LABEL_VALUE_MSG}",
            quote(value)
        )))
    }
}

fn quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

fn parse_values(key: &str, rest: &str) -> Result<Vec<String>, SelectorError> {
    let rest = rest.trim();
    let inner = rest
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .ok_or_else(|| {
            err(format!(
                "unable to parse requirement: found '{}', expected: '('",
                rest.chars().take(16).collect::<String>()
            ))
        })?;
    if inner.trim().is_empty() {
        return Err(err(
            "unable to parse requirement: values: Invalid value: []string{}: for 'in', 'notin' \
             operators, values set can't be empty",
        ));
    }
    let mut values = Vec::new();
    for (i, v) in inner.split(',').enumerate() {
        if values.len() >= MAX_VALUES {
            return Err(err(format!(
                "unable to parse requirement: a set may have at most {MAX_VALUES} values"
            )));
        }
        let v = v.trim();
        check_value(key, i, v)?;
        values.push(v.to_string());
    }
    Ok(values)
}

fn parse_requirement(term: &str) -> Result<Requirement, SelectorError> {
    let t = term.trim();
    if let Some(k) = t.strip_prefix('!') {
        let k = k.trim();
        check_key(k)?;
        return Ok(Requirement {
            key: k.to_string(),
            op: Op::DoesNotExist,
        });
    }
    // `k>n`, `k<n`: one integer value.
    for (sym, gt) in [(">", true), ("<", false)] {
        if let Some((k, v)) = t.split_once(sym) {
            let (k, v) = (k.trim(), v.trim());
            check_key(k)?;
            let n = v.parse::<i64>().map_err(|_| {
                err(format!(
                    "unable to parse requirement: values[0]: Invalid value: \"{}\": for 'Gt', \
                     'Lt' operators, the value must be an integer",
                    v.chars().take(64).collect::<String>()
                ))
            })?;
            return Ok(Requirement {
                key: k.to_string(),
                op: if gt {
                    Op::GreaterThan(n)
                } else {
                    Op::LessThan(n)
                },
            });
        }
    }
    // Binary operators, longest first.
    for (sym, make) in [("!=", 0u8), ("==", 1), ("=", 1)] {
        if let Some((k, v)) = t.split_once(sym) {
            let (k, v) = (k.trim(), v.trim());
            check_key(k)?;
            check_value(k, 0, v)?;
            if v.contains(['=', '!', '(', ')', ' ']) {
                return Err(err(format!(
                    "found '{v}', expected: ',' or 'end of string'"
                )));
            }
            let op = if make == 0 {
                Op::NotEquals(v.to_string())
            } else {
                Op::Equals(v.to_string())
            };
            return Ok(Requirement {
                key: k.to_string(),
                op,
            });
        }
    }
    // `k in (...)`, `k notin (...)`, or a bare `k`.
    let mut parts = t.splitn(2, char::is_whitespace);
    let key = parts.next().unwrap_or("");
    let rest = parts.next().unwrap_or("").trim_start();
    let key_only = key.split('(').next().unwrap_or(key);
    if rest.is_empty() && !key.contains('(') {
        check_key(key)?;
        return Ok(Requirement {
            key: key.to_string(),
            op: Op::Exists,
        });
    }
    check_key(key_only)?;
    let (word, values) = match rest.find(|c: char| c == '(' || c.is_whitespace()) {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    let op = match word {
        "in" => Op::In(parse_values(key_only, values)?),
        "notin" => Op::NotIn(parse_values(key_only, values)?),
        other => {
            return Err(err(format!(
                "unable to parse requirement: found '{}', expected: in, notin, =, ==, !=, gt, lt",
                other.chars().take(32).collect::<String>()
            )))
        }
    };
    Ok(Requirement {
        key: key_only.to_string(),
        op,
    })
}

impl LabelSelector {
    /// Parses `?labelSelector=` (already URL-decoded).
    pub fn parse(s: &str) -> Result<Self, SelectorError> {
        if s.len() > MAX_SELECTOR_LEN {
            return Err(err(format!(
                "a label selector may be at most {MAX_SELECTOR_LEN} characters"
            )));
        }
        if s.trim().is_empty() {
            return Ok(LabelSelector::default());
        }
        let mut requirements = Vec::new();
        let terms = split_terms(s)?;
        let last = terms.len().saturating_sub(1);
        for (i, term) in terms.into_iter().enumerate() {
            if term.trim().is_empty() {
                return Err(err(match i {
                    0 => "found ',', expected: !, identifier, or 'end of string'",
                    i if i == last => "found '', expected: identifier after ','",
                    _ => "found ',', expected: identifier after ','",
                }));
            }
            requirements.push(parse_requirement(term)?);
        }
        Ok(LabelSelector { requirements })
    }

    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.requirements.iter().all(|r| r.matches(labels))
    }

    /// Whether an object with `labels` and one more label, `key: value` (which wins over a
    /// label of the same key), matches; nothing is copied.
    pub fn matches_with(
        &self,
        labels: &BTreeMap<String, String>,
        (key, value): (&str, &str),
    ) -> bool {
        self.requirements.iter().all(|r| {
            r.matches_value(if r.key == key {
                Some(value)
            } else {
                labels.get(&r.key).map(String::as_str)
            })
        })
    }
}

/// A field selector on `metadata.name` / `metadata.namespace`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldTerm {
    NameEquals(String),
    NameNotEquals(String),
    NamespaceEquals(String),
    NamespaceNotEquals(String),
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSelector {
    pub terms: Vec<FieldTerm>,
}

impl FieldSelector {
    /// Parses `?fieldSelector=` (already URL-decoded).
    pub fn parse(s: &str) -> Result<Self, SelectorError> {
        if s.len() > MAX_SELECTOR_LEN {
            return Err(err(format!(
                "a field selector may be at most {MAX_SELECTOR_LEN} characters"
            )));
        }
        let mut terms = Vec::new();
        if s.trim().is_empty() {
            return Ok(FieldSelector { terms });
        }
        for part in s.split(',') {
            if terms.len() >= MAX_REQUIREMENTS {
                return Err(err(format!(
                    "a selector may have at most {MAX_REQUIREMENTS} requirements"
                )));
            }
            let (field, not, value) = if let Some((f, v)) = part.split_once("!=") {
                (f, true, v)
            } else if let Some((f, v)) = part.split_once("==") {
                (f, false, v)
            } else if let Some((f, v)) = part.split_once('=') {
                (f, false, v)
            } else {
                return Err(err(format!(
                    "invalid selector: '{s}'; can't understand '{part}'"
                )));
            };
            let (field, value) = (field.trim(), value.trim().to_string());
            let term = match (field, not) {
                ("metadata.name", false) => FieldTerm::NameEquals(value),
                ("metadata.name", true) => FieldTerm::NameNotEquals(value),
                ("metadata.namespace", false) => FieldTerm::NamespaceEquals(value),
                ("metadata.namespace", true) => FieldTerm::NamespaceNotEquals(value),
                (other, _) => {
                    return Err(err(format!("field label not supported: {other}")));
                }
            };
            terms.push(term);
        }
        Ok(FieldSelector { terms })
    }

    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// The single name an `metadata.name=` term pins the list to, if any (a store shortcut).
    pub fn name(&self) -> Option<&str> {
        self.terms.iter().find_map(|t| match t {
            FieldTerm::NameEquals(n) => Some(n.as_str()),
            _ => None,
        })
    }

    pub fn matches(&self, name: &str, namespace: &str) -> bool {
        self.terms.iter().all(|t| match t {
            FieldTerm::NameEquals(v) => name == v,
            FieldTerm::NameNotEquals(v) => name != v,
            FieldTerm::NamespaceEquals(v) => namespace == v,
            FieldTerm::NamespaceNotEquals(v) => namespace != v,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn sel(s: &str) -> LabelSelector {
        LabelSelector::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn an_implied_label_is_matched_as_one_of_the_objects_labels() {
        let own = labels(&[("env", "prod"), ("x-k8s.io/cluster-manager", "other")]);
        let extra = ("x-k8s.io/cluster-manager", "fleetyard");
        assert!(sel("x-k8s.io/cluster-manager=fleetyard,env=prod").matches_with(&own, extra));
        assert!(!sel("x-k8s.io/cluster-manager=other").matches_with(&own, extra));
        assert!(!sel("env=dev").matches_with(&own, extra));
        assert!(sel("").matches_with(&own, extra));
    }

    #[test]
    fn greater_and_less_than_compare_integer_labels() {
        let gt = sel("replicas>3");
        assert!(gt.matches(&labels(&[("replicas", "4")])));
        assert!(!gt.matches(&labels(&[("replicas", "3")])));
        assert!(!gt.matches(&labels(&[("replicas", "many")])));
        assert!(!gt.matches(&labels(&[])));
        let lt = sel("tier < 2, env=prod");
        assert!(lt.matches(&labels(&[("tier", "-1"), ("env", "prod")])));
        assert!(!lt.matches(&labels(&[("tier", "2"), ("env", "prod")])));
        assert_eq!(
            LabelSelector::parse("replicas>three").map_err(|e| e.0),
            Err(
                "unable to parse requirement: values[0]: Invalid value: \"three\": for 'Gt', \
                 'Lt' operators, the value must be an integer"
                    .to_string()
            )
        );
    }

    #[test]
    fn equality_in_both_spellings() {
        let prod = labels(&[("env", "prod")]);
        assert!(sel("env=prod").matches(&prod));
        assert!(sel("env==prod").matches(&prod));
        assert!(sel(" env = prod ").matches(&prod));
        assert!(!sel("env=dev").matches(&prod));
        assert!(!sel("env=prod").matches(&labels(&[])));
    }

    #[test]
    fn not_equals_matches_objects_without_the_key() {
        assert!(!sel("env!=prod").matches(&labels(&[("env", "prod")])));
        assert!(sel("env!=prod").matches(&labels(&[("env", "dev")])));
        assert!(sel("env!=prod").matches(&labels(&[])));
    }

    #[test]
    fn exists_and_does_not_exist() {
        assert!(sel("env").matches(&labels(&[("env", "")])));
        assert!(!sel("env").matches(&labels(&[])));
        assert!(sel("!env").matches(&labels(&[])));
        assert!(!sel("! env").matches(&labels(&[("env", "x")])));
    }

    #[test]
    fn in_and_notin_with_notin_matching_objects_without_the_key() {
        let s = sel("env in (prod, dev)");
        assert_eq!(
            s.requirements[0].op,
            Op::In(vec!["prod".into(), "dev".into()])
        );
        assert!(s.matches(&labels(&[("env", "dev")])));
        assert!(!s.matches(&labels(&[("env", "qa")])));
        assert!(!s.matches(&labels(&[])));
        let s = sel("env notin (prod,dev)");
        assert!(!s.matches(&labels(&[("env", "dev")])));
        assert!(s.matches(&labels(&[("env", "qa")])));
        assert!(s.matches(&labels(&[])));
    }

    #[test]
    fn terms_are_anded_and_commas_inside_parentheses_do_not_split() {
        let s = sel("env in (a,b),tier=gold,!legacy,example.com/team");
        assert_eq!(s.requirements.len(), 4);
        assert!(s.matches(&labels(&[
            ("env", "b"),
            ("tier", "gold"),
            ("example.com/team", "x")
        ])));
        assert!(!s.matches(&labels(&[
            ("env", "b"),
            ("tier", "gold"),
            ("legacy", "1"),
            ("example.com/team", "x")
        ])));
        assert!(sel("").matches(&labels(&[])));
    }

    #[test]
    fn bad_selectors_are_refused_with_a_sentence() {
        for bad in [
            "env=prod,",
            ",env",
            "env in prod",
            "env in (a,b",
            "env in ()",
            "Bad Key=x",
            "env=bad value!",
            "env foo (a)",
            "-x=y",
        ] {
            assert!(LabelSelector::parse(bad).is_err(), "{bad} should fail");
        }
        assert_eq!(
            LabelSelector::parse("env=prod,").map_err(|e| e.0),
            Err("found '', expected: identifier after ','".into())
        );
        assert_eq!(
            LabelSelector::parse(",env").map_err(|e| e.0),
            Err("found ',', expected: !, identifier, or 'end of string'".into())
        );
        assert_eq!(
            LabelSelector::parse("env in prod").map_err(|e| e.0),
            Err("unable to parse requirement: found 'prod', expected: '('".into())
        );
        assert!(LabelSelector::parse("-x=y")
            .map_err(|e| e.0)
            .err()
            .is_some_and(|m| m.starts_with("unable to parse requirement: ")));
    }

    #[test]
    fn selectors_are_bounded() {
        let long = "a".repeat(MAX_SELECTOR_LEN + 1);
        assert!(LabelSelector::parse(&long).is_err());
        let many = vec!["a"; MAX_REQUIREMENTS + 2].join(",");
        assert!(LabelSelector::parse(&many).is_err());
        let vals = (0..=MAX_VALUES)
            .map(|i| format!("v{i}"))
            .collect::<Vec<_>>()
            .join(",");
        assert!(LabelSelector::parse(&format!("k in ({vals})")).is_err());
    }

    #[test]
    fn field_selectors_take_name_and_namespace() {
        let f = FieldSelector::parse("metadata.name=alpha").unwrap_or_default();
        assert_eq!(f.name(), Some("alpha"));
        assert!(f.matches("alpha", "p1"));
        assert!(!f.matches("beta", "p1"));
        let f =
            FieldSelector::parse("metadata.name!=alpha,metadata.namespace==p1").unwrap_or_default();
        assert!(f.matches("beta", "p1"));
        assert!(!f.matches("alpha", "p1"));
        assert!(!f.matches("beta", "p2"));
        assert!(FieldSelector::parse("").is_ok_and(|f| f.is_empty()));
    }

    #[test]
    fn other_field_labels_are_not_supported() {
        assert_eq!(
            FieldSelector::parse("spec.x=a").map_err(|e| e.0),
            Err("field label not supported: spec.x".into())
        );
        assert!(FieldSelector::parse("metadata.name").is_err());
    }
}
