-- rkers serve: one schema for SQLite and PostgreSQL, so only portable types (TEXT, BIGINT).
-- Times are Unix milliseconds written by the replicas. Sealed columns hold AES-256-GCM
-- ciphertext as "v1:" + base64(nonce || ciphertext): the cluster.yml (it may carry SSH keys
-- and registry passwords), every state (certificates and their private keys) and the kubeconfig.

CREATE TABLE clusters (
    name        TEXT PRIMARY KEY,
    config      TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL
);

-- Every saved version of a cluster's state is kept. Versions are dense (1, 2, 3...): a save
-- inserts expected+1, so two writers holding the same version collide on the primary key,
-- which is the compare-and-swap.
CREATE TABLE states (
    cluster     TEXT NOT NULL REFERENCES clusters(name) ON DELETE CASCADE,
    version     BIGINT NOT NULL,
    saved_at    BIGINT NOT NULL,
    operation   TEXT,
    sealed      TEXT NOT NULL,
    PRIMARY KEY (cluster, version)
);

CREATE TABLE operations (
    id               TEXT PRIMARY KEY,
    cluster          TEXT NOT NULL REFERENCES clusters(name) ON DELETE CASCADE,
    kind             TEXT NOT NULL,
    params           TEXT NOT NULL,
    status           TEXT NOT NULL,
    exit_code        BIGINT,
    error            TEXT,
    replica          TEXT NOT NULL,
    cancel_requested BIGINT NOT NULL DEFAULT 0,
    state_version    BIGINT,
    created_at       BIGINT NOT NULL,
    finished_at      BIGINT
);
CREATE INDEX operations_by_cluster ON operations (cluster, created_at);

CREATE TABLE events (
    operation   TEXT NOT NULL REFERENCES operations(id) ON DELETE CASCADE,
    seq         BIGINT NOT NULL,
    body        TEXT NOT NULL,
    PRIMARY KEY (operation, seq)
);

-- The per-cluster lock: a lease. The replica running an operation renews expires_at; a
-- replica that crashed stops renewing and the next request takes the lock over once it expired.
CREATE TABLE cluster_locks (
    cluster     TEXT PRIMARY KEY,
    operation   TEXT NOT NULL,
    replica     TEXT NOT NULL,
    expires_at  BIGINT NOT NULL
);

CREATE TABLE kubeconfigs (
    cluster     TEXT PRIMARY KEY REFERENCES clusters(name) ON DELETE CASCADE,
    sealed      TEXT NOT NULL,
    updated_at  BIGINT NOT NULL
);
