//! Kubernetes version metadata (§29): supported versions, system images and default component
//! flags, loaded from the data file `data/versions.json`.
