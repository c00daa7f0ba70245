//! The `.rkestate` file (§7) and the names of the files derived from the config path (§6).
