//! Certificates, keys and kubeconfigs of a cluster (§11).
