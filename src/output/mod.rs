//! What the user sees: progress on a TTY, timestamped lines otherwise, JSON events on request.
