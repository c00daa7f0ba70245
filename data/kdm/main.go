// Command kdm writes what rkers embeds from RKE1's metadata: data/versions.json (the version
// catalog in rkers' format) and data/addon-templates.json (KDM's addon template bodies, as Go
// text/template source, byte for byte), both from the data/data.json of the RKE module pinned in
// go.mod and go.sum. It owns the selection rules (which minors, which ranges, the default) and
// nothing else: every value is copied from the pinned file.
//
//	go run . -out ../          write the two files
//	go run . -check ../        compare them with a fresh generation; exit 1 naming the first
//	                           differing line
//
// The module is fetched with `go mod download`, which verifies it against go.sum (and the
// checksum database on first download). Running it twice, or elsewhere, gives the same bytes:
// the output depends only on the pinned file and this program.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/blang/semver"
)

const (
	rkeModule = "github.com/rancher/rke"
	// Where RKE's codegen says its data.json comes from (codegen/codegen.go, defaultReleaseURL).
	kdmBranch = "release-v2.11-rke-extended-life"
	// The RKE release whose min/max rules decide what is offered: the module's own version.
	firstMinor, lastMinor = 20, 32
	extendedLifePrefix    = "rke-extended-life/"
)

func main() {
	out := flag.String("out", "", "directory to write versions.json and addon-templates.json into")
	check := flag.String("check", "", "directory whose versions.json and addon-templates.json must match")
	flag.Parse()
	if (*out == "") == (*check == "") {
		fmt.Fprintln(os.Stderr, "kdm: give exactly one of -out DIR or -check DIR")
		os.Exit(2)
	}
	files, err := generate()
	if err != nil {
		fmt.Fprintf(os.Stderr, "kdm: %v\n", err)
		os.Exit(1)
	}
	names := []string{"versions.json", "addon-templates.json"}
	if *out != "" {
		for _, name := range names {
			if err := os.WriteFile(filepath.Join(*out, name), files[name], 0o644); err != nil {
				fmt.Fprintf(os.Stderr, "kdm: %v\n", err)
				os.Exit(1)
			}
		}
		return
	}
	failed := false
	for _, name := range names {
		path := filepath.Join(*check, name)
		have, err := os.ReadFile(path)
		if err != nil {
			fmt.Fprintf(os.Stderr, "kdm: %v\n", err)
			failed = true
			continue
		}
		if msg := firstDifference(have, files[name]); msg != "" {
			fmt.Fprintf(os.Stderr, "kdm: %s: %s; regenerate with data/generate\n", path, msg)
			failed = true
		}
	}
	if failed {
		os.Exit(1)
	}
}

// module is the part of `go mod download -json` that says what was fetched and where.
type module struct {
	Path, Version, Sum, GoModSum, Dir, Error string
}

func download() (module, error) {
	cmd := exec.Command("go", "mod", "download", "-json", rkeModule)
	cmd.Stderr = os.Stderr
	text, err := cmd.Output()
	var m module
	if jerr := json.Unmarshal(text, &m); jerr != nil {
		if err != nil {
			return m, fmt.Errorf("go mod download %s: %v", rkeModule, err)
		}
		return m, fmt.Errorf("go mod download %s: %v", rkeModule, jerr)
	}
	if m.Error != "" {
		return m, fmt.Errorf("go mod download %s: %s (go.mod must require it: go mod tidy drops it)", rkeModule, m.Error)
	}
	if err != nil {
		return m, fmt.Errorf("go mod download %s: %v", rkeModule, err)
	}
	return m, nil
}

func generate() (map[string][]byte, error) {
	mod, err := download()
	if err != nil {
		return nil, err
	}
	dataPath := filepath.Join(mod.Dir, "data", "data.json")
	raw, err := os.ReadFile(dataPath)
	if err != nil {
		return nil, err
	}
	root, err := decodeOrdered(raw)
	if err != nil {
		return nil, fmt.Errorf("%s@%s data/data.json: %v", mod.Path, mod.Version, err)
	}
	top, ok := root.(*omap)
	if !ok {
		return nil, fmt.Errorf("%s@%s data/data.json: not a JSON object", mod.Path, mod.Version)
	}
	g := gen{where: mod.Path + "@" + mod.Version + " data/data.json"}
	versions, templates, err := g.build(top, mod)
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	for name, v := range map[string]any{"versions.json": versions, "addon-templates.json": templates} {
		b, err := encode(v)
		if err != nil {
			return nil, err
		}
		files[name] = b
	}
	return files, nil
}

