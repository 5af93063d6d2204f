-- Cluster groups and their bindings keep a change log, as clusters and machines do (SQLite;
-- as on PostgreSQL). The registry's one counter is cluster_change's AUTOINCREMENT sequence: a
-- line here takes the next value past every log and the horizon and moves the sequence past
-- it (SQLite runs one write transaction at a time, so the order is the commit order). A line
-- keeps the object as it was: a group's row with its members as JSON, a binding's row with
-- its group's name; a DELETED line is written before the row goes.

ALTER TABLE cluster_group ADD COLUMN resource_version BIGINT NOT NULL DEFAULT 0;
ALTER TABLE cluster_group_binding ADD COLUMN resource_version BIGINT NOT NULL DEFAULT 0;

CREATE TABLE cluster_group_change (
    resource_version   INTEGER CONSTRAINT cluster_group_change_pkey PRIMARY KEY,
    change             VARCHAR(8)   NOT NULL,
    changed_at         TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    kind               VARCHAR(24)  NOT NULL,
    id                 BIGINT       NOT NULL,
    uuid               VARCHAR(36)  NOT NULL,
    project_id         VARCHAR(255) NOT NULL,
    group_name         VARCHAR(253) NOT NULL,
    created_at         TEXT         NOT NULL,
    description        VARCHAR(255),
    selector           TEXT,
    members            TEXT,
    group_id           VARCHAR(36),
    grantee_project_id VARCHAR(255),
    roles              TEXT,
    access             VARCHAR(5)
);
CREATE INDEX ix_cluster_group_change_changed_at ON cluster_group_change (changed_at);

-- The next resourceVersion: past every number any log or the horizon has used.
DROP VIEW registry_next_version;
CREATE VIEW registry_next_version AS
SELECT MAX(COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'cluster_change'), 0),
           COALESCE((SELECT MAX(resource_version) FROM cluster_change), 0),
           COALESCE((SELECT MAX(resource_version) FROM machine_change), 0),
           COALESCE((SELECT MAX(resource_version) FROM cluster_group_change), 0),
           COALESCE((SELECT pruned_through FROM cluster_change_horizon WHERE id = 1), 0)) + 1
       AS rv;

-- Existing groups and bindings are as they were at the registry's latest resourceVersion.
UPDATE cluster_group SET resource_version = (SELECT rv - 1 FROM registry_next_version);
UPDATE cluster_group_binding SET resource_version = (SELECT rv - 1 FROM registry_next_version);

CREATE TRIGGER cluster_group_added AFTER INSERT ON cluster_group
BEGIN
    INSERT INTO cluster_group_change (resource_version, change, kind, id, uuid, project_id,
        group_name, created_at, description, selector, members)
    SELECT v.rv, 'ADDED', 'ClusterGroup', NEW.id, NEW.uuid, NEW.project_id, NEW.name,
        NEW.created_at, NEW.description, NEW.selector, (SELECT COALESCE(json_group_array(json_object('namespace', m.cluster_project_id,
            'name', c.registry_name, 'state', m.state)), '[]')
         FROM cluster_group_member m JOIN cluster c ON c.uuid = m.cluster_id
         WHERE m.group_id = NEW.uuid)
    FROM registry_next_version v;
    UPDATE sqlite_sequence SET seq = MAX(seq, (SELECT MAX(resource_version) FROM cluster_group_change))
    WHERE name = 'cluster_change';
    INSERT INTO sqlite_sequence (name, seq)
    SELECT 'cluster_change', MAX(resource_version) FROM cluster_group_change
    WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'cluster_change')
        AND EXISTS (SELECT 1 FROM cluster_group_change);
    UPDATE cluster_group SET resource_version = (SELECT MAX(resource_version)
        FROM cluster_group_change) WHERE id = NEW.id;
END;

-- Fires when something the object shows changed; not for the resource_version update the
-- triggers make.
CREATE TRIGGER cluster_group_modified AFTER UPDATE OF description, selector, name
    ON cluster_group
    WHEN OLD.description IS NOT NEW.description OR OLD.selector IS NOT NEW.selector
        OR OLD.name IS NOT NEW.name
