//! Names: the cluster name rule parsed into newtypes, and generated names as Magnum makes them
//! when a client gives none.

use rand::Rng;

const GREEK: [&str; 24] = [
    "alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa",
    "lambda", "mu", "nu", "xi", "omicron", "pi", "rho", "sigma", "tau", "upsilon", "phi", "chi",
    "psi", "omega",
];

/// `<greek letter>-<1..24>-<suffix>`, e.g. `zeta-7-template`.
pub fn generate(suffix: &str) -> String {
    let mut rng = rand::thread_rng();
    let letter = GREEK[rng.gen_range(0..GREEK.len())];
    let number = rng.gen_range(1..=24);
    format!("{letter}-{number}-{suffix}")
}

/// The cluster name rule (1-242 characters, `^[a-zA-Z][a-zA-Z0-9_.-]*$`): `Err` is the sentence
/// Magnum gives.
fn check_cluster_rule(name: &str) -> Result<(), &'static str> {
    let mut chars = name.chars();
    let Some(first) = chars.next() else {
        return Err("Value should have a minimum character requirement of 1.");
    };
    if name.chars().count() > 242 {
        return Err("Value should have a maximum character requirement of 242.");
    }
    if !first.is_ascii_alphabetic()
        || !chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '-')
    {
        return Err("Value should match the pattern ^[a-zA-Z][a-zA-Z0-9_.-]*$.");
    }
    Ok(())
}

/// A cluster's name, holding only what the cluster name rule allows.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ClusterName(String);

/// A federation's name: the cluster name rule applies.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FederationName(String);

impl ClusterName {
    /// The name, or the sentence saying why it is refused.
    pub fn parse(text: &str) -> Result<ClusterName, &'static str> {
        check_cluster_rule(text).map(|()| ClusterName(text.to_string()))
    }
    /// The name of a cluster registered through the cluster registry: a Kubernetes object name
    /// (a DNS-1123 subdomain), which may start with a digit where the cluster rule would not.
    pub fn registered(text: &str) -> Option<ClusterName> {
        super::kube_names::is_dns1123_subdomain(text).then(|| ClusterName(text.to_string()))
    }
    /// A generated `<greek letter>-<n>-cluster` name.
    pub fn generate() -> ClusterName {
        ClusterName(generate("cluster"))
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
    pub fn into_string(self) -> String {
        self.0
    }
}

impl FederationName {
    /// The name, or the sentence saying why it is refused.
    pub fn parse(text: &str) -> Result<FederationName, &'static str> {
        check_cluster_rule(text).map(|()| FederationName(text.to_string()))
    }
    /// A generated `<greek letter>-<n>-federation` name.
    pub fn generate() -> FederationName {
        FederationName(generate("federation"))
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
    pub fn into_string(self) -> String {
        self.0
    }
}

impl std::fmt::Display for ClusterName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::fmt::Display for FederationName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn generated_names_have_magnums_shape() {
        let name = super::generate("template");
        let parts: Vec<&str> = name.split('-').collect();
        assert_eq!(parts.len(), 3, "{name}");
        assert!(super::GREEK.contains(&parts[0]));
        let n: u32 = parts[1].parse().expect("number");
        assert!((1..=24).contains(&n));
        assert_eq!(parts[2], "template");
    }

    #[test]
    fn generated_cluster_and_federation_names_pass_their_own_rule() {
        let cluster = super::ClusterName::generate();
        assert!(
            super::ClusterName::parse(cluster.as_str()).is_ok(),
            "{cluster}"
        );
        let federation = super::FederationName::generate();
        assert!(
            super::FederationName::parse(federation.as_str()).is_ok(),
            "{federation}"
        );
    }

    #[test]
    fn names_outside_the_rule_are_refused_with_magnums_sentence() {
        assert_eq!(
            super::ClusterName::parse("").map(|n| n.into_string()),
            Err("Value should have a minimum character requirement of 1.")
        );
        assert_eq!(
            super::FederationName::parse("a b").map(|n| n.into_string()),
            Err("Value should match the pattern ^[a-zA-Z][a-zA-Z0-9_.-]*$.")
        );
    }
}