type gen struct{ where string }

func (g gen) errorf(format string, args ...any) error {
	return fmt.Errorf("%s: %s", g.where, fmt.Sprintf(format, args...))
}

// section returns top[name] as an object.
func (g gen) section(top *omap, name string) (*omap, error) {
	v, ok := top.get(name)
	if !ok {
		return nil, g.errorf("no %s", name)
	}
	m, ok := v.(*omap)
	if !ok {
		return nil, g.errorf("%s is not an object", name)
	}
	return m, nil
}

var minorRE = regexp.MustCompile(`^v(\d+)\.(\d+)(?:[.-]|$)`)

// kept says whether a version key (exact `vX.Y.Z-...` or minor `vX.Y`) is of a minor rkers
// offers from RKE1's data.
func kept(key string) bool {
	m := minorRE.FindStringSubmatch(key)
	if m == nil || m[1] != "1" {
		return false
	}
	minor, _ := strconv.Atoi(m[2])
	return minor >= firstMinor && minor <= lastMinor
}

// semverKey orders `vX.Y[.Z][-rancherN[-M]]` keys as rkers always has: a minor key sorts before
// its patches, a missing part before any present one.
func semverKey(v string) [5]int {
	re := regexp.MustCompile(`^v?(\d+)\.(\d+)(?:\.(\d+))?(?:-rancher(\d+)(?:-(\d+))?)?`)
	m := re.FindStringSubmatch(v)
	var k [5]int
	for i := range k {
		k[i] = -1
		if m != nil && m[i+1] != "" {
			k[i], _ = strconv.Atoi(m[i+1])
		}
	}
	return k
}

func lessKey(a, b string) bool {
	ka, kb := semverKey(a), semverKey(b)
	for i := range ka {
		if ka[i] != kb[i] {
			return ka[i] < kb[i]
		}
	}
	return a < b
}

func sortedKeys(m *omap, keep func(string) bool) []string {
	var keys []string
	for _, k := range m.keys {
		if keep(k) {
			keys = append(keys, k)
		}
	}
	sort.SliceStable(keys, func(i, j int) bool { return lessKey(keys[i], keys[j]) })
	return keys
}

// The KDM JSON field names of RKESystemImages and their cluster.yml keys, in RKE's struct order
// (types/rke_types.go), which is also the order the file lists them in.
var imageKeys = []struct{ json, yaml string }{
	{"etcd", "etcd"}, {"alpine", "alpine"}, {"nginxProxy", "nginx_proxy"},
	{"certDownloader", "cert_downloader"}, {"kubernetesServicesSidecar", "kubernetes_services_sidecar"},
	{"kubedns", "kubedns"}, {"dnsmasq", "dnsmasq"}, {"kubednsSidecar", "kubedns_sidecar"},
	{"kubednsAutoscaler", "kubedns_autoscaler"}, {"coredns", "coredns"},
	{"corednsAutoscaler", "coredns_autoscaler"}, {"nodelocal", "nodelocal"},
	{"kubernetes", "kubernetes"}, {"flannel", "flannel"}, {"flannelCni", "flannel_cni"},
	{"calicoNode", "calico_node"}, {"calicoCni", "calico_cni"},
	{"calicoControllers", "calico_controllers"}, {"calicoCtl", "calico_ctl"},
	{"calicoFlexVol", "calico_flexvol"}, {"canalNode", "canal_node"}, {"canalCni", "canal_cni"},
	{"canalControllers", "canal_controllers"}, {"canalFlannel", "canal_flannel"},
	{"canalFlexVol", "canal_flexvol"}, {"weaveNode", "weave_node"}, {"weaveCni", "weave_cni"},
	{"podInfraContainer", "pod_infra_container"}, {"ingress", "ingress"},
	{"ingressBackend", "ingress_backend"}, {"ingressWebhook", "ingress_webhook"},
	{"metricsServer", "metrics_server"}, {"windowsPodInfraContainer", "windows_pod_infra_container"},
	{"aciCniDeployContainer", "aci_cni_deploy_container"}, {"aciHostContainer", "aci_host_container"},
	{"aciOpflexContainer", "aci_opflex_container"}, {"aciMcastContainer", "aci_mcast_container"},
	{"aciOvsContainer", "aci_ovs_container"}, {"aciControllerContainer", "aci_controller_container"},
	{"aciGbpServerContainer", "aci_gbp_server_container"},
	{"aciOpflexServerContainer", "aci_opflex_server_container"},
}

