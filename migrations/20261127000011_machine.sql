-- Machines: one row per node, owned by its node group and cluster. `spec` is what the node
-- should run (versions, container runtime, OS image, flavor, the driver's providerConfig,
-- taints, labels); `phase` and `provider_id` are the status fields lists filter and look up
-- by, `status` the rest of what the driver last observed.
CREATE TABLE machine (
    id           BIGSERIAL CONSTRAINT machine_pkey PRIMARY KEY,
    uuid         VARCHAR(36)  NOT NULL CONSTRAINT uniq_machine0uuid UNIQUE,
    name         VARCHAR(253) NOT NULL,
    role         VARCHAR(20)  NOT NULL
        CONSTRAINT ck_machine_role CHECK (role IN ('master', 'worker')),
    project_id   VARCHAR(255) NOT NULL,
    cluster_id   VARCHAR(36)  NOT NULL
        CONSTRAINT fk_machine_cluster REFERENCES cluster (uuid) ON DELETE CASCADE,
    nodegroup_id VARCHAR(36)  NOT NULL
        CONSTRAINT fk_machine_nodegroup REFERENCES nodegroup (uuid) ON DELETE CASCADE,
    spec         JSONB NOT NULL DEFAULT '{}'::jsonb,
    phase        VARCHAR(20)  NOT NULL
        CONSTRAINT ck_machine_phase
        CHECK (phase IN ('Pending', 'Provisioning', 'Running', 'Deleting', 'Failed')),
    provider_id  VARCHAR(255),
    status       JSONB NOT NULL DEFAULT '{}'::jsonb,
    created_at   TIMESTAMPTZ NOT NULL,
    updated_at   TIMESTAMPTZ,
    CONSTRAINT uniq_machine0cluster_id0name UNIQUE (cluster_id, name)
);
-- A cluster's machines in id order (every project), a node group's (and its cascade), a
-- project's by cluster (the Kubernetes face's namespace list and the project-scoped /v1 list).
CREATE INDEX ix_machine_cluster_id_id ON machine (cluster_id, id);
CREATE INDEX ix_machine_nodegroup_id_id ON machine (nodegroup_id, id);
CREATE INDEX ix_machine_project_id_cluster_id_id ON machine (project_id, cluster_id, id);

-- Every existing node group gets node_count machines named <node group name>-<n> (n from 1),
-- or nodegroup-<node group uuid>-<n> when the group's name is not lower-case letters, digits
-- and '-' starting with a letter or digit (MachineName::for_nodegroup, the same rule).
-- Running, since the nodes exist; versions unknown until the driver reports them.
INSERT INTO machine (uuid, name, role, project_id, cluster_id, nodegroup_id, spec, phase,
                     status, created_at)
SELECT md5(g.uuid || '/' || n::text)::uuid::text,
       CASE WHEN g.name ~ '^[a-z0-9][-a-z0-9]*$' AND length(g.name) <= 240
            THEN g.name || '-' || n::text
            ELSE 'nodegroup-' || g.uuid || '-' || n::text END,
       CASE WHEN g.role = 'master' THEN 'master' ELSE 'worker' END,
       g.project_id, g.cluster_id, g.uuid,
       jsonb_build_object('flavor', g.flavor_id, 'osImage', g.image_id,
                          'taints', g.node_taints, 'labels', g.node_labels),
       'Running', '{}'::jsonb, g.created_at
FROM nodegroup g CROSS JOIN LATERAL generate_series(1, g.node_count) AS n
ORDER BY g.id, n;
