//! Policy: an oslo.policy-compatible rule engine loaded with Magnum's default rules.
//!
//! A rule is a *check string* such as `(rule:context_is_admin) or (rule:project_member)`.
//! [`Enforcer::enforce`] evaluates one rule against the *target* (the fields of the resource being
//! acted on, e.g. a cluster's `project_id` and `user_id`) and the caller's [`Credentials`].
//!
//! The language is oslo.policy's:
//! * `@` always allows, `!` always denies, an empty check string always allows;
//! * `role:NAME` holds when the caller has role NAME (case-insensitive, Keystone's implied roles
//!   included: `admin` implies `member`, which implies `reader`);
//! * `rule:NAME` evaluates another rule (an undefined rule or a cycle denies);
//! * `FIELD:VALUE` compares a credential field (`user_id`, `project_id`, `domain_id`, `is_admin`)
//!   with a literal (`'quoted'` or bare) or with `%(key)s` taken from the target (a missing key
//!   denies);
//! * `not`, `and`, `or` (in that order of precedence) and parentheses.
//!
//! The folder has two parts: this file (the public types, the [`Enforcer`], and the
//! check-string parser and evaluator) and [`defaults`], the table of default rules.

mod defaults;

use defaults::DEFAULTS;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

// ================================================================================================
// Public types and the Enforcer
// ================================================================================================

/// Who is asking (the oslo request context's credential fields).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Credentials {
    pub user_id: Option<String>,
    pub project_id: Option<String>,
    pub domain_id: Option<String>,
    /// Role names; compared case-insensitively.
    pub roles: Vec<String>,
    /// Result of [`Enforcer::is_admin`], set by the caller.
    pub is_admin: bool,
    /// `all` for a system-scoped Keystone token (`system_scope:all`).
    pub system_scope: Option<String>,
    /// Keystone's `is_admin_project` (`is_admin_project:True`).
    pub is_admin_project: bool,
}

/// One default rule, with documentation used for `policy sample`.
pub struct RuleDefault {
    pub name: &'static str,
    pub check_str: &'static str,
    pub description: &'static str,
    /// (HTTP method, path) pairs the rule protects, e.g. ("POST", "/v1/clusters").
    pub operations: &'static [(&'static str, &'static str)],
}

#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    /// The policy file could not be read.
    #[error("cannot read policy file {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The policy file is not a YAML/JSON map of rule names to strings (`path` is `<string>`
    /// for [`Enforcer::from_yaml_str`]).
    #[error("cannot parse policy file {}: {reason}", path.display())]
    Parse { path: PathBuf, reason: String },
    /// A rule's check string does not parse.
    #[error("invalid check string for policy rule {rule:?}: {reason}")]
    InvalidRule { rule: String, reason: String },
}

/// A parsed rule set: Magnum's defaults, possibly overridden by an operator's policy file.
#[derive(Debug, Clone)]
pub struct Enforcer {
    rules: HashMap<String, Rule>,
}

#[derive(Debug, Clone)]
struct Rule {
    check_str: String,
    check: Check,
}

/// The rule consulted when `enforce` is asked about a rule that does not exist (oslo's
/// `policy_default_rule`). Magnum defines no such rule; an operator may add one.
const FALLBACK_RULE: &str = "default";

impl Enforcer {
    /// Magnum's defaults only.
    pub fn with_defaults() -> Enforcer {
        let rules = DEFAULTS
            .iter()
            .map(|d| {
                // The defaults are tested to parse; should one ever fail, it denies.
                let check = parse_check_str(d.check_str).unwrap_or(Check::False);
                let rule = Rule {
                    check_str: d.check_str.to_owned(),
                    check,
                };
                (d.name.to_owned(), rule)
            })
            .collect();
        Enforcer { rules }
    }

    /// Defaults overridden by the rules in a policy file (YAML or JSON: a map of rule name ->
    /// check string). Rules not in the defaults are added.
    pub fn from_file(path: &Path) -> Result<Enforcer, PolicyError> {
        let text = std::fs::read_to_string(path).map_err(|source| PolicyError::Io {
            path: path.to_owned(),
            source,
        })?;
        Self::from_text(&text, path)
    }

    /// Same as [`Enforcer::from_file`] from already-read text.
    pub fn from_yaml_str(text: &str) -> Result<Enforcer, PolicyError> {
        Self::from_text(text, Path::new("<string>"))
    }

    /// Magnum's defaults with one rule `name` set to `check_str`, parsed as a policy file's
    /// rule is (the fuzz targets' way in to the check-string parser, no YAML around it).
    #[doc(hidden)]
    pub fn with_rule(name: &str, check_str: &str) -> Result<Enforcer, PolicyError> {
        let check = parse_check_str(check_str).map_err(|reason| PolicyError::InvalidRule {
            rule: name.to_owned(),
            reason,
        })?;
        let mut enforcer = Self::with_defaults();
        let rule = Rule {
            check_str: check_str.to_owned(),
            check,
        };
        enforcer.rules.insert(name.to_owned(), rule);
        Ok(enforcer)
    }

