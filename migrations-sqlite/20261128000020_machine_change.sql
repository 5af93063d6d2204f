-- Machines keep a change log, as clusters do (SQLite; as on PostgreSQL). The registry's one
-- counter is cluster_change's AUTOINCREMENT sequence: a machine line takes the next value and
-- moves the sequence past it, so the two logs never share a number (SQLite runs one write
-- transaction at a time, so the order is the commit order).

ALTER TABLE machine ADD COLUMN resource_version BIGINT NOT NULL DEFAULT 0;

CREATE TABLE machine_change (
    resource_version INTEGER CONSTRAINT machine_change_pkey PRIMARY KEY,
    change           VARCHAR(8)   NOT NULL,
    changed_at       TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    id               BIGINT       NOT NULL,
    uuid             VARCHAR(36)  NOT NULL,
    name             VARCHAR(253) NOT NULL,
    role             VARCHAR(20)  NOT NULL,
    project_id       VARCHAR(255) NOT NULL,
    cluster_id       VARCHAR(36)  NOT NULL,
    nodegroup_id     VARCHAR(36)  NOT NULL,
    spec             TEXT         NOT NULL,
    phase            VARCHAR(20)  NOT NULL,
    provider_id      VARCHAR(255),
    status           TEXT         NOT NULL,
    created_at       TEXT         NOT NULL,
    updated_at       TEXT,
    cluster_name     VARCHAR(253) NOT NULL,
    nodegroup_name   VARCHAR(255) NOT NULL
);
CREATE INDEX ix_machine_change_changed_at ON machine_change (changed_at);

-- The next resourceVersion: past every number either log or the horizon has used.
CREATE VIEW registry_next_version AS
SELECT MAX(COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'cluster_change'), 0),
           COALESCE((SELECT MAX(resource_version) FROM cluster_change), 0),
           COALESCE((SELECT MAX(resource_version) FROM machine_change), 0),
           COALESCE((SELECT pruned_through FROM cluster_change_horizon WHERE id = 1), 0)) + 1
       AS rv;

-- Existing machines are as they were at the registry's latest resourceVersion.
UPDATE machine SET resource_version = COALESCE((SELECT MAX(resource_version)
    FROM cluster_change), (SELECT pruned_through FROM cluster_change_horizon WHERE id = 1), 0);

CREATE TRIGGER machine_added AFTER INSERT ON machine
BEGIN
    INSERT INTO machine_change (resource_version, change, id, uuid, name, role, project_id,
        cluster_id, nodegroup_id, spec, phase, provider_id, status, created_at, updated_at,
        cluster_name, nodegroup_name)
    SELECT v.rv, 'ADDED', NEW.id, NEW.uuid, NEW.name, NEW.role, NEW.project_id,
        NEW.cluster_id, NEW.nodegroup_id, NEW.spec, NEW.phase, NEW.provider_id, NEW.status,
        NEW.created_at, NEW.updated_at,
        COALESCE((SELECT c.registry_name FROM cluster c WHERE c.uuid = NEW.cluster_id), ''),
        COALESCE((SELECT g.name FROM nodegroup g WHERE g.uuid = NEW.nodegroup_id), '')
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
CREATE TRIGGER machine_modified AFTER UPDATE OF spec, phase, provider_id, status, name
    ON machine
    WHEN OLD.spec IS NOT NEW.spec OR OLD.phase IS NOT NEW.phase
        OR OLD.provider_id IS NOT NEW.provider_id OR OLD.status IS NOT NEW.status
        OR OLD.name IS NOT NEW.name
BEGIN
    INSERT INTO machine_change (resource_version, change, id, uuid, name, role, project_id,
        cluster_id, nodegroup_id, spec, phase, provider_id, status, created_at, updated_at,
        cluster_name, nodegroup_name)
    SELECT v.rv, 'MODIFIED', NEW.id, NEW.uuid, NEW.name, NEW.role, NEW.project_id,
        NEW.cluster_id, NEW.nodegroup_id, NEW.spec, NEW.phase, NEW.provider_id, NEW.status,
        NEW.created_at, NEW.updated_at,
        COALESCE((SELECT c.registry_name FROM cluster c WHERE c.uuid = NEW.cluster_id), ''),
        COALESCE((SELECT g.name FROM nodegroup g WHERE g.uuid = NEW.nodegroup_id), '')
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
        cluster_name, nodegroup_name)
    SELECT v.rv, 'DELETED', OLD.id, OLD.uuid, OLD.name, OLD.role, OLD.project_id,
        OLD.cluster_id, OLD.nodegroup_id, OLD.spec, OLD.phase, OLD.provider_id, OLD.status,
        OLD.created_at, OLD.updated_at,
        COALESCE((SELECT c.registry_name FROM cluster c WHERE c.uuid = OLD.cluster_id), ''),
        COALESCE((SELECT g.name FROM nodegroup g WHERE g.uuid = OLD.nodegroup_id), '')
    FROM registry_next_version v;
    UPDATE sqlite_sequence SET seq = (SELECT MAX(resource_version) FROM machine_change)
    WHERE name = 'cluster_change';
    INSERT INTO sqlite_sequence (name, seq)
    SELECT 'cluster_change', MAX(resource_version) FROM machine_change
    WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'cluster_change');
END;

-- A cluster or node group that goes takes its machines first, while the names their lines
-- keep are still there to read.
CREATE TRIGGER cluster_machines_going BEFORE DELETE ON cluster
BEGIN
    DELETE FROM machine WHERE cluster_id = OLD.uuid;
END;

CREATE TRIGGER nodegroup_machines_going BEFORE DELETE ON nodegroup
BEGIN
    DELETE FROM machine WHERE nodegroup_id = OLD.uuid;
END;
