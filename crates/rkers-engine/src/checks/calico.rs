//! Incident 1: calico-node dies after a reboot because `/var/run/calico` (a tmpfs path) came
//! back root-only when the `systemd-tmpfiles` entry that recreates it was lost. Pure
//! evaluation of what the probe read: the directories' owner and mode, and the tmpfiles.d
//! lines naming them.

use super::{Finding, Status};
use std::collections::BTreeMap;

/// The directories calico-node binds from the host.
pub const DIRECTORIES: [&str; 2] = ["/var/run/calico", "/var/lib/calico"];
/// The tmpfiles.d entry rkers writes (the file name the incident's OS update replaced).
pub const TMPFILES_ENTRY: &str = "/etc/tmpfiles.d/calico.conf";
/// What calico-node needs: owned by root, readable and searchable by every user (BIRD and
/// confd read their sockets and config there without root's DAC override).
pub const WANT_MODE: u32 = 0o755;
pub const CHECK: &str = "calico-runtime";

/// The entry's content, as rkers writes it.
pub fn tmpfiles_content() -> String {
    let mut s = String::from(
        "# Written by rkers: calico-node needs these directories, recreated at every boot.\n",
    );
    for d in DIRECTORIES {
        s.push_str(&format!("d {d} {WANT_MODE:04o} root root -\n"));
    }
    s
}

/// One directory as `stat -L -c '%a %u %g %F'` printed it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirState {
    pub path: String,
    /// `None` when the directory does not exist (or could not be read).
    pub mode: Option<u32>,
    pub uid: u32,
    pub gid: u32,
    pub kind: String,
    /// The raw line read, for evidence.
    pub raw: String,
}

pub fn parse_stat(path: &str, lines: &[String]) -> DirState {
    let raw = lines.join(" ").trim().to_string();
    let f: Vec<&str> = raw.split_whitespace().collect();
    let mode = f.first().and_then(|m| u32::from_str_radix(m, 8).ok());
    match (mode, f.get(1), f.get(2)) {
        (Some(mode), Some(u), Some(g)) if u.parse::<u32>().is_ok() => DirState {
            path: path.into(),
            mode: Some(mode),
            uid: u.parse().unwrap_or(u32::MAX),
            gid: g.parse().unwrap_or(u32::MAX),
            kind: f[3..].join(" "),
            raw,
        },
        _ => DirState {
            path: path.into(),
            mode: None,
            uid: 0,
            gid: 0,
            kind: String::new(),
            raw,
        },
    }
}

impl DirState {
    /// Why calico-node cannot use it, or `None` when it can. A missing directory is no problem
    /// by itself (kubelet or the tmpfiles entry creates it).
    pub fn problem(&self) -> Option<String> {
        let mode = self.mode?;
        if !self.kind.is_empty() && self.kind != "directory" {
            return Some(format!("{} is a {}, not a directory", self.path, self.kind));
        }
        if self.uid != 0 || self.gid != 0 {
            return Some(format!(
                "{} is owned by {}:{}, calico-node needs root:root",
                self.path, self.uid, self.gid
            ));
        }
        if mode & 0o005 != 0o005 {
            return Some(format!(
                "{} has mode {mode:04o}: calico-node's non-root readers get permission denied \
                 (needs {WANT_MODE:04o})",
                self.path
            ));
        }
        None
    }

    pub fn describe(&self) -> String {
        match self.mode {
            Some(m) => format!(
                "{}: mode {m:04o}, owner {}:{}",
                self.path, self.uid, self.gid
            ),
            None => format!("{}: missing ({})", self.path, self.raw),
        }
    }
}

/// One tmpfiles.d line: `type path mode user group age`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TmpfilesLine {
    pub file: String,
    pub kind: String,
    pub path: String,
    pub mode: Option<u32>,
    pub user: String,
    pub group: String,
}

