// Command rke-etcd-backup is rkers' etcd snapshot helper for the tools image. It keeps the command
// line of the helper RKE1 drives (`etcd-backup save|delete|download|serve|extractstatefile`, flags
// and environment variables, /backup and /etc/kubernetes paths, archive layout), so the containers
// rkers creates are the ones RKE1 would create.
//
// Snapshot archive: /backup/<name>.zip, mode 0600, holding the entries "/backup/<name>" (the etcd
// snapshot) and, when the cluster state was available, "/etc/kubernetes/<name>.rkestate".
//
// With --s3-backup, snapshots are also uploaded to (save), fetched from (download,
// extractstatefile) or deleted from (delete) an S3-compatible bucket: see s3.go.
//
// One command of our own: `extract --name N` unpacks /backup/N from /backup/N.zip, which rkers'
// restore uses before `etcdctl snapshot restore` (RKE1 unpacked as a side effect of serving it).
package main

import (
	"archive/zip"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/exec"
	"path"
	"regexp"
	"strconv"
	"strings"
	"time"
)

const (
	backupDir        = "/backup"
	k8sDir           = "/etc/kubernetes"
	stateExtension   = "rkestate"
	zipExtension     = "zip"
	servePort        = "2379"
	tmpStateFile     = "/tmp/cluster.rkestate"
	retryInterval    = 15 * time.Second
	kubectlPath      = "/usr/local/bin/kubectl"
	nodeKubeconfig   = "/etc/kubernetes/ssl/kubecfg-kube-node.yaml"
	defaultRetries   = 4
	defaultS3Retries = 3
)

// flagSpec describes one command-line flag: its default, whether it is boolean, and the
// environment variable that supplies it when absent from the command line.
type flagSpec struct {
	def    string
	isBool bool
	env    string
}

var commonFlags = map[string]flagSpec{
	"endpoints":      {def: "127.0.0.1:2379"},
	"debug":          {isBool: true, env: "RANCHER_DEBUG"},
	"name":           {},
	"cacert":         {env: "ETCD_CACERT"},
	"cert":           {env: "ETCD_CERT"},
	"key":            {env: "ETCD_KEY"},
	"local-endpoint": {env: "LOCAL_ENDPOINT"},
	"s3-backup":      {isBool: true, env: "S3_BACKUP"},
	"s3-endpoint":    {env: "S3_ENDPOINT"},
	"s3-accessKey":   {env: "S3_ACCESS_KEY"},
	"s3-secretKey":   {env: "S3_SECRET_KEY"},
	"s3-bucketName":  {env: "S3_BUCKET_NAME"},
	"s3-region":      {env: "S3_BUCKET_REGION"},
	"s3-endpoint-ca": {env: "S3_ENDPOINT_CA"},
	"s3-folder":      {env: "S3_FOLDER"},
}

var saveFlags = map[string]flagSpec{
	"creation":       {def: "5m"},
	"retention":      {def: "24h"},
	"once":           {isBool: true},
	"backup-retries": {def: strconv.Itoa(defaultRetries)},
	"s3-retries":     {def: strconv.Itoa(defaultS3Retries)},
}

var deleteFlags = map[string]flagSpec{
	"name":           {},
	"s3-backup":      {isBool: true},
	"cleanup":        {isBool: true},
	"s3-endpoint":    {env: "S3_ENDPOINT"},
	"s3-accessKey":   {env: "S3_ACCESS_KEY"},
	"s3-secretKey":   {env: "S3_SECRET_KEY"},
	"s3-bucketName":  {env: "S3_BUCKET_NAME"},
	"s3-region":      {env: "S3_BUCKET_REGION"},
	"s3-endpoint-ca": {env: "S3_ENDPOINT_CA"},
	"s3-folder":      {env: "S3_FOLDER"},
	"debug":          {isBool: true, env: "RANCHER_DEBUG"},
}

var serveFlags = map[string]flagSpec{
	"name":   {},
	"cacert": {env: "ETCD_CACERT"},
	"cert":   {env: "ETCD_CERT"},
	"key":    {env: "ETCD_KEY"},
	"debug":  {isBool: true, env: "RANCHER_DEBUG"},
}

type options map[string]string

func (o options) str(name string) string { return o[name] }
func (o options) bool(name string) bool  { b, _ := strconv.ParseBool(o[name]); return b }

