-- Cluster groups and their bindings on the Kubernetes face keep a change log, as clusters and
-- machines do: every insert, update (of what the object shows) and delete of a group, every
-- change of its explicit members (which its object lists) and every insert and delete of a
-- binding takes the next value of the registry's one counter (cluster_resource_version) as
-- the object's resourceVersion and writes a line to cluster_group_change, the log their
-- watches read. A line keeps the object as it was: a group's row with its members (each
-- member's namespace, registry name and state, as JSON), a binding's row with its group's
-- name. A DELETED line is written before the row goes. The three logs share one horizon
-- (cluster_change_horizon) and one NOTIFY channel; every group, member and binding write
-- takes the registry's advisory lock first (src/store/write.rs), so the counter's order is
-- the commit order.

ALTER TABLE cluster_group ADD COLUMN resource_version BIGINT NOT NULL DEFAULT 0;
ALTER TABLE cluster_group_binding ADD COLUMN resource_version BIGINT NOT NULL DEFAULT 0;

CREATE TABLE cluster_group_change (
    resource_version   BIGINT CONSTRAINT cluster_group_change_pkey PRIMARY KEY,
    -- ADDED, MODIFIED or DELETED
    change             VARCHAR(8)   NOT NULL,
    changed_at         TIMESTAMPTZ  NOT NULL DEFAULT now(),
    -- ClusterGroup or ClusterGroupBinding
    kind               VARCHAR(24)  NOT NULL,
    id                 BIGINT       NOT NULL,
    uuid               VARCHAR(36)  NOT NULL,
    -- the object's namespace: the group's project
    project_id         VARCHAR(255) NOT NULL,
    -- the group's name (a binding's: its group's)
    group_name         VARCHAR(253) NOT NULL,
    created_at         TIMESTAMPTZ  NOT NULL,
    -- a group's
    description        VARCHAR(255),
    selector           TEXT,
    members            JSONB,
    -- a binding's
    group_id           VARCHAR(36),
    grantee_project_id VARCHAR(255),
    roles              JSONB,
    access             VARCHAR(5)
);
CREATE INDEX ix_cluster_group_change_changed_at ON cluster_group_change (changed_at);

-- Existing groups and bindings are as they were at the registry's latest resourceVersion.
UPDATE cluster_group SET resource_version = COALESCE(GREATEST(
    (SELECT MAX(resource_version) FROM cluster_change),
    (SELECT MAX(resource_version) FROM machine_change)),
    (SELECT pruned_through FROM cluster_change_horizon WHERE id = 1), 0);
UPDATE cluster_group_binding SET resource_version = COALESCE(GREATEST(
    (SELECT MAX(resource_version) FROM cluster_change),
    (SELECT MAX(resource_version) FROM machine_change)),
    (SELECT pruned_through FROM cluster_change_horizon WHERE id = 1), 0);

-- What a group's object shows of its explicit members.
CREATE FUNCTION cluster_group_members_shown(g VARCHAR) RETURNS JSONB LANGUAGE sql STABLE AS $$
    SELECT COALESCE(jsonb_agg(jsonb_build_object('namespace', m.cluster_project_id,
        'name', c.registry_name, 'state', m.state)), '[]'::jsonb)
    FROM cluster_group_member m JOIN cluster c ON c.uuid = m.cluster_id WHERE m.group_id = g
$$;

CREATE FUNCTION cluster_group_versioned() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.resource_version := nextval('cluster_resource_version');
    RETURN NEW;
END
$$;

CREATE TRIGGER cluster_group_versioned BEFORE INSERT ON cluster_group
    FOR EACH ROW EXECUTE FUNCTION cluster_group_versioned();
CREATE TRIGGER cluster_group_versioned_update BEFORE UPDATE ON cluster_group
    FOR EACH ROW WHEN (OLD.description IS DISTINCT FROM NEW.description
        OR OLD.selector IS DISTINCT FROM NEW.selector OR OLD.name IS DISTINCT FROM NEW.name)
    EXECUTE FUNCTION cluster_group_versioned();
CREATE TRIGGER cluster_group_binding_versioned BEFORE INSERT ON cluster_group_binding
    FOR EACH ROW EXECUTE FUNCTION cluster_group_versioned();

-- A group's ADDED and MODIFIED lines (after the row is written; a member's change moves its
-- group's resource_version, which writes the line).
CREATE FUNCTION cluster_group_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO cluster_group_change (resource_version, change, kind, id, uuid, project_id,
        group_name, created_at, description, selector, members)
    VALUES (NEW.resource_version, CASE WHEN TG_OP = 'INSERT' THEN 'ADDED' ELSE 'MODIFIED' END,
        'ClusterGroup', NEW.id, NEW.uuid, NEW.project_id, NEW.name, NEW.created_at,
        NEW.description, NEW.selector, cluster_group_members_shown(NEW.uuid));
    PERFORM pg_notify('fleetyard_registry', '');
    RETURN NULL;
