// S3 storage for snapshots: a small client for the five calls the helper needs (bucket check,
// put, get, list, delete), signed with AWS Signature Version 4, written against the Go standard
// library only because the image is built offline.
//
// Behaviour kept from RKE1's helper: the endpoint is reached over HTTPS (a bare `host[:port]`);
// access and secret keys arrive base64-encoded (plain values are used as they are); the custom CA
// is a base64 string or a file path; objects are `<folder>/<name>.zip`; a snapshot already in the
// bucket is not uploaded again (every etcd host of a cluster uploads the same name).
// Differences: an `http://` or `https://` prefix on the endpoint picks the scheme explicitly, and
// an empty key pair is refused (RKE1 fell back to the EC2 instance role, which needs AWS).
// The secret key is never logged: errors name the endpoint, bucket and access key only.
package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/url"
	"os"
	"path"
	"sort"
	"strings"
	"time"
)

const (
	defaultS3Endpoint = "s3.amazonaws.com"
	// S3 signs requests for a region even when the server ignores it; AWS's default is this one.
	defaultSigningRegion = "us-east-1"
	emptyPayloadSHA256   = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
)

type s3Client struct {
	scheme    string
	host      string
	bucket    string
	region    string
	folder    string
	accessKey string
	secretKey string
	pathStyle bool
	http      *http.Client
}

// decodeKey accepts the base64 form RKE passes and, for hand-written configs, a plain value.
func decodeKey(v string) string {
	if d, err := base64.StdEncoding.DecodeString(v); err == nil && len(v) > 0 {
		return string(d)
	}
	return v
}

// readEndpointCA takes the CA as a base64 string or as a file path, as RKE1's helper does.
func readEndpointCA(v string) ([]byte, error) {
	if ca, err := base64.StdEncoding.DecodeString(v); err == nil {
		return ca, nil
	}
	ca, err := os.ReadFile(v)
	if err != nil {
		return nil, fmt.Errorf("--s3-endpoint-ca is neither base64 nor a readable file: %v", err)
	}
	return ca, nil
}

func newS3Client(o options) (*s3Client, error) {
	endpoint := strings.TrimSuffix(o.str("s3-endpoint"), "/")
	if endpoint == "" {
		endpoint = defaultS3Endpoint
	}
	scheme := "https"
	if s, rest, ok := strings.Cut(endpoint, "://"); ok {
		if s != "http" && s != "https" {
			return nil, fmt.Errorf("--s3-endpoint=%q: only http:// and https:// are supported", endpoint)
		}
		scheme, endpoint = s, rest
	}
	bucket := o.str("s3-bucketName")
	if bucket == "" {
		return nil, errors.New("--s3-bucketName is required with --s3-backup")
	}
	c := &s3Client{
		scheme:    scheme,
		host:      endpoint,
		bucket:    bucket,
		region:    o.str("s3-region"),
		folder:    strings.Trim(o.str("s3-folder"), "/"),
		accessKey: decodeKey(o.str("s3-accessKey")),
		secretKey: decodeKey(o.str("s3-secretKey")),
	}
	if c.accessKey == "" || c.secretKey == "" {
		return nil, errors.New("S3 access key and secret key are both required (instance roles are not supported)")
	}
	if c.region == "" {
		c.region = defaultSigningRegion
	}
	// AWS and Aliyun address buckets as subdomains; other S3 servers by path.
	c.pathStyle = !(strings.HasSuffix(endpoint, "amazonaws.com") || strings.Contains(endpoint, "aliyun")) ||
		strings.Contains(bucket, ".")
	transport := http.DefaultTransport.(*http.Transport).Clone()
	if ca := o.str("s3-endpoint-ca"); ca != "" {
		pemBytes, err := readEndpointCA(ca)
		if err != nil {
			return nil, err
		}
		if block, _ := pem.Decode(pemBytes); block == nil {
			return nil, errors.New("--s3-endpoint-ca is not a PEM certificate")
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pemBytes) {
			return nil, errors.New("--s3-endpoint-ca holds no usable certificate")
		}
		transport.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	c.http = &http.Client{Transport: transport, Timeout: 30 * time.Minute}
	return c, nil
}

// describe names the storage in errors and logs, never with the secret key.
func (c *s3Client) describe() string {
	return fmt.Sprintf("s3 %s://%s bucket %s (access key %s)", c.scheme, c.host, c.bucket, c.accessKey)
}

// objectKey is `<folder>/<file>`, or `<file>` without a folder.
func (c *s3Client) objectKey(file string) string {
	if c.folder == "" {
		return file
	}
	return c.folder + "/" + file
}

// uriEncode is S3's URI encoding: RFC 3986 unreserved characters stay, the rest is %XX; slashes
// stay in paths.
func uriEncode(s string, keepSlash bool) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case 'A' <= ch && ch <= 'Z', 'a' <= ch && ch <= 'z', '0' <= ch && ch <= '9',
			ch == '-', ch == '_', ch == '.', ch == '~':
			b.WriteByte(ch)
		case ch == '/' && keepSlash:
			b.WriteByte(ch)
		default:
			fmt.Fprintf(&b, "%%%02X", ch)
		}
	}
	return b.String()
}