// KDM's service names (json tags of KubernetesServicesOptions) and rkers' keys, in rkers' order.
var serviceKeys = []struct{ json, yaml string }{
	{"etcd", "etcd"}, {"kubeapi", "kubeapi"}, {"kubelet", "kubelet"},
	{"kubeproxy", "kubeproxy"}, {"kubeController", "kube_controller"}, {"scheduler", "scheduler"},
}

var versionInfoKeys = map[string]string{
	"minRKEVersion": "min_rke_version", "maxRKEVersion": "max_rke_version",
	"deprecateRKEVersion": "deprecate_rke_version",
	// Rancher's own bounds: the CLI has no use for them.
	"minRancherVersion": "", "maxRancherVersion": "", "deprecateRancherVersion": "",
}

func (g gen) build(top *omap, mod module) (*omap, *omap, error) {
	images, err := g.systemImages(top)
	if err != nil {
		return nil, nil, err
	}
	serviceOptions, err := g.serviceOptions(top, "K8sVersionServiceOptions")
	if err != nil {
		return nil, nil, err
	}
	windowsOptions, err := g.serviceOptions(top, "K8sVersionWindowsServiceOptions")
	if err != nil {
		return nil, nil, err
	}
	versionInfo, err := g.versionInfo(top)
	if err != nil {
		return nil, nil, err
	}
	docker, err := g.dockerInfo(top)
	if err != nil {
		return nil, nil, err
	}
	ranges, bodies, err := g.templates(top, images)
	if err != nil {
		return nil, nil, err
	}
	defaults, err := g.section(top, "RKEDefaultK8sVersions")
	if err != nil {
		return nil, nil, err
	}
	rkeDefault, _ := defaults.get("default")
	rkeDefaultText, ok := rkeDefault.(string)
	if !ok {
		return nil, nil, g.errorf("RKEDefaultK8sVersions has no default")
	}

	// The default: the newest version whose Kubernetes image is public. RKE's own default
	// needs an RKE Extended Life subscription (rke-extended-life/ images).
	defaultVersion := ""
	for _, v := range images.keys {
		img, _ := images.vals[v].(*omap).get("kubernetes")
		s, _ := img.(string)
		if !strings.HasPrefix(s, extendedLifePrefix) {
			defaultVersion = v // keys are in ascending order
		}
	}
	if defaultVersion == "" {
		return nil, nil, g.errorf("no version with a public kubernetes image")
	}

	var minors []any
	found := map[string]bool{}
	for _, v := range images.keys {
		m := minorRE.FindStringSubmatch(v)
		found[m[1]+"."+m[2]] = true
	}
	var missing []any
	for minor := firstMinor; minor <= lastMinor; minor++ {
		name := "1." + strconv.Itoa(minor)
		minors = append(minors, name)
		if !found[name] {
			missing = append(missing, name)
		}
	}
	if missing == nil {
		missing = []any{}
	}

	source := newOmap()
	source.set("repository", "rancher/kontainer-driver-metadata")
	source.set("generator", "data/kdm")
	source.set("module", mod.Path+"@"+mod.Version)
	source.set("module_sum", mod.Sum)
	source.set("file", "data/data.json")
	source.set("kdm_branch", kdmBranch)
	source.set("default_rule", "newest version whose kubernetes image is not under "+extendedLifePrefix)
	source.set("kdm_default_version", rkeDefaultText)
	source.set("minors_requested", minors)
	source.set("minors_not_found", missing)

	out := newOmap()
	out.set("source", source)
	out.set("rke_version", mod.Version)
	out.set("default_version", defaultVersion)
	out.set("version_info", versionInfo)
	out.set("docker_versions", docker)
	out.set("service_options", serviceOptions)
	out.set("windows_service_options", windowsOptions)
	out.set("addon_templates", ranges)
	out.set("system_images", images)
	out.set("unpublished_versions", newOmap())

	tsource := newOmap()
	tsource.set("module", mod.Path+"@"+mod.Version)
	tsource.set("module_sum", mod.Sum)
	tsource.set("file", "data/data.json")
	tsource.set("section", "K8sVersionedTemplates.templateKeys")
	tsource.set("note", "Go text/template source as the file has it, for the templates the ranges in versions.json name")
	tfile := newOmap()
	tfile.set("source", tsource)
	tfile.set("templates", bodies)
	return out, tfile, nil
}

