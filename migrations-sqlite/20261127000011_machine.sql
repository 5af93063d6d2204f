-- Machines: one row per node (SQLite; as on PostgreSQL).
CREATE TABLE machine (
    id           INTEGER CONSTRAINT machine_pkey PRIMARY KEY AUTOINCREMENT,
    uuid         VARCHAR(36)  NOT NULL CONSTRAINT uniq_machine0uuid UNIQUE,
    name         VARCHAR(253) NOT NULL,
    role         VARCHAR(20)  NOT NULL
        CONSTRAINT ck_machine_role CHECK (role IN ('master', 'worker')),
    project_id   VARCHAR(255) NOT NULL,
    cluster_id   VARCHAR(36)  NOT NULL
        CONSTRAINT fk_machine_cluster REFERENCES cluster (uuid) ON DELETE CASCADE,
    nodegroup_id VARCHAR(36)  NOT NULL
        CONSTRAINT fk_machine_nodegroup REFERENCES nodegroup (uuid) ON DELETE CASCADE,
    spec         TEXT NOT NULL DEFAULT '{}',
    phase        VARCHAR(20)  NOT NULL
        CONSTRAINT ck_machine_phase
        CHECK (phase IN ('Pending', 'Provisioning', 'Running', 'Deleting', 'Failed')),
    provider_id  VARCHAR(255),
    status       TEXT NOT NULL DEFAULT '{}',
    created_at   TEXT NOT NULL,
    updated_at   TEXT,
    CONSTRAINT uniq_machine0cluster_id0name UNIQUE (cluster_id, name)
);
CREATE INDEX ix_machine_cluster_id_id ON machine (cluster_id, id);
CREATE INDEX ix_machine_nodegroup_id_id ON machine (nodegroup_id, id);
CREATE INDEX ix_machine_project_id_cluster_id_id ON machine (project_id, cluster_id, id);

-- The backfill of the PostgreSQL migration: node_count machines per node group, named by the
-- same rule (GLOB for the name test; the uuid is random where PostgreSQL derives it).
WITH RECURSIVE seq(n) AS (
    SELECT 1
    UNION ALL
    SELECT n + 1 FROM seq WHERE n < (SELECT COALESCE(MAX(node_count), 0) FROM nodegroup)
)
INSERT INTO machine (uuid, name, role, project_id, cluster_id, nodegroup_id, spec, phase,
                     status, created_at)
SELECT lower(hex(randomblob(4)) || '-' || hex(randomblob(2)) || '-4'
             || substr(hex(randomblob(2)), 2) || '-'
             || substr('89ab', 1 + (abs(random()) % 4), 1) || substr(hex(randomblob(2)), 2)
             || '-' || hex(randomblob(6))),
       CASE WHEN g.name GLOB '[a-z0-9]*' AND g.name NOT GLOB '*[^-a-z0-9]*'
                 AND length(g.name) <= 240
            THEN g.name || '-' || s.n
            ELSE 'nodegroup-' || g.uuid || '-' || s.n END,
       CASE WHEN g.role = 'master' THEN 'master' ELSE 'worker' END,
       g.project_id, g.cluster_id, g.uuid,
       json_object('flavor', g.flavor_id, 'osImage', g.image_id,
                   'taints', json(g.node_taints), 'labels', json(g.node_labels)),
       'Running', '{}', g.created_at
FROM nodegroup g JOIN seq s ON s.n <= g.node_count
ORDER BY g.id, s.n;
