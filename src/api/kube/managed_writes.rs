//! The field ownership of one write to an object that keeps `metadata.managedFields`
//! (machines, machine deployments; each its [`Kind`]): a create records its manager's `Update`
//! entry; a replace or a merge/JSON patch records its manager's `Update` entry on the fields it
//! changed; a server-side apply takes the fields it names for its manager (409 when another
//! manager owns one it would change, unless `force`); a subresource's writes record entries
//! naming it. The rules are [`crate::domain::managed_fields`], the shared checks
//! [`crate::api::kube::managed`].

use actix_web::web::Bytes;
use actix_web::HttpRequest;
use serde_json::{Map, Value};

use crate::api::kube::managed::{self, Kind, Part};
use crate::api::kube::patch;
use crate::api::kube::request::Params;
use crate::api::kube::status::{KubeError, CREATE_OPTIONS, PATCH_OPTIONS, UPDATE_OPTIONS};
use crate::domain::managed_fields::{ManagedFields, ManagerId, Operation, Sent};

/// Whether a content type is server-side apply's.
fn is_apply(content_type: &str) -> bool {
    content_type.starts_with("application/apply-patch")
}

/// Who writes, and how: the field manager and operation, `force`, and an apply's
/// configuration.
pub(in crate::api::kube) struct Writer {
    kind: &'static Kind,
    id: ManagerId,
    force: bool,
    applied: Option<Value>,
    part: Part,
}

impl Writer {
    /// The writer of a replace (`content_type` None) or a patch of `content_type` to `part`
    /// of machine `name`: its manager checked (422), an apply's configuration read and checked
    /// (400: its apiVersion, kind and no managedFields; 422 without a fieldManager), `force`
    /// only with an apply (422).
    pub(in crate::api::kube) fn of(
        kind: &'static Kind,
        req: &HttpRequest,
        p: &Params,
        content_type: Option<&str>,
        part: Part,
        (namespace, name): (&str, &str),
        body: &Bytes,
    ) -> Result<Writer, KubeError> {
        let apply = content_type.is_some_and(is_apply);
        if apply {
            managed::require_apply_manager(p.field_manager.as_deref())?;
        }
        let (options, force) = match content_type {
            None => (&UPDATE_OPTIONS, false),
            Some(_) => (&PATCH_OPTIONS, managed::force(p.force.as_deref(), apply)?),
        };
        let manager = managed::manager(req, p.field_manager.as_deref(), options)?;
        let applied = if apply {
            let applied = patch::parse_applied(body)?;
            managed::check_applied(kind, &applied, namespace, name)?;
            Some(applied)
        } else {
            None
        };
        Ok(Writer {
            kind,
            id: ManagerId::new(&manager, managed::operation(apply), part.subresource()),
            force,
            applied,
            part,
        })
    }

    /// The same writer through subresource `name` of the main part (a `scale`): its entries
    /// name it.
    pub(in crate::api::kube) fn through(mut self, subresource: &str) -> Writer {
        self.id = ManagerId::new(&self.id.manager, self.id.operation, subresource);
        self
    }

    /// Whether the write is a server-side apply.
    pub(in crate::api::kube) fn is_apply(&self) -> bool {
        self.applied.is_some()
    }

    /// An apply's configuration (named `name`) and the entries it leaves on the object it
    /// makes when there is none yet (nothing to conflict with: `force` changes nothing); another
    /// name than the URL's is a 400, a stated resourceVersion or uid a 409 (nothing has them).
    pub(in crate::api::kube) fn creation(
        &self,
        name: &str,
    ) -> Result<(Value, ManagedFields), KubeError> {
        let Some(applied) = &self.applied else {
            return Err(KubeError::not_found(self.kind.resource, name));
        };
        let stated = |key: &str| applied["metadata"][key].as_str().filter(|v| !v.is_empty());
        if let Some(other) = stated("name").filter(|n| *n != name) {
            return Err(KubeError::bad_request(format!(
                "the name of the object ({other}) does not match the name on the URL ({name})"
            )));
        }
        if stated("resourceVersion").is_some() || stated("uid").is_some() {
            return Err(KubeError::conflict(self.kind.resource, name));
        }
        let mut fields = ManagedFields::default();
        managed::apply(
            self.kind,
            &mut fields,
            None,
            applied,
            self.part,
            &self.id,
            self.force,
        )?;
        let mut value = applied.clone();
        value["metadata"]["name"] = Value::String(name.to_string());
        Ok((value, fields))
    }

