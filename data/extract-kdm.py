#!/usr/bin/env python3
"""Regenerate data/versions.json from kontainer-driver-metadata (KDM): the union of its git branches
plus saved pages of a newer KDM commit.

This is a fact extractor, not a Go interpreter. It understands exactly the shapes the KDM
`pkg/rke/*.go` files use and stops with an error on anything else, so a format change upstream
is noticed instead of silently producing wrong data:

* system images: `"vX": { Field: "image", Field: m("image"), ... }` map literal entries; `m()` is
  applied the way RKE's image mirror rewrite does (registry prefix replacement).
* service options: functions that build a `map[string]string` from a literal or from another such
  function, then assign `x["k"] = expr` / `delete(x, "k")`; `expr` is a string literal, a string
  constant, `fmt.Sprintf` with `%s` verbs only, or `x["k"]`.
* docker info, version info, defaults and addon template ranges: plain map literals.

The YAML key of each system image (as used in cluster.yml `system_images`) is read from the
`yaml:` struct tags of `RKESystemImages` in the RKE mirror, not typed in here.

Sources, oldest first (a version or key present in several takes the newest source's data):

* every KDM branch named by --refs (git mirror from the search tool's `fetch`), ordered by the
  date of its newest commit;
* --kdm-files DIR: pages of a newer KDM commit saved from the search tool's `read_file` (the git
  snapshot stops in October 2024). DIR/<commit>/<path>/<offset>.json holds one page as read_file
  returned it (`text` is the page; `prefix_only` marks a page saved only up to the end of the
  last entry needed). KDM_FILE_PAGES below names the pages and what part of KDM each holds.

Usage:
    data/extract-kdm.py [--kdm DIR] [--refs REF,...] [--kdm-files DIR] [--rke DIR] \
        [--rke-ref REF] [--minors 1.20,...] [--rke-version v1.8.14] [-o data/versions.json]
"""

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
from collections import OrderedDict

DEFAULT_KDM = "/work/.mirror/rancher+kontainer-driver-metadata/repo"
DEFAULT_RKE = "/work/.mirror/rancher+rke/repo"


class ExtractError(Exception):
    pass


