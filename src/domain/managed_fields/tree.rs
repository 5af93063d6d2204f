//! The object trees field ownership walks: which lists are atomic, sets or keyed maps
//! ([`Schema`]), the field set of an object, what changed between two objects, an applied
//! configuration merged into the live object, and a field removed.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::fieldset::{FieldSet, Path, PathElement};

/// How a list is owned, by the field names leading to it (list keys skipped).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListKind {
    /// Each item (a scalar) its own field.
    Set,
    /// Each item its own field, by the values of these fields of the item.
    Map(&'static [&'static str]),
}

/// The lists of an object type that are not atomic (every object is a granular map), and the
/// paths no manager owns (the API server owns `metadata` itself).
#[derive(Debug, Clone, Copy)]
pub struct Schema {
    pub lists: &'static [(&'static [&'static str], ListKind)],
    pub untracked: &'static [&'static [&'static str]],
}

/// What the API server keeps out of every manager's fields: the `metadata` object itself (its
/// server-owned fields are left out of the objects compared).
pub const UNTRACKED: &[&[&str]] = &[&["metadata"]];

/// `metav1.ObjectMeta`'s lists, as the API server's schema declares them.
pub const OBJECT_META_LISTS: &[(&[&str], ListKind)] = &[
    (&["metadata", "finalizers"], ListKind::Set),
    (&["metadata", "ownerReferences"], ListKind::Map(&["uid"])),
];

impl Schema {
    /// `set` without the untracked paths.
    fn tracked(&self, mut set: FieldSet) -> FieldSet {
        for p in self.untracked {
            let path: Path = p
                .iter()
                .map(|f| PathElement::Field(f.to_string()))
                .collect();
            set.0.remove(&path);
        }
        set
    }

    fn list_kind(&self, path: &[PathElement]) -> Option<ListKind> {
        let names: Vec<&str> = path
            .iter()
            .filter_map(|pe| match pe {
                PathElement::Field(f) => Some(f.as_str()),
                _ => None,
            })
            .collect();
        self.lists
            .iter()
            .find(|(p, _)| *p == names.as_slice())
            .map(|(_, k)| *k)
    }

    /// The items of a granular list at `path`, each with its path element; `None` for an
    /// atomic list (or items without their keys, which the list is then owned as one).
    fn items<'a>(
        &self,
        path: &[PathElement],
        items: &'a [Value],
    ) -> Option<Vec<(PathElement, &'a Value)>> {
        let kind = self.list_kind(path)?;
        let mut out = Vec::with_capacity(items.len());
        for item in items {
            let pe = match kind {
                ListKind::Set => match item {
                    Value::Object(_) | Value::Array(_) => return None,
                    v => PathElement::Value(v.to_string()),
                },
                ListKind::Map(keys) => {
                    let mut k: Vec<(String, String)> = Vec::with_capacity(keys.len());
                    for key in keys {
                        k.push((key.to_string(), item.get(*key)?.to_string()));
                    }
                    k.sort();
                    PathElement::Key(k)
                }
            };
            out.push((pe, item));
        }
        Some(out)
    }
}

/// The fields an applied configuration sets: every scalar and atomic list, and every item of
/// a granular list (objects themselves are not fields of their own).
pub fn to_field_set(schema: &Schema, v: &Value) -> FieldSet {
    fn walk(schema: &Schema, v: &Value, path: &mut Path, out: &mut BTreeSet<Path>) {
        match v {
            Value::Object(m) => {
                for (k, child) in m {
                    path.push(PathElement::Field(k.clone()));
                    walk(schema, child, path, out);
                    path.pop();
                }
            }
            Value::Array(items) => match schema.items(path, items) {
                Some(items) => {
                    for (pe, item) in items {
                        path.push(pe);
                        walk(schema, item, path, out);
                        out.insert(path.clone());
                        path.pop();
                    }
                }
                None => {
                    out.insert(path.clone());
                }
            },
            _ => {
                out.insert(path.clone());
            }
        }
    }
    let mut out = BTreeSet::new();
    walk(schema, v, &mut Vec::new(), &mut out);
    out.remove(&Vec::new());
    schema.tracked(FieldSet(out))
}

/// What changed between two versions of an object.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Comparison {
    pub added: FieldSet,
    pub modified: FieldSet,
    pub removed: FieldSet,
}

