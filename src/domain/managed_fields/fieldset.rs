//! Field paths and sets of them, in the API server's `FieldsV1` form and its conflict form.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

/// One step of a field path.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PathElement {
    /// A field of an object (`f:name`).
    Field(String),
    /// An item of a keyed list, by its key fields (`k:{"uid":"…"}`); values are JSON text,
    /// names sorted.
    Key(Vec<(String, String)>),
    /// An item of a set list, by its value as JSON text (`v:"x"`).
    Value(String),
    /// An item of a list by position (`i:0`).
    Index(u64),
}

impl PathElement {
    /// The `FieldsV1` key of the element.
    fn fields_v1_key(&self) -> String {
        match self {
            PathElement::Field(f) => format!("f:{f}"),
            PathElement::Key(keys) => {
                let mut m = Map::new();
                for (k, v) in keys {
                    m.insert(
                        k.clone(),
                        serde_json::from_str(v).unwrap_or(Value::String(v.clone())),
                    );
                }
                format!("k:{}", Value::Object(m))
            }
            PathElement::Value(v) => format!("v:{v}"),
            PathElement::Index(i) => format!("i:{i}"),
        }
    }

    fn from_fields_v1_key(key: &str) -> Option<PathElement> {
        let (kind, rest) = key.split_once(':')?;
        match kind {
            "f" => Some(PathElement::Field(rest.to_string())),
            "v" => serde_json::from_str::<Value>(rest)
                .ok()
                .map(|v| PathElement::Value(v.to_string())),
            "i" => rest.parse().ok().map(PathElement::Index),
            "k" => match serde_json::from_str::<Value>(rest).ok()? {
                Value::Object(m) => Some(PathElement::Key(
                    m.into_iter().map(|(k, v)| (k, v.to_string())).collect(),
                )),
                _ => None,
            },
            _ => None,
        }
    }
}

/// A field path from the object's root.
pub type Path = Vec<PathElement>;

/// A path as the API server prints it in conflicts: `.spec.x`, `.metadata.labels.env`,
/// `.metadata.ownerReferences[uid="…"]`, `.metadata.finalizers[="f"]`.
pub fn path_string(path: &[PathElement]) -> String {
    let mut s = String::new();
    for pe in path {
        match pe {
            PathElement::Field(f) => {
                s.push('.');
                s.push_str(f);
            }
            PathElement::Key(keys) => {
                let parts: Vec<String> = keys.iter().map(|(k, v)| format!("{k}={v}")).collect();
                s.push('[');
                s.push_str(&parts.join(","));
                s.push(']');
            }
            PathElement::Value(v) => {
                s.push_str("[=");
                s.push_str(v);
                s.push(']');
            }
            PathElement::Index(i) => s.push_str(&format!("[{i}]")),
        }
    }
    s
}

/// A set of field paths.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSet(pub BTreeSet<Path>);

impl FieldSet {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn contains(&self, p: &[PathElement]) -> bool {
        self.0.contains(p)
    }

    /// Whether the set holds `p` or a path under it.
    pub fn covers(&self, p: &[PathElement]) -> bool {
        self.0
            .range(p.to_vec()..)
            .next()
            .is_some_and(|q| q.starts_with(p))
    }

    pub fn union(&self, other: &FieldSet) -> FieldSet {
        FieldSet(self.0.union(&other.0).cloned().collect())
    }

    pub fn difference(&self, other: &FieldSet) -> FieldSet {
        FieldSet(self.0.difference(&other.0).cloned().collect())
    }

    pub fn intersection(&self, other: &FieldSet) -> FieldSet {
        FieldSet(self.0.intersection(&other.0).cloned().collect())
    }

    /// The set in the API server's `FieldsV1` form.
    pub fn to_fields_v1(&self) -> Value {
        #[derive(Default)]
        struct Node {
            member: bool,
            children: BTreeMap<PathElement, Node>,
        }
        let mut root = Node::default();
        for p in &self.0 {
            let mut n = &mut root;
            for pe in p {
                n = n.children.entry(pe.clone()).or_default();
            }
            n.member = true;
        }
        fn emit(n: &Node) -> Value {
            let mut m = Map::new();
            if n.member && !n.children.is_empty() {
                m.insert(".".into(), Value::Object(Map::new()));
            }
            for (pe, child) in &n.children {
                m.insert(pe.fields_v1_key(), emit(child));
            }
            Value::Object(m)
        }
        emit(&root)
    }

    /// Reads a `FieldsV1` object; `None` when it is not one.
    pub fn from_fields_v1(v: &Value) -> Option<FieldSet> {
        fn walk(v: &Value, prefix: &mut Path, out: &mut BTreeSet<Path>) -> Option<()> {
            let m = v.as_object()?;
            if m.is_empty() && !prefix.is_empty() {
                out.insert(prefix.clone());
            }
            for (k, child) in m {
                if k == "." {
                    if !prefix.is_empty() {
                        out.insert(prefix.clone());
                    }
                    continue;
                }
                prefix.push(PathElement::from_fields_v1_key(k)?);
                walk(child, prefix, out)?;
                prefix.pop();
            }
            Some(())
        }
        let mut out = BTreeSet::new();
        walk(v, &mut Vec::new(), &mut out)?;
        Some(FieldSet(out))
    }
}

impl Serialize for FieldSet {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_fields_v1().serialize(s)
    }
}

impl<'de> Deserialize<'de> for FieldSet {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        FieldSet::from_fields_v1(&v).ok_or_else(|| serde::de::Error::custom("not a FieldsV1 set"))
    }
}
