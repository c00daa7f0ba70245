-- One value sealed with the secret key of the first replica that started on this database:
-- a replica whose --secret-key-file cannot open it is refused at start and by /healthz, before
-- it seals anything with a key the others cannot read.
CREATE TABLE key_check (
    id          TEXT PRIMARY KEY,
    sealed      TEXT NOT NULL,
    created_at  BIGINT NOT NULL
);