/// Compares `old` and `new` as structured-merge-diff does: a scalar or atomic list present in
/// both is modified when its value differs; a field, object or list item present in one only
/// is added or removed, with everything under it.
pub fn compare(schema: &Schema, old: &Value, new: &Value) -> Comparison {
    fn all(schema: &Schema, v: &Value, path: &mut Path, into: &mut BTreeSet<Path>) {
        into.insert(path.clone());
        match v {
            Value::Object(m) => {
                for (k, child) in m {
                    path.push(PathElement::Field(k.clone()));
                    all(schema, child, path, into);
                    path.pop();
                }
            }
            Value::Array(items) => {
                if let Some(items) = schema.items(path, items) {
                    for (pe, item) in items {
                        path.push(pe);
                        all(schema, item, path, into);
                        path.pop();
                    }
                }
            }
            _ => {}
        }
    }
    fn walk(schema: &Schema, old: &Value, new: &Value, path: &mut Path, c: &mut Comparison) {
        match (old, new) {
            (Value::Object(a), Value::Object(b)) => {
                for (k, av) in a {
                    path.push(PathElement::Field(k.clone()));
                    match b.get(k) {
                        Some(bv) => walk(schema, av, bv, path, c),
                        None => all(schema, av, path, &mut c.removed.0),
                    }
                    path.pop();
                }
                for (k, bv) in b {
                    if !a.contains_key(k) {
                        path.push(PathElement::Field(k.clone()));
                        all(schema, bv, path, &mut c.added.0);
                        path.pop();
                    }
                }
            }
            (Value::Array(a), Value::Array(b)) => {
                match (schema.items(path, a), schema.items(path, b)) {
                    (Some(ai), Some(bi)) => {
                        let bmap: BTreeMap<&PathElement, &Value> =
                            bi.iter().map(|(pe, v)| (pe, *v)).collect();
                        let amap: BTreeMap<&PathElement, &Value> =
                            ai.iter().map(|(pe, v)| (pe, *v)).collect();
                        for (pe, av) in &amap {
                            path.push((*pe).clone());
                            match bmap.get(pe) {
                                Some(bv) => walk(schema, av, bv, path, c),
                                None => all(schema, av, path, &mut c.removed.0),
                            }
                            path.pop();
                        }
                        for (pe, bv) in &bmap {
                            if !amap.contains_key(pe) {
                                path.push((*pe).clone());
                                all(schema, bv, path, &mut c.added.0);
                                path.pop();
                            }
                        }
                    }
                    _ => {
                        if a != b {
                            c.modified.0.insert(path.clone());
                        }
                    }
                }
            }
            (a, b) => {
                if a != b {
                    c.modified.0.insert(path.clone());
                }
            }
        }
    }
    let mut c = Comparison::default();
    walk(schema, old, new, &mut Vec::new(), &mut c);
    for s in [&mut c.added, &mut c.modified, &mut c.removed] {
        s.0.remove(&Vec::new());
        *s = schema.tracked(std::mem::take(s));
    }
    c
}

/// Merges an applied configuration into the live object: objects key by key, granular list
/// items by their key (live order kept, new items after), everything else replaced.
pub fn merge(schema: &Schema, live: &Value, applied: &Value) -> Value {
    fn walk(schema: &Schema, live: &Value, applied: &Value, path: &mut Path) -> Value {
        match (live, applied) {
            (Value::Object(l), Value::Object(a)) => {
                let mut out = l.clone();
                for (k, av) in a {
                    path.push(PathElement::Field(k.clone()));
                    let merged = match l.get(k) {
                        Some(lv) => walk(schema, lv, av, path),
                        None => av.clone(),
                    };
                    path.pop();
                    out.insert(k.clone(), merged);
                }
                Value::Object(out)
            }
            (Value::Array(l), Value::Array(a)) => {
                match (schema.items(path, l), schema.items(path, a)) {
                    (Some(li), Some(ai)) => {
                        let amap: BTreeMap<&PathElement, &Value> =
                            ai.iter().map(|(pe, v)| (pe, *v)).collect();
                        let mut seen = BTreeSet::new();
                        let mut out = Vec::new();
                        for (pe, lv) in &li {
                            if !seen.insert(pe.clone()) {
                                continue;
                            }
                            path.push(pe.clone());
                            out.push(match amap.get(pe) {
                                Some(av) => walk(schema, lv, av, path),
                                None => (*lv).clone(),
                            });
                            path.pop();
                        }
                        for (pe, av) in &ai {
                            if seen.insert(pe.clone()) {
                                out.push((*av).clone());
                            }
                        }
                        Value::Array(out)
                    }
                    _ => applied.clone(),
                }
            }
            _ => applied.clone(),
        }
    }
    walk(schema, live, applied, &mut Vec::new())
}

/// Removes the field at `path` (and everything under it) from `v`.
pub fn remove_path(schema: &Schema, v: &mut Value, path: &[PathElement]) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut cur = v;
    for (i, pe) in parents.iter().enumerate() {
        let next = match (pe, cur) {
            (PathElement::Field(f), Value::Object(m)) => m.get_mut(f),
            (pe, Value::Array(items)) => {
                let pos = item_position(schema, &path[..i], items, pe);
                match pos {
                    Some(p) => items.get_mut(p),
                    None => None,
                }
            }
            _ => None,
        };
        match next {
            Some(n) => cur = n,
            None => return,
        }
    }
    match (last, cur) {
        (PathElement::Field(f), Value::Object(m)) => {
            m.remove(f);
        }
        (pe, Value::Array(items)) => {
            if let Some(p) = item_position(schema, parents, items, pe) {
                items.remove(p);
            }
        }
        _ => {}
    }
}

fn item_position(
    schema: &Schema,
    list_path: &[PathElement],
    items: &[Value],
    pe: &PathElement,
) -> Option<usize> {
    if let PathElement::Index(i) = pe {
        return usize::try_from(*i).ok().filter(|i| *i < items.len());
    }
    schema
        .items(list_path, items)?
        .iter()
        .position(|(p, _)| p == pe)
}
