#!/usr/bin/env python3
"""Test double for the shell of a Windows worker (no Windows host runs here).

sshd runs it as ForceCommand with the asked command in SSH_ORIGINAL_COMMAND. A powershell.exe
command must be the rkers host agent's exact command line (powershell.exe ... -EncodedCommand
<script>); other commands run through /bin/sh (a mixed test's Linux host shares the sshd). It checks that
the decoded script is the agent, and carries out the agent's protocol as documented in
src/plan/windows_host.rs on a directory that stands in for the drives (c:\\x -> <root>/drive/c/x,
case-insensitive as Windows is); a file written `private` gets mode 0600 where Windows would get
an ACL of SYSTEM and Administrators only, any other 0644 (what every local user may read). The
rancher-wins service is a JSON file: registering needs
wins.exe where the request says, and the pipe exists while the service runs.

Argument: the state directory. Files in it:
  invocations.jsonl  one line per run: mode, records, paths, private paths, wins request (never
                     contents)
  last-script.ps1    the decoded agent script of the last run
  wins-service.json  {"registered", "status", "registrations", "starts", "restarts"}
  fail-on            optional: a request kind ("write", "wins", ...) the agent fails on
"""

import base64
import json
import os
import re
import sys

AGENT_TAG = "# rkers windows host agent, protocol 1"
PREFIX = [
    "powershell.exe",
    "-NoLogo",
    "-NonInteractive",
    "-NoProfile",
    "-ExecutionPolicy",
    "Bypass",
    "-EncodedCommand",
]
PIPE = "\\\\.\\pipe\\rancher_wins"


class AgentError(Exception):
    pass


def dec(field):
    return base64.b64decode(field, validate=True).decode("utf-8")


def enc(text):
    return base64.b64encode(text.encode("utf-8")).decode("ascii")


class Host:
    def __init__(self, state):
        self.state = state
        self.drive = os.path.join(state, "drive")
        self.service_file = os.path.join(state, "wins-service.json")

    def local(self, windows_path):
        m = re.fullmatch(r"([a-zA-Z]):\\(.*)", windows_path)
        if not m or "/" in windows_path or ".." in windows_path.split("\\"):
            raise AgentError(f"Cannot find drive. A drive with the name '{windows_path}' does not exist.")
        parts = [p.lower() for p in m.group(2).split("\\") if p]
        return os.path.join(self.drive, m.group(1).lower(), *parts)

    def service(self):
        try:
            with open(self.service_file) as f:
                return json.load(f)
        except FileNotFoundError:
            return {"registered": False, "status": "stopped", "registrations": 0, "starts": 0, "restarts": 0}

    def save_service(self, service):
        with open(self.service_file, "w") as f:
            json.dump(service, f)


def run_agent(host, stdin_text, fail_on):
    mode = None
    complete = False
    wins = None
    report = []
    summary = {"mode": None, "records": [], "paths": [], "private": [], "wins": None}
    for line in stdin_text.split("\n"):
        line = line.rstrip("\r")
        if not line:
            continue
        f = line.split(" ")
        kind = f[0]
        summary["records"].append(kind)
        if kind in ("observe", "apply"):
            mode = kind
            summary["mode"] = kind
            continue
        if mode is None:
            raise AgentError("the request does not start with observe or apply")
        if kind == fail_on:
            raise AgentError("Access to the path is denied.")
        if kind == "end":
            complete = True
            continue
        if kind == "dir":
            path = dec(f[1])
            summary["paths"].append(path)
            local = host.local(path)
            if not os.path.isdir(local):
                if mode == "apply":
                    os.makedirs(local, exist_ok=True)
                    report.append(f"created-dir {f[1]}")
                else:
                    report.append(f"missing-dir {f[1]}")
        elif kind == "read":
            path = dec(f[1])
            summary["paths"].append(path)
            local = host.local(path)
            if os.path.isfile(local):
                with open(local, "rb") as fh:
                    report.append(f"file {f[1]} " + base64.b64encode(fh.read()).decode("ascii"))
        elif kind == "write":
            if mode != "apply":
                raise AgentError("write in an observe request")
            path = dec(f[1])
            summary["paths"].append(path)
            local = host.local(path)
            os.makedirs(os.path.dirname(local), exist_ok=True)
            if len(f) > 4 or (len(f) == 4 and f[3] != "private"):
                raise AgentError(f"unknown write flag '{f[3:]}'")
            private = len(f) == 4
            if private:
                summary["private"].append(path)
            tmp = local + ".rkers-tmp"
            # Created with its final permissions before the contents go in, as the agent does.
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.fchmod(fd, 0o600 if private else 0o644)
            with os.fdopen(fd, "wb") as fh:
                fh.write(base64.b64decode(f[2], validate=True))
            os.replace(tmp, local)
            report.append(f"wrote {f[1]}")
        elif kind == "remove":
            if mode != "apply":
                raise AgentError("remove in an observe request")
            path = dec(f[1])
            summary["paths"].append(path)
            local = host.local(path)
            if os.path.isfile(local):
                os.remove(local)
                report.append(f"removed {f[1]}")
        elif kind == "wins":
            wins = (f[1], dec(f[2]))
            summary["wins"] = f[1]
        else:
            raise AgentError(f"unknown request line '{kind}'")
    if not complete:
        raise AgentError("the request ended before its end line")
    if wins:
        action, exe = wins
        exe_present = os.path.isfile(host.local(exe))
        service = host.service()
        if mode == "apply" and action != "status":
            if not exe_present:
                raise AgentError(f"wins.exe is not at {exe}")
            was_running = service["registered"] and service["status"] == "running"
            if not service["registered"]:
                service["registered"] = True
                service["registrations"] += 1
                report.append("wins-registered")
            if action == "restart" and was_running:
                service["restarts"] += 1
                report.append("wins-restarted")
            elif not was_running:
                service["status"] = "running"
                service["starts"] += 1
                report.append("wins-started")
            host.save_service(service)
        state = service["status"] if service["registered"] else "missing"
        pipe = 1 if service["registered"] and service["status"] == "running" else 0
        report.append(f"wins exe={int(exe_present)} service={state} pipe={pipe}")
    return report, summary


def main():
    state = sys.argv[1]
    host = Host(state)
    command = os.environ.get("SSH_ORIGINAL_COMMAND", "")
    words = command.split(" ")
    if words[0] != "powershell.exe":
        # A Linux host of a mixed test shares this sshd: its commands run as they would.
        os.execv("/bin/sh", ["sh", "-c", command])
    if words[: len(PREFIX)] != PREFIX or len(words) != len(PREFIX) + 1:
        sys.stderr.write(f"unexpected powershell.exe command line: {words[1:len(PREFIX)]}\r\n")
        return 1
    script = base64.b64decode(words[-1]).decode("utf-16-le")
    with open(os.path.join(state, "last-script.ps1"), "w") as f:
        f.write(script)
    if not script.startswith(AGENT_TAG):
        sys.stderr.write("this double only answers the rkers host agent\r\n")
        return 1
    fail_on = None
    try:
        with open(os.path.join(state, "fail-on")) as f:
            fail_on = f.read().strip()
    except FileNotFoundError:
        pass
    stdin_text = sys.stdin.buffer.read().decode("ascii")
    try:
        report, summary = run_agent(host, stdin_text, fail_on)
    except AgentError as e:
        sys.stdout.write(f"error {enc(str(e))}\r\n")
        return 1
    with open(os.path.join(state, "invocations.jsonl"), "a") as f:
        f.write(json.dumps(summary) + "\n")
    for line in report:
        sys.stdout.write(line + "\r\n")
    sys.stdout.write("done\r\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