BEGIN
    INSERT INTO cluster_group_change (resource_version, change, kind, id, uuid, project_id,
        group_name, created_at, description, selector, members)
    SELECT v.rv, 'MODIFIED', 'ClusterGroup', NEW.id, NEW.uuid, NEW.project_id, NEW.name,
        NEW.created_at, NEW.description, NEW.selector, (SELECT COALESCE(json_group_array(json_object('namespace', m.cluster_project_id,
            'name', c.registry_name, 'state', m.state)), '[]')
         FROM cluster_group_member m JOIN cluster c ON c.uuid = m.cluster_id
         WHERE m.group_id = NEW.uuid)
    FROM registry_next_version v;
    UPDATE sqlite_sequence SET seq = MAX(seq, (SELECT MAX(resource_version) FROM cluster_group_change))
    WHERE name = 'cluster_change';
    INSERT INTO sqlite_sequence (name, seq)
    SELECT 'cluster_change', MAX(resource_version) FROM cluster_group_change
    WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'cluster_change')
        AND EXISTS (SELECT 1 FROM cluster_group_change);
    UPDATE cluster_group SET resource_version = (SELECT MAX(resource_version)
        FROM cluster_group_change) WHERE id = NEW.id;
END;

-- A group's DELETED line, written before the row goes; its bindings go first, while the
-- group's name their lines keep is still there to read.
CREATE TRIGGER cluster_group_deleting BEFORE DELETE ON cluster_group
BEGIN
    DELETE FROM cluster_group_binding WHERE group_id = OLD.uuid;
    INSERT INTO cluster_group_change (resource_version, change, kind, id, uuid, project_id,
        group_name, created_at, description, selector, members)
    SELECT v.rv, 'DELETED', 'ClusterGroup', OLD.id, OLD.uuid, OLD.project_id, OLD.name,
        OLD.created_at, OLD.description, OLD.selector, (SELECT COALESCE(json_group_array(json_object('namespace', m.cluster_project_id,
            'name', c.registry_name, 'state', m.state)), '[]')
         FROM cluster_group_member m JOIN cluster c ON c.uuid = m.cluster_id
         WHERE m.group_id = OLD.uuid)
    FROM registry_next_version v;
    UPDATE sqlite_sequence SET seq = MAX(seq, (SELECT MAX(resource_version) FROM cluster_group_change))
    WHERE name = 'cluster_change';
    INSERT INTO sqlite_sequence (name, seq)
    SELECT 'cluster_change', MAX(resource_version) FROM cluster_group_change
    WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'cluster_change')
        AND EXISTS (SELECT 1 FROM cluster_group_change);
END;

-- A member added, accepted or removed (a cluster that goes removes its memberships) changes
-- what its group shows: a MODIFIED line of the group (none once the group itself is gone).
CREATE TRIGGER cluster_group_member_added AFTER INSERT ON cluster_group_member
BEGIN
    INSERT INTO cluster_group_change (resource_version, change, kind, id, uuid, project_id,
        group_name, created_at, description, selector, members)
    SELECT v.rv, 'MODIFIED', 'ClusterGroup', g.id, g.uuid, g.project_id, g.name,
        g.created_at, g.description, g.selector, (SELECT COALESCE(json_group_array(json_object('namespace', m.cluster_project_id,
            'name', c.registry_name, 'state', m.state)), '[]')
         FROM cluster_group_member m JOIN cluster c ON c.uuid = m.cluster_id
         WHERE m.group_id = g.uuid)
    FROM cluster_group g, registry_next_version v WHERE g.uuid = NEW.group_id;
    UPDATE sqlite_sequence SET seq = MAX(seq, (SELECT MAX(resource_version) FROM cluster_group_change))
    WHERE name = 'cluster_change';
    INSERT INTO sqlite_sequence (name, seq)
    SELECT 'cluster_change', MAX(resource_version) FROM cluster_group_change
    WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'cluster_change')
        AND EXISTS (SELECT 1 FROM cluster_group_change);
    UPDATE cluster_group SET resource_version = (SELECT MAX(resource_version)
        FROM cluster_group_change) WHERE uuid = NEW.group_id;
END;

CREATE TRIGGER cluster_group_member_removed AFTER DELETE ON cluster_group_member
BEGIN
    INSERT INTO cluster_group_change (resource_version, change, kind, id, uuid, project_id,
        group_name, created_at, description, selector, members)
    SELECT v.rv, 'MODIFIED', 'ClusterGroup', g.id, g.uuid, g.project_id, g.name,
        g.created_at, g.description, g.selector, (SELECT COALESCE(json_group_array(json_object('namespace', m.cluster_project_id,
            'name', c.registry_name, 'state', m.state)), '[]')
         FROM cluster_group_member m JOIN cluster c ON c.uuid = m.cluster_id
         WHERE m.group_id = g.uuid)
    FROM cluster_group g, registry_next_version v WHERE g.uuid = OLD.group_id;
    UPDATE sqlite_sequence SET seq = MAX(seq, (SELECT MAX(resource_version) FROM cluster_group_change))
    WHERE name = 'cluster_change';
    INSERT INTO sqlite_sequence (name, seq)
    SELECT 'cluster_change', MAX(resource_version) FROM cluster_group_change
    WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'cluster_change')
        AND EXISTS (SELECT 1 FROM cluster_group_change);
    UPDATE cluster_group SET resource_version = (SELECT MAX(resource_version)
        FROM cluster_group_change) WHERE uuid = OLD.group_id;