    fn from_text(text: &str, origin: &Path) -> Result<Enforcer, PolicyError> {
        let parse_error = |reason: String| PolicyError::Parse {
            path: origin.to_owned(),
            reason,
        };
        // JSON is YAML, so one parser serves both formats (oslo.policy does the same).
        let document: serde_norway::Value =
            serde_norway::from_str(text).map_err(|e| parse_error(e.to_string()))?;
        let mapping = match document {
            serde_norway::Value::Null => return Ok(Self::with_defaults()),
            serde_norway::Value::Mapping(mapping) => mapping,
            _ => {
                return Err(parse_error(
                    "expected a map of rule name to check string".into(),
                ))
            }
        };
        let mut enforcer = Self::with_defaults();
        for (key, value) in mapping {
            let serde_norway::Value::String(name) = key else {
                return Err(parse_error(format!(
                    "rule names must be strings, found {key:?}"
                )));
            };
            let serde_norway::Value::String(check_str) = value else {
                let reason = "expected a check string (use \"\" to always allow)".to_owned();
                return Err(PolicyError::InvalidRule { rule: name, reason });
            };
            let check = parse_check_str(&check_str).map_err(|reason| PolicyError::InvalidRule {
                rule: name.clone(),
                reason,
            })?;
            enforcer.rules.insert(name, Rule { check_str, check });
        }
        Ok(enforcer)
    }

    /// Evaluates rule `rule` against `target` (the resource's fields) and `creds`.
    ///
    /// An unknown rule name falls back to the rule named `default` if one exists, else denies
    /// (oslo's behaviour). A `rule:NAME` reference *inside* a check string does not fall back: an
    /// undefined reference denies.
    pub fn enforce(&self, rule: &str, target: &Map<String, Value>, creds: &Credentials) -> bool {
        let found = self.rules.get_key_value(rule);
        let Some((name, _)) = found.or_else(|| self.rules.get_key_value(FALLBACK_RULE)) else {
            return false;
        };
        self.evaluate(name, target, creds)
    }

    /// Evaluates an existing rule; denies when it follows too many rule references.
    fn evaluate(&self, name: &str, target: &Map<String, Value>, creds: &Credentials) -> bool {
        let mut evaluation = Evaluation {
            rules: &self.rules,
            target,
            creds,
            stack: Vec::new(),
            followed: 0,
        };
        let allowed = evaluation.rule(name);
        if evaluation.followed > MAX_RULE_REFERENCES {
            // Cut short, the result means nothing (a cut `not rule:x` would even allow).
            tracing::warn!(
                rule = %name,
                "policy rule {name:?} follows more than {MAX_RULE_REFERENCES} rule references \
                 in one evaluation; denied"
            );
            return false;
        }
        allowed
    }

    /// Evaluates `context_is_admin` with the given credentials (ignores `creds.is_admin`), against
    /// a target made of the caller's own project and user.
    pub fn is_admin(&self, creds: &Credentials) -> bool {
        let creds = Credentials {
            is_admin: false,
            ..creds.clone()
        };
        let mut target = Map::new();
        if let Some(project_id) = &creds.project_id {
            target.insert("project_id".into(), Value::String(project_id.clone()));
        }
        if let Some(user_id) = &creds.user_id {
            target.insert("user_id".into(), Value::String(user_id.clone()));
        }
        let Some((name, _)) = self.rules.get_key_value("context_is_admin") else {
            return false;
        };
        self.evaluate(name, &target, &creds)
    }

    /// Whether a rule of that name is defined (by default or by the policy file).
    pub fn has_rule(&self, name: &str) -> bool {
        self.rules.contains_key(name)
    }

    /// The check string in force for rule `name`, as written in the defaults or the policy file.
    pub fn check_str(&self, name: &str) -> Option<&str> {
        self.rules.get(name).map(|r| r.check_str.as_str())
    }

    /// The default rules, in a stable order.
    pub fn defaults() -> &'static [RuleDefault] {
        DEFAULTS
    }

    /// A commented YAML document of every default, in `oslopolicy-sample-generator`'s format,
    /// suitable for `etc/policy.yaml.sample`. It is all comments, so it parses to the defaults.
    pub fn sample_yaml() -> String {
        let mut out = String::new();
        for rule in DEFAULTS {
            for line in wrap(rule.description, 68) {
                out.push_str(&format!("# {line}\n"));
            }
            for (method, path) in rule.operations {
                out.push_str(&format!("# {method}  {path}\n"));
            }
            // JSON string syntax is YAML double-quoted string syntax.
            let name = Value::String(rule.name.to_owned());
            let check = Value::String(rule.check_str.to_owned());
            out.push_str(&format!("#{name}: {check}\n\n"));
        }
        out
    }
}

/// Greedy word wrap, for the sample's comment lines.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.len() + 1 + word.len() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

// ================================================================================================
// Check strings: syntax tree, parser and evaluator
// ================================================================================================

#[derive(Debug, Clone, PartialEq)]
enum Check {
    True,
    False,
    Rule(String),
    Role(Template),
    Field(Field, Template),
    Not(Box<Check>),
    And(Vec<Check>),
    Or(Vec<Check>),
}

/// The credential field on the left of a generic `FIELD:VALUE` check.
#[derive(Debug, Clone, PartialEq)]
enum Field {
    UserId,
    ProjectId,
    DomainId,
    IsAdmin,
    SystemScope,
    IsAdminProject,
    /// Any other name: the credentials have no such field, so the check is false (as in oslo).
    Other,
}

/// The right side of a check: literal text and `%(key)s` substitutions from the target.
#[derive(Debug, Clone, PartialEq)]
struct Template(Vec<Part>);

#[derive(Debug, Clone, PartialEq)]
enum Part {
    Literal(String),
    Key(String),
}

