-- Cluster groups (SQLite; as on PostgreSQL, where the tables are described).

CREATE TABLE cluster_group (
    id          INTEGER CONSTRAINT cluster_group_pkey PRIMARY KEY AUTOINCREMENT,
    uuid        VARCHAR(36)  NOT NULL CONSTRAINT uniq_cluster_group0uuid UNIQUE,
    project_id  VARCHAR(255) NOT NULL,
    user_id     VARCHAR(255) NOT NULL,
    name        VARCHAR(253) NOT NULL,
    selector    TEXT,
    version     BIGINT NOT NULL DEFAULT 0,
    created_at  TEXT NOT NULL,
    updated_at  TEXT,
    CONSTRAINT uniq_cluster_group0project_id0name UNIQUE (project_id, name)
);
-- a project's groups by id (keyset pages), and those with a selector (a cluster's rematch)
CREATE INDEX ix_cluster_group_project_id_id ON cluster_group (project_id, id);
CREATE INDEX ix_cluster_group_selecting ON cluster_group (project_id) WHERE selector IS NOT NULL;

CREATE TABLE cluster_group_member (
    id                 INTEGER CONSTRAINT cluster_group_member_pkey PRIMARY KEY AUTOINCREMENT,
    group_id           VARCHAR(36)  NOT NULL
        CONSTRAINT fk_cluster_group_member_group REFERENCES cluster_group (uuid) ON DELETE CASCADE,
    cluster_id         VARCHAR(36)  NOT NULL
        CONSTRAINT fk_cluster_group_member_cluster REFERENCES cluster (uuid) ON DELETE CASCADE,
    -- the cluster's project: whose consent the row needs
    cluster_project_id VARCHAR(255) NOT NULL,
    state              VARCHAR(10)  NOT NULL
        CONSTRAINT ck_cluster_group_member_state CHECK (state IN ('Proposed', 'Accepted')),
    proposed_by        VARCHAR(255) NOT NULL,
    consented_at       TEXT,
    created_at         TEXT NOT NULL,
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
    id                 INTEGER CONSTRAINT cluster_group_binding_pkey PRIMARY KEY AUTOINCREMENT,
    uuid               VARCHAR(36)  NOT NULL CONSTRAINT uniq_cluster_group_binding0uuid UNIQUE,
    group_id           VARCHAR(36)  NOT NULL
        CONSTRAINT fk_cluster_group_binding_group REFERENCES cluster_group (uuid) ON DELETE CASCADE,
    -- the group's project (who manages the binding)
    project_id         VARCHAR(255) NOT NULL,
    grantee_project_id VARCHAR(255) NOT NULL,
    -- a JSON array of role names; NULL: every member of the grantee project
    roles              TEXT,
    access             VARCHAR(5)   NOT NULL
        CONSTRAINT ck_cluster_group_binding_access CHECK (access IN ('read', 'write')),
    created_at         TEXT NOT NULL,
    CONSTRAINT uniq_cluster_group_binding0group_id0grantee_project_id
        UNIQUE (group_id, grantee_project_id)
);
-- what binds a project (every read through groups starts here); the unique constraint
-- serves a group's bindings
CREATE INDEX ix_cluster_group_binding_grantee_project_id
    ON cluster_group_binding (grantee_project_id, group_id);