func (o options) duration(name string) (time.Duration, error) {
	d, err := time.ParseDuration(o[name])
	if err != nil {
		return 0, fmt.Errorf("--%s=%q is not a duration (like 5m or 12h): %v", name, o[name], err)
	}
	return d, nil
}

func (o options) uint(name string) (uint, error) {
	n, err := strconv.ParseUint(o[name], 10, 32)
	if err != nil {
		return 0, fmt.Errorf("--%s=%q is not a number: %v", name, o[name], err)
	}
	return uint(n), nil
}

// parseFlags reads `--flag value`, `--flag=value`, `-flag value` and bare boolean flags.
func parseFlags(args []string, specs ...map[string]flagSpec) (options, error) {
	all := map[string]flagSpec{}
	for _, s := range specs {
		for k, v := range s {
			all[k] = v
		}
	}
	opts := options{}
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if !strings.HasPrefix(arg, "-") {
			return nil, fmt.Errorf("unexpected argument %q", arg)
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(arg, "-"), "=")
		spec, ok := all[name]
		if !ok {
			return nil, fmt.Errorf("unknown flag --%s", name)
		}
		if !hasValue {
			if spec.isBool {
				value = "true"
			} else {
				if i+1 >= len(args) {
					return nil, fmt.Errorf("flag --%s needs a value", name)
				}
				i++
				value = args[i]
			}
		}
		if spec.isBool {
			if _, err := strconv.ParseBool(value); err != nil {
				return nil, fmt.Errorf("flag --%s=%q is not a boolean", name, value)
			}
		}
		opts[name] = value
	}
	for name, spec := range all {
		if _, set := opts[name]; set {
			continue
		}
		if v, ok := os.LookupEnv(spec.env); spec.env != "" && ok {
			opts[name] = v
		} else {
			opts[name] = spec.def
		}
	}
	return opts, nil
}

func main() {
	log.SetFlags(log.LstdFlags | log.LUTC)
	log.SetPrefix("rke-etcd-backup: ")
	if err := run(os.Args[1:]); err != nil {
		log.Printf("error: %v", err)
		os.Exit(1)
	}
}

const usage = `usage: rke-etcd-backup [--debug] etcd-backup <command> [flags]
commands:
  save              take a snapshot (--once) or keep taking them every --creation period
  delete            delete a snapshot (--cleanup: only its uncompressed copy when the zip exists)
  download          fetch a snapshot from another etcd host's "serve" (--local-endpoint)
  serve             serve /backup/<name> over mutual TLS on port 2379
  extractstatefile  copy the cluster state out of a snapshot archive to /tmp/cluster.rkestate
  extract           unpack /backup/<name> from /backup/<name>.zip (rkers' restore)`

func run(args []string) error {
	for len(args) > 0 && (args[0] == "--debug" || args[0] == "-debug") {
		args = args[1:]
	}
	if len(args) < 2 || args[0] != "etcd-backup" {
		return errors.New(usage)
	}
	cmd, rest := args[1], args[2:]
	switch cmd {
	case "save":
		o, err := parseFlags(rest, commonFlags, saveFlags)
		if err != nil {
			return fmt.Errorf("save: %v", err)
		}
		return save(o)
	case "delete":
		o, err := parseFlags(rest, deleteFlags)
		if err != nil {
			return fmt.Errorf("delete: %v", err)
		}
		return deleteSnapshot(o)
	case "download":
		o, err := parseFlags(rest, commonFlags)
		if err != nil {
			return fmt.Errorf("download: %v", err)
		}
		if o.bool("s3-backup") {
			name, err := snapshotName(o)
			if err != nil {
				return err
			}
			c, err := s3FromOptions(o)
			if err != nil {
				return err
			}
			return c.downloadSnapshot(name)
		}
		return download(o)
	case "serve":
		o, err := parseFlags(rest, serveFlags)
		if err != nil {
			return fmt.Errorf("serve: %v", err)
		}
		return serve(o)
	case "extractstatefile":
		o, err := parseFlags(rest, commonFlags)
		if err != nil {
			return fmt.Errorf("extractstatefile: %v", err)
		}
		if o.bool("s3-backup") {
			name, err := snapshotName(o)
			if err != nil {
				return err
			}
			c, err := s3FromOptions(o)
			if err != nil {
				return err
			}
			if err := c.downloadSnapshot(name); err != nil {
				return err
			}
		}
		return extractStateFile(o)
	case "extract":
		o, err := parseFlags(rest, map[string]flagSpec{"name": {}})
		if err != nil {
			return fmt.Errorf("extract: %v", err)
		}
		return extractSnapshot(o)
	default:
		return fmt.Errorf("unknown command %q\n%s", cmd, usage)
	}
}