impl Template {
    /// The text with the target substituted in; `None` when a key is missing (the check fails).
    fn render(&self, target: &Map<String, Value>) -> Option<String> {
        let mut out = String::new();
        for part in &self.0 {
            match part {
                Part::Literal(text) => out.push_str(text),
                Part::Key(key) => match target.get(key)? {
                    Value::String(s) => out.push_str(s),
                    Value::Number(n) => out.push_str(&n.to_string()),
                    // As Python's str(): the form `is_admin:%(flag)s` compares against.
                    Value::Bool(b) => out.push_str(if *b { "True" } else { "False" }),
                    Value::Null | Value::Array(_) | Value::Object(_) => return None,
                },
            }
        }
        Some(out)
    }
}

/// Keystone's default implied roles: `admin` implies `member`, `member` implies `reader`.
/// Keystone expands them into the token; we emulate it so a token carrying only `member` still
/// satisfies `role:reader` (and `admin` satisfies both).
const IMPLIED_ROLES: &[(&str, &str)] = &[("admin", "member"), ("member", "reader")];

fn role_implies(held: &str, wanted: &str) -> bool {
    held.eq_ignore_ascii_case(wanted)
        || IMPLIED_ROLES.iter().any(|(prior, implied)| {
            held.eq_ignore_ascii_case(prior) && role_implies(implied, wanted)
        })
}

/// Deeper nesting (parentheses, `not`, `rule:` chains) is refused instead of risking the stack.
const MAX_DEPTH: usize = 64;

/// Most rules one evaluation follows (`rule:` references, the first rule included); past it the
/// evaluation stops and denies. Rules that each refer twice to the next would otherwise take
/// time exponential in the length of the chain (40 such rules: 2^40 evaluations).
const MAX_RULE_REFERENCES: usize = 10_000;

struct Evaluation<'a> {
    rules: &'a HashMap<String, Rule>,
    target: &'a Map<String, Value>,
    creds: &'a Credentials,
    /// Rules being evaluated, outermost first: a name already here is a cycle.
    stack: Vec<&'a str>,
    /// Rules followed so far; past [`MAX_RULE_REFERENCES`] every rule denies.
    followed: usize,
}

impl<'a> Evaluation<'a> {
    fn rule(&mut self, name: &'a str) -> bool {
        if self.followed > MAX_RULE_REFERENCES {
            return false;
        }
        self.followed += 1;
        if self.stack.len() >= MAX_DEPTH || self.stack.contains(&name) {
            return false;
        }
        let Some(rule) = self.rules.get(name) else {
            return false;
        };
        self.stack.push(name);
        let allowed = self.check(&rule.check);
        self.stack.pop();
        allowed
    }

    fn check(&mut self, check: &'a Check) -> bool {
        match check {
            Check::True => true,
            Check::False => false,
            Check::Rule(name) => self.rule(name),
            Check::Role(role) => role.render(self.target).is_some_and(|wanted| {
                self.creds
                    .roles
                    .iter()
                    .any(|held| role_implies(held, &wanted))
            }),
            Check::Field(field, value) => {
                let held = match field {
                    Field::UserId => self.creds.user_id.clone(),
                    Field::ProjectId => self.creds.project_id.clone(),
                    Field::DomainId => self.creds.domain_id.clone(),
                    Field::IsAdmin => {
                        Some(if self.creds.is_admin { "True" } else { "False" }.into())
                    }
                    Field::SystemScope => self.creds.system_scope.clone(),
                    Field::IsAdminProject => Some(
                        if self.creds.is_admin_project {
                            "True"
                        } else {
                            "False"
                        }
                        .into(),
                    ),
                    Field::Other => None,
                };
                match (held, value.render(self.target)) {
                    (Some(held), Some(wanted))
                        if matches!(field, Field::IsAdmin | Field::IsAdminProject) =>
                    {
                        held.eq_ignore_ascii_case(&wanted)
                    }
                    (Some(held), Some(wanted)) => held == wanted,
                    _ => false,
                }
            }
            Check::Not(inner) => !self.check(inner),
            Check::And(checks) => checks.iter().all(|c| self.check(c)),
            Check::Or(checks) => checks.iter().any(|c| self.check(c)),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Open,
    Close,
    And,
    Or,
    Not,
    Atom(String),
}

/// Splits a check string into parentheses, keywords and atoms. Inside an atom, `%(key)` and
/// quoted text may contain parentheses and (quoted text) spaces.
fn tokenize(text: &str) -> Result<Vec<Token>, String> {
    let mut tokens = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
            continue;
        }
        if c == '(' || c == ')' {
            chars.next();
            tokens.push(if c == '(' { Token::Open } else { Token::Close });
            continue;
        }
        let mut atom = String::new();
        while let Some(&c) = chars.peek() {
            if c.is_whitespace() || c == '(' || c == ')' {
                break;
            }
            chars.next();
            atom.push(c);
            let closing = match c {
                '%' if chars.peek() == Some(&'(') => ')',
                '\'' | '"' => c,
                _ => continue,
            };
            loop {
                let Some(next) = chars.next() else {
                    return Err(format!("unterminated {atom:?}"));
                };
                atom.push(next);
                if next == closing {
                    break;
                }
            }
        }
        tokens.push(match atom.to_ascii_lowercase().as_str() {
            "and" => Token::And,
            "or" => Token::Or,
            "not" => Token::Not,
            _ => Token::Atom(atom),
        });
    }
    Ok(tokens)
}