/// Parses `grep -H` output (`file:line`) of the tmpfiles.d files naming calico.
pub fn parse_tmpfiles(lines: &[String]) -> Vec<TmpfilesLine> {
    lines
        .iter()
        .filter_map(|l| {
            let (file, rest) = l.split_once(':')?;
            let rest = rest.trim();
            if rest.starts_with('#') || rest.is_empty() {
                return None;
            }
            let f: Vec<&str> = rest.split_whitespace().collect();
            if f.len() < 2 {
                return None;
            }
            Some(TmpfilesLine {
                file: file.to_string(),
                kind: f[0].to_string(),
                path: f[1].to_string(),
                mode: f.get(2).and_then(|m| u32::from_str_radix(m, 8).ok()),
                user: f.get(3).unwrap_or(&"-").to_string(),
                group: f.get(4).unwrap_or(&"-").to_string(),
            })
        })
        .collect()
}

fn same_path(a: &str, b: &str) -> bool {
    let norm = |p: &str| {
        p.trim_end_matches('/')
            .strip_prefix("/var/run/")
            .map(|r| format!("/run/{r}"))
            .unwrap_or_else(|| p.trim_end_matches('/').to_string())
    };
    norm(a) == norm(b)
}

/// Why the tmpfiles.d entries do not recreate `dir` as calico-node needs it, or `None`.
pub fn entry_problem(entries: &[TmpfilesLine], dir: &str) -> Option<String> {
    let Some(e) = entries
        .iter()
        .find(|e| same_path(&e.path, dir) && matches!(e.kind.as_str(), "d" | "D"))
    else {
        return Some(format!("no tmpfiles.d entry creates {dir}"));
    };
    let root = |s: &str| s == "root" || s == "0" || s == "-";
    match e.mode {
        Some(m) if m & 0o005 == 0o005 && root(&e.user) && root(&e.group) => None,
        _ => Some(format!(
            "{} recreates {dir} as {} {} {} {}: calico-node needs {WANT_MODE:04o} root root",
            e.file,
            e.kind,
            e.mode
                .map(|m| format!("{m:04o}"))
                .unwrap_or_else(|| "-".into()),
            e.user,
            e.group
        )),
    }
}

/// The commands that repair a node by hand.
pub fn manual_fix() -> Vec<String> {
    let dirs = DIRECTORIES.join(" ");
    vec![
        format!("mkdir -p {dirs} && chown root:root {dirs} && chmod {WANT_MODE:04o} {dirs}"),
        format!(
            "printf '{}' > {TMPFILES_ENTRY}",
            tmpfiles_content().replace('\n', "\\n")
        ),
    ]
}

/// The finding for one node from the probe's sections.
pub fn evaluate(node: &str, address: &str, sections: &BTreeMap<String, Vec<String>>) -> Finding {
    let dirs: Vec<DirState> = DIRECTORIES
        .iter()
        .map(|d| {
            parse_stat(
                d,
                sections
                    .get(&format!("stat {d}"))
                    .map(Vec::as_slice)
                    .unwrap_or(&[]),
            )
        })
        .collect();
    let tmpfiles = sections.get("tmpfiles").cloned().unwrap_or_default();
    let entries = parse_tmpfiles(
        &tmpfiles
            .iter()
            .filter(|l| !l.starts_with("missing "))
            .cloned()
            .collect::<Vec<_>>(),
    );
    let mut evidence: Vec<String> = dirs.iter().map(DirState::describe).collect();
    if entries.is_empty() {
        evidence.push(format!(
            "{TMPFILES_ENTRY}: missing; no tmpfiles.d line names calico"
        ));
    }
    for e in &entries {
        evidence.push(format!(
            "{}: {} {} {} {} {}",
            e.file,
            e.kind,
            e.path,
            e.mode
                .map(|m| format!("{m:04o}"))
                .unwrap_or_else(|| "-".into()),
            e.user,
            e.group
        ));
    }
    let dir_problems: Vec<String> = dirs.iter().filter_map(DirState::problem).collect();
    let entry_problems: Vec<String> = DIRECTORIES[..1]
        .iter()
        .filter_map(|d| entry_problem(&entries, d))
        .collect();
    let mut fix = vec![format!(
        "rkers doctor --fix {CHECK} --host {address}   (or on the node:)"
    )];
    fix.extend(manual_fix());
    let (status, summary) = match (dir_problems.is_empty(), entry_problems.is_empty()) {
        (true, true) => {
            return Finding::ok(
                CHECK,
                Some(node),
                format!(
                    "{} root:root {WANT_MODE:04o}, tmpfiles.d entry present",
                    DIRECTORIES[0]
                ),
            )
            .evidence(evidence);
        }
        (false, true) => (Status::Fail, dir_problems.join("; ")),
        (false, false) => (
            Status::Fail,
            format!(
                "{}; and {}: a chmod alone is undone by the next reboot",
                dir_problems.join("; "),
                entry_problems.join("; ")
            ),
        ),
        (true, false) => (
            Status::Warn,
            format!(
                "the directories are right now, but {}: the next reboot will break this node \
                 (calico-node in CrashLoopBackOff, permission denied on {})",
                entry_problems.join("; "),
                DIRECTORIES[0]
            ),
        ),
    };
    Finding::new(CHECK, status, Some(node), summary)
        .evidence(evidence)
        .fix(fix)
}

