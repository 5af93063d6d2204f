-- Fleetyard schema (SQLite, the embedded default): the same tables as migrations/, with
-- JSON stored as TEXT and timestamps as ISO-8601 TEXT.
-- Every constraint is named: the store maps constraint names to API errors.

CREATE TABLE cluster_template (
    id                    INTEGER CONSTRAINT cluster_template_pkey PRIMARY KEY AUTOINCREMENT,
    uuid                  VARCHAR(36)  NOT NULL CONSTRAINT uniq_cluster_template0uuid UNIQUE,
    project_id            VARCHAR(255) NOT NULL,
    user_id               VARCHAR(255) NOT NULL,
    name                  VARCHAR(255) NOT NULL,
    coe                   VARCHAR(255) NOT NULL,
    image_id              VARCHAR(255) NOT NULL,
    flavor_id             VARCHAR(255),
    master_flavor_id      VARCHAR(255),
    keypair_id            VARCHAR(255),
    external_network_id   VARCHAR(255),
    fixed_network         VARCHAR(255),
    fixed_subnet          VARCHAR(255),
    network_driver        VARCHAR(255),
    volume_driver         VARCHAR(255),
    dns_nameserver        VARCHAR(255),
    docker_storage_driver VARCHAR(255),
    cluster_distro        VARCHAR(255),
    http_proxy            VARCHAR(255),
    https_proxy           VARCHAR(255),
    no_proxy              VARCHAR(255),
    insecure_registry     VARCHAR(255),
    server_type           VARCHAR(255) NOT NULL DEFAULT 'vm',
    tags                  VARCHAR(255),
    driver                VARCHAR(255),
    apiserver_port        INTEGER,
    docker_volume_size    INTEGER,
    labels                TEXT   NOT NULL DEFAULT '{}',
    registry_enabled      BOOLEAN NOT NULL DEFAULT FALSE,
    tls_disabled          BOOLEAN NOT NULL DEFAULT FALSE,
    public                BOOLEAN NOT NULL DEFAULT FALSE,
    master_lb_enabled     BOOLEAN NOT NULL DEFAULT FALSE,
    floating_ip_enabled   BOOLEAN NOT NULL DEFAULT TRUE,
    hidden                BOOLEAN NOT NULL DEFAULT FALSE,
    -- optimistic-concurrency counter, bumped by every update
    version               BIGINT  NOT NULL DEFAULT 0,
    created_at            TEXT NOT NULL,
    updated_at            TEXT
);
CREATE INDEX ix_cluster_template_project_id ON cluster_template (project_id);
CREATE INDEX ix_cluster_template_public ON cluster_template (public, hidden);

CREATE TABLE cluster (
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
    -- Fleetyard keeps cluster names unique per project (Magnum does not; its name lookups were ambiguous)
    CONSTRAINT uniq_cluster0project_id0name UNIQUE (project_id, name)
);
-- keyset pages of one project's clusters
CREATE INDEX ix_cluster_project_id_id ON cluster (project_id, id);
CREATE INDEX ix_cluster_status ON cluster (status);
CREATE INDEX ix_cluster_cluster_template_id ON cluster (cluster_template_id);

CREATE TABLE nodegroup (
    id                 INTEGER CONSTRAINT nodegroup_pkey PRIMARY KEY AUTOINCREMENT,
    uuid               VARCHAR(36)  NOT NULL CONSTRAINT uniq_nodegroup0uuid UNIQUE,
    name               VARCHAR(255) NOT NULL,
    cluster_id         VARCHAR(36)  NOT NULL
        CONSTRAINT fk_nodegroup_cluster REFERENCES cluster (uuid) ON DELETE CASCADE,
    project_id         VARCHAR(255) NOT NULL,
    docker_volume_size INTEGER,
    labels             TEXT NOT NULL DEFAULT '{}',
    flavor_id          VARCHAR(255),
    image_id           VARCHAR(255),
    node_addresses     TEXT NOT NULL DEFAULT '[]',
    node_count         INTEGER NOT NULL CONSTRAINT ck_nodegroup_node_count CHECK (node_count >= 0),
    role               VARCHAR(255) NOT NULL,
    min_node_count     INTEGER NOT NULL DEFAULT 0,
    max_node_count     INTEGER,
    is_default         BOOLEAN NOT NULL DEFAULT FALSE,
    stack_id           VARCHAR(255),
    status             VARCHAR(20) NOT NULL,
    status_reason      TEXT,
    version            VARCHAR(20),
    node_labels        TEXT NOT NULL DEFAULT '{}',
    node_taints        TEXT NOT NULL DEFAULT '[]',
    created_at         TEXT NOT NULL,
    updated_at         TEXT,
    CONSTRAINT uniq_nodegroup0cluster_id0name UNIQUE (cluster_id, name)
);
CREATE INDEX ix_nodegroup_project_id ON nodegroup (project_id);