/// Parses a whole check string; an empty (or all-blank) string always allows.
fn parse_check_str(text: &str) -> Result<Check, String> {
    let tokens = tokenize(text)?;
    if tokens.is_empty() {
        return Ok(Check::True);
    }
    let mut parser = Parser {
        tokens: tokens.into_iter().peekable(),
        depth: 0,
    };
    let check = parser.or()?;
    match parser.tokens.next() {
        None => Ok(check),
        Some(token) => Err(format!(
            "unexpected {} after a complete expression",
            describe(&token)
        )),
    }
}

/// Recursive descent, lowest precedence first: `or` < `and` < `not` < atom / parentheses.
struct Parser {
    tokens: std::iter::Peekable<std::vec::IntoIter<Token>>,
    depth: usize,
}

impl Parser {
    fn or(&mut self) -> Result<Check, String> {
        self.list(Token::Or, Self::and, Check::Or)
    }

    fn and(&mut self) -> Result<Check, String> {
        self.list(Token::And, Self::not, Check::And)
    }

    /// `operand (operator operand)*`, a single operand standing for itself.
    fn list(
        &mut self,
        operator: Token,
        operand: fn(&mut Self) -> Result<Check, String>,
        combine: fn(Vec<Check>) -> Check,
    ) -> Result<Check, String> {
        let mut checks = vec![operand(self)?];
        while self.tokens.next_if_eq(&operator).is_some() {
            checks.push(operand(self)?);
        }
        Ok(match checks.len() {
            1 => checks.remove(0),
            _ => combine(checks),
        })
    }

    fn not(&mut self) -> Result<Check, String> {
        if self.tokens.next_if_eq(&Token::Not).is_none() {
            return self.atom();
        }
        self.descend()?;
        let inner = self.not()?;
        self.depth -= 1;
        Ok(Check::Not(Box::new(inner)))
    }

    fn atom(&mut self) -> Result<Check, String> {
        match self.tokens.next() {
            Some(Token::Atom(atom)) => parse_atom(&atom),
            Some(Token::Open) => {
                self.descend()?;
                let inner = self.or()?;
                if self.tokens.next() != Some(Token::Close) {
                    return Err("missing ')'".into());
                }
                self.depth -= 1;
                Ok(inner)
            }
            Some(token) => Err(format!("expected a check, found {}", describe(&token))),
            None => Err("expected a check, found the end of the string".into()),
        }
    }

    fn descend(&mut self) -> Result<(), String> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(format!("nested more than {MAX_DEPTH} levels deep"));
        }
        Ok(())
    }
}

fn describe(token: &Token) -> String {
    match token {
        Token::Open => "'('".into(),
        Token::Close => "')'".into(),
        Token::And => "'and'".into(),
        Token::Or => "'or'".into(),
        Token::Not => "'not'".into(),
        Token::Atom(atom) => format!("{atom:?}"),
    }
}

/// One check: `@`, `!`, `rule:NAME`, `role:NAME` or `FIELD:VALUE`.
fn parse_atom(atom: &str) -> Result<Check, String> {
    match atom {
        "@" => return Ok(Check::True),
        "!" => return Ok(Check::False),
        _ => {}
    }
    let Some((kind, value)) = atom.split_once(':') else {
        return Err(format!("{atom:?} is not '@', '!' or KIND:VALUE"));
    };
    let template = parse_value(value).map_err(|reason| format!("in {atom:?}: {reason}"))?;
    match kind {
        "rule" => match template.0.as_slice() {
            [Part::Literal(name)] => Ok(Check::Rule(name.clone())),
            _ => Err(format!("in {atom:?}: a rule reference must name a rule")),
        },
        "role" => Ok(Check::Role(template)),
        "user_id" => Ok(Check::Field(Field::UserId, template)),
        "project_id" => Ok(Check::Field(Field::ProjectId, template)),
        "domain_id" => Ok(Check::Field(Field::DomainId, template)),
        "is_admin" => Ok(Check::Field(Field::IsAdmin, template)),
        "system_scope" => Ok(Check::Field(Field::SystemScope, template)),
        "is_admin_project" => Ok(Check::Field(Field::IsAdminProject, template)),
        "" => Err(format!("{atom:?} has no kind before ':'")),
        "http" | "https" => Err(format!("{atom:?}: HTTP checks are not supported")),
        _ if kind.starts_with(['\'', '"']) || kind.parse::<f64>().is_ok() => Err(format!(
            "{atom:?}: a literal on the left of ':' is not supported"
        )),
        _ => Ok(Check::Field(Field::Other, template)),
    }
}

/// The right side of a check: `'quoted literal'`, or bare text with `%(key)s` and `%%`.
fn parse_value(value: &str) -> Result<Template, String> {
    if value.is_empty() {
        return Err("empty value after ':'".into());
    }
    for quote in ['\'', '"'] {
        if let Some(inner) = value
            .strip_prefix(quote)
            .and_then(|v| v.strip_suffix(quote))
        {
            return Ok(Template(vec![Part::Literal(inner.to_owned())]));
        }
    }
    let mut parts = Vec::new();
    let mut literal = String::new();
    let mut rest = value;
    while let Some(at) = rest.find('%') {
        literal.push_str(&rest[..at]);
        rest = &rest[at + 1..];
        if let Some(after) = rest.strip_prefix('%') {
            literal.push('%');
            rest = after;
            continue;
        }
        let Some((key, after)) = rest.strip_prefix('(').and_then(|r| r.split_once(")s")) else {
            return Err("'%' must start a %(key)s substitution or be doubled".into());
        };
        if key.is_empty() || key.contains(['(', ')', '%']) {
            return Err(format!("invalid substitution key {key:?}"));
        }
        if !literal.is_empty() {
            parts.push(Part::Literal(std::mem::take(&mut literal)));
        }
        parts.push(Part::Key(key.to_owned()));
        rest = after;
    }
    literal.push_str(rest);
    if !literal.is_empty() {
        parts.push(Part::Literal(literal));
    }
    Ok(Template(parts))
}

