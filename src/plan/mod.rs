//! Pure functions from config + state + version metadata to the desired state of every host.