CREATE TABLE federation (
    id             INTEGER CONSTRAINT federation_pkey PRIMARY KEY AUTOINCREMENT,
    uuid           VARCHAR(36)  NOT NULL CONSTRAINT uniq_federation0uuid UNIQUE,
    project_id     VARCHAR(255) NOT NULL,
    user_id        VARCHAR(255) NOT NULL,
    name           VARCHAR(255) NOT NULL,
    -- always the host cluster's uuid (Magnum stored whatever the client sent)
    hostcluster_id VARCHAR(36)  NOT NULL,
    member_ids     TEXT NOT NULL DEFAULT '[]',
    status         VARCHAR(20) NOT NULL,
    status_reason  TEXT,
    properties     TEXT NOT NULL DEFAULT '{}',
    version        BIGINT NOT NULL DEFAULT 0,
    created_at     TEXT NOT NULL,
    updated_at     TEXT
);
CREATE INDEX ix_federation_project_id ON federation (project_id);
CREATE INDEX ix_federation_hostcluster_id ON federation (hostcluster_id);

CREATE TABLE x509keypair (
    id                     INTEGER CONSTRAINT x509keypair_pkey PRIMARY KEY AUTOINCREMENT,
    uuid                   VARCHAR(36) NOT NULL CONSTRAINT uniq_x509keypair0uuid UNIQUE,
    -- which cluster and which of its key pairs (ca, client, etcd_ca, front_proxy_ca)
    cluster_uuid           VARCHAR(36),
    kind                   VARCHAR(32) NOT NULL,
    certificate            TEXT NOT NULL,
    -- encrypted at rest (AES-256-GCM), never in clear
    private_key            TEXT NOT NULL,
    private_key_passphrase TEXT,
    intermediates          TEXT,
    project_id             VARCHAR(255) NOT NULL,
    user_id                VARCHAR(255) NOT NULL,
    created_at             TEXT NOT NULL,
    updated_at             TEXT
);
CREATE INDEX ix_x509keypair_cluster_uuid ON x509keypair (cluster_uuid, kind);

CREATE TABLE quotas (
    id         INTEGER CONSTRAINT quotas_pkey PRIMARY KEY AUTOINCREMENT,
    project_id VARCHAR(255) NOT NULL,
    resource   VARCHAR(255) NOT NULL,
    hard_limit INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT,
    CONSTRAINT uniq_quotas0project_id0resource UNIQUE (project_id, resource)
);

CREATE TABLE magnum_service (
    id              INTEGER CONSTRAINT magnum_service_pkey PRIMARY KEY AUTOINCREMENT,
    host            VARCHAR(255) NOT NULL,
    "binary"        VARCHAR(255) NOT NULL,
    disabled        BOOLEAN NOT NULL DEFAULT FALSE,
    disabled_reason VARCHAR(255),
    last_seen_up    TEXT,
    forced_down     BOOLEAN NOT NULL DEFAULT FALSE,
    report_count    INTEGER NOT NULL DEFAULT 0,
    created_at      TEXT NOT NULL,
    updated_at      TEXT,
    CONSTRAINT uniq_magnum_service0host0binary UNIQUE (host, "binary")
);

-- Durable driver work: written by the API in the same transaction as the change, claimed by
-- conductors with FOR UPDATE SKIP LOCKED under a lease.
CREATE TABLE job (
    id               INTEGER CONSTRAINT job_pkey PRIMARY KEY AUTOINCREMENT,
    uuid             VARCHAR(36)  NOT NULL CONSTRAINT uniq_job0uuid UNIQUE,
    operation        VARCHAR(64)  NOT NULL,
    resource_type    VARCHAR(32)  NOT NULL,
    resource_uuid    VARCHAR(36)  NOT NULL,
    driver           VARCHAR(64)  NOT NULL,
    payload          TEXT NOT NULL DEFAULT '{}',
    state            VARCHAR(16)  NOT NULL DEFAULT 'pending'
        CONSTRAINT ck_job_state CHECK (state IN ('pending', 'done', 'failed')),
    attempts         INTEGER NOT NULL DEFAULT 0,
    max_attempts     INTEGER NOT NULL DEFAULT 5,
    run_after        TEXT NOT NULL,
    deadline_at      TEXT,
    lease_owner      VARCHAR(255),
    lease_expires_at TEXT,
    last_error       TEXT,
    created_at       TEXT NOT NULL,
    updated_at       TEXT
);
CREATE INDEX ix_job_due ON job (run_after) WHERE state = 'pending';
CREATE INDEX ix_job_resource ON job (resource_uuid);

-- Notifications written in the same transaction as the change they report; a relay publishes
-- them and marks them sent after the broker confirms.
CREATE TABLE outbox (
    id            INTEGER CONSTRAINT outbox_pkey PRIMARY KEY AUTOINCREMENT,
    message_id    VARCHAR(36)  NOT NULL CONSTRAINT uniq_outbox0message_id UNIQUE,
    resource_type VARCHAR(32)  NOT NULL,
    resource_uuid VARCHAR(36)  NOT NULL,
    event_type    VARCHAR(255) NOT NULL,
    priority      VARCHAR(16)  NOT NULL,
    -- the inner oslo message (message_id, publisher_id, event_type, priority, payload, timestamp)
    message       TEXT NOT NULL,
    created_at    TEXT NOT NULL,
    sent_at       TEXT,
    attempts      INTEGER NOT NULL DEFAULT 0,
    claimed_by    VARCHAR(255),
    claim_expires_at TEXT
);
CREATE INDEX ix_outbox_pending ON outbox (id) WHERE sent_at IS NULL;
CREATE INDEX ix_outbox_sent_at ON outbox (sent_at) WHERE sent_at IS NOT NULL;