END
$$;

CREATE TRIGGER cluster_group_changed AFTER INSERT ON cluster_group
    FOR EACH ROW EXECUTE FUNCTION cluster_group_changed();
CREATE TRIGGER cluster_group_changed_update AFTER UPDATE ON cluster_group
    FOR EACH ROW WHEN (OLD.resource_version IS DISTINCT FROM NEW.resource_version)
    EXECUTE FUNCTION cluster_group_changed();

-- A group's DELETED line, written before the row goes; its bindings go first, while the
-- group's name their lines keep is still there to read.
CREATE FUNCTION cluster_group_deleting() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM cluster_group_binding WHERE group_id = OLD.uuid;
    INSERT INTO cluster_group_change (resource_version, change, kind, id, uuid, project_id,
        group_name, created_at, description, selector, members)
    VALUES (nextval('cluster_resource_version'), 'DELETED', 'ClusterGroup', OLD.id, OLD.uuid,
        OLD.project_id, OLD.name, OLD.created_at, OLD.description, OLD.selector,
        cluster_group_members_shown(OLD.uuid));
    PERFORM pg_notify('fleetyard_registry', '');
    RETURN OLD;
END
$$;

CREATE TRIGGER cluster_group_deleting BEFORE DELETE ON cluster_group
    FOR EACH ROW EXECUTE FUNCTION cluster_group_deleting();

-- A member added, accepted or removed (a cluster that goes removes its memberships) changes
-- what its group shows. Once per statement and group: a statement that adds or removes many
-- members of one group moves its resource_version (and writes its line) once.
CREATE FUNCTION cluster_group_members_added() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE cluster_group SET resource_version = nextval('cluster_resource_version')
    WHERE uuid IN (SELECT DISTINCT group_id FROM changed_members);
    RETURN NULL;
END
$$;

CREATE FUNCTION cluster_group_members_restated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE cluster_group SET resource_version = nextval('cluster_resource_version')
    WHERE uuid IN (SELECT DISTINCT n.group_id FROM new_members n JOIN old_members o
        ON o.group_id = n.group_id AND o.cluster_id = n.cluster_id
        WHERE o.state IS DISTINCT FROM n.state);
    RETURN NULL;
END
$$;

CREATE TRIGGER cluster_group_member_added AFTER INSERT ON cluster_group_member
    REFERENCING NEW TABLE AS changed_members
    FOR EACH STATEMENT EXECUTE FUNCTION cluster_group_members_added();
CREATE TRIGGER cluster_group_member_removed AFTER DELETE ON cluster_group_member
    REFERENCING OLD TABLE AS changed_members
    FOR EACH STATEMENT EXECUTE FUNCTION cluster_group_members_added();
CREATE TRIGGER cluster_group_member_changed_update AFTER UPDATE ON cluster_group_member
    REFERENCING OLD TABLE AS old_members NEW TABLE AS new_members
    FOR EACH STATEMENT EXECUTE FUNCTION cluster_group_members_restated();

-- A binding's ADDED line (a binding never changes) and its DELETED line.
CREATE FUNCTION cluster_group_binding_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    r cluster_group_binding%ROWTYPE;
    rv BIGINT;
BEGIN
    IF TG_OP = 'DELETE' THEN
        r := OLD;
        rv := nextval('cluster_resource_version');
    ELSE
        r := NEW;
        rv := NEW.resource_version;
    END IF;
    INSERT INTO cluster_group_change (resource_version, change, kind, id, uuid, project_id,
        group_name, created_at, group_id, grantee_project_id, roles, access)
    VALUES (rv, CASE WHEN TG_OP = 'DELETE' THEN 'DELETED' ELSE 'ADDED' END,
        'ClusterGroupBinding', r.id, r.uuid, r.project_id,
        COALESCE((SELECT g.name FROM cluster_group g WHERE g.uuid = r.group_id), ''),
        r.created_at, r.group_id, r.grantee_project_id, r.roles, r.access);
    PERFORM pg_notify('fleetyard_registry', '');
    IF TG_OP = 'DELETE' THEN
        RETURN OLD;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER cluster_group_binding_added AFTER INSERT ON cluster_group_binding
    FOR EACH ROW EXECUTE FUNCTION cluster_group_binding_changed();
CREATE TRIGGER cluster_group_binding_deleting BEFORE DELETE ON cluster_group_binding
    FOR EACH ROW EXECUTE FUNCTION cluster_group_binding_changed();