// ================================================================================================
// Tests
// ================================================================================================

#[cfg(test)]
mod tests {
    use super::defaults::{ADMIN, MEMBER_DENY_CLUSTER_USER};
    use super::*;
    use serde_json::json;

    fn creds(project: &str, user: &str, roles: &str) -> Credentials {
        Credentials {
            user_id: Some(user.into()),
            project_id: Some(project.into()),
            domain_id: Some("default".into()),
            roles: roles.split_whitespace().map(String::from).collect(),
            is_admin: false,
            system_scope: None,
            is_admin_project: true,
        }
    }

    fn admin_in(project: &str) -> Credentials {
        let admin = creds(project, "admin-user", "admin");
        Credentials {
            is_admin: true,
            ..admin
        }
    }

    fn target(project: &str, user: &str) -> Map<String, Value> {
        let value = json!({"project_id": project, "user_id": user});
        value.as_object().cloned().unwrap()
    }

    fn load(text: &str) -> Enforcer {
        Enforcer::from_yaml_str(text).unwrap()
    }

    /// Evaluates `check` as a rule of its own, on top of the defaults.
    fn probe(check: &str, target: &Map<String, Value>, creds: &Credentials) -> bool {
        load(&format!("probe: {}", json!(check))).enforce("probe", target, creds)
    }

    /// `check` for a member of project p1, user u1, against a target in p1 created by u1.
    fn allows(check: &str) -> bool {
        probe(check, &target("p1", "u1"), &creds("p1", "u1", "member"))
    }

    #[test]
    fn at_sign_allows_bang_denies_and_empty_allows() {
        assert!(allows("@") && !allows("!") && allows("") && allows("   "));
    }

    #[test]
    fn and_needs_both_sides_and_or_needs_either() {
        assert!(allows("@ and @") && !allows("@ and !") && !allows("! and @"));
        assert!(allows("! or @") && allows("@ or !") && !allows("! or !"));
    }

    #[test]
    fn not_inverts_its_operand_and_can_be_repeated() {
        assert!(allows("not !") && !allows("not @") && allows("not not @"));
    }

    #[test]
    fn not_binds_tighter_than_and_which_binds_tighter_than_or() {
        // @ or (! and !); grouping left to right, (@ or !) and !, would deny.
        assert!(allows("@ or ! and !"));
        assert!(allows("! and ! or @"));
        // ((not @) and !) or @; not (@ and ! or @) would deny.
        assert!(allows("not @ and ! or @"));
        // (not !) and @ allows, (not @) and @ denies.
        assert!(allows("not ! and @") && !allows("not @ and @"));
    }

    #[test]
    fn parentheses_override_precedence_at_any_depth() {
        assert!(!allows("(@ or !) and !"));
        assert!(allows("not (@ and !)"));
        assert!(!allows("((((@ and (! or (not @))))))"));
        assert!(allows("(rule:context_is_admin)or(role:member)"));
    }

    #[test]
    fn keywords_are_case_insensitive_and_whitespace_is_free() {
        assert!(allows("! OR @") && !allows("@ And !") && allows("NOT !"));
        assert!(allows(
            "  (  role:member\tand\n project_id:%(project_id)s )  "
        ));
    }

    #[test]
    fn project_id_substitution_matches_the_target() {
        let me = creds("p1", "u1", "member");
        assert!(probe("project_id:%(project_id)s", &target("p1", "u2"), &me));
        assert!(!probe(
            "project_id:%(project_id)s",
            &target("p2", "u1"),
            &me
        ));
    }

    #[test]
    fn a_missing_or_null_target_key_makes_the_check_false() {
        let me = creds("p1", "u1", "member");
        let mut t = target("p1", "u1");
        assert!(!probe("project_id:%(owner)s", &t, &me));
        // An ordinary false: negating it allows.
        assert!(probe("not project_id:%(owner)s", &t, &me));
        t.insert("owner".into(), Value::Null);
        assert!(!probe("project_id:%(owner)s", &t, &me));
    }

    #[test]
    fn numbers_and_booleans_in_the_target_are_rendered_as_text() {
        let t = json!({"n": 42, "flag": true}).as_object().cloned().unwrap();
        let me = Credentials {
            project_id: Some("42".into()),
            is_admin: true,
            ..Default::default()
        };
        assert!(probe("project_id:%(n)s", &t, &me));
        assert!(probe("is_admin:%(flag)s", &t, &me));
        let me = Credentials {
            project_id: Some("442%".into()),
            ..me
        };
        assert!(probe("project_id:4%(n)s%%", &t, &me));
    }

    #[test]
    fn quoted_and_bare_literals_compare_with_credential_fields() {
        assert!(allows("user_id:'u1'") && allows("user_id:\"u1\"") && allows("user_id:u1"));
        assert!(!allows("user_id:u2") && allows("domain_id:default"));
        assert!(allows("is_admin:False and not is_admin:True"));
        assert!(allows("role:'member'"));
    }

