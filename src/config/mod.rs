//! The cluster.yml model (RKE1 schema, §3), its defaults (§4) and validation.
