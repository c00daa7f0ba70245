//! Which daemon went away when a host's step broke off with a dropped connection: sshd (the
//! session closed, the SSH port refuses or stays silent) or dockerd (SSH still runs commands,
//! Docker does not answer). A dropped connection alone ("connection closed before message
//! completed") names neither, so the host is probed once after the step failed and the error
//! says which daemon failed and how to bring it back (fault matrix, scripts/faults 2-4).

use std::time::Duration;

use super::pool::Host;

/// How long each probe may take: the host is already known to be in trouble.
const PROBE: Duration = Duration::from_secs(10);

/// What the probes found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lost {
    /// The SSH session is gone and the SSH port refuses connections: sshd was stopped.
    SshdStopped,
    /// The SSH session is gone and the SSH port does not answer: the node is off or cut off.
    NodeSilent,
    /// The SSH session is gone but sshd accepts connections again (it was restarted), or the
    /// session goes through a bastion and the port cannot be tried from here.
    SshSessionLost,
    /// SSH runs commands but Docker does not answer: dockerd was stopped or crashed.
    DockerdStopped,
}

/// Whether an error's text is a connection that broke mid-request, the only case the probes
/// can explain; anything else (a refusal, a bad image) is left as it is.
pub fn looks_lost(message: &str) -> bool {
    const MARKERS: &[&str] = &[
        "connection closed before message completed",
        "ssh connection lost",
        "channel send error",
        "broken pipe",
        "connection reset",
        "unexpected eof",
        "unexpected end of file",
        "error trying to connect",
        "cannot open a session channel",
        "docker is not answering",
    ];
    let lower = message.to_lowercase();
    MARKERS.iter().any(|m| lower.contains(m))
}

/// The error to report: which daemon failed on `host`, the remedy, then what the step said.
pub fn describe(host: &str, ssh_addr: &str, lost: Lost, original: &str) -> String {
    // The step's own text keeps its "host X:" prefix out, it is said once at the front.
    let step = original
        .strip_prefix(&format!("host {host}: "))
        .unwrap_or(original);
    let (what, remedy) = match lost {
        Lost::SshdStopped => (
            format!(
                "sshd stopped: the SSH connection broke and {ssh_addr} now refuses connections"
            ),
            "start sshd on the node (systemctl start ssh, or sshd on RHEL)".to_string(),
        ),
        Lost::NodeSilent => (
            format!(
                "the SSH connection broke and {ssh_addr} does not answer any more: the node is powered off or unreachable"
            ),
            "bring the node back (power, network, firewall)".to_string(),
        ),
        Lost::SshSessionLost => (
            "the SSH connection (sshd) broke while rkers worked on the node".to_string(),
            "check sshd on the node (systemctl status ssh) and its logs".to_string(),
        ),
        Lost::DockerdStopped => (
            "dockerd stopped: Docker no longer answers, SSH still works".to_string(),
            "start Docker on the node (systemctl start docker; its log: journalctl -u docker)"
                .to_string(),
        ),
    };
    // The dropped request itself, when it sits on a later line of a longer step message, goes
    // on the first line too: a report that keeps one line still shows what broke off.
    let cause = original
        .lines()
        .skip(1)
        .filter(|l| looks_lost(l))
        .last()
        .map(|l| {
            let l = l.trim();
            let l = l
                .rsplit_once(&format!("host {host}: "))
                .map_or(l, |(_, c)| c);
            format!(" ({l})")
        })
        .unwrap_or_default();
    format!(
        "host {host}: {what}{cause}. Remedy: {remedy}, then run the same command again (it resumes). The step that broke: {step}"
    )
}