// s3FromOptions builds the S3 client and checks that its bucket is usable.
func s3FromOptions(o options) (*s3Client, error) {
	c, err := newS3Client(o)
	if err != nil {
		return nil, err
	}
	if err := c.checkBucket(); err != nil {
		return nil, err
	}
	return c, nil
}

// extractSnapshot unpacks /backup/<name> from /backup/<name>.zip; a snapshot kept uncompressed
// is left as it is.
func extractSnapshot(o options) error {
	name, err := snapshotName(o)
	if err != nil {
		return err
	}
	plain := path.Join(backupDir, name)
	compressed := plain + "." + zipExtension
	if _, err := os.Stat(compressed); err != nil {
		if _, perr := os.Stat(plain); perr == nil {
			return nil
		}
		return fmt.Errorf("snapshot %s not found: neither %s nor %s exists", name, compressed, plain)
	}
	if err := extractFromZip(compressed, plain, plain); err != nil {
		return fmt.Errorf("unpacking %s: %v", compressed, err)
	}
	log.Printf("extracted %s from %s", plain, compressed)
	return nil
}

// snapshotName refuses names that would leave /backup.
func snapshotName(o options) (string, error) {
	name := path.Base(o.str("name"))
	if name == "." || name == "/" || name == "" {
		return "", errors.New("--name is required")
	}
	return name, nil
}

func tlsFiles(o options) (ca, cert, key string, err error) {
	ca, cert, key = o.str("cacert"), o.str("cert"), o.str("key")
	if ca == "" || cert == "" || key == "" {
		return "", "", "", errors.New("--cacert, --cert and --key are required")
	}
	return ca, cert, key, nil
}

func save(o options) error {
	creation, err := o.duration("creation")
	if err != nil {
		return err
	}
	retention, err := o.duration("retention")
	if err != nil {
		return err
	}
	if creation == 0 || retention == 0 {
		return errors.New("--creation and --retention must both be non-zero")
	}
	retries, err := o.uint("backup-retries")
	if err != nil {
		return err
	}
	ca, cert, key, err := tlsFiles(o)
	if err != nil {
		return err
	}
	var store *s3Client
	if o.bool("s3-backup") {
		if store, err = newS3Client(o); err != nil {
			return err
		}
	}
	s3Retries, err := o.uint("s3-retries")
	if err != nil {
		return err
	}
	endpoints := o.str("endpoints")
	if o.bool("once") {
		name, err := snapshotName(o)
		if err != nil {
			return err
		}
		log.Printf("taking snapshot %s once from %s", name, endpoints)
		archive, err := takeSnapshot(name, ca, cert, key, endpoints, retries)
		if err != nil {
			return err
		}
		if store != nil {
			if err := store.checkBucket(); err != nil {
				return fmt.Errorf("snapshot %s kept locally, not uploaded: %v", name, err)
			}
			if err := store.uploadSnapshot(archive, s3Retries); err != nil {
				return fmt.Errorf("snapshot %s kept locally, not uploaded: %v", name, err)
			}
		}
		pruneRancherSnapshots(name, retention)
		return nil
	}
	log.Printf("rolling snapshots every %s, kept for %s, from %s", creation, retention, endpoints)
	ticker := time.NewTicker(creation)
	defer ticker.Stop()
	for now := range ticker.C {
		name := now.UTC().Format(time.RFC3339) + "_etcd"
		if err := writeStateFromCluster(name); err != nil {
			log.Printf("snapshot %s goes without cluster state: %v", name, err)
		}
		archive, err := takeSnapshot(name, ca, cert, key, endpoints, retries)
		if err != nil {
			log.Printf("snapshot %s failed: %v", name, err)
			continue
		}
		pruneRollingSnapshots(now, retention)
		if store == nil {
			continue
		}
		if err := store.checkBucket(); err != nil {
			log.Printf("snapshot %s not uploaded: %v", name, err)
			continue
		}
		if err := store.uploadSnapshot(archive, s3Retries); err != nil {
			log.Printf("snapshot %s not uploaded: %v", name, err)
			continue
		}
		store.pruneRolling(now.Add(-retention))
	}
	return nil
}