/// The fix's script, for the helper container that binds the directories and tmpfiles.d
/// under `/host` (writable).
pub fn fix_script() -> String {
    let mut s = String::from("set -e\n");
    for d in DIRECTORIES {
        s.push_str(&format!(
            "mkdir -p /host{d} && chown 0:0 /host{d} && chmod {WANT_MODE:04o} /host{d}\n"
        ));
    }
    s.push_str(&format!(
        "mkdir -p /host/etc/tmpfiles.d\ncat > /host{TMPFILES_ENTRY}.rkers-tmp <<'RKERS_EOF'\n{}RKERS_EOF\n\
         chmod 0644 /host{TMPFILES_ENTRY}.rkers-tmp && mv /host{TMPFILES_ENTRY}.rkers-tmp /host{TMPFILES_ENTRY}\n",
        tmpfiles_content()
    ));
    s
}

/// Writable binds of exactly what the fix changes (Docker creates a missing source directory).
pub fn fix_binds() -> Vec<String> {
    let mut b: Vec<String> = DIRECTORIES
        .iter()
        .map(|d| format!("{d}:/host{d}"))
        .collect();
    b.push("/etc/tmpfiles.d:/host/etc/tmpfiles.d".into());
    b
}

/// Each runtime directory a probe's `sections` show missing or wrong, with what the host has:
/// `missing`, or its mode and owner (`0700 0:0`). `up`'s guard plans a repair of each, and
/// `doctor --fix calico-runtime` repairs them.
pub fn wrong_directories(sections: &BTreeMap<String, Vec<String>>) -> Vec<(&'static str, String)> {
    DIRECTORIES
        .iter()
        .filter_map(|d| {
            let lines = sections
                .get(&format!("stat {d}"))
                .map(Vec::as_slice)
                .unwrap_or(&[]);
            let st = parse_stat(d, lines);
            let found = match (st.mode, st.problem()) {
                (None, _) => "missing".to_string(),
                (Some(mode), Some(_)) => format!("{mode:04o} {}:{}", st.uid, st.gid),
                (Some(_), None) => return None,
            };
            Some((*d, found))
        })
        .collect()
}

