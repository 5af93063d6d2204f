-- Machines on the Kubernetes face keep a change log, as clusters do: every insert, update (of
-- what the object shows) and delete of a machine takes the next value of the registry's one
-- counter (cluster_resource_version) as the machine's resourceVersion and writes a line to
-- machine_change, the log machine watches read. The line keeps the machine row as it was and
-- the names its object shows (its cluster's registry name, its node group's name); a DELETED
-- line is written before the row goes. Both logs share one horizon (cluster_change_horizon)
-- and one NOTIFY channel; the write sets that touch machines take the registry's advisory
-- lock first (src/store/write.rs), so the counter's order is the commit order.

ALTER TABLE machine ADD COLUMN resource_version BIGINT NOT NULL DEFAULT 0;

CREATE TABLE machine_change (
    resource_version BIGINT CONSTRAINT machine_change_pkey PRIMARY KEY,
    -- ADDED, MODIFIED or DELETED
    change           VARCHAR(8)   NOT NULL,
    changed_at       TIMESTAMPTZ  NOT NULL DEFAULT now(),
    -- the machine row as it was
    id               BIGINT       NOT NULL,
    uuid             VARCHAR(36)  NOT NULL,
    name             VARCHAR(253) NOT NULL,
    role             VARCHAR(20)  NOT NULL,
    project_id       VARCHAR(255) NOT NULL,
    cluster_id       VARCHAR(36)  NOT NULL,
    nodegroup_id     VARCHAR(36)  NOT NULL,
    spec             JSONB        NOT NULL,
    phase            VARCHAR(20)  NOT NULL,
    provider_id      VARCHAR(255),
    status           JSONB        NOT NULL,
    created_at       TIMESTAMPTZ  NOT NULL,
    updated_at       TIMESTAMPTZ,
    -- what its object shows of its cluster and node group
    cluster_name     VARCHAR(253) NOT NULL,
    nodegroup_name   VARCHAR(255) NOT NULL
);
CREATE INDEX ix_machine_change_changed_at ON machine_change (changed_at);

-- Existing machines are as they were at the registry's latest resourceVersion.
UPDATE machine SET resource_version = COALESCE((SELECT MAX(resource_version)
    FROM cluster_change), (SELECT pruned_through FROM cluster_change_horizon WHERE id = 1), 0);

CREATE FUNCTION machine_versioned() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.resource_version := nextval('cluster_resource_version');
    RETURN NEW;
END
$$;

-- An update moves the version only when something the object shows changed.
CREATE TRIGGER machine_versioned BEFORE INSERT ON machine
    FOR EACH ROW EXECUTE FUNCTION machine_versioned();
CREATE TRIGGER machine_versioned_update BEFORE UPDATE ON machine
    FOR EACH ROW WHEN (OLD.spec IS DISTINCT FROM NEW.spec OR OLD.phase IS DISTINCT FROM NEW.phase
        OR OLD.provider_id IS DISTINCT FROM NEW.provider_id
        OR OLD.status IS DISTINCT FROM NEW.status OR OLD.name IS DISTINCT FROM NEW.name)
    EXECUTE FUNCTION machine_versioned();

-- ADDED and MODIFIED lines (after the row is written).
CREATE FUNCTION machine_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO machine_change (resource_version, change, id, uuid, name, role, project_id,
        cluster_id, nodegroup_id, spec, phase, provider_id, status, created_at, updated_at,
        cluster_name, nodegroup_name)
    VALUES (NEW.resource_version, CASE WHEN TG_OP = 'INSERT' THEN 'ADDED' ELSE 'MODIFIED' END,
        NEW.id, NEW.uuid, NEW.name, NEW.role, NEW.project_id, NEW.cluster_id, NEW.nodegroup_id,
        NEW.spec, NEW.phase, NEW.provider_id, NEW.status, NEW.created_at, NEW.updated_at,
        COALESCE((SELECT c.registry_name FROM cluster c WHERE c.uuid = NEW.cluster_id), ''),
        COALESCE((SELECT g.name FROM nodegroup g WHERE g.uuid = NEW.nodegroup_id), ''));
    PERFORM pg_notify('fleetyard_registry', '');
    RETURN NULL;
END
$$;

CREATE TRIGGER machine_changed AFTER INSERT ON machine
    FOR EACH ROW EXECUTE FUNCTION machine_changed();
CREATE TRIGGER machine_changed_update AFTER UPDATE ON machine
    FOR EACH ROW WHEN (OLD.resource_version IS DISTINCT FROM NEW.resource_version)
    EXECUTE FUNCTION machine_changed();

-- The DELETED line, written before the row goes: the last full object.
CREATE FUNCTION machine_deleting() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO machine_change (resource_version, change, id, uuid, name, role, project_id,
        cluster_id, nodegroup_id, spec, phase, provider_id, status, created_at, updated_at,
        cluster_name, nodegroup_name)
    VALUES (nextval('cluster_resource_version'), 'DELETED', OLD.id, OLD.uuid, OLD.name,
        OLD.role, OLD.project_id, OLD.cluster_id, OLD.nodegroup_id, OLD.spec, OLD.phase,
        OLD.provider_id, OLD.status, OLD.created_at, OLD.updated_at,
        COALESCE((SELECT c.registry_name FROM cluster c WHERE c.uuid = OLD.cluster_id), ''),
        COALESCE((SELECT g.name FROM nodegroup g WHERE g.uuid = OLD.nodegroup_id), ''));
    PERFORM pg_notify('fleetyard_registry', '');
    RETURN OLD;
END
$$;

CREATE TRIGGER machine_deleting BEFORE DELETE ON machine
    FOR EACH ROW EXECUTE FUNCTION machine_deleting();

-- A cluster or node group that goes takes its machines first, while the names their lines
-- keep are still there to read (a cascade would run once they are gone).
CREATE FUNCTION machines_of_deleted_owner() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_TABLE_NAME = 'cluster' THEN
        DELETE FROM machine WHERE cluster_id = OLD.uuid;
    ELSE
        DELETE FROM machine WHERE nodegroup_id = OLD.uuid;
    END IF;
    RETURN OLD;
END
$$;

CREATE TRIGGER cluster_machines_going BEFORE DELETE ON cluster
    FOR EACH ROW EXECUTE FUNCTION machines_of_deleted_owner();
CREATE TRIGGER nodegroup_machines_going BEFORE DELETE ON nodegroup
    FOR EACH ROW EXECUTE FUNCTION machines_of_deleted_owner();