func etcdctl(endpoints, ca, cert, key string, args ...string) ([]byte, error) {
	full := append([]string{"--endpoints=" + endpoints, "--cacert=" + ca, "--cert=" + cert, "--key=" + key}, args...)
	cmd := exec.Command("etcdctl", full...)
	cmd.Env = append(os.Environ(), "ETCDCTL_API=3")
	return cmd.CombinedOutput()
}

// takeSnapshot saves the etcd snapshot, zips it with the state file when one exists and removes
// the originals. It returns the archive path.
func takeSnapshot(name, ca, cert, key, endpoints string, retries uint) (string, error) {
	snapshot := path.Join(backupDir, name)
	state := path.Join(k8sDir, name+"."+stateExtension)
	var lastErr error
	for attempt := uint(0); attempt <= retries; attempt++ {
		if attempt > 0 {
			time.Sleep(retryInterval)
		}
		out, err := etcdctl(endpoints, ca, cert, key, "endpoint", "health")
		if err != nil || strings.Contains(string(out), "unhealthy") {
			lastErr = fmt.Errorf("etcd at %s is not healthy: %v: %s", endpoints, err, strings.TrimSpace(string(out)))
			log.Printf("attempt %d: %v", attempt+1, lastErr)
			continue
		}
		started := time.Now()
		out, err = etcdctl(endpoints, ca, cert, key, "snapshot", "save", snapshot)
		if err != nil {
			lastErr = fmt.Errorf("etcdctl snapshot save %s: %v: %s", snapshot, err, strings.TrimSpace(string(out)))
			log.Printf("attempt %d: %v", attempt+1, lastErr)
			continue
		}
		files := []string{snapshot}
		if _, err := os.Stat(state); err == nil {
			files = append(files, state)
		}
		archive := snapshot + "." + zipExtension
		if err := writeZip(archive, files); err != nil {
			lastErr = fmt.Errorf("compressing %s: %v", snapshot, err)
			log.Printf("attempt %d: %v", attempt+1, lastErr)
			continue
		}
		for _, f := range files {
			if err := os.Remove(f); err != nil {
				log.Printf("removing %s after compressing: %v", f, err)
			}
		}
		if err := os.Chmod(archive, 0o600); err != nil {
			lastErr = fmt.Errorf("chmod %s: %v", archive, err)
			continue
		}
		log.Printf("created %s (%d file(s), %s)", archive, len(files), time.Since(started).Round(time.Millisecond))
		return archive, nil
	}
	return "", lastErr
}