    #[test]
    fn a_credential_field_that_is_none_never_matches() {
        let anonymous = Credentials {
            roles: vec!["member".into()],
            ..Default::default()
        };
        assert!(!probe(
            "user_id:%(user_id)s",
            &target("p1", "u1"),
            &anonymous
        ));
        assert!(!probe("project_id:p1", &target("p1", "u1"), &anonymous));
        // Unknown credential fields behave as absent ones, as in oslo.
        assert!(!allows("system_scope:all"));
    }

    #[test]
    fn system_scope_and_is_admin_project_come_from_the_credentials() {
        let system = Credentials {
            system_scope: Some("all".into()),
            roles: vec!["reader".into()],
            ..Default::default()
        };
        let t = target("p1", "u1");
        assert!(probe("system_scope:all", &t, &system));
        assert!(probe("role:reader and system_scope:all", &t, &system));
        assert!(!probe("system_scope:all", &t, &creds("p1", "u1", "reader")));
        assert!(probe(
            "is_admin_project:True",
            &t,
            &creds("p1", "u1", "admin")
        ));
        let elsewhere = Credentials {
            is_admin_project: false,
            ..creds("p1", "u1", "admin")
        };
        assert!(probe("is_admin_project:False", &t, &elsewhere));
        assert!(!probe("is_admin_project:True", &t, &elsewhere));
    }

    #[test]
    fn role_checks_are_case_insensitive() {
        assert!(allows("role:MEMBER"));
        assert!(probe(
            "role:admin",
            &target("p1", "u1"),
            &creds("p1", "u1", "Admin")
        ));
    }

    #[test]
    fn implied_roles_make_members_readers_and_admins_members() {
        let t = target("p1", "u1");
        assert!(probe("role:reader", &t, &creds("p1", "u1", "member")));
        assert!(probe("role:reader", &t, &creds("p1", "u1", "admin")));
        assert!(probe("role:member", &t, &creds("p1", "u1", "ADMIN")));
        assert!(!probe("role:member", &t, &creds("p1", "u1", "reader")));
        assert!(!probe("role:admin", &t, &creds("p1", "u1", "member")));
    }

    #[test]
    fn rule_references_are_followed_through_several_levels() {
        let enforcer = load("a: rule:b\nb: rule:c\nc: role:member\n");
        let t = target("p1", "u1");
        assert!(enforcer.enforce("a", &t, &creds("p1", "u1", "member")));
        assert!(!enforcer.enforce("a", &t, &creds("p1", "u1", "other")));
    }

    #[test]
    fn a_rule_cycle_denies_instead_of_overflowing_the_stack() {
        let enforcer = load("a: rule:b\nb: rule:a\nself: rule:self\nescape: rule:a or @\n");
        let (t, admin) = (target("p1", "u1"), admin_in("p1"));
        assert!(!enforcer.enforce("a", &t, &admin));
        assert!(!enforcer.enforce("self", &t, &admin));
        assert!(enforcer.enforce("escape", &t, &admin));
    }

    #[test]
    fn an_undefined_referenced_rule_denies() {
        assert!(!allows("rule:no_such_rule"));
        assert!(allows("rule:no_such_rule or role:member"));
    }

    #[test]
    fn an_unknown_rule_falls_back_to_the_default_rule_or_denies() {
        let (t, member) = (target("p1", "u1"), creds("p1", "u1", "member"));
        let enforcer = load("default: role:member");
        assert!(enforcer.enforce("widget:frobnicate", &t, &member));
        assert!(!enforcer.enforce("widget:frobnicate", &t, &creds("p1", "u1", "other")));
        let enforcer = Enforcer::with_defaults();
        assert!(!enforcer.has_rule(FALLBACK_RULE));
        assert!(!enforcer.enforce("widget:frobnicate", &t, &admin_in("p1")));
    }

    #[test]
    fn a_yaml_override_of_one_default_keeps_the_others() {
        let enforcer = load("# ops\n\"cluster:get\": \"rule:context_is_admin\"\nextra: ''\n");
        let (t, member) = (target("p1", "u1"), creds("p1", "u1", "member"));
        assert!(!enforcer.enforce("cluster:get", &t, &member));
        assert!(enforcer.enforce("cluster:get_all", &t, &member));
        assert!(enforcer.enforce("extra", &t, &Credentials::default()));
        assert_eq!(enforcer.check_str("cluster:get"), Some(ADMIN));
        assert_eq!(
            enforcer.check_str("cluster:create"),
            Some(MEMBER_DENY_CLUSTER_USER)
        );
    }

    #[test]
    fn a_json_policy_file_parses_and_overrides() {
        let path = std::env::temp_dir().join(format!("fy-policy-{}.json", std::process::id()));
        let text = "{\n\t\"quota:get_all\": \"rule:admin_or_project_reader\",\n\t\"x\": \"!\"\n}";
        std::fs::write(&path, text).unwrap();
        let loaded = Enforcer::from_file(&path);
        std::fs::remove_file(&path).unwrap();
        let enforcer = loaded.unwrap();
        let reader = creds("p1", "u1", "reader");
        assert!(enforcer.enforce("quota:get_all", &target("p1", "u1"), &reader));
        assert!(!enforcer.enforce("x", &target("p1", "u1"), &admin_in("p1")));
    }

    #[test]
    fn a_missing_policy_file_errors_naming_the_path() {
        let error = Enforcer::from_file(Path::new("/nonexistent/policy.yaml")).unwrap_err();
        assert!(
            error.to_string().contains("/nonexistent/policy.yaml"),
            "{error}"
        );
    }

