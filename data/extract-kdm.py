#!/usr/bin/env python3
"""Regenerate data/versions.json from a local kontainer-driver-metadata (KDM) git mirror.

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

Usage:
    data/extract-kdm.py [--kdm DIR] [--ref REF] [--rke DIR] [--rke-ref REF] \
        [--minors 1.20,1.27,...] [--rke-version v1.7.0] [-o data/versions.json]
"""

import argparse
import json
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


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kdm", default=DEFAULT_KDM)
    ap.add_argument("--ref", default="dev-v2.10")
    ap.add_argument("--rke", default=DEFAULT_RKE)
    ap.add_argument("--rke-ref", default="HEAD")
    ap.add_argument("--minors", default="1.20,1.27,1.28,1.29,1.30,1.31,1.32")
    ap.add_argument(
        "--rke-version",
        default="v1.7.0",
        help="the RKE release whose min/max rules decide the 'current' versions",
    )
    ap.add_argument("-o", "--output", default="-")
    args = ap.parse_args()

    minors = [m.strip() for m in args.minors.split(",") if m.strip()]

    def keep(key):
        # exact versions (vX.Y.Z-...) and minor keys (vX.Y) of the selected minors
        m = re.match(r"^v(\d+\.\d+)(?:[.-]|$)", key)
        return bool(m) and m.group(1) in minors

    kdm = lambda p: git_show(args.kdm, args.ref, p)  # noqa: E731
    field_keys = system_image_keys(git_show(args.rke, args.rke_ref, "types/rke_types.go"))
    addon_names = parse_kdm_addon_names(git_show(args.rke, args.rke_ref, "types/kdm/kdm.go"))

    images = parse_system_images(kdm("pkg/rke/k8s_rke_system_images.go"), field_keys, keep)
    options_src = kdm("pkg/rke/k8s_service_options.go")
    windows_src = kdm("pkg/rke/k8s_windows_service_options.go")
    funcs = OptionFunctions([options_src, windows_src], parse_string_consts(options_src))
    options = parse_service_options(
        options_src, "loadK8sVersionServiceOptions", funcs, keep, "k8s_service_options.go"
    )
    windows = parse_service_options(
        windows_src,
        "loadK8sVersionWindowsServiceOptions",
        funcs,
        keep,
        "k8s_windows_service_options.go",
    )
    version_src = kdm("pkg/rke/k8s_version_info.go")

    def semver_key(v):
        m = re.match(r"^v(\d+)\.(\d+)(?:\.(\d+))?(?:-rancher(\d+)(?:-(\d+))?)?", v)
        return tuple(int(x) if x else -1 for x in m.groups())

    found_minors = sorted({".".join(v[1:].split(".")[:2]) for v in images}, key=lambda s: [int(x) for x in s.split(".")])
    missing = [m for m in minors if m not in found_minors]

    data = OrderedDict()
    data["source"] = OrderedDict(
        [
            ("repository", "rancher/kontainer-driver-metadata"),
            ("ref", args.ref),
            ("commit", git_rev(args.kdm, args.ref)),
            ("rke_types_commit", git_rev(args.rke, args.rke_ref)),
            ("generator", "data/extract-kdm.py"),
            ("minors_requested", minors),
            ("minors_not_found", missing),
        ]
    )
    data["rke_version"] = args.rke_version
    data["default_version"] = parse_default_version(version_src)
    data["version_info"] = OrderedDict(
        sorted(parse_version_info(version_src, keep).items(), key=lambda kv: semver_key(kv[0]))
    )
    data["docker_versions"] = parse_docker_info(kdm("pkg/rke/k8s_docker_info.go"), keep)
    data["service_options"] = OrderedDict(sorted(options.items(), key=lambda kv: semver_key(kv[0])))
    data["windows_service_options"] = OrderedDict(
        sorted(windows.items(), key=lambda kv: semver_key(kv[0]))
    )
    data["addon_templates"] = parse_addon_templates(
        kdm("pkg/rke/templates/templates.go"), addon_names
    )
    data["system_images"] = OrderedDict(sorted(images.items(), key=lambda kv: semver_key(kv[0])))

    if data["default_version"] not in data["system_images"]:
        raise ExtractError(f"default version {data['default_version']} has no system images")

    text = json.dumps(data, indent=2) + "\n"
    if args.output == "-":
        sys.stdout.write(text)
    else:
        with open(args.output, "w") as f:
            f.write(text)
    if missing:
        print(f"note: no KDM entries for minors {missing} on {args.ref}", file=sys.stderr)


if __name__ == "__main__":
    try:
        main()
    except ExtractError as e:
        print(f"extract-kdm: {e}", file=sys.stderr)
        sys.exit(1)