    /// The object the write asks for: an apply's configuration merged into `current` (with
    /// the entries it leaves), or what `other` makes of `current` (entries recorded later, by
    /// [`Writer::fields`]).
    pub(in crate::api::kube) fn desired(
        &self,
        live: &ManagedFields,
        current: &Value,
        other: impl FnOnce(&Value) -> Result<Value, KubeError>,
    ) -> Result<(Value, Option<ManagedFields>), KubeError> {
        let Some(applied) = &self.applied else {
            return Ok((other(current)?, None));
        };
        let mut fields = live.clone();
        let merged = managed::apply(
            self.kind,
            &mut fields,
            Some(current),
            applied,
            self.part,
            &self.id,
            self.force,
        )?;
        Ok((
            whole(self.kind, self.part, &merged, current, applied),
            Some(fields),
        ))
    }

    /// The entries the write leaves on `e` (shown as `current`) once it shows as `new`: an
    /// apply's, or this update's recorded on those the request `sent` (the live ones when it
    /// sent none).
    pub(in crate::api::kube) fn fields(
        &self,
        live: &ManagedFields,
        applied: Option<ManagedFields>,
        sent: Sent,
        (current, new): (&Value, &Value),
    ) -> Result<ManagedFields, KubeError> {
        if let Some(m) = applied {
            return Ok(m);
        }
        // A subresource's writes never set the entries themselves.
        let sent = if !self.id.subresource.is_empty() {
            Sent::Keep
        } else {
            sent
        };
        let m = ManagedFields::record_update(
            live,
            sent,
            true,
            &managed::SCHEMA,
            &managed::tracked(self.kind, current, self.part),
            &managed::tracked(self.kind, new, self.part),
            &self.id,
            self.kind.api_version,
            chrono::Utc::now(),
        );
        let name = current["metadata"]["name"].as_str().unwrap_or("");
        managed::check_entries(self.kind, &m, name)?;
        Ok(m)
    }
}

/// The whole object an apply leaves: `current` with the merged `part` (the tracked fields,
/// [`managed::tracked`]) in place of its own, the derived annotations and owner as they are,
/// and the metadata the configuration states as preconditions (name, namespace, uid,
/// resourceVersion) kept for the checks that follow.
pub(in crate::api::kube) fn whole(
    of: &Kind,
    part: Part,
    merged: &Value,
    current: &Value,
    applied: &Value,
) -> Value {
    let mut out = current.clone();
    let Some(o) = out.as_object_mut() else {
        return out;
    };
    match part {
        Part::Status => {
            if let Some(s) = merged.get("status") {
                o.insert("status".into(), s.clone());
            }
        }
        Part::Main => {
            let live = managed::tracked(of, current, Part::Main);
            let mut keys: Vec<String> = live
                .as_object()
                .into_iter()
                .chain(merged.as_object())
                .flat_map(|m| m.keys().cloned())
                .filter(|k| k != "metadata")
                .collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                match merged.get(&k) {
                    Some(v) => o.insert(k, v.clone()),
                    None => o.remove(&k),
                };
            }
            let mut meta = o
                .get("metadata")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            let live_meta = live["metadata"].as_object().cloned().unwrap_or_default();
            let want = merged["metadata"].as_object().cloned().unwrap_or_default();
            let mut keys: Vec<&String> = live_meta.keys().chain(want.keys()).collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                if k == "annotations" {
                    continue;
                }
                match want.get(k) {
                    Some(v) => meta.insert(k.clone(), v.clone()),
                    None => meta.remove(k),
                };
            }
            let mut annotations: Map<String, Value> = want
                .get("annotations")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            if let Some(shown) = current["metadata"]["annotations"].as_object() {
                for derived in of.derived_annotations {
                    if let Some(v) = shown.get(*derived) {
                        annotations.insert((*derived).to_string(), v.clone());
                    }
                }
            }
            if annotations.is_empty() {
                meta.remove("annotations");
            } else {
                meta.insert("annotations".into(), Value::Object(annotations));
            }
            o.insert("metadata".into(), Value::Object(meta));
        }
    }
    for key in ["name", "namespace", "uid", "resourceVersion"] {
        if let Some(v) = applied["metadata"].get(key).filter(|v| !v.is_null()) {
            out["metadata"][key] = v.clone();
        }
    }
    out
}

/// The entries of a create by `manager` of the object shown as `new`: its `Update` entry on
/// the entries the body `sent`.
pub(in crate::api::kube) fn created(
    of: &Kind,
    req: &HttpRequest,
    p: &Params,
    new: &Value,
    sent: Sent,
) -> Result<ManagedFields, KubeError> {
    let manager = managed::manager(req, p.field_manager.as_deref(), &CREATE_OPTIONS)?;
    let m = ManagedFields::record_update(
        &ManagedFields::default(),
        sent,
        false,
        &managed::SCHEMA,
        &Value::Object(Map::new()),
        &managed::tracked(of, new, Part::Main),
        &ManagerId::new(&manager, Operation::Update, ""),
        of.api_version,
        chrono::Utc::now(),
    );
    let name = new["metadata"]["name"].as_str().unwrap_or("");
    managed::check_entries(of, &m, name)?;
    Ok(m)
}
