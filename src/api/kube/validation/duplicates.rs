//! Keys given twice in one JSON object, found on the raw body (a parsed `Value` keeps only the
//! last), reported as the apiserver's strict decoder reports them.

use std::cell::RefCell;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

use crate::api::kube::schema;

/// Seed that walks raw JSON and records the paths of keys seen twice in one object.
pub(super) struct Dup<'a> {
    path: String,
    out: &'a RefCell<Vec<String>>,
}

impl<'de> DeserializeSeed<'de> for Dup<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Dup<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut i = 0usize;
        while seq
            .next_element_seed(Dup {
                path: format!("{}[{i}]", self.path),
                out: self.out,
            })?
            .is_some()
        {
            i += 1;
        }
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = std::collections::HashSet::new();
        while let Some(k) = map.next_key::<String>()? {
            let child = if self.path.is_empty() {
                k.clone()
            } else {
                format!("{}.{k}", self.path)
            };
            if !seen.insert(k) {
                let mut out = self.out.borrow_mut();
                if out.len() < schema::MAX_UNKNOWN_REPORTED && !out.contains(&child) {
                    out.push(child.clone());
                }
            }
            map.next_value_seed(Dup {
                path: child,
                out: self.out,
            })?;
        }
        Ok(())
    }
}

/// Paths of keys that appear twice in one object of a raw JSON body (`metadata.name`), at
/// most 100; empty for a body that is not JSON.
pub fn duplicate_fields(raw: &[u8]) -> Vec<String> {
    let out = RefCell::new(Vec::new());
    let mut de = serde_json::Deserializer::from_slice(raw);
    let _ = Dup {
        path: String::new(),
        out: &out,
    }
    .deserialize(&mut de);
    out.into_inner()
}
