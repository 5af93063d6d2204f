-- What the cluster registry keeps of a cluster's deletion and of the objects that own or wait
-- on it (metav1.ObjectMeta's finalizers, ownerReferences, deletionTimestamp and
-- deletionGracePeriodSeconds).
--
-- A cluster with finalizers is not removed when it is deleted (through either API): its
-- deletion_timestamp is set and it stays visible until the last finalizer is removed; then the
-- delete goes on as it would have (the row goes, or the driver's teardown starts). While a
-- cluster is being deleted, every read and watch event shows the deletion timestamp.
ALTER TABLE cluster
    ADD COLUMN registry_finalizers           JSONB NOT NULL DEFAULT '[]'::jsonb,
    ADD COLUMN registry_owner_references     JSONB NOT NULL DEFAULT '[]'::jsonb,
    ADD COLUMN deletion_timestamp            TIMESTAMPTZ,
    ADD COLUMN deletion_grace_period_seconds BIGINT,
    -- status.conditions written through the status subresource by outside controllers (every
    -- type but OK, which the service's health prober owns)
    ADD COLUMN registry_conditions           JSONB NOT NULL DEFAULT '[]'::jsonb,
    -- metadata.generateName of a cluster registered with one (kept as the client sent it)
    ADD COLUMN registry_generate_name        TEXT;

-- A DELETED or MODIFIED line of the change log keeps the labels the object had before the
-- change, so that a label-selected watch sees an object leave its selector (DELETED) or enter
-- it (ADDED), as the Kubernetes API server's watch cache does; and every line keeps the
-- deletion timestamp the object had, so that a replayed change shows it as it was.
ALTER TABLE cluster_change
    ADD COLUMN prev_registry_labels JSONB,
    ADD COLUMN deletion_timestamp   TIMESTAMPTZ;

CREATE OR REPLACE FUNCTION cluster_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' OR (TG_OP = 'UPDATE' AND OLD.name <> NEW.name) THEN
        -- a rename is the old name's end and the new name's start
        INSERT INTO cluster_change (resource_version, change, cluster_uuid, project_id, name,
            registry_labels, registry_annotations, created_at, changed_at,
            prev_registry_labels, deletion_timestamp)
        VALUES (nextval('cluster_resource_version'), 'DELETED', OLD.uuid, OLD.project_id,
            OLD.name, OLD.registry_labels, OLD.registry_annotations, OLD.created_at, now(),
            OLD.registry_labels, OLD.deletion_timestamp);
    END IF;
    IF TG_OP = 'INSERT' OR (TG_OP = 'UPDATE' AND OLD.name <> NEW.name) THEN
        INSERT INTO cluster_change (resource_version, change, cluster_uuid, project_id, name,
            registry_labels, registry_annotations, created_at, changed_at,
            prev_registry_labels, deletion_timestamp)
        VALUES (NEW.resource_version, 'ADDED', NEW.uuid, NEW.project_id, NEW.name,
            NEW.registry_labels, NEW.registry_annotations, NEW.created_at, now(), NULL,
            NEW.deletion_timestamp);
    ELSIF TG_OP = 'UPDATE' THEN
        INSERT INTO cluster_change (resource_version, change, cluster_uuid, project_id, name,
            registry_labels, registry_annotations, created_at, changed_at,
            prev_registry_labels, deletion_timestamp)
        VALUES (NEW.resource_version, 'MODIFIED', NEW.uuid, NEW.project_id, NEW.name,
            NEW.registry_labels, NEW.registry_annotations, NEW.created_at, now(),
            OLD.registry_labels, NEW.deletion_timestamp);
    END IF;
    PERFORM pg_notify('fleetyard_registry', '');
    RETURN NULL;
END
$$;