    #[test]
    fn a_malformed_document_errors_with_the_reason() {
        for text in ["a: [", "- a\n- b\n", "a: b\na: c\n", "1: '@'"] {
            match Enforcer::from_yaml_str(text) {
                Err(PolicyError::Parse { path, reason }) => {
                    assert_eq!(path, Path::new("<string>"));
                    assert!(!reason.is_empty());
                }
                other => panic!("{text:?} gave {other:?}"),
            }
        }
    }

    #[test]
    fn a_malformed_check_string_errors_naming_the_rule() {
        let bad = "(role:member\nrole:member)\nrole:member and\nand @\nnot\n()\n\
                   role:member role:x\nmember\nrole:\n:x\nrule:%(x)s\nproject_id:%(x)d\n\
                   project_id:%(x\nuser_id:'u1\n'member':%(role)s\nhttp://example.com";
        for check in bad.lines() {
            let yaml = format!("\"cluster:get\": {}", json!(check));
            match Enforcer::from_yaml_str(&yaml) {
                Err(e @ PolicyError::InvalidRule { .. }) => {
                    assert!(e.to_string().contains("\"cluster:get\""), "{e}");
                }
                other => panic!("{check:?} gave {other:?}"),
            }
        }
        let error = Enforcer::from_yaml_str("x: null").unwrap_err();
        assert!(error.to_string().contains("\"x\""), "{error}");
    }

    #[test]
    fn absurd_nesting_is_an_error_not_a_crash() {
        let deep = format!("{}@{}", "(".repeat(10_000), ")".repeat(10_000));
        assert!(parse_check_str(&deep).is_err());
        assert!(parse_check_str(&"not ".repeat(10_000)).is_err());
        let fine = format!("{}@{}", "(".repeat(MAX_DEPTH), ")".repeat(MAX_DEPTH));
        assert_eq!(parse_check_str(&fine), Ok(Check::True));
    }

    #[test]
    fn is_admin_evaluates_context_is_admin_and_ignores_the_flag() {
        let enforcer = Enforcer::with_defaults();
        assert!(enforcer.is_admin(&creds("any", "u1", "admin")));
        let flagged = Credentials {
            is_admin: true,
            ..creds("p1", "u1", "member")
        };
        assert!(!enforcer.is_admin(&flagged));
        let flag_based = load("context_is_admin: is_admin:True or role:boss");
        assert!(!flag_based.is_admin(&flagged));
        assert!(flag_based.is_admin(&creds("p1", "u1", "boss")));
    }

    #[test]
    fn every_default_parses_and_refers_only_to_earlier_rules() {
        let mut seen = std::collections::HashSet::new();
        for rule in Enforcer::defaults() {
            assert!(parse_check_str(rule.check_str).is_ok(), "{}", rule.name);
            assert!(seen.insert(rule.name), "duplicate {}", rule.name);
            assert!(!rule.description.is_empty(), "{}", rule.name);
            // Base rules protect no operation; resource rules (`x:y`) protect at least one.
            assert_eq!(
                rule.name.contains(':'),
                !rule.operations.is_empty(),
                "{}",
                rule.name
            );
            for word in rule.check_str.split(['(', ')', ' ']) {
                if let Some(name) = word.strip_prefix("rule:") {
                    assert!(seen.contains(name), "{} refers to {name}", rule.name);
                }
            }
        }
    }

    #[test]
    fn an_admin_is_allowed_every_resource_rule_in_any_project() {
        let enforcer = Enforcer::with_defaults();
        let t = target("p1", "u1");
        for rule in Enforcer::defaults().iter().filter(|r| r.name.contains(':')) {
            assert!(
                enforcer.enforce(rule.name, &t, &admin_in("p1")),
                "{}",
                rule.name
            );
            // Only credential rotation needs the admin to be in the cluster's project.
            let elsewhere = enforcer.enforce(rule.name, &t, &admin_in("p9"));
            assert_eq!(elsewhere, rule.name != "credential:rotate", "{}", rule.name);
        }
    }

    #[test]
    fn a_project_member_is_allowed_on_their_own_projects_cluster() {
        let enforcer = Enforcer::with_defaults();
        let (t, member) = (target("p1", "creator"), creds("p1", "u1", "member"));
        let rules = "cluster:get cluster:create cluster:update cluster:delete cluster:resize \
                     nodegroup:create credential:rotate federation:join certificate:get \
                     certificate:create certificate:rotate_ca registry:update";
        for rule in rules.split_whitespace() {
            assert!(enforcer.enforce(rule, &t, &member), "{rule}");
        }
        // Health status stays with the cluster's creator, as in Magnum.
        assert!(!enforcer.enforce("cluster:update_health_status", &t, &member));
        let own = target("p1", "u1");
        assert!(enforcer.enforce("cluster:update_health_status", &own, &member));
    }

    #[test]
    fn member_of_another_project_is_denied_cluster_get() {
        let enforcer = Enforcer::with_defaults();
        let outsider = creds("p2", "u1", "member");
        for rule in "cluster:get cluster:delete certificate:get nodegroup:get".split(' ') {
            assert!(
                !enforcer.enforce(rule, &target("p1", "u1"), &outsider),
                "{rule}"
            );
        }
    }

