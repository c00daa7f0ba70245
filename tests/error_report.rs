//! How a failure reaches the final event (`rkers::error`): the hosts come from each error's own
//! type, wrappers ask what they wrap, and the causes follow the source chain. Out of the crate,
//! so that `error` itself imports none of the modules whose errors it reports.

use rkers::error::{ErrorReport, Failure, HostContext};
use rkers::hosts::HostError;
use rkers::phases::PhaseError;

#[derive(Debug, thiserror::Error)]
enum Outer {
    #[error("{0}")]
    Phase(#[from] PhaseError),
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

impl HostContext for Outer {
    fn hosts(&self) -> Vec<&str> {
        match self {
            Outer::Phase(e) => e.hosts(),
            Outer::Read { .. } => Vec::new(),
        }
    }
}

#[test]
fn a_wrapped_errors_hosts_are_asked_through_its_types() {
    use rkers::phases::etcd_snapshot::SnapshotError;
    use rkers::phases::up::UpError;
    let unreachable = rkers::hosts::HostProblems(vec![HostError::Ssh {
        host: "10.0.0.5".into(),
        detail: "reset".into(),
    }]);
    let e = SnapshotError::Up {
        name: "before".into(),
        cause: UpError::Unreachable(unreachable),
    };
    assert_eq!(ErrorReport::of(&e).hosts, ["10.0.0.5"]);
    let api = rkers::api::ApiError::Operation(Failure::new(e));
    let r = ErrorReport::of(&api);
    assert_eq!(r.hosts, ["10.0.0.5"]);
    assert!(r.message.contains("before"), "{}", r.message);
    assert!(
        r.causes.iter().any(|c| c.contains("10.0.0.5")),
        "{:?}",
        r.causes
    );
}

#[test]
fn a_wrapper_asks_the_error_it_wraps_for_its_host() {
    let e = Outer::Phase(PhaseError::Host {
        phase: "etcd plane".into(),
        host: "10.0.0.2".into(),
        message: "health check failed".into(),
    });
    let r = ErrorReport::of(&e);
    assert_eq!(r.hosts, ["10.0.0.2"]);
    assert_eq!(r.message, "[etcd plane] host 10.0.0.2: health check failed");
    // The wrapper only repeats its source: no cause is listed twice.
    assert!(r.causes.is_empty(), "{:?}", r.causes);
}

#[test]
fn up_names_the_host_of_a_boxed_host_error_and_of_a_nested_guard() {
    use rkers::phases::up::UpError;
    let e = UpError::from(HostError::Ssh {
        host: "10.0.0.3".into(),
        detail: "reset".into(),
    });
    assert_eq!(ErrorReport::of(&e).hosts, ["10.0.0.3"]);
    let e = UpError::from(rkers::checks::guard::GuardError::CalicoFix {
        host: "10.0.0.4".into(),
        detail: "host 10.0.0.4: writing calico's directories failed".into(),
    });
    let r = ErrorReport::of(&e);
    assert_eq!(r.hosts, ["10.0.0.4"]);
    assert_eq!(
        r.message,
        "host 10.0.0.4: writing calico's directories failed"
    );
    // A failure about no host in particular names none.
    assert!(ErrorReport::of(&UpError::NoEtcdMember).hosts.is_empty());
}

#[test]
fn several_hosts_are_listed_once_each_in_order() {
    let problems = rkers::hosts::HostProblems(vec![
        HostError::Ssh {
            host: "b".into(),
            detail: "reset".into(),
        },
        HostError::Ssh {
            host: "a".into(),
            detail: "reset".into(),
        },
        HostError::Exec {
            host: "b".into(),
            command: "true".into(),
            detail: "exit 1".into(),
        },
    ]);
    assert_eq!(ErrorReport::of(&problems).hosts, ["b", "a"]);
}

#[test]
fn causes_follow_the_source_chain_and_no_host_is_made_up() {
    let e = Outer::Read {
        path: "/x/cluster.rkestate".into(),
        source: std::io::Error::new(std::io::ErrorKind::NotFound, "gone"),
    };
    let r = ErrorReport::of(&e);
    assert_eq!(r.causes, ["gone"]);
    assert!(r.hosts.is_empty());
    let r = r.redacted(|t| t.replace("gone", "[REDACTED]"));
    assert_eq!(r.causes, ["[REDACTED]"]);
    assert_eq!(r.message, "cannot read /x/cluster.rkestate: [REDACTED]");
}