func (g gen) systemImages(top *omap) (*omap, error) {
	sec, err := g.section(top, "K8sVersionRKESystemImages")
	if err != nil {
		return nil, err
	}
	out := newOmap()
	for _, version := range sortedKeys(sec, kept) {
		entry, ok := sec.vals[version].(*omap)
		if !ok {
			return nil, g.errorf("K8sVersionRKESystemImages[%s] is not an object", version)
		}
		converted := newOmap()
		for _, field := range entry.keys {
			known := false
			for _, k := range imageKeys {
				if k.json == field {
					known = true
				}
			}
			if !known {
				return nil, g.errorf("K8sVersionRKESystemImages[%s]: unknown image field %q", version, field)
			}
		}
		for _, k := range imageKeys {
			v, ok := entry.get(k.json)
			if !ok {
				continue
			}
			s, ok := v.(string)
			if !ok {
				return nil, g.errorf("K8sVersionRKESystemImages[%s].%s is not a string", version, k.json)
			}
			if s != "" {
				converted.set(k.yaml, s)
			}
		}
		out.set(version, converted)
	}
	return out, nil
}

func (g gen) serviceOptions(top *omap, name string) (*omap, error) {
	sec, err := g.section(top, name)
	if err != nil {
		return nil, err
	}
	out := newOmap()
	for _, key := range sortedKeys(sec, kept) {
		entry, ok := sec.vals[key].(*omap)
		if !ok {
			return nil, g.errorf("%s[%s] is not an object", name, key)
		}
		for _, field := range entry.keys {
			known := false
			for _, k := range serviceKeys {
				known = known || k.json == field
			}
			if !known {
				return nil, g.errorf("%s[%s]: unknown service %q", name, key, field)
			}
		}
		opts := newOmap()
		for _, k := range serviceKeys {
			v, ok := entry.get(k.json)
			if !ok || v == nil {
				continue
			}
			flags, ok := v.(*omap)
			if !ok {
				return nil, g.errorf("%s[%s].%s is not an object", name, key, k.json)
			}
			sortedFlags := newOmap()
			fk := append([]string(nil), flags.keys...)
			sort.Strings(fk)
			for _, f := range fk {
				sortedFlags.set(f, flags.vals[f])
			}
			opts.set(k.yaml, sortedFlags)
		}
		out.set(key, opts)
	}
	return out, nil
}

func (g gen) versionInfo(top *omap) (*omap, error) {
	sec, err := g.section(top, "K8sVersionInfo")
	if err != nil {
		return nil, err
	}
	out := newOmap()
	for _, key := range sortedKeys(sec, kept) {
		entry, ok := sec.vals[key].(*omap)
		if !ok {
			return nil, g.errorf("K8sVersionInfo[%s] is not an object", key)
		}
		info := newOmap()
		for _, field := range []string{"minRKEVersion", "maxRKEVersion", "deprecateRKEVersion"} {
			if v, ok := entry.get(field); ok {
				if s, _ := v.(string); s != "" {
					info.set(versionInfoKeys[field], s)
				}
			}
		}
		for _, field := range entry.keys {
			if _, known := versionInfoKeys[field]; !known {
				return nil, g.errorf("K8sVersionInfo[%s]: unknown field %q", key, field)
			}
		}
		if len(info.keys) > 0 {
			out.set(key, info)
		}
	}
	return out, nil
}

func (g gen) dockerInfo(top *omap) (*omap, error) {
	sec, err := g.section(top, "K8sVersionDockerInfo")
	if err != nil {
		return nil, err
	}
	out := newOmap()
	for _, key := range sortedKeys(sec, func(k string) bool { return kept("v" + k) }) {
		out.set(key, sec.vals[key])
	}
	return out, nil
}

// The addons whose templates rkers renders (its addon plan's KDM names). ACI's templates are
// not embedded: rkers does not deploy the ACI network plugin.
var renderedAddons = map[string]bool{
	"calico": true, "canal": true, "flannel": true, "weave": true, "coreDNS": true,
	"kubeDNS": true, "nodelocal": true, "metricsServer": true, "nginxIngress": true,
}

