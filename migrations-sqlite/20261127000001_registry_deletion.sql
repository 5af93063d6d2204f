-- What the cluster registry keeps of a cluster's deletion and of the objects that own or wait
-- on it (SQLite; as on PostgreSQL).
ALTER TABLE cluster ADD COLUMN registry_finalizers TEXT NOT NULL DEFAULT '[]';
ALTER TABLE cluster ADD COLUMN registry_owner_references TEXT NOT NULL DEFAULT '[]';
ALTER TABLE cluster ADD COLUMN deletion_timestamp TEXT;
ALTER TABLE cluster ADD COLUMN deletion_grace_period_seconds BIGINT;
ALTER TABLE cluster ADD COLUMN registry_conditions TEXT NOT NULL DEFAULT '[]';
ALTER TABLE cluster ADD COLUMN registry_generate_name TEXT;

-- The labels an object had before a MODIFIED change (and a DELETED one's own), and the
-- deletion timestamp it had.
ALTER TABLE cluster_change ADD COLUMN prev_registry_labels TEXT;
ALTER TABLE cluster_change ADD COLUMN deletion_timestamp TEXT;

DROP TRIGGER cluster_modified;
CREATE TRIGGER cluster_modified AFTER UPDATE OF name, status, version, updated_at, labels,
    registry_labels, registry_annotations, generation, server_endpoints, ca_bundle, auth_info,
    api_address, health_status, registry_finalizers, registry_owner_references,
    deletion_timestamp, registry_conditions ON cluster
BEGIN
    INSERT INTO cluster_change (change, cluster_uuid, project_id, name, registry_labels,
        registry_annotations, created_at, prev_registry_labels, deletion_timestamp)
    SELECT 'DELETED', OLD.uuid, OLD.project_id, OLD.name, OLD.registry_labels,
        OLD.registry_annotations, OLD.created_at, OLD.registry_labels, OLD.deletion_timestamp
    WHERE OLD.name <> NEW.name;
    INSERT INTO cluster_change (change, cluster_uuid, project_id, name, registry_labels,
        registry_annotations, created_at, prev_registry_labels, deletion_timestamp)
    VALUES (CASE WHEN OLD.name <> NEW.name THEN 'ADDED' ELSE 'MODIFIED' END, NEW.uuid,
        NEW.project_id, NEW.name, NEW.registry_labels, NEW.registry_annotations,
        NEW.created_at, CASE WHEN OLD.name <> NEW.name THEN NULL ELSE OLD.registry_labels END,
        NEW.deletion_timestamp);
    UPDATE cluster SET resource_version = last_insert_rowid() WHERE id = NEW.id;
END;

DROP TRIGGER cluster_deleted;
CREATE TRIGGER cluster_deleted AFTER DELETE ON cluster
BEGIN
    INSERT INTO cluster_change (change, cluster_uuid, project_id, name, registry_labels,
        registry_annotations, created_at, prev_registry_labels, deletion_timestamp)
    VALUES ('DELETED', OLD.uuid, OLD.project_id, OLD.name, OLD.registry_labels,
        OLD.registry_annotations, OLD.created_at, OLD.registry_labels, OLD.deletion_timestamp);
END;
