-- The request annotations a machine's object keeps (SQLite; as on PostgreSQL): the column,
-- the change log's copy, and the triggers of 20261128000022 again with the annotations in
-- their lines and a change of them alone a change of the object.

ALTER TABLE machine ADD COLUMN annotations TEXT NOT NULL DEFAULT '{}';
ALTER TABLE machine_change ADD COLUMN annotations TEXT NOT NULL DEFAULT '{}';

DROP TRIGGER machine_added;
DROP TRIGGER machine_modified;
DROP TRIGGER machine_deleting;

CREATE TRIGGER machine_added AFTER INSERT ON machine
BEGIN
    INSERT INTO machine_change (resource_version, change, id, uuid, name, role, project_id,
        cluster_id, nodegroup_id, spec, phase, provider_id, status, created_at, updated_at,
        cluster_name, nodegroup_name, managed_fields, annotations)
    SELECT v.rv, 'ADDED', NEW.id, NEW.uuid, NEW.name, NEW.role, NEW.project_id,
        NEW.cluster_id, NEW.nodegroup_id, NEW.spec, NEW.phase, NEW.provider_id, NEW.status,
        NEW.created_at, NEW.updated_at,
        COALESCE((SELECT c.registry_name FROM cluster c WHERE c.uuid = NEW.cluster_id), ''),
        COALESCE((SELECT g.name FROM nodegroup g WHERE g.uuid = NEW.nodegroup_id), ''),
        NEW.managed_fields, NEW.annotations
    FROM registry_next_version v;
    UPDATE sqlite_sequence SET seq = (SELECT MAX(resource_version) FROM machine_change)
    WHERE name = 'cluster_change';
    INSERT INTO sqlite_sequence (name, seq)
    SELECT 'cluster_change', MAX(resource_version) FROM machine_change
    WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'cluster_change');
    UPDATE machine SET resource_version = (SELECT MAX(resource_version) FROM machine_change)
    WHERE id = NEW.id;
END;

-- Fires when something the object shows changed; not for the resource_version update the
-- triggers make.
CREATE TRIGGER machine_modified AFTER UPDATE OF spec, phase, provider_id, status, name,
    managed_fields, annotations
    ON machine
    WHEN OLD.spec IS NOT NEW.spec OR OLD.phase IS NOT NEW.phase
        OR OLD.provider_id IS NOT NEW.provider_id OR OLD.status IS NOT NEW.status
        OR OLD.name IS NOT NEW.name OR OLD.managed_fields IS NOT NEW.managed_fields
        OR OLD.annotations IS NOT NEW.annotations
BEGIN
    INSERT INTO machine_change (resource_version, change, id, uuid, name, role, project_id,
        cluster_id, nodegroup_id, spec, phase, provider_id, status, created_at, updated_at,
        cluster_name, nodegroup_name, managed_fields, annotations)
    SELECT v.rv, 'MODIFIED', NEW.id, NEW.uuid, NEW.name, NEW.role, NEW.project_id,
        NEW.cluster_id, NEW.nodegroup_id, NEW.spec, NEW.phase, NEW.provider_id, NEW.status,
        NEW.created_at, NEW.updated_at,
        COALESCE((SELECT c.registry_name FROM cluster c WHERE c.uuid = NEW.cluster_id), ''),
        COALESCE((SELECT g.name FROM nodegroup g WHERE g.uuid = NEW.nodegroup_id), ''),
        NEW.managed_fields, NEW.annotations
    FROM registry_next_version v;
    UPDATE sqlite_sequence SET seq = (SELECT MAX(resource_version) FROM machine_change)
    WHERE name = 'cluster_change';
    INSERT INTO sqlite_sequence (name, seq)
    SELECT 'cluster_change', MAX(resource_version) FROM machine_change
    WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'cluster_change');
    UPDATE machine SET resource_version = (SELECT MAX(resource_version) FROM machine_change)
    WHERE id = NEW.id;
END;

-- The DELETED line, written before the row goes: the last full object.
CREATE TRIGGER machine_deleting BEFORE DELETE ON machine
BEGIN
    INSERT INTO machine_change (resource_version, change, id, uuid, name, role, project_id,
        cluster_id, nodegroup_id, spec, phase, provider_id, status, created_at, updated_at,
        cluster_name, nodegroup_name, managed_fields, annotations)
    SELECT v.rv, 'DELETED', OLD.id, OLD.uuid, OLD.name, OLD.role, OLD.project_id,
        OLD.cluster_id, OLD.nodegroup_id, OLD.spec, OLD.phase, OLD.provider_id, OLD.status,
        OLD.created_at, OLD.updated_at,
        COALESCE((SELECT c.registry_name FROM cluster c WHERE c.uuid = OLD.cluster_id), ''),
        COALESCE((SELECT g.name FROM nodegroup g WHERE g.uuid = OLD.nodegroup_id), ''),
        OLD.managed_fields, OLD.annotations
    FROM registry_next_version v;
    UPDATE sqlite_sequence SET seq = (SELECT MAX(resource_version) FROM machine_change)
    WHERE name = 'cluster_change';
    INSERT INTO sqlite_sequence (name, seq)
    SELECT 'cluster_change', MAX(resource_version) FROM machine_change
    WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'cluster_change');
END;
