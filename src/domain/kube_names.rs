//! The Kubernetes name, label and address rules, written once for every user: object names
//! (DNS-1123 subdomains) of the registry and of `/v1` clusters' derived names, label keys and
//! values of objects and selectors, and the server addresses and client CIDRs of a registered
//! cluster. The messages are apimachinery's (`k8s.io/apimachinery/pkg/util/validation`), word
//! for word, since clients and tests compare them.

// ---- names and labels ---------------------------------------------------------------------

pub const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower \
     case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric \
     character (e.g. 'example.com', regex used for validation is \
     '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

pub const DNS1123_LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case \
     alphanumeric characters or '-', and must start and end with an alphanumeric character \
     (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

pub const QUALIFIED_NAME_MSG: &str =
    "must consist of alphanumeric characters, '-', '_' or '.', and \
     must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or \
     '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

pub const LABEL_VALUE_MSG: &str =
    "a valid label must be an empty string or consist of alphanumeric \
     characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. \
     'MyValue',  or 'my_value',  or '12345', regex used for validation is \
     '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

/// `validation.MaxLenError`.
pub fn max_len(n: usize) -> String {
    format!("must be no more than {n} characters")
}

/// A DNS-1123 label's characters: `[a-z0-9]([-a-z0-9]*[a-z0-9])?` (no length limit).
pub fn is_dns_label(s: &str) -> bool {
    let b = s.as_bytes();
    let an = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    !b.is_empty() && an(&b[0]) && an(&b[b.len() - 1]) && b.iter().all(|c| an(c) || *c == b'-')
}

/// `validation.IsDNS1123Subdomain`: the messages, empty when valid.
pub fn dns1123_subdomain_errors(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 253 {
        errs.push(max_len(253));
    }
    if !s.split('.').all(is_dns_label) {
        errs.push(DNS1123_SUBDOMAIN_MSG.to_string());
    }
    errs
}

/// `validation.IsDNS1123Label`: the messages, empty when valid.
pub fn dns1123_label_errors(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 63 {
        errs.push(max_len(63));
    }
    if !is_dns_label(s) {
        errs.push(DNS1123_LABEL_MSG.to_string());
    }
    errs
}

/// A qualified name's name part (or a label value)'s characters:
/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]` (no length limit).
pub fn is_qualified_name_part(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

/// `validation.IsQualifiedName`: the messages, empty when valid.
pub fn qualified_name_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = value.splitn(3, '/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                for m in dns1123_subdomain_errors(prefix) {
                    errs.push(format!("prefix part {m}"));
                }
            }
            *name
        }
        _ => {
            return vec![format!(
                "a qualified name {QUALIFIED_NAME_MSG} with an optional DNS subdomain prefix and \
                 '/' (e.g. 'example.com/MyName')"
            )]
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".into());
    } else if name.len() > 63 {
        errs.push(format!("name part {}", max_len(63)));
    }
    if !is_qualified_name_part(name) {
        errs.push(format!("name part {QUALIFIED_NAME_MSG}"));
    }
    errs
}

/// `validation.IsValidLabelValue`: the messages, empty when valid.
pub fn label_value_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 63 {
        errs.push(max_len(63));
    }
    if !value.is_empty() && !is_qualified_name_part(value) {
        errs.push(LABEL_VALUE_MSG.into());
    }
    errs
}

/// The longest Kubernetes object name (a DNS-1123 subdomain).
pub const MAX_NAME: usize = 253;

/// Whether `s` is a DNS-1123 subdomain: what Kubernetes accepts as an object name.
pub fn is_dns1123_subdomain(s: &str) -> bool {
    dns1123_subdomain_errors(s).is_empty()
}

/// Whether `key` is a label key (a qualified name: `[prefix/]name`).
pub fn is_qualified_name(key: &str) -> bool {
    qualified_name_errors(key).is_empty()
}

/// Whether `value` is a label value (empty, or a name part of at most 63 characters).
pub fn is_label_value(value: &str) -> bool {
    label_value_errors(value).is_empty()
}

// ---- addresses ---------------------------------------------------------------------------

/// `validation.IsValidCIDR`'s message.
pub const CIDR_MSG: &str = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)";

/// The message of a server address that is not one.
pub const ADDRESS_MSG: &str =
    "must be a hostname, hostname:port, IP, IP:port or an https:// (or http://) URL with one of these";

/// Whether `s` is an IPv4 or IPv6 CIDR (`10.0.0.0/8`, `2001:db8::/64`).
pub fn is_cidr(s: &str) -> bool {
    let Some((ip, prefix)) = s.split_once('/') else {
        return false;
    };
    let Ok(ip) = ip.parse::<std::net::IpAddr>() else {
        return false;
    };
    if prefix.is_empty() || prefix.len() > 3 || !prefix.bytes().all(|b| b.is_ascii_digit()) {
        return false;
    }
    let max = if ip.is_ipv4() { 32 } else { 128 };
    prefix.parse::<u8>().is_ok_and(|p| p <= max)
}

/// A host name: a DNS-1123 subdomain, in any case.
pub fn is_hostname(h: &str) -> bool {
    let lower = h.to_ascii_lowercase();
    dns1123_subdomain_errors(&lower).is_empty()
}

/// A TCP port, 1 to 65535.
pub fn is_port(p: &str) -> bool {
    !p.is_empty() && p.len() <= 5 && p.parse::<u16>().is_ok_and(|n| n > 0)
}

/// host, host:port, IPv4, IPv4:port, IPv6, [IPv6]:port.
pub fn is_authority(a: &str) -> bool {
    if a.parse::<std::net::Ipv6Addr>().is_ok() {
        return true;
    }
    if let Some(rest) = a.strip_prefix('[') {
        let Some((ip, port)) = rest.split_once(']') else {
            return false;
        };
        return ip.parse::<std::net::Ipv6Addr>().is_ok()
            && (port.is_empty() || port.strip_prefix(':').is_some_and(is_port));
    }
    let (host, port) = match a.rsplit_once(':') {
        Some((h, p)) => (h, Some(p)),
        None => (a, None),
    };
    if port.is_some_and(|p| !is_port(p)) {
        return false;
    }
    host.parse::<std::net::Ipv4Addr>().is_ok() || is_hostname(host)
}

/// Whether `s` is a server address the registry takes.
pub fn is_server_address(s: &str) -> bool {
    if s.len() > 2048 || s.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return false;
    }
    match s.split_once("://") {
        // kubeconfig servers may be plain http (a local or proxied API server).
        Some((scheme, rest))
            if scheme.eq_ignore_ascii_case("https") || scheme.eq_ignore_ascii_case("http") =>
        {
            let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
            !authority.contains('@') && is_authority(authority)
        }
        Some(_) => false,
        None => is_authority(s),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_names_are_dns_subdomains_of_at_most_253_characters() {
        for ok in ["a", "prod-1", "a.b-c.d", "0abc", "a.b-c.d9"] {
            assert!(is_dns1123_subdomain(ok), "{ok}");
        }
        for bad in ["", "-a", "a-", "a..b", "A", "a_b"] {
            assert!(!is_dns1123_subdomain(bad), "{bad}");
        }
        assert!(is_dns1123_subdomain(&"a".repeat(MAX_NAME)));
        assert_eq!(
            dns1123_subdomain_errors(&"a".repeat(254)),
            vec![max_len(253)]
        );
        assert_eq!(
            dns1123_label_errors("a.b"),
            vec![DNS1123_LABEL_MSG.to_string()]
        );
    }

    #[test]
    fn label_keys_and_values_follow_apimachinery() {
        for ok in ["env", "example.com/MyName", "a_b.c-d"] {
            assert!(is_qualified_name(ok), "{ok}");
        }
        for bad in ["", "/x", "a/b/c", "-x", "Bad.Prefix/x", &"a".repeat(64)] {
            assert!(!is_qualified_name(bad), "{bad}");
        }
        assert_eq!(
            qualified_name_errors("x/"),
            vec![
                "name part must be non-empty".to_string(),
                format!("name part {QUALIFIED_NAME_MSG}")
            ]
        );
        assert!(is_label_value(""));
        assert!(is_label_value("MyValue_1.x"));
        assert!(!is_label_value("-x"));
        assert!(!is_label_value(&"a".repeat(64)));
        assert_eq!(
            label_value_errors(&"-".repeat(64)),
            vec![max_len(63), LABEL_VALUE_MSG.to_string()]
        );
    }
}