func canonicalQuery(q url.Values) string {
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		vals := append([]string(nil), q[k]...)
		sort.Strings(vals)
		for _, v := range vals {
			parts = append(parts, uriEncode(k, false)+"="+uriEncode(v, false))
		}
	}
	return strings.Join(parts, "&")
}

func hmacSHA256(key []byte, data string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(data))
	return m.Sum(nil)
}

// signV4 adds x-amz-date and Authorization to req. It signs the host, every x-amz-* header and
// Range, with payloadHash as the body's SHA-256 (hex).
func signV4(req *http.Request, accessKey, secretKey, region, payloadHash string, now time.Time) {
	amzDate := now.UTC().Format("20060102T150405Z")
	day := amzDate[:8]
	req.Header.Set("X-Amz-Date", amzDate)
	req.Header.Set("X-Amz-Content-Sha256", payloadHash)
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	headers := map[string]string{"host": host}
	for name, vals := range req.Header {
		lower := strings.ToLower(name)
		if strings.HasPrefix(lower, "x-amz-") || lower == "range" || lower == "content-md5" {
			headers[lower] = strings.TrimSpace(strings.Join(vals, ","))
		}
	}
	names := make([]string, 0, len(headers))
	for n := range headers {
		names = append(names, n)
	}
	sort.Strings(names)
	var canonicalHeaders strings.Builder
	for _, n := range names {
		canonicalHeaders.WriteString(n + ":" + headers[n] + "\n")
	}
	signedHeaders := strings.Join(names, ";")
	canonicalPath := req.URL.EscapedPath()
	if canonicalPath == "" {
		canonicalPath = "/"
	}
	canonicalRequest := strings.Join([]string{
		req.Method, canonicalPath, canonicalQuery(req.URL.Query()),
		canonicalHeaders.String(), signedHeaders, payloadHash,
	}, "\n")
	scope := day + "/" + region + "/s3/aws4_request"
	sum := sha256.Sum256([]byte(canonicalRequest))
	stringToSign := "AWS4-HMAC-SHA256\n" + amzDate + "\n" + scope + "\n" + hex.EncodeToString(sum[:])
	key := hmacSHA256([]byte("AWS4"+secretKey), day)
	key = hmacSHA256(key, region)
	key = hmacSHA256(key, "s3")
	key = hmacSHA256(key, "aws4_request")
	signature := hex.EncodeToString(hmacSHA256(key, stringToSign))
	req.Header.Set("Authorization", fmt.Sprintf("AWS4-HMAC-SHA256 Credential=%s/%s, SignedHeaders=%s, Signature=%s",
		accessKey, scope, signedHeaders, signature))
}

// url of an object (or of the bucket when key is empty).
func (c *s3Client) url(key string, query url.Values) *url.URL {
	u := &url.URL{Scheme: c.scheme, Host: c.host, RawQuery: canonicalQuery(query)}
	// Bucket-level requests go to `/<bucket>` without a trailing slash: some servers normalise
	// the path before checking the signature.
	p := "/" + key
	if c.pathStyle {
		p = strings.TrimSuffix("/"+c.bucket+p, "/")
	} else {
		u.Host = c.bucket + "." + c.host
	}
	u.Path = p
	u.RawPath = uriEncode(p, true)
	return u
}

