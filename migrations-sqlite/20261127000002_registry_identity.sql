-- One namespace/name is one registry object, across both APIs; cluster names may repeat within
-- a project, as in Magnum; every change-log line keeps the object as it was (SQLite; as on
-- PostgreSQL, whose migration of the same version says more).
--
-- SQLite cannot drop a table constraint: the cluster table is built again (as cluster_new,
-- renamed to cluster once the old one is dropped) without the (project_id, name) uniqueness,
-- with registry_name and its uniqueness per project. A migration runs inside a transaction,
-- where foreign keys cannot be turned off: the rows of nodegroup and cluster_health_probe,
-- which dropping the old table deletes by cascade, are kept aside and written back.

DROP TRIGGER cluster_added;
DROP TRIGGER cluster_modified;
DROP TRIGGER cluster_deleted;

-- Existing rows' registry names: their own name when it is a Kubernetes name (a DNS-1123
-- subdomain), else `<name lower-cased, other characters as '-', trimmed to 200, dashes off
-- each dot-separated label, empty labels dropped>-<first 8 of uuid>` (`cluster-<8>` when
-- nothing is left), as domain::registry::name_candidate derives it.
CREATE TEMP TABLE cluster_registry_name AS
WITH RECURSIVE
    derived(id) AS (
        SELECT id FROM cluster
        WHERE NOT (length(name) BETWEEN 1 AND 253
            AND name NOT GLOB '*[^a-z0-9.-]*'
            AND name NOT GLOB '[.-]*' AND name NOT GLOB '*[.-]'
            AND name NOT LIKE '%..%' AND name NOT LIKE '%.-%' AND name NOT LIKE '%-.%')
    ),
    mapped(id, i, src, out) AS (
        SELECT c.id, 1, lower(substr(c.name, 1, 200)), ''
        FROM cluster c JOIN derived d ON d.id = c.id
        UNION ALL
        SELECT id, i + 1, src, out || CASE WHEN substr(src, i, 1) GLOB '[a-z0-9.]'
            THEN substr(src, i, 1) ELSE '-' END
        FROM mapped WHERE i <= length(src)
    ),
    labelled(id, rest, acc) AS (
        SELECT id, out || '.', '' FROM mapped WHERE i = length(src) + 1
        UNION ALL
        SELECT id, substr(rest, instr(rest, '.') + 1),
            CASE WHEN trim(substr(rest, 1, instr(rest, '.') - 1), '-') = '' THEN acc
                WHEN acc = '' THEN trim(substr(rest, 1, instr(rest, '.') - 1), '-')
                ELSE acc || '.' || trim(substr(rest, 1, instr(rest, '.') - 1), '-') END
        FROM labelled WHERE rest <> ''
    )
SELECT c.id AS id, CASE WHEN l.acc = '' THEN 'cluster-' ELSE l.acc || '-' END
    || substr(c.uuid, 1, 8) AS registry_name
FROM cluster c JOIN labelled l ON l.id = c.id AND l.rest = '';

CREATE TEMP TABLE keep_nodegroup AS SELECT * FROM nodegroup;
CREATE TEMP TABLE keep_cluster_health_probe AS SELECT * FROM cluster_health_probe;

