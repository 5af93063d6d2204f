-- The annotations a machine's Kubernetes object keeps that are not derived: the request
-- annotations (fleetyard.openstack.org/reboot-requested-at, .../replace-requested-at and
-- Cluster API's cluster.x-k8s.io/remediate-machine), a JSON object of name to value. A new
-- value asks for its action once; the value stays so that get, watch and a second apply of
-- the same manifest show and ask nothing new. The change log keeps them with each line, and
-- a change of them alone (a removal) is a change of the object.

ALTER TABLE machine ADD COLUMN annotations JSONB NOT NULL DEFAULT '{}'::jsonb;
ALTER TABLE machine_change ADD COLUMN annotations JSONB NOT NULL DEFAULT '{}'::jsonb;

DROP TRIGGER machine_versioned_update ON machine;
CREATE TRIGGER machine_versioned_update BEFORE UPDATE ON machine
    FOR EACH ROW WHEN (OLD.spec IS DISTINCT FROM NEW.spec OR OLD.phase IS DISTINCT FROM NEW.phase
        OR OLD.provider_id IS DISTINCT FROM NEW.provider_id
        OR OLD.status IS DISTINCT FROM NEW.status OR OLD.name IS DISTINCT FROM NEW.name
        OR OLD.managed_fields IS DISTINCT FROM NEW.managed_fields
        OR OLD.annotations IS DISTINCT FROM NEW.annotations)
    EXECUTE FUNCTION machine_versioned();

CREATE OR REPLACE FUNCTION machine_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO machine_change (resource_version, change, id, uuid, name, role, project_id,
        cluster_id, nodegroup_id, spec, phase, provider_id, status, created_at, updated_at,
        cluster_name, nodegroup_name, managed_fields, annotations)
    VALUES (NEW.resource_version, CASE WHEN TG_OP = 'INSERT' THEN 'ADDED' ELSE 'MODIFIED' END,
        NEW.id, NEW.uuid, NEW.name, NEW.role, NEW.project_id, NEW.cluster_id, NEW.nodegroup_id,
        NEW.spec, NEW.phase, NEW.provider_id, NEW.status, NEW.created_at, NEW.updated_at,
        COALESCE((SELECT c.registry_name FROM cluster c WHERE c.uuid = NEW.cluster_id), ''),
        COALESCE((SELECT g.name FROM nodegroup g WHERE g.uuid = NEW.nodegroup_id), ''),
        NEW.managed_fields, NEW.annotations);
    PERFORM pg_notify('fleetyard_registry', '');
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION machine_deleting() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO machine_change (resource_version, change, id, uuid, name, role, project_id,
        cluster_id, nodegroup_id, spec, phase, provider_id, status, created_at, updated_at,
        cluster_name, nodegroup_name, managed_fields, annotations)
    VALUES (nextval('cluster_resource_version'), 'DELETED', OLD.id, OLD.uuid, OLD.name,
        OLD.role, OLD.project_id, OLD.cluster_id, OLD.nodegroup_id, OLD.spec, OLD.phase,
        OLD.provider_id, OLD.status, OLD.created_at, OLD.updated_at,
        COALESCE((SELECT c.registry_name FROM cluster c WHERE c.uuid = OLD.cluster_id), ''),
        COALESCE((SELECT g.name FROM nodegroup g WHERE g.uuid = OLD.nodegroup_id), ''),
        OLD.managed_fields, OLD.annotations);
    PERFORM pg_notify('fleetyard_registry', '');
    RETURN OLD;
END
$$;