END;

CREATE TRIGGER cluster_group_member_accepted AFTER UPDATE OF state ON cluster_group_member
    WHEN OLD.state IS NOT NEW.state
BEGIN
    INSERT INTO cluster_group_change (resource_version, change, kind, id, uuid, project_id,
        group_name, created_at, description, selector, members)
    SELECT v.rv, 'MODIFIED', 'ClusterGroup', g.id, g.uuid, g.project_id, g.name,
        g.created_at, g.description, g.selector, (SELECT COALESCE(json_group_array(json_object('namespace', m.cluster_project_id,
            'name', c.registry_name, 'state', m.state)), '[]')
         FROM cluster_group_member m JOIN cluster c ON c.uuid = m.cluster_id
         WHERE m.group_id = g.uuid)
    FROM cluster_group g, registry_next_version v WHERE g.uuid = NEW.group_id;
    UPDATE sqlite_sequence SET seq = MAX(seq, (SELECT MAX(resource_version) FROM cluster_group_change))
    WHERE name = 'cluster_change';
    INSERT INTO sqlite_sequence (name, seq)
    SELECT 'cluster_change', MAX(resource_version) FROM cluster_group_change
    WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'cluster_change')
        AND EXISTS (SELECT 1 FROM cluster_group_change);
    UPDATE cluster_group SET resource_version = (SELECT MAX(resource_version)
        FROM cluster_group_change) WHERE uuid = NEW.group_id;
END;

-- A binding's ADDED line (a binding never changes) and its DELETED line.
CREATE TRIGGER cluster_group_binding_added AFTER INSERT ON cluster_group_binding
BEGIN
    INSERT INTO cluster_group_change (resource_version, change, kind, id, uuid, project_id,
        group_name, created_at, group_id, grantee_project_id, roles, access)
    SELECT v.rv, 'ADDED', 'ClusterGroupBinding', NEW.id, NEW.uuid, NEW.project_id,
        COALESCE((SELECT g.name FROM cluster_group g WHERE g.uuid = NEW.group_id), ''),
        NEW.created_at, NEW.group_id, NEW.grantee_project_id, NEW.roles,
        NEW.access
    FROM registry_next_version v;
    UPDATE sqlite_sequence SET seq = MAX(seq, (SELECT MAX(resource_version) FROM cluster_group_change))
    WHERE name = 'cluster_change';
    INSERT INTO sqlite_sequence (name, seq)
    SELECT 'cluster_change', MAX(resource_version) FROM cluster_group_change
    WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'cluster_change')
        AND EXISTS (SELECT 1 FROM cluster_group_change);
    UPDATE cluster_group_binding SET resource_version = (SELECT MAX(resource_version)
        FROM cluster_group_change) WHERE id = NEW.id;
END;

CREATE TRIGGER cluster_group_binding_deleting BEFORE DELETE ON cluster_group_binding
BEGIN
    INSERT INTO cluster_group_change (resource_version, change, kind, id, uuid, project_id,
        group_name, created_at, group_id, grantee_project_id, roles, access)
    SELECT v.rv, 'DELETED', 'ClusterGroupBinding', OLD.id, OLD.uuid, OLD.project_id,
        COALESCE((SELECT g.name FROM cluster_group g WHERE g.uuid = OLD.group_id), ''),
        OLD.created_at, OLD.group_id, OLD.grantee_project_id, OLD.roles,
        OLD.access
    FROM registry_next_version v;
    UPDATE sqlite_sequence SET seq = MAX(seq, (SELECT MAX(resource_version) FROM cluster_group_change))
    WHERE name = 'cluster_change';
    INSERT INTO sqlite_sequence (name, seq)
    SELECT 'cluster_change', MAX(resource_version) FROM cluster_group_change
    WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'cluster_change')
        AND EXISTS (SELECT 1 FROM cluster_group_change);
END;