CREATE TABLE cluster_new (
    id                      INTEGER CONSTRAINT cluster_pkey PRIMARY KEY AUTOINCREMENT,
    uuid                    VARCHAR(36)  NOT NULL CONSTRAINT uniq_cluster0uuid UNIQUE,
    project_id              VARCHAR(255) NOT NULL,
    user_id                 VARCHAR(255) NOT NULL,
    name                    VARCHAR(255) NOT NULL,
    cluster_template_id     VARCHAR(36)  NOT NULL
        CONSTRAINT fk_cluster_cluster_template REFERENCES cluster_template (uuid) ON DELETE RESTRICT,
    keypair                 VARCHAR(255),
    docker_volume_size      INTEGER,
    labels                  TEXT NOT NULL DEFAULT '{}',
    master_flavor_id        VARCHAR(255),
    flavor_id               VARCHAR(255),
    stack_id                VARCHAR(255),
    api_address             VARCHAR(255),
    status                  VARCHAR(20) NOT NULL,
    status_reason           TEXT,
    health_status           VARCHAR(20),
    health_status_reason    TEXT NOT NULL DEFAULT '{}',
    create_timeout          INTEGER,
    discovery_url           VARCHAR(255),
    coe_version             VARCHAR(255),
    container_version       VARCHAR(255),
    ca_cert_ref             VARCHAR(512),
    magnum_cert_ref         VARCHAR(512),
    etcd_ca_cert_ref        VARCHAR(512),
    front_proxy_ca_cert_ref VARCHAR(512),
    fixed_network           VARCHAR(255),
    fixed_subnet            VARCHAR(255),
    floating_ip_enabled     BOOLEAN NOT NULL DEFAULT TRUE,
    master_lb_enabled       BOOLEAN NOT NULL DEFAULT FALSE,
    -- optimistic-concurrency counter, bumped by every update
    version                 BIGINT NOT NULL DEFAULT 0,
    created_at              TEXT NOT NULL,
    updated_at              TEXT,
    registry_labels         TEXT NOT NULL DEFAULT '{}',
    registry_annotations    TEXT NOT NULL DEFAULT '{}',
    resource_version        BIGINT NOT NULL DEFAULT 0,
    generation              BIGINT NOT NULL DEFAULT 1,
    server_endpoints        TEXT NOT NULL DEFAULT '[]',
    ca_bundle               TEXT,
    auth_info               TEXT NOT NULL DEFAULT '{}',
    registry_finalizers     TEXT NOT NULL DEFAULT '[]',
    registry_owner_references TEXT NOT NULL DEFAULT '[]',
    deletion_timestamp      TEXT,
    deletion_grace_period_seconds BIGINT,
    registry_conditions     TEXT NOT NULL DEFAULT '[]',
    registry_generate_name  TEXT,
    -- metadata.name in the cluster registry: one object per project and name, across both APIs
    registry_name           VARCHAR(253) NOT NULL,
    CONSTRAINT uniq_cluster0project_id0registry_name UNIQUE (project_id, registry_name)
);

INSERT INTO cluster_new (id, uuid, project_id, user_id, name, cluster_template_id, keypair,
    docker_volume_size, labels, master_flavor_id, flavor_id, stack_id, api_address, status,
    status_reason, health_status, health_status_reason, create_timeout, discovery_url,
    coe_version, container_version, ca_cert_ref, magnum_cert_ref, etcd_ca_cert_ref,
    front_proxy_ca_cert_ref, fixed_network, fixed_subnet, floating_ip_enabled,
    master_lb_enabled, version, created_at, updated_at, registry_labels, registry_annotations,
    resource_version, generation, server_endpoints, ca_bundle, auth_info, registry_finalizers,
    registry_owner_references, deletion_timestamp, deletion_grace_period_seconds,
    registry_conditions, registry_generate_name, registry_name)