    #[test]
    fn a_reader_can_get_but_not_create() {
        let enforcer = Enforcer::with_defaults();
        let (t, reader) = (target("p1", "u1"), creds("p1", "u1", "reader"));
        let reads = "cluster:get cluster:get_all clustertemplate:detail quota:get stats:get_all \
                     registry:list certificate:get";
        for rule in reads.split_whitespace() {
            assert!(enforcer.enforce(rule, &t, &reader), "{rule}");
        }
        let writes = "cluster:create clustertemplate:create nodegroup:create federation:create \
                      certificate:create registry:create";
        for rule in writes.split_whitespace() {
            assert!(!enforcer.enforce(rule, &t, &reader), "{rule}");
        }
    }

    #[test]
    fn admin_only_rules_deny_project_members() {
        let enforcer = Enforcer::with_defaults();
        let (t, member) = (target("p1", "u1"), creds("p1", "u1", "member"));
        let rules = "quota:create quota:get_all magnum-service:get_all clustertemplate:publish \
                     cluster:get_all_all_projects federation:get_all_all_projects";
        for rule in rules.split_whitespace() {
            assert!(!enforcer.enforce(rule, &t, &member), "{rule}");
            assert!(enforcer.enforce(rule, &t, &admin_in("p9")), "{rule}");
        }
    }

    #[test]
    fn privileged_subjects_follow_magnum_the_clusters_members_and_admins() {
        let enforcer = Enforcer::with_defaults();
        let rule = "certificate:create_privileged";
        assert_eq!(
            enforcer.check_str(rule),
            Some("rule:admin_or_project_member")
        );
        let t = target("p1", "u1");
        // The creator, another member of the cluster's project, and an admin.
        assert!(enforcer.enforce(rule, &t, &creds("p1", "u1", "member")));
        assert!(enforcer.enforce(rule, &t, &creds("p1", "u2", "member")));
        assert!(enforcer.enforce(rule, &t, &admin_in("p9")));
        // A reader of the project and a member of another project are refused.
        assert!(!enforcer.enforce(rule, &t, &creds("p1", "u1", "reader")));
        assert!(!enforcer.enforce(rule, &t, &creds("p2", "u1", "member")));
    }

    #[test]
    fn an_operator_can_restrict_privileged_subjects_to_admins_or_the_creator() {
        let t = target("p1", "u1");
        let admins = load("\"certificate:create_privileged\": \"rule:context_is_admin\"");
        let rule = "certificate:create_privileged";
        assert!(!admins.enforce(rule, &t, &creds("p1", "u1", "member")));
        assert!(admins.enforce(rule, &t, &admin_in("p9")));
        let creator =
            load("\"certificate:create_privileged\": \"rule:admin_or_project_member_user\"");
        assert!(creator.enforce(rule, &t, &creds("p1", "u1", "member")));
        assert!(!creator.enforce(rule, &t, &creds("p1", "u2", "member")));
    }

    #[test]
    fn the_sample_mentions_every_rule_and_parses_to_the_defaults() {
        let sample = Enforcer::sample_yaml();
        assert!(sample
            .lines()
            .all(|line| line.is_empty() || line.starts_with('#')));
        assert!(sample.contains("# POST  /v1/clusters\n"));
        let parsed = load(&sample);
        assert_eq!(parsed.rules.len(), Enforcer::defaults().len());
        for rule in Enforcer::defaults() {
            let line = format!("#{}: {}\n", json!(rule.name), json!(rule.check_str));
            assert!(sample.contains(&line), "{line}");
            assert_eq!(parsed.check_str(rule.name), Some(rule.check_str));
        }
        // Uncommenting every rule line gives a policy file equal to the defaults.
        let rules_only: String = sample
            .lines()
            .filter_map(|line| line.strip_prefix("#\""))
            .map(|line| format!("\"{line}\n"))
            .collect();
        assert_eq!(load(&rules_only).rules.len(), Enforcer::defaults().len());
    }

    #[test]
    fn the_sample_policy_file_is_the_generated_default() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/etc/policy.yaml.sample");
        let text = std::fs::read_to_string(path).expect("sample exists");
        assert_eq!(
            text,
            crate::auth::policy::Enforcer::sample_yaml(),
            "regenerate with: fleetyard policy sample > etc/policy.yaml.sample"
        );
    }

    /// A chain of rules each referring twice to the next (found by the `policy_file` fuzz
    /// target's inputs): 2^40 evaluations before, now cut short after
    /// [`MAX_RULE_REFERENCES`] and denied, also under `not`.
    #[rstest::rstest]
    #[case::plain("rule:r0")]
    #[case::negated("not rule:r0")]
    fn doubling_rule_chains_are_cut_short_and_deny(#[case] entry: &str) {
        let mut text = format!("\"cluster:create\": \"{entry}\"\n");
        for i in 0..40 {
            text.push_str(&format!(
                "r{i}: \"rule:r{next} or rule:r{next}\"\n",
                next = i + 1
            ));
        }
        text.push_str("r40: \"!\"\n");
        let enforcer = load(&text);
        let started = std::time::Instant::now();
        assert!(!enforcer.enforce("cluster:create", &target("p1", "u1"), &admin_in("p1")));
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
    }

    #[test]
    fn shallow_repeated_references_still_evaluate() {
        let enforcer = load("\"cluster:create\": \"rule:a or rule:a\"\na: \"rule:b and rule:b\"\nb: \"role:member\"\n");
        assert!(enforcer.enforce(
            "cluster:create",
            &target("p1", "u1"),
            &creds("p1", "u1", "member")
        ));
        assert!(!enforcer.enforce(
            "cluster:create",
            &target("p1", "u1"),
            &creds("p1", "u1", "reader")
        ));
    }
}
