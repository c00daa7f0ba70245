//! Ordered steps that apply actions to hosts, in parallel under a concurrency limit.
