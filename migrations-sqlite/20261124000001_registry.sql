-- The cluster registry (clusterregistry.k8s.io/v1alpha1) over the same cluster rows (SQLite).
--
-- As on PostgreSQL: registry metadata on the cluster row, and every insert, update and delete
-- of a cluster writes a line to cluster_change, whose key is the next resourceVersion (SQLite
-- runs one write transaction at a time, so the key's order is the commit order).

ALTER TABLE cluster ADD COLUMN registry_labels TEXT NOT NULL DEFAULT '{}';
ALTER TABLE cluster ADD COLUMN registry_annotations TEXT NOT NULL DEFAULT '{}';
ALTER TABLE cluster ADD COLUMN resource_version BIGINT NOT NULL DEFAULT 0;
ALTER TABLE cluster ADD COLUMN generation BIGINT NOT NULL DEFAULT 1;
ALTER TABLE cluster ADD COLUMN server_endpoints TEXT NOT NULL DEFAULT '[]';
ALTER TABLE cluster ADD COLUMN ca_bundle TEXT;
ALTER TABLE cluster ADD COLUMN auth_info TEXT NOT NULL DEFAULT '{}';

CREATE INDEX ix_cluster_project_id_name ON cluster (project_id, name);

CREATE TABLE cluster_change (
    resource_version INTEGER CONSTRAINT cluster_change_pkey PRIMARY KEY AUTOINCREMENT,
    change           VARCHAR(8)   NOT NULL,
    cluster_uuid     VARCHAR(36)  NOT NULL,
    project_id       VARCHAR(255) NOT NULL,
    name             VARCHAR(255) NOT NULL,
    registry_labels      TEXT NOT NULL,
    registry_annotations TEXT NOT NULL,
    created_at       TEXT NOT NULL,
    changed_at       TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE INDEX ix_cluster_change_changed_at ON cluster_change (changed_at);

-- The highest resourceVersion pruned from cluster_change: a watch from before it answers 410.
CREATE TABLE cluster_change_horizon (
    id             INTEGER CONSTRAINT cluster_change_horizon_pkey PRIMARY KEY,
    pruned_through BIGINT NOT NULL
);
INSERT INTO cluster_change_horizon VALUES (1, 0);

CREATE TRIGGER cluster_added AFTER INSERT ON cluster
BEGIN
    INSERT INTO cluster_change (change, cluster_uuid, project_id, name, registry_labels,
        registry_annotations, created_at)
    VALUES ('ADDED', NEW.uuid, NEW.project_id, NEW.name, NEW.registry_labels,
        NEW.registry_annotations, NEW.created_at);
    UPDATE cluster SET resource_version = last_insert_rowid() WHERE id = NEW.id;
END;

-- Fires for the service's updates (they set every column); not for the resource_version
-- update just above.
CREATE TRIGGER cluster_modified AFTER UPDATE OF name, status, version, updated_at, labels,
    registry_labels, registry_annotations, generation, server_endpoints, ca_bundle, auth_info,
    api_address, health_status ON cluster
BEGIN
    INSERT INTO cluster_change (change, cluster_uuid, project_id, name, registry_labels,
        registry_annotations, created_at)
    SELECT 'DELETED', OLD.uuid, OLD.project_id, OLD.name, OLD.registry_labels,
        OLD.registry_annotations, OLD.created_at
    WHERE OLD.name <> NEW.name;
    INSERT INTO cluster_change (change, cluster_uuid, project_id, name, registry_labels,
        registry_annotations, created_at)
    VALUES (CASE WHEN OLD.name <> NEW.name THEN 'ADDED' ELSE 'MODIFIED' END, NEW.uuid,
        NEW.project_id, NEW.name, NEW.registry_labels, NEW.registry_annotations,
        NEW.created_at);
    UPDATE cluster SET resource_version = last_insert_rowid() WHERE id = NEW.id;
END;

CREATE TRIGGER cluster_deleted AFTER DELETE ON cluster
BEGIN
    INSERT INTO cluster_change (change, cluster_uuid, project_id, name, registry_labels,
        registry_annotations, created_at)
    VALUES ('DELETED', OLD.uuid, OLD.project_id, OLD.name, OLD.registry_labels,
        OLD.registry_annotations, OLD.created_at);
END;

INSERT INTO cluster_template (uuid, project_id, user_id, name, coe, image_id, server_type,
    driver, public, hidden, created_at)
VALUES ('00000000-0000-4000-8000-00000000e7e7', '', '', 'external', 'kubernetes', '', 'vm',
    'external', TRUE, TRUE, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'));