SELECT o.id, o.uuid, o.project_id, o.user_id, o.name, o.cluster_template_id, o.keypair,
    o.docker_volume_size, o.labels, o.master_flavor_id, o.flavor_id, o.stack_id,
    o.api_address, o.status, o.status_reason, o.health_status, o.health_status_reason,
    o.create_timeout, o.discovery_url, o.coe_version, o.container_version, o.ca_cert_ref,
    o.magnum_cert_ref, o.etcd_ca_cert_ref, o.front_proxy_ca_cert_ref, o.fixed_network,
    o.fixed_subnet, o.floating_ip_enabled, o.master_lb_enabled, o.version, o.created_at,
    o.updated_at, o.registry_labels, o.registry_annotations, o.resource_version, o.generation,
    o.server_endpoints, o.ca_bundle, o.auth_info, o.registry_finalizers,
    o.registry_owner_references, o.deletion_timestamp, o.deletion_grace_period_seconds,
    o.registry_conditions, o.registry_generate_name,
    CASE
        -- a derived name that a cluster's own name, or an older cluster's derived name,
        -- already holds: `<base>-<the uuid's 32 hex digits>`
        WHEN r.registry_name IS NOT NULL AND EXISTS (
            SELECT 1 FROM cluster p LEFT JOIN cluster_registry_name pr ON pr.id = p.id
            WHERE p.project_id = o.project_id AND p.id <> o.id
                AND COALESCE(pr.registry_name, p.name) = r.registry_name
                AND (pr.registry_name IS NULL OR p.id < o.id))
            THEN substr(r.registry_name, 1, length(r.registry_name) - 9) || '-'
                || replace(o.uuid, '-', '')
        ELSE COALESCE(r.registry_name, o.name)
    END
FROM cluster o LEFT JOIN cluster_registry_name r ON r.id = o.id
ORDER BY o.id;

-- Ids are never reused: the old table's high-water mark carries over.
INSERT INTO sqlite_sequence (name, seq)
SELECT 'cluster_new', 0
WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'cluster_new');
UPDATE sqlite_sequence SET seq = MAX(seq,
    COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'cluster'), 0))
WHERE name = 'cluster_new';

DROP TABLE cluster;
ALTER TABLE cluster_new RENAME TO cluster;
INSERT INTO nodegroup SELECT * FROM keep_nodegroup;
INSERT INTO cluster_health_probe SELECT * FROM keep_cluster_health_probe;
DROP TABLE keep_nodegroup;
DROP TABLE keep_cluster_health_probe;
DROP TABLE cluster_registry_name;

-- keyset pages of one project's clusters
CREATE INDEX ix_cluster_project_id_id ON cluster (project_id, id);
CREATE INDEX ix_cluster_status ON cluster (status);
CREATE INDEX ix_cluster_cluster_template_id ON cluster (cluster_template_id);
-- /v1 lookups by name within a project
CREATE INDEX ix_cluster_project_id_name ON cluster (project_id, name);

-- What a change-log line shows of the object: the registry object as it was.
ALTER TABLE cluster_change ADD COLUMN object TEXT;

-- The registry object of a cluster row, as JSON: the row's columns, the driver of its
-- template, its node count, the CA a client verifies it with, and the health prober's times.
-- The keys are the column names src/store/registry.rs decodes (EntryRow). A column added to
-- the snapshot later is added here, by dropping and creating this view again (PostgreSQL's
-- cluster_snapshot() takes every column by itself).
CREATE VIEW cluster_snapshot AS
SELECT c.id AS id, json_object(
    'id', c.id, 'uuid', c.uuid, 'project_id', c.project_id, 'user_id', c.user_id,
    'name', c.name, 'cluster_template_id', c.cluster_template_id, 'keypair', c.keypair,
    'docker_volume_size', c.docker_volume_size, 'labels', json(c.labels),
    'master_flavor_id', c.master_flavor_id, 'flavor_id', c.flavor_id,
    'stack_id', c.stack_id, 'api_address', c.api_address, 'status', c.status,
    'status_reason', c.status_reason, 'health_status', c.health_status,
    'health_status_reason', json(c.health_status_reason),
    'create_timeout', c.create_timeout, 'discovery_url', c.discovery_url,
    'coe_version', c.coe_version, 'container_version', c.container_version,
    'fixed_network', c.fixed_network, 'fixed_subnet', c.fixed_subnet,
    'floating_ip_enabled', json(CASE WHEN c.floating_ip_enabled THEN 'true' ELSE 'false' END),
    'master_lb_enabled', json(CASE WHEN c.master_lb_enabled THEN 'true' ELSE 'false' END),
    'version', c.version, 'created_at', c.created_at, 'updated_at', c.updated_at,
    'registry_labels', json(c.registry_labels),
    'registry_annotations', json(c.registry_annotations),
    'resource_version', c.resource_version, 'generation', c.generation,
    'server_endpoints', json(c.server_endpoints), 'ca_bundle', c.ca_bundle,
    'auth_info', json(c.auth_info), 'registry_finalizers', json(c.registry_finalizers),
    'registry_owner_references', json(c.registry_owner_references),
    'deletion_timestamp', c.deletion_timestamp,
    'deletion_grace_period_seconds', c.deletion_grace_period_seconds,
    'registry_conditions', json(c.registry_conditions),
    'registry_generate_name', c.registry_generate_name,
    'registry_name', c.registry_name,
    'driver', (SELECT t.driver FROM cluster_template t WHERE t.uuid = c.cluster_template_id),
    'node_count', (SELECT SUM(n.node_count) FROM nodegroup n WHERE n.cluster_id = c.uuid),
    'ca_pem', COALESCE(c.ca_bundle, (SELECT k.certificate FROM x509keypair k
        WHERE k.cluster_uuid = c.uuid AND k.kind = 'ca' ORDER BY k.id DESC LIMIT 1)),
    'last_heartbeat', (SELECT p.last_probe_at FROM cluster_health_probe p
        WHERE p.cluster_uuid = c.uuid),
    'last_transition', (SELECT p.last_transition_at FROM cluster_health_probe p
        WHERE p.cluster_uuid = c.uuid)) AS object