// do sends one signed request; body (may be nil) must be re-readable for retries by the caller.
func (c *s3Client) do(method, key string, query url.Values, body io.ReadSeeker, size int64, payloadHash string) (*http.Response, error) {
	req, err := http.NewRequest(method, c.url(key, query).String(), nil)
	if err != nil {
		return nil, err
	}
	if body != nil {
		if _, err := body.Seek(0, io.SeekStart); err != nil {
			return nil, err
		}
		req.Body = io.NopCloser(body)
		req.ContentLength = size
		req.Header.Set("Content-Type", "application/zip")
	}
	if payloadHash == "" {
		payloadHash = emptyPayloadSHA256
	}
	signV4(req, c.accessKey, c.secretKey, c.region, payloadHash, time.Now())
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %v", method, c.describe(), err)
	}
	return resp, nil
}

// s3Error turns an error response into a message with S3's code and text.
func s3Error(resp *http.Response, what string) error {
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var e struct {
		Code    string `xml:"Code"`
		Message string `xml:"Message"`
	}
	if xml.Unmarshal(raw, &e) == nil && e.Code != "" {
		return fmt.Errorf("%s: HTTP %d %s: %s", what, resp.StatusCode, e.Code, e.Message)
	}
	return fmt.Errorf("%s: HTTP %s", what, resp.Status)
}

// checkBucket fails unless the bucket exists and the credentials may use it.
func (c *s3Client) checkBucket() error {
	resp, err := c.do(http.MethodHead, "", nil, nil, 0, "")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
		return nil
	case http.StatusNotFound:
		return fmt.Errorf("bucket %s is not found on %s", c.bucket, c.describe())
	case http.StatusForbidden:
		return fmt.Errorf("access to bucket %s denied by %s (check the access and secret keys)", c.bucket, c.describe())
	default:
		return fmt.Errorf("checking bucket on %s: HTTP %s", c.describe(), resp.Status)
	}
}

func (c *s3Client) exists(key string) (bool, error) {
	resp, err := c.do(http.MethodHead, key, nil, nil, 0, "")
	if err != nil {
		return false, err
	}
	resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
		return true, nil
	case http.StatusNotFound:
		return false, nil
	default:
		return false, fmt.Errorf("HEAD %s on %s: HTTP %s", key, c.describe(), resp.Status)
	}
}

func fileSHA256(f *os.File) (string, error) {
	h := sha256.New()
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return "", err
	}
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func (c *s3Client) put(key, file string, retries uint) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	hash, err := fileSHA256(f)
	if err != nil {
		return err
	}
	var lastErr error
	for attempt := uint(0); attempt <= retries; attempt++ {
		resp, err := c.do(http.MethodPut, key, nil, f, info.Size(), hash)
		if err != nil {
			lastErr = err
		} else if resp.StatusCode != http.StatusOK {
			lastErr = s3Error(resp, "uploading "+key+" to "+c.describe())
		} else {
			resp.Body.Close()
			log.Printf("uploaded %s (%d bytes) to %s", key, info.Size(), c.describe())
			return nil
		}
		log.Printf("upload attempt %d: %v", attempt+1, lastErr)
	}
	return lastErr
}

func (c *s3Client) get(key, dest string) error {
	resp, err := c.do(http.MethodGet, key, nil, nil, 0, "")
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return s3Error(resp, "downloading "+key+" from "+c.describe())
	}
	defer resp.Body.Close()
	n, err := writeFileInPlace(dest, resp.Body)
	if err != nil {
		return fmt.Errorf("downloading %s: %v", key, err)
	}
	log.Printf("downloaded %s (%d bytes) from %s to %s", key, n, c.describe(), dest)
	return nil
}

