-- metadata.managedFields of a registry cluster: which field manager (kubectl, a controller,
-- an update through /status...) owns which fields, as the Kubernetes API server keeps them
-- for server-side apply (a JSON array of ManagedFieldsEntry objects in FieldsV1 form).
ALTER TABLE cluster
    ADD COLUMN registry_managed_fields JSONB NOT NULL DEFAULT '[]'::jsonb;
