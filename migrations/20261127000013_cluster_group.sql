-- Cluster groups: named sets of clusters a project shares with other projects.
--
-- cluster_group: a group of one project, named by a Kubernetes name unique in the project,
--   with an optional label selector over registry labels (its text, as the client wrote it).
-- cluster_group_member: an explicit member. A row from the group's side is 'Proposed' until
--   the cluster's project accepts it; a row the cluster's project writes itself (or one of the
--   group's own project) is 'Accepted' at once. Only 'Accepted' rows grant anything; the
--   check ties the state to the consent's time, so no row is accepted without one.
-- cluster_group_match: the clusters of the group's own project its selector matches,
--   materialized (rewritten when a selector or a cluster's labels change), so that a read
--   through groups is index reads and never evaluates a selector per cluster per request.
-- cluster_group_binding: one project (optionally only members holding one of `roles`) gets
--   'read' or 'write' over the group's clusters.
-- Deleting a cluster or a group deletes its rows here (ON DELETE CASCADE).

CREATE TABLE cluster_group (
    id          BIGSERIAL CONSTRAINT cluster_group_pkey PRIMARY KEY,
    uuid        VARCHAR(36)  NOT NULL CONSTRAINT uniq_cluster_group0uuid UNIQUE,
    project_id  VARCHAR(255) NOT NULL,
    user_id     VARCHAR(255) NOT NULL,
    name        VARCHAR(253) NOT NULL,
    selector    TEXT,
    version     BIGINT NOT NULL DEFAULT 0,
    created_at  TIMESTAMPTZ NOT NULL,
    updated_at  TIMESTAMPTZ,
    CONSTRAINT uniq_cluster_group0project_id0name UNIQUE (project_id, name)
);
-- a project's groups by id (keyset pages), and those with a selector (a cluster's rematch)
CREATE INDEX ix_cluster_group_project_id_id ON cluster_group (project_id, id);
CREATE INDEX ix_cluster_group_selecting ON cluster_group (project_id) WHERE selector IS NOT NULL;

CREATE TABLE cluster_group_member (
    id                 BIGSERIAL CONSTRAINT cluster_group_member_pkey PRIMARY KEY,
    group_id           VARCHAR(36)  NOT NULL
        CONSTRAINT fk_cluster_group_member_group REFERENCES cluster_group (uuid) ON DELETE CASCADE,
    cluster_id         VARCHAR(36)  NOT NULL
        CONSTRAINT fk_cluster_group_member_cluster REFERENCES cluster (uuid) ON DELETE CASCADE,
    -- the cluster's project: whose consent the row needs
    cluster_project_id VARCHAR(255) NOT NULL,
    state              VARCHAR(10)  NOT NULL
        CONSTRAINT ck_cluster_group_member_state CHECK (state IN ('Proposed', 'Accepted')),
    proposed_by        VARCHAR(255) NOT NULL,
    consented_at       TIMESTAMPTZ,
    created_at         TIMESTAMPTZ NOT NULL,
    CONSTRAINT ck_cluster_group_member_consent
        CHECK ((state = 'Accepted') = (consented_at IS NOT NULL)),
    CONSTRAINT uniq_cluster_group_member0group_id0cluster_id UNIQUE (group_id, cluster_id)
);
-- a cluster's groups (its rights, its owner's pending proposals); the unique constraint
-- serves a group's members
CREATE INDEX ix_cluster_group_member_cluster_id ON cluster_group_member (cluster_id, group_id);
CREATE INDEX ix_cluster_group_member_cluster_project_id
    ON cluster_group_member (cluster_project_id, state);

CREATE TABLE cluster_group_match (
    group_id   VARCHAR(36) NOT NULL
        CONSTRAINT fk_cluster_group_match_group REFERENCES cluster_group (uuid) ON DELETE CASCADE,
    cluster_id VARCHAR(36) NOT NULL
        CONSTRAINT fk_cluster_group_match_cluster REFERENCES cluster (uuid) ON DELETE CASCADE,
    CONSTRAINT cluster_group_match_pkey PRIMARY KEY (group_id, cluster_id)
);
CREATE INDEX ix_cluster_group_match_cluster_id ON cluster_group_match (cluster_id, group_id);

CREATE TABLE cluster_group_binding (
    id                 BIGSERIAL CONSTRAINT cluster_group_binding_pkey PRIMARY KEY,
    uuid               VARCHAR(36)  NOT NULL CONSTRAINT uniq_cluster_group_binding0uuid UNIQUE,
    group_id           VARCHAR(36)  NOT NULL
        CONSTRAINT fk_cluster_group_binding_group REFERENCES cluster_group (uuid) ON DELETE CASCADE,
    -- the group's project (who manages the binding)
    project_id         VARCHAR(255) NOT NULL,
    grantee_project_id VARCHAR(255) NOT NULL,
    -- a JSON array of role names; NULL: every member of the grantee project
    roles              JSONB,
    access             VARCHAR(5)   NOT NULL
        CONSTRAINT ck_cluster_group_binding_access CHECK (access IN ('read', 'write')),
    created_at         TIMESTAMPTZ NOT NULL,
    CONSTRAINT uniq_cluster_group_binding0group_id0grantee_project_id
        UNIQUE (group_id, grantee_project_id)
);
-- what binds a project (every read through groups starts here); the unique constraint
-- serves a group's bindings
CREATE INDEX ix_cluster_group_binding_grantee_project_id
    ON cluster_group_binding (grantee_project_id, group_id);