FROM cluster c;

CREATE TRIGGER cluster_added AFTER INSERT ON cluster
BEGIN
    INSERT INTO cluster_change (change, cluster_uuid, project_id, name, registry_labels,
        registry_annotations, created_at, prev_registry_labels, deletion_timestamp, object)
    SELECT 'ADDED', NEW.uuid, NEW.project_id, NEW.name, NEW.registry_labels,
        NEW.registry_annotations, NEW.created_at, NULL, NEW.deletion_timestamp, s.object
    FROM cluster_snapshot s WHERE s.id = NEW.id;
    UPDATE cluster SET resource_version = last_insert_rowid() WHERE id = NEW.id;
END;

-- Fires for the service's updates (they set every column); not for the resource_version
-- update the triggers make.
CREATE TRIGGER cluster_modified AFTER UPDATE OF name, status, version, updated_at, labels,
    registry_labels, registry_annotations, generation, server_endpoints, ca_bundle, auth_info,
    api_address, health_status, registry_finalizers, registry_owner_references,
    deletion_timestamp, registry_conditions ON cluster
BEGIN
    INSERT INTO cluster_change (change, cluster_uuid, project_id, name, registry_labels,
        registry_annotations, created_at, prev_registry_labels, deletion_timestamp, object)
    SELECT 'MODIFIED', NEW.uuid, NEW.project_id, NEW.name, NEW.registry_labels,
        NEW.registry_annotations, NEW.created_at, OLD.registry_labels, NEW.deletion_timestamp,
        s.object
    FROM cluster_snapshot s WHERE s.id = NEW.id;
    UPDATE cluster SET resource_version = last_insert_rowid() WHERE id = NEW.id;
END;

-- The DELETED line, written before the row (and what cascades from it) goes: the last full
-- object.
CREATE TRIGGER cluster_deleting BEFORE DELETE ON cluster
BEGIN
    INSERT INTO cluster_change (change, cluster_uuid, project_id, name, registry_labels,
        registry_annotations, created_at, prev_registry_labels, deletion_timestamp, object)
    SELECT 'DELETED', OLD.uuid, OLD.project_id, OLD.name, OLD.registry_labels,
        OLD.registry_annotations, OLD.created_at, OLD.registry_labels, OLD.deletion_timestamp,
        s.object
    FROM cluster_snapshot s WHERE s.id = OLD.id;
END;