/// Probes `host` after a step failed: the SSH session, then a new TCP connection to its SSH
/// port when the session is gone, else a command over SSH and a Docker ping. `None` when both
/// daemons answer: the connection that broke was something else's (a component's health
/// port, reached through SSH), or Docker restarted, and the step's own error says more.
pub async fn probe(host: &Host) -> Option<Lost> {
    // What a probe can tell apart is SSH's; a plugged link's own error already names it.
    let ssh = host.ssh()?;
    let ssh_works = !ssh.is_closed()
        && matches!(
            tokio::time::timeout(PROBE, ssh.exec("true")).await,
            Ok(Ok(out)) if out.exit_status.is_some()
        );
    if !ssh_works {
        if ssh.via_bastion().is_some() {
            return Some(Lost::SshSessionLost);
        }
        let port = tokio::time::timeout(PROBE, tokio::net::TcpStream::connect(ssh.addr())).await;
        return Some(match port {
            Ok(Ok(_)) => Lost::SshSessionLost,
            Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => Lost::SshdStopped,
            _ => Lost::NodeSilent,
        });
    }
    match tokio::time::timeout(PROBE, host.docker().ping()).await {
        Ok(Ok(())) => None,
        _ => Some(Lost::DockerdStopped),
    }
}

/// `message` with the failed daemon named when it reads as a dropped connection and a probe
/// finds one gone; unchanged otherwise.
pub async fn explain(host: &Host, message: String) -> String {
    if !looks_lost(&message) {
        return message;
    }
    let lost = probe(host).await;
    tracing::debug!(
        host = host.name(),
        ?lost,
        "probed after a dropped connection"
    );
    match lost {
        Some(lost) => describe(host.name(), host.link().addr(), lost, &message),
        None => message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dropped_connections_are_recognised_and_refusals_are_not() {
        for lost in [
            "host 10.0.0.2: container kubelet: stop: connection closed before message completed",
            "host 10.0.0.3: SSH connection lost: Channel send error",
            "host 10.0.0.3: command `true` failed: cannot open a session channel: Disconnected",
            "host 10.0.0.2: Docker: ping: error trying to connect: Broken pipe",
        ] {
            assert!(looks_lost(lost), "{lost}");
        }
        for kept in [
            "host 10.0.0.2: container rke-worker-port-listener: port 10250 already in use",
            "host 10.0.0.2: Docker: pull x: manifest unknown (HTTP 404)",
            "host 10.0.0.2: HOST KEY CHANGED for 10.0.0.2",
        ] {
            assert!(!looks_lost(kept), "{kept}");
        }
    }

    /// Faults 3 and 4: the first line names the daemon, the host and the remedy, and keeps
    /// what the step said.
    #[test]
    fn the_message_names_the_daemon_the_host_and_the_remedy() {
        let step =
            "host 10.0.0.2: container kubelet: stop: connection closed before message completed";
        let sshd = describe("10.0.0.2", "10.0.0.2:22", Lost::SshdStopped, step);
        assert!(
            sshd.starts_with("host 10.0.0.2: sshd stopped: the SSH connection broke and 10.0.0.2:22 now refuses connections"),
            "{sshd}"
        );
        assert!(sshd.contains("start sshd on the node"), "{sshd}");
        assert!(
            sshd.ends_with("The step that broke: container kubelet: stop: connection closed before message completed"),
            "{sshd}"
        );
        let docker = describe("10.0.0.2", "10.0.0.2:22", Lost::DockerdStopped, step);
        assert!(
            docker.starts_with(
                "host 10.0.0.2: dockerd stopped: Docker no longer answers, SSH still works"
            ),
            "{docker}"
        );
        assert!(docker.contains("systemctl start docker"), "{docker}");
        // A step whose message has the dropped request on a later line.
        let long = "recreate container kubelet\n    entrypoint: +--v=6 ---v=5: host 10.0.0.2: container kubelet: start: connection closed before message completed";
        let docker = describe("10.0.0.2", "10.0.0.2:22", Lost::DockerdStopped, long);
        assert!(
            docker.lines().next().unwrap().starts_with(
                "host 10.0.0.2: dockerd stopped: Docker no longer answers, SSH still works (container kubelet: start: connection closed before message completed). Remedy:"
            ),
            "{docker}"
        );
        let off = describe("10.0.0.3", "10.0.0.3:22", Lost::NodeSilent, step);
        assert!(off.contains("powered off or unreachable"), "{off}");
        assert_eq!(off.lines().count(), 1);
    }
}