// templates returns the addon → range → template table, keeping the ranges that match at
// least one version of images (matched as RKE matches them, blang/semver ranges on the
// version without its "v"), and the bodies of the templates those ranges name.
func (g gen) templates(top *omap, images *omap) (*omap, *omap, error) {
	sec, err := g.section(top, "K8sVersionedTemplates")
	if err != nil {
		return nil, nil, err
	}
	bodiesV, ok := sec.get("templateKeys")
	if !ok {
		return nil, nil, g.errorf("K8sVersionedTemplates has no templateKeys")
	}
	bodies, ok := bodiesV.(*omap)
	if !ok {
		return nil, nil, g.errorf("K8sVersionedTemplates.templateKeys is not an object")
	}
	var versions []semver.Version
	for _, v := range images.keys {
		parsed, err := semver.Make(strings.TrimPrefix(v, "v"))
		if err != nil {
			return nil, nil, g.errorf("K8sVersionRKESystemImages key %q is not a semver: %v", v, err)
		}
		versions = append(versions, parsed)
	}
	ranges := newOmap()
	used := map[string]bool{}
	addons := append([]string(nil), sec.keys...)
	sort.Strings(addons)
	for _, addon := range addons {
		if addon == "templateKeys" {
			continue
		}
		table, ok := sec.vals[addon].(*omap)
		if !ok {
			return nil, nil, g.errorf("K8sVersionedTemplates.%s is not an object", addon)
		}
		keptRanges := newOmap()
		for _, r := range table.keys {
			name, ok := table.vals[r].(string)
			if !ok {
				return nil, nil, g.errorf("K8sVersionedTemplates.%s[%q] is not a string", addon, r)
			}
			match, err := semver.ParseRange(r)
			if err != nil {
				return nil, nil, g.errorf("K8sVersionedTemplates.%s: range %q: %v", addon, r, err)
			}
			matches := false
			for _, v := range versions {
				matches = matches || match(v)
			}
			if !matches {
				continue
			}
			if _, ok := bodies.get(name); !ok {
				return nil, nil, g.errorf("K8sVersionedTemplates.%s[%q] names %q, which templateKeys lacks", addon, r, name)
			}
			if renderedAddons[addon] {
				used[name] = true
			}
			keptRanges.set(r, name)
		}
		ranges.set(addon, keptRanges)
	}
	out := newOmap()
	names := make([]string, 0, len(used))
	for name := range used {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		out.set(name, bodies.vals[name])
	}
	return ranges, out, nil
}

// omap is a JSON object that keeps its keys' order, so the output order is chosen here and
// not by Go's map iteration.
type omap struct {
	keys []string
	vals map[string]any
}

func newOmap() *omap { return &omap{vals: map[string]any{}} }

func (m *omap) set(k string, v any) {
	if _, ok := m.vals[k]; !ok {
		m.keys = append(m.keys, k)
	}
	m.vals[k] = v
}

func (m *omap) get(k string) (any, bool) {
	v, ok := m.vals[k]
	return v, ok
}

func (m *omap) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range m.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, err := marshal(k)
		if err != nil {
			return nil, err
		}
		b.Write(kb)
		b.WriteByte(':')
		vb, err := marshal(m.vals[k])
		if err != nil {
			return nil, err
		}
		b.Write(vb)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

func encode(v any) ([]byte, error) {
	compact, err := marshal(v)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, compact, "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// decodeOrdered parses JSON into *omap, []any, string, json.Number, bool and nil.
func decodeOrdered(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := decodeValue(dec)
	if err != nil {
		return nil, fmt.Errorf("byte %d: %v", dec.InputOffset(), err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("byte %d: text after the JSON value", dec.InputOffset())
	}
	return v, nil
}

func decodeValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			m := newOmap()
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, _ := kt.(string)
				v, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				if _, dup := m.vals[k]; dup {
					return nil, fmt.Errorf("duplicate key %q", k)
				}
				m.set(k, v)
			}
			_, err := dec.Token()
			return m, err
		case '[':
			list := []any{}
			for dec.More() {
				v, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				list = append(list, v)
			}
			_, err := dec.Token()
			return list, err
		}
		return nil, fmt.Errorf("unexpected %v", t)
	default:
		return t, nil
	}
}

// firstDifference names the first line where have and want differ, or "" when equal.
func firstDifference(have, want []byte) string {
	if bytes.Equal(have, want) {
		return ""
	}
	h := strings.Split(string(have), "\n")
	w := strings.Split(string(want), "\n")
	for i := 0; i < len(h) || i < len(w); i++ {
		var hl, wl string
		if i < len(h) {
			hl = h[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if hl != wl {
			clip := func(s string) string {
				if len(s) > 120 {
					return s[:120] + "…"
				}
				return s
			}
			return fmt.Sprintf("line %d differs from the pinned module's: committed %q, generated %q", i+1, clip(hl), clip(wl))
		}
	}
	return "differs from the pinned module's"
}