// writeZip stores each file under its absolute path, the entry names RKE1's helper uses. The
// archive is written in place, as upstream writes it (an existing one keeps its owner); the
// caller makes it 0600 once complete.
func writeZip(archive string, files []string) error {
	out, err := os.Create(archive)
	if err != nil {
		return err
	}
	zw := zip.NewWriter(out)
	for _, name := range files {
		if err := addToZip(zw, name); err != nil {
			out.Close()
			return err
		}
	}
	if err := zw.Close(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func addToZip(zw *zip.Writer, name string) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	header, err := zip.FileInfoHeader(info)
	if err != nil {
		return err
	}
	header.Name = name
	header.Method = zip.Deflate
	header.Modified = time.Unix(0, 0)
	w, err := zw.CreateHeader(header)
	if err != nil {
		return err
	}
	_, err = io.Copy(w, f)
	return err
}

// extractFromZip copies the entry named entry (with or without its leading slash) to dest,
// written in place and then made 0600, as upstream does.
func extractFromZip(archive, entry, dest string) error {
	r, err := zip.OpenReader(archive)
	if err != nil {
		return err
	}
	defer r.Close()
	want := strings.TrimPrefix(entry, "/")
	for _, f := range r.File {
		if strings.TrimPrefix(f.Name, "/") != want {
			continue
		}
		rc, err := f.Open()
		if err != nil {
			return err
		}
		defer rc.Close()
		if _, err := writeFileInPlace(dest, rc); err != nil {
			return err
		}
		return nil
	}
	return fmt.Errorf("%s has no entry %s", archive, entry)
}

// writeStateFromCluster stores the cluster state kept in the kube-system/full-cluster-state secret
// as /etc/kubernetes/<name>.rkestate, so the snapshot carries it.
func writeStateFromCluster(name string) error {
	var out []byte
	var err error
	for attempt := 0; attempt <= defaultRetries; attempt++ {
		if attempt > 0 {
			time.Sleep(retryInterval)
		}
		var stderr bytes.Buffer
		cmd := exec.Command(kubectlPath, "--request-timeout=30s", "--kubeconfig", nodeKubeconfig,
			"-n", "kube-system", "get", "secret", "full-cluster-state", "-o", "json")
		cmd.Stderr = &stderr
		out, err = cmd.Output()
		if err == nil {
			break
		}
		err = fmt.Errorf("kubectl get secret full-cluster-state: %v: %s", err, strings.TrimSpace(stderr.String()))
		// A refusal or a missing Secret does not change within a minute: no retry, so a rolling
		// snapshot is not held up by one.
		if msg := stderr.String(); strings.Contains(msg, "Forbidden") || strings.Contains(msg, "NotFound") {
			break
		}
	}
	if err != nil {
		return err
	}
	var secret struct {
		Data map[string]string `json:"data"`
	}
	if err := json.Unmarshal(out, &secret); err != nil {
		return fmt.Errorf("secret full-cluster-state is not JSON: %v", err)
	}
	raw, err := base64.StdEncoding.DecodeString(secret.Data["full-cluster-state"])
	if err != nil {
		return fmt.Errorf("secret full-cluster-state: data is not base64: %v", err)
	}
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, raw, "", "  "); err != nil {
		return fmt.Errorf("secret full-cluster-state: state is not JSON: %v", err)
	}
	// Created like upstream's (0666 under the umask: 0644); the zip entry keeps that mode.
	f, err := os.Create(path.Join(k8sDir, name+"."+stateExtension))
	if err != nil {
		return err
	}
	if _, err := f.Write(pretty.Bytes()); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// pruneRollingSnapshots deletes files in /backup whose name starts with an RFC 3339 time older
// than the retention period.
func pruneRollingSnapshots(now time.Time, retention time.Duration) {
	entries, err := os.ReadDir(backupDir)
	if err != nil {
		log.Printf("reading %s: %v", backupDir, err)
		return
	}
	cutoff := now.Add(-retention)
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		taken, err := time.Parse(time.RFC3339, strings.Split(e.Name(), "_")[0])
		if err != nil || !taken.Before(cutoff) {
			continue
		}
		if err := os.Remove(path.Join(backupDir, e.Name())); err != nil {
			log.Printf("deleting expired snapshot %s: %v", e.Name(), err)
		} else {
			log.Printf("deleted expired snapshot %s", e.Name())
		}
	}
}

var (
	// Rancher names its snapshots `c-<cluster>-<type><provider>-...`; type `r` is recurring.
	rancherPrefix = regexp.MustCompile(`^c-[a-z0-9].*?-`)
	recurringName = regexp.MustCompile(`^c-[a-z0-9].*?-r.-`)
)

// pruneRancherSnapshots deletes recurring Rancher-named snapshots of the same cluster older than
// the retention period, as a one-off save does.
func pruneRancherSnapshots(name string, retention time.Duration) {
	prefix := rancherPrefix.FindString(name)
	if prefix == "" {
		return
	}
	entries, err := os.ReadDir(backupDir)
	if err != nil {
		log.Printf("reading %s: %v", backupDir, err)
		return
	}
	cutoff := time.Now().Add(-retention)
	for _, e := range entries {
		info, err := e.Info()
		if err != nil || e.IsDir() || !strings.HasPrefix(e.Name(), prefix) || !recurringName.MatchString(e.Name()) {
			continue
		}
		if info.ModTime().Before(cutoff) {
			_ = removeIfExists(path.Join(backupDir, e.Name()))
		}
	}
}

func deleteSnapshot(o options) error {
	name, err := snapshotName(o)
	if err != nil {
		return err
	}
	compressed := path.Join(backupDir, name+"."+zipExtension)
	plain := path.Join(backupDir, name)
	if o.bool("cleanup") {
		// The uncompressed copy goes only when the archive is there to restore from.
		if _, err := os.Stat(compressed); err == nil {
			return removeIfExists(plain)
		}
		return nil
	}
	for _, p := range []string{compressed, plain} {
		if err := removeIfExists(p); err != nil {
			return err
		}
	}
	if !o.bool("s3-backup") {
		return nil
	}
	c, err := s3FromOptions(o)
	if err != nil {
		return err
	}
	prefix := c.objectKey(name)
	keys, err := c.list(prefix, false)
	if err != nil {
		return err
	}
	for _, k := range keys {
		if k != prefix && k != prefix+"."+zipExtension {
			continue
		}
		if err := c.remove(k); err != nil {
			return err
		}
		log.Printf("deleted %s from %s", k, c.describe())
	}
	return nil
}