// list returns the keys under prefix; without recursive, keys below a further "/" are left out.
func (c *s3Client) list(prefix string, recursive bool) ([]string, error) {
	var keys []string
	token := ""
	for {
		q := url.Values{"list-type": {"2"}, "prefix": {prefix}}
		if !recursive {
			q.Set("delimiter", "/")
		}
		if token != "" {
			q.Set("continuation-token", token)
		}
		resp, err := c.do(http.MethodGet, "", q, nil, 0, "")
		if err != nil {
			return nil, err
		}
		if resp.StatusCode != http.StatusOK {
			return nil, s3Error(resp, "listing "+prefix+" on "+c.describe())
		}
		var page struct {
			Contents []struct {
				Key string `xml:"Key"`
			} `xml:"Contents"`
			IsTruncated           bool   `xml:"IsTruncated"`
			NextContinuationToken string `xml:"NextContinuationToken"`
		}
		err = xml.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("listing %s on %s: %v", prefix, c.describe(), err)
		}
		for _, o := range page.Contents {
			keys = append(keys, o.Key)
		}
		if !page.IsTruncated || page.NextContinuationToken == "" {
			return keys, nil
		}
		token = page.NextContinuationToken
	}
}

func (c *s3Client) remove(key string) error {
	resp, err := c.do(http.MethodDelete, key, nil, nil, 0, "")
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusNoContent && resp.StatusCode != http.StatusOK {
		return s3Error(resp, "deleting "+key+" from "+c.describe())
	}
	resp.Body.Close()
	return nil
}

// uploadSnapshot stores /backup/<name>.zip as `<folder>/<name>.zip` unless that object exists.
func (c *s3Client) uploadSnapshot(archive string, retries uint) error {
	key := c.objectKey(path.Base(archive))
	if there, err := c.exists(key); err == nil && there {
		log.Printf("%s is already in %s: not uploaded again", key, c.describe())
		return nil
	}
	return c.put(key, archive, retries)
}

// findSnapshot picks the object of snapshot name: `<folder>/<name>.zip` or `<folder>/<name>`.
func findSnapshot(keys []string, prefix string) string {
	for _, k := range keys {
		if k == prefix+"."+zipExtension || k == prefix {
			return k
		}
	}
	for _, k := range keys {
		if decoded, err := url.QueryUnescape(strings.TrimSuffix(k, "."+zipExtension)); err == nil && decoded == prefix {
			return k
		}
	}
	return ""
}

// downloadSnapshot fetches snapshot name into /backup and unpacks /backup/<name> from the archive.
func (c *s3Client) downloadSnapshot(name string) error {
	prefix := c.objectKey(name)
	keys, err := c.list(prefix, false)
	if err != nil {
		return err
	}
	key := findSnapshot(keys, prefix)
	if key == "" {
		return fmt.Errorf("snapshot %s not found in %s", name, c.describe())
	}
	dest := path.Join(backupDir, path.Base(key))
	if err := c.get(key, dest); err != nil {
		return err
	}
	if strings.HasSuffix(dest, "."+zipExtension) {
		plain := strings.TrimSuffix(dest, "."+zipExtension)
		if err := extractFromZip(dest, plain, plain); err != nil {
			return fmt.Errorf("unpacking %s: %v", dest, err)
		}
		log.Printf("unpacked %s", plain)
	}
	return nil
}

// pruneRolling deletes rolling snapshots (`<RFC 3339 time>_etcd[.zip]`) older than the cutoff.
func (c *s3Client) pruneRolling(cutoff time.Time) {
	prefix := ""
	if c.folder != "" {
		prefix = c.folder + "/"
	}
	keys, err := c.list(prefix, true)
	if err != nil {
		log.Printf("listing rolling snapshots: %v", err)
		return
	}
	for _, k := range expiredRolling(keys, prefix, cutoff) {
		if err := c.remove(k); err != nil {
			log.Printf("deleting expired snapshot %s: %v", k, err)
		} else {
			log.Printf("deleted expired snapshot %s from %s", k, c.describe())
		}
	}
}

// expiredRolling picks, among keys, the rolling snapshots taken before cutoff.
func expiredRolling(keys []string, prefix string, cutoff time.Time) []string {
	var out []string
	for _, k := range keys {
		name := strings.TrimPrefix(k, prefix)
		if strings.Contains(name, "/") || !(strings.HasSuffix(name, "_etcd") || strings.HasSuffix(name, "_etcd."+zipExtension)) {
			continue
		}
		taken, err := time.Parse(time.RFC3339, strings.Split(name, "_")[0])
		if err == nil && taken.Before(cutoff) {
			out = append(out, k)
		}
	}
	return out
}