def git_show(repo, ref, path):
    try:
        return subprocess.run(
            ["git", "-C", repo, "show", f"{ref}:{path}"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    except subprocess.CalledProcessError as e:
        raise ExtractError(f"git show {ref}:{path} in {repo} failed: {e.stderr.strip()}")


def git_rev(repo, ref):
    return subprocess.run(
        ["git", "-C", repo, "rev-parse", ref], check=True, capture_output=True, text=True
    ).stdout.strip()


def strip_comment(line):
    """Drop a trailing `// ...` comment that is outside a string literal."""
    in_str = False
    i = 0
    while i < len(line):
        c = line[i]
        if c == "\\" and in_str:
            i += 2
            continue
        if c == '"':
            in_str = not in_str
        elif not in_str and line.startswith("//", i):
            return line[:i].rstrip()
        i += 1
    return line.rstrip()


def func_body(src, name, where):
    """Lines between `func name(...) ... {` and the closing `}` at column 0."""
    m = re.search(r"^func " + re.escape(name) + r"\(\)[^{\n]*\{\n", src, re.M)
    if not m:
        raise ExtractError(f"{where}: function {name} not found")
    end = src.find("\n}\n", m.end())
    if end < 0:
        raise ExtractError(f"{where}: end of function {name} not found")
    return src[m.end() : end].split("\n")


def returned_map_entries(lines, where):
    """Lines of the outer `return map[...]...{ ... }` literal, comments and blanks removed."""
    out = []
    started = False
    for raw in lines:
        line = strip_comment(raw).strip()
        if not line:
            continue
        if not started:
            if line.startswith("return map["):
                started = True
                continue
            if line.startswith("/*") or line.startswith("*") or line.endswith("*/"):
                continue
            raise ExtractError(f"{where}: unexpected line before the map literal: {raw!r}")
        out.append(line)
    if not out or out[-1] != "}":
        raise ExtractError(f"{where}: map literal does not end with '}}'")
    return out[:-1]


def block_comments_removed(src):
    return re.sub(r"/\*.*?\*/", "", src, flags=re.S)


# ---------------------------------------------------------------------------------------------
# RKE types: Go field name -> cluster.yml key


def system_image_keys(rke_types_src):
    m = re.search(r"^type RKESystemImages struct \{\n(.*?)^\}", rke_types_src, re.S | re.M)
    if not m:
        raise ExtractError("rke types: RKESystemImages struct not found")
    fields = OrderedDict()
    for line in m.group(1).split("\n"):
        line = line.strip()
        if not line or line.startswith("//"):
            continue
        fm = re.match(r'^(\w+)\s+string\s+`yaml:"([a-z0-9_]+)"', line)
        if not fm:
            raise ExtractError(f"rke types: unexpected RKESystemImages line {line!r}")
        fields[fm.group(1)] = fm.group(2)
    return fields


# ---------------------------------------------------------------------------------------------
# Image mirror rewrite (facts of RKE's types/image/mirror.go: which prefixes are rewritten)

MIRROR_RULES = [
    ("gcr.io/google_containers", "rancher"),
    ("quay.io/coreos/", "rancher/coreos-"),
    ("quay.io/calico/", "rancher/calico-"),
    ("plugins/docker", "rancher/plugins-docker"),
    ("k8s.gcr.io/defaultbackend", "rancher/nginx-ingress-controller-defaultbackend"),
    ("k8s.gcr.io/k8s-dns-node-cache", "rancher/k8s-dns-node-cache"),
    ("kibana", "rancher/kibana"),
    ("jenkins/", "rancher/jenkins-"),
    ("alpine/git", "rancher/alpine-git"),
    ("prom/", "rancher/prom-"),
    ("quay.io/pires", "rancher"),
    ("coredns/", "rancher/coredns-"),
    ("minio/", "rancher/minio-"),
]


def mirror(image):
    if image.startswith("weaveworks") or image.startswith("noiro"):
        return image
    for old, new in MIRROR_RULES:
        image = image.replace(old, new, 1)
    return image


# ---------------------------------------------------------------------------------------------
# System images


def parse_system_images(src, field_keys, keep):
    where = "k8s_rke_system_images.go"
    lines = returned_map_entries(func_body(src, "loadK8sRKESystemImages", where), where)
    result = OrderedDict()
    current = None
    for line in lines:
        m = re.fullmatch(r'"(v[^"]+)": \{', line)
        if m:
            if current is not None:
                raise ExtractError(f"{where}: nested entry at {line!r}")
            current = (m.group(1), OrderedDict())
            continue
        if line == "},":
            if current is None:
                raise ExtractError(f"{where}: stray '}},'")
            version, images = current
            if keep(version):
                # cluster.yml key order, not KDM's line order
                ordered = OrderedDict(
                    (k, images[k]) for k in field_keys.values() if k in images
                )
                result[version] = ordered
            current = None
            continue
        m = re.fullmatch(r'(\w+):\s+(m\()?"([^"]*)"(\))?,', line)
        if m and current is not None:
            field, is_m, value = m.group(1), m.group(2), m.group(3)
            if bool(is_m) != bool(m.group(4)):
                raise ExtractError(f"{where}: unbalanced m(...) in {line!r}")
            if field not in field_keys:
                raise ExtractError(f"{where}: unknown RKESystemImages field {field}")
            current[1][field_keys[field]] = mirror(value) if is_m else value
            continue
        raise ExtractError(f"{where}: cannot parse line {line!r}")
    if current is not None:
        raise ExtractError(f"{where}: unterminated entry {current[0]}")
    return result


# ---------------------------------------------------------------------------------------------
# Service option functions (a tiny evaluator for the shapes described in the module docstring)


def parse_string_consts(src):
    consts = {}
    for block in re.findall(r"^const \((.*?)^\)", src, re.S | re.M):
        for line in block.split("\n"):
            line = strip_comment(line).strip()
            if not line:
                continue
            m = re.fullmatch(r'(\w+)\s*=\s*"([^"]*)"', line)
            if m:
                consts[m.group(1)] = m.group(2)
    return consts


class OptionFunctions:
    def __init__(self, sources, consts):
        self.src = "\n".join(block_comments_removed(s) for s in sources)
        self.consts = consts
        self.cache = {}

    def eval_expr(self, expr, env, where):
        expr = expr.strip()
        m = re.fullmatch(r'"((?:[^"\\]|\\.)*)"', expr)
        if m:
            return json.loads('"' + m.group(1) + '"')
        if re.fullmatch(r"\w+", expr):
            if expr in self.consts:
                return self.consts[expr]
            raise ExtractError(f"{where}: unknown identifier {expr}")
        m = re.fullmatch(r'(\w+)\["([^"]+)"\]', expr)
        if m:
            var, key = m.groups()
            if var not in env:
                raise ExtractError(f"{where}: unknown variable {var}")
            return env[var].get(key, "")
        m = re.fullmatch(r'fmt\.Sprintf\("([^"]*)",\s*(.*)\)', expr)
        if m:
            fmt, rest = m.groups()
            args = [self.eval_expr(a, env, where) for a in split_args(rest)]
            if fmt.count("%s") != len(args) or re.search(r"%[^s]", fmt):
                raise ExtractError(f"{where}: unsupported format {fmt!r}")
            out = fmt
            for a in args:
                out = out.replace("%s", a, 1)
            return out
        raise ExtractError(f"{where}: unsupported expression {expr!r}")

    def call(self, name):
        if name in self.cache:
            return OrderedDict(self.cache[name])
        where = f"func {name}"
        body = func_body(self.src, name, where)
        env = {}
        result = None
        i = 0
        lines = [strip_comment(l).strip() for l in body]
        lines = [l for l in lines if l]
        while i < len(lines):
            line = lines[i]
            m = re.fullmatch(r"(?:(\w+)\s*:=\s*|return\s+)map\[string\]string\{", line)
            if m:
                literal = OrderedDict()
                i += 1
                while lines[i] != "}":
                    em = re.fullmatch(r'"([^"]+)":\s*(.*),', lines[i])
                    if not em:
                        raise ExtractError(f"{where}: cannot parse map entry {lines[i]!r}")
                    literal[em.group(1)] = self.eval_expr(em.group(2), env, where)
                    i += 1
                if m.group(1):
                    env[m.group(1)] = literal
                else:
                    result = literal
                i += 1
                continue
            m = re.fullmatch(r"(\w+)\s*:=\s*(\w+)\(\)", line)
            if m:
                env[m.group(1)] = self.call(m.group(2))
                i += 1
                continue
            m = re.fullmatch(r'(\w+)\["([^"]+)"\]\s*=\s*(.*)', line)
            if m:
                var, key, expr = m.groups()
                env[var][key] = self.eval_expr(expr, env, where)
                i += 1
                continue
            m = re.fullmatch(r'delete\((\w+),\s*"([^"]+)"\)', line)
            if m:
                env[m.group(1)].pop(m.group(2), None)
                i += 1
                continue
            m = re.fullmatch(r"return (\w+)", line)
            if m:
                result = env[m.group(1)]
                i += 1
                continue
            raise ExtractError(f"{where}: unsupported statement {line!r}")
        if result is None:
            raise ExtractError(f"{where}: no return value")
        self.cache[name] = OrderedDict(result)
        return OrderedDict(result)


def split_args(s):
    args, depth, cur, in_str = [], 0, "", False
    for c in s:
        if c == '"':
            in_str = not in_str
        if not in_str:
            if c == "(":
                depth += 1
            elif c == ")":
                depth -= 1
            elif c == "," and depth == 0:
                args.append(cur)
                cur = ""
                continue
        cur += c
    if cur.strip():
        args.append(cur)
    return args


SERVICE_FIELDS = {
    "Etcd": "etcd",
    "KubeAPI": "kubeapi",
    "Kubelet": "kubelet",
    "Kubeproxy": "kubeproxy",
    "KubeController": "kube_controller",
    "Scheduler": "scheduler",
}


def parse_service_options(src, loader, funcs, keep, where):
    lines = returned_map_entries(func_body(src, loader, where), where)
    result = OrderedDict()
    current = None
    for line in lines:
        m = re.fullmatch(r'"(v[^"]+)": \{', line)
        if m:
            current = (m.group(1), OrderedDict())
            continue
        if line == "},":
            key, opts = current
            if keep(key):
                result[key] = OrderedDict(
                    (v, sort_map(opts[v])) for v in SERVICE_FIELDS.values() if v in opts
                )
            current = None
            continue
        m = re.fullmatch(r"(\w+):\s+(\w+)\(\),", line)
        if m and current is not None:
            field, fn = m.groups()
            if field not in SERVICE_FIELDS:
                raise ExtractError(f"{where}: unknown service field {field}")
            current[1][SERVICE_FIELDS[field]] = funcs.call(fn)
            continue
        raise ExtractError(f"{where}: cannot parse line {line!r}")
    return result


def sort_map(m):
    return OrderedDict(sorted(m.items()))


# ---------------------------------------------------------------------------------------------
# Docker, version info, defaults, templates


def parse_docker_info(src, keep):
    where = "k8s_docker_info.go"
    out = OrderedDict()
    for line in returned_map_entries(func_body(src, "loadK8sVersionDockerInfo", where), where):
        m = re.fullmatch(r'"([0-9.]+)":\s*\{(.*)\},', line)
        if not m:
            raise ExtractError(f"{where}: cannot parse {line!r}")
        if keep("v" + m.group(1)):
            out[m.group(1)] = re.findall(r'"([^"]+)"', m.group(2))
    return out


VERSION_INFO_FIELDS = {
    "MinRKEVersion": "min_rke_version",
    "MaxRKEVersion": "max_rke_version",
    "DeprecateRKEVersion": "deprecate_rke_version",
    "MinRancherVersion": None,
    "MaxRancherVersion": None,
    "DeprecateRancherVersion": None,
}


def parse_version_info(src, keep):
    where = "k8s_version_info.go"
    out = OrderedDict()
    current = None
    for line in returned_map_entries(func_body(src, "loadK8sVersionInfo", where), where):
        m = re.fullmatch(r'"(v[^"]+)": \{', line)
        if m:
            current = (m.group(1), OrderedDict())
            continue
        if line == "},":
            if keep(current[0]) and current[1]:
                out[current[0]] = current[1]
            current = None
            continue
        m = re.fullmatch(r'(\w+):\s+"([^"]*)",', line)
        if m and current is not None:
            if m.group(1) not in VERSION_INFO_FIELDS:
                raise ExtractError(f"{where}: unknown field {m.group(1)}")
            key = VERSION_INFO_FIELDS[m.group(1)]
            if key:  # Rancher-only fields are not used by the CLI
                current[1][key] = m.group(2)
            continue
        raise ExtractError(f"{where}: cannot parse {line!r}")
    return out


def parse_default_version(src):
    where = "k8s_version_info.go"
    for line in returned_map_entries(func_body(src, "loadRKEDefaultK8sVersions", where), where):
        m = re.fullmatch(r'"default":\s*"([^"]+)",', line)
        if m:
            return m.group(1)
    raise ExtractError(f"{where}: no default in loadRKEDefaultK8sVersions")


def parse_kdm_addon_names(kdm_go_src):
    names = {}
    for name, value in re.findall(r'^\s*(\w+)\s*=\s*"([^"]+)"', kdm_go_src, re.M):
        names[name] = value
    return names


def parse_addon_templates(src, addon_names):
    where = "templates/templates.go"
    consts = parse_string_consts(src)
    out = OrderedDict()
    current = None
    for line in returned_map_entries(func_body(src, "LoadK8sVersionedTemplates", where), where):
        m = re.fullmatch(r"kdm\.(\w+):\s*\{", line)
        if m:
            if m.group(1) not in addon_names:
                raise ExtractError(f"{where}: unknown addon kdm.{m.group(1)}")
            current = addon_names[m.group(1)]
            out[current] = OrderedDict()
            continue
        if line == "},":
            current = None
            continue
        if re.fullmatch(r"kdm\.TemplateKeys:\s*\w+\(\),", line):
            continue  # template bodies are not facts we keep here
        m = re.fullmatch(r'"([^"]+)":\s*(\w+),', line)
        if m and current is not None:
            if m.group(2) not in consts:
                raise ExtractError(f"{where}: unknown template constant {m.group(2)}")
            out[current][m.group(1)] = consts[m.group(2)]
            continue
        raise ExtractError(f"{where}: cannot parse {line!r}")
    return out


# ---------------------------------------------------------------------------------------------
# Saved pages of a newer KDM commit (the search tool's file index)

KDM_FILES_COMMIT = "358677061cf501729f5b89db6d22ab1eb0e3e0d1"

# (path, first page offset, what the pages hold). Consecutive pages of one path are joined.
KDM_FILE_PAGES = [
    ("pkg/rke/k8s_rke_system_images.go", "go-system-images"),
    ("pkg/rke/templates/templates.go", "go-templates"),
    ("data/data.json", "json-sections"),
]

# Where a data.json page starts: the section its first (partial) lines belong to. Later
# sections are recognised by their own headers inside the page.
DATA_JSON_PAGE_SECTION = {
    131500: "K8sVersionServiceOptions",
    12560000: "K8sVersionInfo",
    12590000: "K8sVersionWindowsServiceOptions",
}


class Page:
    def __init__(self, root, commit, path, offset):
        self.file = os.path.join(root, commit, path, f"{offset}.json")
        with open(self.file, encoding="utf-8") as f:
            data = json.load(f)
        for key, want in (("repo", "rancher/kontainer-driver-metadata"), ("commit", commit),
                          ("path", path), ("offset", offset)):
            if data.get(key) != want:
                raise ExtractError(f"{self.file}: {key} is {data.get(key)!r}, expected {want!r}")
        self.path, self.offset, self.text = path, offset, data["text"]
        self.prefix_only = bool(data.get("prefix_only"))
        self.sha256 = hashlib.sha256(self.text.encode("utf-8")).hexdigest()

    def source(self):
        return OrderedDict(
            [
                ("path", self.path),
                ("offset", self.offset),
                ("chars", len(self.text)),
                ("prefix_only", self.prefix_only),
                ("sha256", self.sha256),
            ]
        )


def load_pages(root, commit, path):
    """Every saved page of `path`, ascending, joined into runs of consecutive text."""
    folder = os.path.join(root, commit, path)
    if not os.path.isdir(folder):
        raise ExtractError(f"{folder}: no saved pages (see data/README.md)")
    offsets = sorted(int(n[:-5]) for n in os.listdir(folder) if re.fullmatch(r"\d+\.json", n))
    pages = [Page(root, commit, path, o) for o in offsets]
    runs, current = [], None
    for p in pages:
        if current and current[0].offset + len(current_text(current)) == p.offset \
                and not current[-1].prefix_only:
            current.append(p)
        else:
            current = [p]
            runs.append(current)
    return pages, [(run[0].offset, current_text(run)) for run in runs]


def current_text(run):
    return "".join(p.text for p in run)


def go_map_fragment(text, where):
    """Lines of a Go map literal excerpt from the first entry key on; the lines of a partial entry
    at the start are dropped, and the excerpt must end after a complete entry."""
    lines = [strip_comment(l).strip() for l in text.split("\n")]
    lines = [l for l in lines if l]
    for i, line in enumerate(lines):
        if re.fullmatch(r'"v[^"]+": \{', line):
            lines = lines[i:]
            break
    else:
        raise ExtractError(f"{where}: no entry starts in the saved pages")
    while lines and lines[-1] != "},":
        lines.pop()  # a partial entry at the end of a page run
    return lines


def parse_system_images_fragment(text, field_keys, keep, where):
    src = "func loadK8sRKESystemImages() map[string]kdm.RKESystemImages {\n\treturn map[string]kdm.RKESystemImages{\n"
    src += "\n".join(go_map_fragment(text, where)) + "\n\t}\n}\n"
    return parse_system_images(src, field_keys, keep)


def json_sections(text, first_section, where):
    """Top-level sections of a data.json excerpt: section name -> [(key, value)] of the complete
    entries (two-space indented `"key": {...}` / `[...]`) found in it."""
    out = OrderedDict()
    section, entry, started = first_section, None, False
    for line in text.split("\n"):
        m = re.fullmatch(r' "(\w+)": \{', line)
        if m:
            section, started = m.group(1), True
            continue
        if re.fullmatch(r" \},?", line):
            section = None
            continue
        if section is None:
            if line.strip():
                raise ExtractError(f"{where}: text outside a section: {line!r}")
            continue
        if entry is None:
            m = re.fullmatch(r'  "([^"]+)": ([\[{])', line)
            if m:
                entry = [m.group(1), m.group(2), [line.split(": ", 1)[1]]]
                started = True
                continue
            m = re.fullmatch(r'  "([^"]+)": ("[^"]*"),?', line)
            if m:
                out.setdefault(section, []).append((m.group(1), json.loads(m.group(2))))
                started = True
                continue
            if started and line.strip():
                raise ExtractError(f"{where}: cannot parse {line!r} in {section}")
            continue  # the tail of an entry cut by the page start
        closer = "}" if entry[1] == "{" else "]"
        if re.fullmatch("  " + re.escape(closer) + ",?", line):
            entry[2].append(closer)
            try:
                value = json.loads("\n".join(entry[2]))
            except json.JSONDecodeError as e:
                raise ExtractError(f"{where}: {section}.{entry[0]}: {e}")
            out.setdefault(section, []).append((entry[0], value))
            entry = None
        else:
            entry[2].append(line)
    return out


JSON_SERVICE_FIELDS = {
    "etcd": "etcd",
    "kubeapi": "kubeapi",
    "kubelet": "kubelet",
    "kubeproxy": "kubeproxy",
    "kubeController": "kube_controller",
    "scheduler": "scheduler",
}

JSON_VERSION_INFO_FIELDS = {
    "minRKEVersion": "min_rke_version",
    "maxRKEVersion": "max_rke_version",
    "deprecateRKEVersion": "deprecate_rke_version",
    "minRancherVersion": None,
    "maxRancherVersion": None,
    "deprecateRancherVersion": None,
}


def json_service_options(entries, keep, where):
    out = OrderedDict()
    for key, value in entries:
        if not keep(key):
            continue
        opts = OrderedDict()
        for field, flags in value.items():
            if field not in JSON_SERVICE_FIELDS:
                raise ExtractError(f"{where}: {key}: unknown service {field}")
            if flags is not None:
                opts[JSON_SERVICE_FIELDS[field]] = sort_map(flags)
        out[key] = OrderedDict((v, opts[v]) for v in SERVICE_FIELDS.values() if v in opts)
    return out


def json_version_info(entries, keep, where):
    out = OrderedDict()
    for key, value in entries:
        info = OrderedDict()
        for field, text in value.items():
            if field not in JSON_VERSION_INFO_FIELDS:
                raise ExtractError(f"{where}: {key}: unknown field {field}")
            if JSON_VERSION_INFO_FIELDS[field] and text:
                info[JSON_VERSION_INFO_FIELDS[field]] = text
        if keep(key) and info:
            out[key] = info
    return out


def extract_kdm_files(root, field_keys, addon_names, keep):
    """The facts in the saved pages of KDM_FILES_COMMIT, plus the pages' provenance."""
    facts, provenance = OrderedDict(), []
    for path, kind in KDM_FILE_PAGES:
        pages, runs = load_pages(root, KDM_FILES_COMMIT, path)
        provenance.extend(p.source() for p in pages)
        where = f"{KDM_FILES_COMMIT[:12]}:{path}"
        if kind == "go-system-images":
            images = OrderedDict()
            for offset, text in runs:
                images.update(parse_system_images_fragment(text, field_keys, keep, f"{where}@{offset}"))
            facts["system_images"] = images
        elif kind == "go-templates":
            if len(runs) != 1 or runs[0][0] != 0:
                raise ExtractError(f"{where}: the saved pages must cover the file from offset 0")
            facts["addon_templates"] = parse_addon_templates(runs[0][1], addon_names)
        elif kind == "json-sections":
            for offset, text in runs:
                if offset not in DATA_JSON_PAGE_SECTION:
                    raise ExtractError(f"{where}@{offset}: unknown page (add it to DATA_JSON_PAGE_SECTION)")
                at = f"{where}@{offset}"
                for section, entries in json_sections(text, DATA_JSON_PAGE_SECTION[offset], at).items():
                    if section == "K8sVersionServiceOptions":
                        facts.setdefault("service_options", OrderedDict()).update(
                            json_service_options(entries, keep, at))
                    elif section == "K8sVersionWindowsServiceOptions":
                        facts.setdefault("windows_service_options", OrderedDict()).update(
                            json_service_options(entries, keep, at))
                    elif section == "K8sVersionInfo":
                        facts.setdefault("version_info", OrderedDict()).update(
                            json_version_info(entries, keep, at))
                    elif section == "RKEDefaultK8sVersions":
                        facts["default_version"] = dict(entries)["default"]
                    elif section == "K8sVersionDockerInfo":
                        facts["docker_versions"] = OrderedDict(
                            (k, v) for k, v in entries if keep("v" + k))
                    elif section == "RancherDefaultK8sVersions":
                        pass  # Rancher's, not RKE's
                    else:
                        raise ExtractError(f"{at}: unexpected section {section}")
    return facts, provenance


# ---------------------------------------------------------------------------------------------
# One git branch


def rke_dir(repo, ref):
    for d in ("pkg/rke", "rke"):
        try:
            git_show(repo, ref, f"{d}/k8s_rke_system_images.go")
            return d
        except ExtractError:
            continue
    raise ExtractError(f"{ref}: no k8s_rke_system_images.go under pkg/rke or rke")


def extract_branch(repo, ref, field_keys, addon_names, keep):
    d = rke_dir(repo, ref)
    kdm = lambda p: git_show(repo, ref, f"{d}/{p}")  # noqa: E731
    options_src = kdm("k8s_service_options.go")
    windows_src = kdm("k8s_windows_service_options.go")
    funcs = OptionFunctions([options_src, windows_src], parse_string_consts(options_src))
    version_src = kdm("k8s_version_info.go")
    facts = OrderedDict()
    facts["system_images"] = parse_system_images(kdm("k8s_rke_system_images.go"), field_keys, keep)
    facts["service_options"] = parse_service_options(
        options_src, "loadK8sVersionServiceOptions", funcs, keep, f"{ref}:k8s_service_options.go")
    facts["windows_service_options"] = parse_service_options(
        windows_src, "loadK8sVersionWindowsServiceOptions", funcs, keep,
        f"{ref}:k8s_windows_service_options.go")
    facts["version_info"] = parse_version_info(version_src, keep)
    facts["default_version"] = parse_default_version(version_src)
    facts["docker_versions"] = parse_docker_info(kdm("k8s_docker_info.go"), keep)
    facts["addon_templates"] = parse_addon_templates(kdm("templates/templates.go"), addon_names)
    return facts


def git_commit_time(repo, ref):
    return int(subprocess.run(["git", "-C", repo, "log", "-1", "--format=%ct", ref],
                              check=True, capture_output=True, text=True).stdout.strip())


# ---------------------------------------------------------------------------------------------
# Merging sources and repairing index damage


def single_insertion(damaged, clean):
    """Whether `damaged` is `clean` with one run of characters inserted."""
    extra = len(damaged) - len(clean)
    if extra <= 0:
        return False
    i = 0
    while i < len(clean) and damaged[i] == clean[i]:
        i += 1
    return damaged[i + extra:] == clean[i:]


TEMPLATE_NAME = re.compile(r"[a-z]+-v\d+(\.\d+)*(-[a-z0-9.]+)*")
RANGE_VERSION = re.compile(r"\d+\.\d+\.\d+(-(rancher\d+(-\d+)?|alpha))?")


def range_is_clean(text):
    for token in re.split(r"\s+", text.strip()):
        token = re.sub(r"^(>=|<=|>|<|=|!=)", "", token)
        if token and not RANGE_VERSION.fullmatch(token):
            return False
    return True


def repair_templates(newest, older, repairs, where):
    """The file index's copy of templates.go has a few strings with foreign text inserted.
    A damaged string is replaced only by an older source's string it equals after removing
    one inserted run, and every repair is recorded."""
    known_names = {n for src in older for ranges in src.values() for n in ranges.values()}
    known_ranges = {(a, r) for src in older for a, ranges in src.items() for r in ranges}
    fixed = OrderedDict()
    for addon, ranges in newest.items():
        fixed[addon] = OrderedDict()
        for rng, name in ranges.items():
            if not range_is_clean(rng):
                cands = [r for (a, r) in known_ranges if a == addon and single_insertion(rng, r)]
                if len(cands) != 1:
                    raise ExtractError(f"{where}: {addon} range {rng!r} is not understood")
                repairs.append(OrderedDict([("where", where), ("was", rng), ("now", cands[0])]))
                rng = cands[0]
            if not TEMPLATE_NAME.fullmatch(name):
                cands = [n for n in known_names if single_insertion(name, n)]
                if len(cands) != 1:
                    raise ExtractError(f"{where}: {addon} template {name!r} is not understood")
                if not any(r["was"] == name for r in repairs):
                    repairs.append(OrderedDict([("where", where), ("was", name), ("now", cands[0])]))
                name = cands[0]
            fixed[addon][rng] = name
    return fixed


def merge_templates(sources_newest_first):
    """Newest source's ranges in its order, then ranges only older sources list. A range listed
    by several sources must name the same template in all of them."""
    merged = OrderedDict()
    for src in sources_newest_first:
        for addon, ranges in src.items():
            target = merged.setdefault(addon, OrderedDict())
            for rng, name in ranges.items():
                if rng in target and target[rng] != name:
                    raise ExtractError(
                        f"templates: {addon} {rng!r} is {target[rng]} in a newer source, {name} in an older one")
                target.setdefault(rng, name)
    return merged


# RKE releases whose Kubernetes versions KDM never published (RKE Extended Life), from RKE's
# release notes (rancher-archives/rke releases v1.8.11 to v1.8.14).
UNPUBLISHED_VERSIONS = OrderedDict(
    [
        ("v1.32.12-rancher1-1", "v1.8.11"),
        ("v1.32.13-rancher1-1", "v1.8.12"),
        ("v1.32.13-rancher1-2", "v1.8.13"),
        ("v1.32.13-rancher1-3", "v1.8.14"),
    ]
)

EXTENDED_LIFE_PREFIX = "rke-extended-life/"


def semver_key(v):
    m = re.match(r"^v(\d+)\.(\d+)(?:\.(\d+))?(?:-rancher(\d+)(?:-(\d+))?)?", v)
    return tuple(int(x) if x else -1 for x in m.groups())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kdm", default=DEFAULT_KDM)
    ap.add_argument(
        "--refs",
        default="dev-v2.5,release-v2.5,dev-v2.6,release-v2.6,dev-v2.7,release-v2.7,"
        "dev-v2.8,release-v2.8,dev-v2.9,release-v2.9,dev-v2.10",
        help="KDM branches to take the union of",
    )
    ap.add_argument("--kdm-files", default="/var/cache/rkers/kdm-files",
                    help="saved pages of newer KDM files (see the module docstring)")
    ap.add_argument("--rke", default=DEFAULT_RKE)
    ap.add_argument("--rke-ref", default="HEAD")
    ap.add_argument("--minors", default=",".join(f"1.{m}" for m in range(20, 33)))
    ap.add_argument(
        "--rke-version",
        default="v1.8.14",
        help="the RKE release whose min/max rules decide which versions are offered",
    )
    ap.add_argument("-o", "--output", default="-")
    args = ap.parse_args()

    minors = [m.strip() for m in args.minors.split(",") if m.strip()]

    def keep(key):
        # exact versions (vX.Y.Z-...) and minor keys (vX.Y) of the selected minors
        m = re.match(r"^v(\d+\.\d+)(?:[.-]|$)", key)
        return bool(m) and m.group(1) in minors

    field_keys = system_image_keys(git_show(args.rke, args.rke_ref, "types/rke_types.go"))
    addon_names = parse_kdm_addon_names(git_show(args.rke, args.rke_ref, "types/kdm/kdm.go"))

    refs = [r.strip() for r in args.refs.split(",") if r.strip()]
    refs.sort(key=lambda r: git_commit_time(args.kdm, r))  # oldest first
    branch_facts = [(r, extract_branch(args.kdm, r, field_keys, addon_names, keep)) for r in refs]
    file_facts, file_pages = extract_kdm_files(args.kdm_files, field_keys, addon_names, keep)

    repairs = []
    older_templates = [f["addon_templates"] for _, f in reversed(branch_facts)]
    file_facts["addon_templates"] = repair_templates(
        file_facts["addon_templates"], older_templates, repairs,
        f"{KDM_FILES_COMMIT[:12]}:pkg/rke/templates/templates.go")
    sources = [f for _, f in branch_facts] + [file_facts]  # oldest first

    def union(field):
        out = OrderedDict()
        for f in sources:
            out.update(f.get(field, {}))
        return OrderedDict(sorted(out.items(), key=lambda kv: semver_key(kv[0])))

    images = union("system_images")
    # The default: the newest version whose Kubernetes image is public. KDM's own default
    # (v1.32.11) and RKE 1.8.14's (v1.32.13-rancher1-3) need an RKE Extended Life subscription.
    public = [v for v, m in images.items() if not m["kubernetes"].startswith(EXTENDED_LIFE_PREFIX)]
    default_version = max(public, key=semver_key)

    found_minors = sorted({".".join(v[1:].split(".")[:2]) for v in images},
                          key=lambda s: [int(x) for x in s.split(".")])
    missing = [m for m in minors if m not in found_minors]
    for v in UNPUBLISHED_VERSIONS:
        if v in images:
            raise ExtractError(f"{v} is listed as unpublished but the sources have its images")

    data = OrderedDict()
    data["source"] = OrderedDict(
        [
            ("repository", "rancher/kontainer-driver-metadata"),
            ("generator", "data/extract-kdm.py"),
            ("branches", [OrderedDict([("ref", r), ("commit", git_rev(args.kdm, r))]) for r in refs]),
            ("files", OrderedDict([("commit", KDM_FILES_COMMIT), ("pages", file_pages)])),
            ("repairs", repairs),
            ("rke_types_commit", git_rev(args.rke, args.rke_ref)),
            ("unpublished_versions_from", "rancher-archives/rke release notes v1.8.11-v1.8.14"),
            ("default_rule", "newest version whose kubernetes image is not under rke-extended-life/"),
            ("kdm_default_version", file_facts["default_version"]),
            ("minors_requested", minors),
            ("minors_not_found", missing),
        ]
    )
    data["rke_version"] = args.rke_version
    data["default_version"] = default_version
    data["version_info"] = union("version_info")
    docker = OrderedDict()
    for f in sources:
        docker.update(f.get("docker_versions", {}))
    data["docker_versions"] = OrderedDict(sorted(docker.items(), key=lambda kv: semver_key("v" + kv[0])))
    data["service_options"] = union("service_options")
    data["windows_service_options"] = union("windows_service_options")
    data["addon_templates"] = merge_templates(
        [f["addon_templates"] for f in reversed(sources)])
    data["system_images"] = images
    data["unpublished_versions"] = OrderedDict(
        (v, OrderedDict([("rke", rke)])) for v, rke in UNPUBLISHED_VERSIONS.items())

    text = json.dumps(data, indent=2) + "\n"
    if args.output == "-":
        sys.stdout.write(text)
    else:
        with open(args.output, "w") as f:
            f.write(text)
    if missing:
        print(f"note: no KDM entries for minors {missing}", file=sys.stderr)
    for r in repairs:
        print(f"note: repaired {r['was']!r} -> {r['now']!r} ({r['where']})", file=sys.stderr)


if __name__ == "__main__":
    try:
        main()
    except ExtractError as e:
        print(f"extract-kdm: {e}", file=sys.stderr)
        sys.exit(1)