/// The tmpfiles.d lines a probe's `sections` hold, those of files it found missing left out.
pub fn tmpfiles_lines(sections: &BTreeMap<String, Vec<String>>) -> Vec<TmpfilesLine> {
    let lines: Vec<String> = sections
        .get("tmpfiles")
        .into_iter()
        .flatten()
        .filter(|l| !l.starts_with("missing "))
        .cloned()
        .collect();
    parse_tmpfiles(&lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    fn sections(run: &str, lib: &str, tmpfiles: &[&str]) -> BTreeMap<String, Vec<String>> {
        [
            ("stat /var/run/calico".to_string(), s(&[run])),
            ("stat /var/lib/calico".to_string(), s(&[lib])),
            ("tmpfiles".to_string(), s(tmpfiles)),
        ]
        .into()
    }

    #[test]
    fn a_probe_names_each_wrong_directory_with_what_the_host_has() {
        let probed = sections("700 0 0 directory", "", &["missing /etc/tmpfiles.d/x.conf"]);
        assert_eq!(
            wrong_directories(&probed),
            vec![
                ("/var/run/calico", "0700 0:0".to_string()),
                ("/var/lib/calico", "missing".to_string())
            ]
        );
        assert!(tmpfiles_lines(&probed).is_empty());
        let fine = sections("755 0 0 directory", "755 0 0 directory", &[]);
        assert_eq!(wrong_directories(&fine), Vec::new());
    }

    #[test]
    fn modes_and_owners_are_judged_for_non_root_readers() {
        let st = |l: &str| parse_stat("/var/run/calico", &s(&[l]));
        assert_eq!(st("755 0 0 directory").problem(), None);
        assert_eq!(st("775 0 0 directory").problem(), None);
        assert!(st("700 0 0 directory").problem().unwrap().contains("0700"));
        assert!(st("750 0 0 directory").problem().is_some());
        assert!(
            st("755 1000 0 directory")
                .problem()
                .unwrap()
                .contains("1000:0")
        );
        assert!(
            st("644 0 0 regular file")
                .problem()
                .unwrap()
                .contains("regular file")
        );
        let missing = st("stat: cannot statx '/host/var/run/calico': No such file or directory");
        assert_eq!(missing.mode, None);
        assert_eq!(missing.problem(), None);
    }

    #[test]
    fn tmpfiles_lines_must_recreate_the_directory_readable() {
        let e = |l: &str| parse_tmpfiles(&s(&[l]));
        assert_eq!(
            entry_problem(
                &e("/etc/tmpfiles.d/calico.conf:d /var/run/calico 0755 root root -"),
                "/var/run/calico"
            ),
            None
        );
        // /var/run is /run: either spelling counts.
        assert_eq!(
            entry_problem(
                &e("/etc/tmpfiles.d/x.conf:d /run/calico 0755 0 0 -"),
                "/var/run/calico"
            ),
            None
        );
        assert!(
            entry_problem(
                &e("/etc/tmpfiles.d/calico.conf:d /var/run/calico 0700 root root -"),
                "/var/run/calico"
            )
            .unwrap()
            .contains("0700")
        );
        assert!(
            entry_problem(
                &e("/etc/tmpfiles.d/calico.conf:# d /var/run/calico 0755"),
                "/var/run/calico"
            )
            .is_some()
        );
        assert!(
            entry_problem(&[], "/var/run/calico")
                .unwrap()
                .contains("no tmpfiles.d entry")
        );
    }

    #[test]
    fn wrong_mode_without_entry_fails_and_says_chmod_is_not_enough() {
        let f = evaluate(
            "host2",
            "10.0.0.2",
            &sections(
                "700 0 0 directory",
                "755 0 0 directory",
                &["missing /etc/tmpfiles.d/calico.conf"],
            ),
        );
        assert_eq!(f.status, Status::Fail);
        assert_eq!(f.node.as_deref(), Some("host2"));
        assert!(
            f.summary.contains("0700") && f.summary.contains("next reboot"),
            "{f:?}"
        );
        assert!(
            f.evidence
                .iter()
                .any(|e| e == "/var/run/calico: mode 0700, owner 0:0")
        );
        assert!(f.fix[0].contains("rkers doctor --fix calico-runtime --host 10.0.0.2"));
    }

    #[test]
    fn right_mode_without_entry_warns_about_the_next_reboot() {
        let f = evaluate(
            "h",
            "a",
            &sections("755 0 0 directory", "755 0 0 directory", &[]),
        );
        assert_eq!(f.status, Status::Warn);
        assert!(
            f.summary.contains("the next reboot will break this node"),
            "{}",
            f.summary
        );
    }

    #[test]
    fn right_mode_and_entry_is_ok() {
        let f = evaluate(
            "h",
            "a",
            &sections(
                "755 0 0 directory",
                "755 0 0 directory",
                &["/etc/tmpfiles.d/calico.conf:d /var/run/calico 0755 root root -"],
            ),
        );
        assert_eq!(f.status, Status::Ok, "{f:?}");
    }

    #[test]
    fn the_written_entry_satisfies_the_check() {
        let lines: Vec<String> = tmpfiles_content()
            .lines()
            .map(|l| format!("{TMPFILES_ENTRY}:{l}"))
            .collect();
        let entries = parse_tmpfiles(&lines);
        for d in DIRECTORIES {
            assert_eq!(entry_problem(&entries, d), None);
        }
        assert!(fix_script().contains("chmod 0755 /host/var/run/calico"));
    }
}
