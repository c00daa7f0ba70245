//! Desired vs observed state of each host, giving the list of actions to take.
