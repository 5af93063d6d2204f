-- One namespace/name is one registry object, across both APIs; cluster names may repeat within
-- a project, as in Magnum; every change-log line keeps the object as it was.
--
-- 1. cluster.registry_name is the cluster's metadata.name in the registry, unique per project
--    (uniq_cluster0project_id0registry_name). A registry create takes the name it is given (a
--    taken one is refused); a /v1 create takes its name when that is a Kubernetes name and
--    free, else a derived one that is free (domain::registry::name_candidate). It never
--    changes. Existing rows get the name the registry showed them by until now: their own
--    name when it is a Kubernetes name, else the derived one (the rule of
--    domain::registry::name_candidate's first candidate); a derived name another row already
--    holds becomes `<base>-<the uuid's 32 hex digits>`.
-- 2. The (project_id, name) uniqueness is gone: a /v1 lookup by a name several clusters share
--    answers 409, as Magnum does.
-- 3. cluster_change.object: the registry object's row as it was at the change (the cluster
--    row, and the template's driver, the node count, the CA, the health probe's times), from
--    cluster_snapshot() below. A DELETED line is written before the row goes (trigger
--    cluster_deleting), so it keeps the last full object.

ALTER TABLE cluster ADD COLUMN registry_name VARCHAR(253);

-- Backfilling writes no change-log lines and moves no resourceVersion.
ALTER TABLE cluster DISABLE TRIGGER USER;

UPDATE cluster SET registry_name = CASE
    WHEN length(name) <= 253
        AND name ~ '^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$'
        THEN name
    ELSE COALESCE(NULLIF(array_to_string(ARRAY(
            SELECT btrim(l, '-')
            FROM unnest(string_to_array(regexp_replace(
                translate(left(name, 200), 'ABCDEFGHIJKLMNOPQRSTUVWXYZ',
                    'abcdefghijklmnopqrstuvwxyz'),
                '[^abcdefghijklmnopqrstuvwxyz0123456789.]', '-', 'g'), '.'))
                WITH ORDINALITY AS t(l, i)
            WHERE btrim(l, '-') <> ''
            ORDER BY i), '.'), '') || '-', 'cluster-') || left(uuid, 8)
    END;

-- A derived name that a cluster's own name (or an older cluster's derived name) already holds.
UPDATE cluster c SET registry_name =
    left(c.registry_name, length(c.registry_name) - 9) || '-' || replace(c.uuid, '-', '')
WHERE c.registry_name <> c.name AND EXISTS (
    SELECT 1 FROM cluster o
    WHERE o.project_id = c.project_id AND o.registry_name = c.registry_name AND o.id <> c.id
        AND (o.registry_name = o.name OR o.id < c.id));

ALTER TABLE cluster ENABLE TRIGGER USER;

ALTER TABLE cluster
    ALTER COLUMN registry_name SET NOT NULL,
    ADD CONSTRAINT uniq_cluster0project_id0registry_name UNIQUE (project_id, registry_name),
    DROP CONSTRAINT uniq_cluster0project_id0name;

-- What a change-log line shows of the object: the registry object as it was.
ALTER TABLE cluster_change ADD COLUMN object JSONB;

-- The registry object of a cluster row: the row's columns (every column but the certificate
-- references Magnum kept; a column added later is in the snapshot without changing this
-- function), the driver of its template, its node count, the CA a client verifies it with,
-- and the health prober's times. The keys are the column names src/store/registry.rs decodes
-- (EntryRow); on SQLite the view cluster_snapshot lists them one by one.
CREATE FUNCTION cluster_snapshot(c cluster) RETURNS jsonb LANGUAGE sql STABLE AS $$
    SELECT to_jsonb(c) - ARRAY['ca_cert_ref', 'magnum_cert_ref', 'etcd_ca_cert_ref',
            'front_proxy_ca_cert_ref']
        || jsonb_build_object(
            'driver', (SELECT t.driver FROM cluster_template t
                WHERE t.uuid = c.cluster_template_id),
            'node_count', (SELECT CAST(SUM(n.node_count) AS BIGINT) FROM nodegroup n
                WHERE n.cluster_id = c.uuid),
            'ca_pem', COALESCE(c.ca_bundle, (SELECT k.certificate FROM x509keypair k
                WHERE k.cluster_uuid = c.uuid AND k.kind = 'ca' ORDER BY k.id DESC LIMIT 1)),
            'last_heartbeat', (SELECT p.last_probe_at FROM cluster_health_probe p
                WHERE p.cluster_uuid = c.uuid),
            'last_transition', (SELECT p.last_transition_at FROM cluster_health_probe p
                WHERE p.cluster_uuid = c.uuid))
$$;

-- ADDED and MODIFIED lines (after the row is written).
CREATE OR REPLACE FUNCTION cluster_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO cluster_change (resource_version, change, cluster_uuid, project_id, name,
        registry_labels, registry_annotations, created_at, changed_at,
        prev_registry_labels, deletion_timestamp, object)
    VALUES (NEW.resource_version, CASE WHEN TG_OP = 'INSERT' THEN 'ADDED' ELSE 'MODIFIED' END,
        NEW.uuid, NEW.project_id, NEW.name, NEW.registry_labels, NEW.registry_annotations,
        NEW.created_at, now(), CASE WHEN TG_OP = 'INSERT' THEN NULL ELSE OLD.registry_labels END,
        NEW.deletion_timestamp, cluster_snapshot(NEW));
    PERFORM pg_notify('fleetyard_registry', '');
    RETURN NULL;
END
$$;

-- The DELETED line, written before the row (and what cascades from it) goes: the last full
-- object.
CREATE FUNCTION cluster_deleting() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO cluster_change (resource_version, change, cluster_uuid, project_id, name,
        registry_labels, registry_annotations, created_at, changed_at,
        prev_registry_labels, deletion_timestamp, object)
    VALUES (nextval('cluster_resource_version'), 'DELETED', OLD.uuid, OLD.project_id,
        OLD.name, OLD.registry_labels, OLD.registry_annotations, OLD.created_at, now(),
        OLD.registry_labels, OLD.deletion_timestamp, cluster_snapshot(OLD));
    PERFORM pg_notify('fleetyard_registry', '');
    RETURN OLD;
END
$$;

DROP TRIGGER cluster_changed ON cluster;
CREATE TRIGGER cluster_changed AFTER INSERT OR UPDATE ON cluster
    FOR EACH ROW EXECUTE FUNCTION cluster_changed();
CREATE TRIGGER cluster_deleting BEFORE DELETE ON cluster
    FOR EACH ROW EXECUTE FUNCTION cluster_deleting();