func removeIfExists(p string) error {
	if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("deleting %s: %v", p, err)
	}
	log.Printf("deleted %s", p)
	return nil
}

func tlsConfig(ca, cert, key string, server bool) (*tls.Config, error) {
	caPEM, err := os.ReadFile(ca)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("%s holds no PEM certificate", ca)
	}
	pair, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		return nil, fmt.Errorf("loading %s / %s: %v", cert, key, err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	if server {
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
		cfg.ClientCAs = pool
		return cfg, nil
	}
	// The serving etcd host is addressed by IP, which its node certificate need not name; the chain
	// is still checked against the cluster CA.
	cfg.InsecureSkipVerify = true
	cfg.VerifyPeerCertificate = func(raw [][]byte, _ [][]*x509.Certificate) error {
		if len(raw) == 0 {
			return errors.New("server sent no certificate")
		}
		certs := make([]*x509.Certificate, 0, len(raw))
		for _, r := range raw {
			c, err := x509.ParseCertificate(r)
			if err != nil {
				return err
			}
			certs = append(certs, c)
		}
		inter := x509.NewCertPool()
		for _, c := range certs[1:] {
			inter.AddCert(c)
		}
		_, err := certs[0].Verify(x509.VerifyOptions{Roots: pool, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}})
		return err
	}
	return cfg, nil
}

func serve(o options) error {
	name, err := snapshotName(o)
	if err != nil {
		return err
	}
	plain := path.Join(backupDir, name)
	if err := extractSnapshot(o); err != nil {
		return err
	}
	ca, cert, key, err := tlsFiles(o)
	if err != nil {
		return err
	}
	cfg, err := tlsConfig(ca, cert, key, true)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/"+name, func(w http.ResponseWriter, r *http.Request) {
		log.Printf("serving %s to %s", plain, r.RemoteAddr)
		http.ServeFile(w, r, plain)
	})
	srv := &http.Server{Addr: "0.0.0.0:" + servePort, Handler: mux, TLSConfig: cfg, ReadHeaderTimeout: 30 * time.Second}
	log.Printf("serving snapshot %s on :%s (client certificates required)", name, servePort)
	return srv.ListenAndServeTLS("", "")
}

func download(o options) error {
	name, err := snapshotName(o)
	if err != nil {
		return err
	}
	endpoint := o.str("local-endpoint")
	if endpoint == "" {
		return errors.New("--local-endpoint is required")
	}
	ca, cert, key, err := tlsFiles(o)
	if err != nil {
		return err
	}
	cfg, err := tlsConfig(ca, cert, key, false)
	if err != nil {
		return err
	}
	client := http.Client{Transport: &http.Transport{TLSClientConfig: cfg}, Timeout: 30 * time.Minute}
	url := fmt.Sprintf("https://%s:%s/%s", endpoint, servePort, name)
	log.Printf("downloading %s", url)
	resp, err := client.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("downloading %s: HTTP %s", url, resp.Status)
	}
	dest := path.Join(backupDir, name)
	n, err := writeFileInPlace(dest, resp.Body)
	if err != nil {
		return err
	}
	log.Printf("downloaded %s from %s (%d bytes)", name, endpoint, n)
	return nil
}

// writeFileInPlace copies r into dest, truncating an existing file (which keeps its owner), and
// makes it 0600: the files upstream leaves. A broken transfer leaves a partial file, as upstream;
// rkers compares the snapshot's checksum on every etcd host before restoring.
func writeFileInPlace(dest string, r io.Reader) (int64, error) {
	out, err := os.OpenFile(dest, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(out, r)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return n, fmt.Errorf("writing %s: %v", dest, err)
	}
	return n, os.Chmod(dest, 0o600)
}

func extractStateFile(o options) error {
	name, err := snapshotName(o)
	if err != nil {
		return err
	}
	archive := path.Join(backupDir, name+"."+zipExtension)
	if _, err := os.Stat(archive); err != nil {
		return err
	}
	entry := path.Join(k8sDir, name+"."+stateExtension)
	if err := extractFromZip(archive, entry, tmpStateFile); err != nil {
		return fmt.Errorf("extracting %s from %s to %s: %v", entry, archive, tmpStateFile, err)
	}
	log.Printf("extracted %s from %s to %s", entry, archive, tmpStateFile)
	return nil
}
