-- The conductor's active health prober (src/conductor/probe.rs): one row per probed cluster
-- with its consecutive probe results, so that thresholds hold across conductors and
-- restarts. `last_probe_at` doubles as the claim of a round: a conductor probes a cluster
-- only when it is older than half the probe interval, and sets it before probing.

CREATE TABLE cluster_health_probe (
    cluster_uuid          VARCHAR(36) CONSTRAINT cluster_health_probe_pkey PRIMARY KEY
        CONSTRAINT fk_cluster_health_probe_cluster REFERENCES cluster (uuid) ON DELETE CASCADE,
    -- the last probe (or claim of one): the registry's lastHeartbeatTime
    last_probe_at         TEXT,
    -- the last probe that found the API ready
    last_ok_at            TEXT,
    -- the last change of health_status the prober committed: the registry's lastTransitionTime
    last_transition_at    TEXT,
    consecutive_failures  INTEGER NOT NULL DEFAULT 0,
    consecutive_successes INTEGER NOT NULL DEFAULT 0,
    -- why the last probe failed (NULL after a success)
    last_reason           TEXT
);
