-- The cluster registry (clusterregistry.k8s.io/v1alpha1) over the same cluster rows.
--
-- Every cluster row carries its registry metadata (Kubernetes labels and annotations, which are
-- not Magnum's COE labels), the endpoints and CA of a registered (external) cluster, and pointers
-- to its credentials. Every insert, update and delete of a cluster takes the next value of one
-- counter as the row's resourceVersion and writes a line to cluster_change, the log watches
-- read; write sets that touch clusters take one advisory lock first, so the counter's order is
-- the commit order.

ALTER TABLE cluster
    ADD COLUMN registry_labels      JSONB  NOT NULL DEFAULT '{}'::jsonb,
    ADD COLUMN registry_annotations JSONB  NOT NULL DEFAULT '{}'::jsonb,
    ADD COLUMN resource_version     BIGINT NOT NULL DEFAULT 0,
    ADD COLUMN generation           BIGINT NOT NULL DEFAULT 1,
    ADD COLUMN server_endpoints     JSONB  NOT NULL DEFAULT '[]'::jsonb,
    ADD COLUMN ca_bundle            TEXT,
    ADD COLUMN auth_info            JSONB  NOT NULL DEFAULT '{}'::jsonb;

-- every project's clusters in name order: registry pages, -A included
CREATE INDEX ix_cluster_project_id_name ON cluster (project_id, name);

CREATE SEQUENCE cluster_resource_version;

CREATE TABLE cluster_change (
    resource_version BIGINT CONSTRAINT cluster_change_pkey PRIMARY KEY,
    -- ADDED, MODIFIED or DELETED
    change           VARCHAR(8)   NOT NULL,
    cluster_uuid     VARCHAR(36)  NOT NULL,
    project_id       VARCHAR(255) NOT NULL,
    name             VARCHAR(255) NOT NULL,
    -- what a DELETED event shows of the object that is gone
    registry_labels      JSONB NOT NULL,
    registry_annotations JSONB NOT NULL,
    created_at       TIMESTAMPTZ  NOT NULL,
    changed_at       TIMESTAMPTZ  NOT NULL DEFAULT now()
);
CREATE INDEX ix_cluster_change_changed_at ON cluster_change (changed_at);

-- The highest resourceVersion pruned from cluster_change: a watch from before it answers 410.
CREATE TABLE cluster_change_horizon (
    id             INTEGER CONSTRAINT cluster_change_horizon_pkey PRIMARY KEY,
    pruned_through BIGINT NOT NULL
);
INSERT INTO cluster_change_horizon VALUES (1, 0);

CREATE FUNCTION cluster_versioned() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.resource_version := nextval('cluster_resource_version');
    RETURN NEW;
END
$$;

CREATE TRIGGER cluster_versioned BEFORE INSERT OR UPDATE ON cluster
    FOR EACH ROW EXECUTE FUNCTION cluster_versioned();

CREATE FUNCTION cluster_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' OR (TG_OP = 'UPDATE' AND OLD.name <> NEW.name) THEN
        -- a rename is the old name's end and the new name's start
        INSERT INTO cluster_change VALUES (nextval('cluster_resource_version'), 'DELETED',
            OLD.uuid, OLD.project_id, OLD.name, OLD.registry_labels, OLD.registry_annotations,
            OLD.created_at, now());
    END IF;
    IF TG_OP = 'INSERT' OR (TG_OP = 'UPDATE' AND OLD.name <> NEW.name) THEN
        INSERT INTO cluster_change VALUES (NEW.resource_version, 'ADDED', NEW.uuid,
            NEW.project_id, NEW.name, NEW.registry_labels, NEW.registry_annotations,
            NEW.created_at, now());
    ELSIF TG_OP = 'UPDATE' THEN
        INSERT INTO cluster_change VALUES (NEW.resource_version, 'MODIFIED', NEW.uuid,
            NEW.project_id, NEW.name, NEW.registry_labels, NEW.registry_annotations,
            NEW.created_at, now());
    END IF;
    PERFORM pg_notify('fleetyard_registry', '');
    RETURN NULL;
END
$$;

CREATE TRIGGER cluster_changed AFTER INSERT OR UPDATE OR DELETE ON cluster
    FOR EACH ROW EXECUTE FUNCTION cluster_changed();

-- Clusters registered through the registry rather than provisioned: their own hidden public
-- template, whose driver (external) provisions nothing.
INSERT INTO cluster_template (uuid, project_id, user_id, name, coe, image_id, server_type,
    driver, public, hidden, created_at)
VALUES ('00000000-0000-4000-8000-00000000e7e7', '', '', 'external', 'kubernetes', '', 'vm',
    'external', TRUE, TRUE, now());
