package main

import (
	"encoding/base64"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The "GET Object" example of AWS's Signature Version 4 documentation.
func TestSignV4MatchesAWSExample(t *testing.T) {
	req, _ := http.NewRequest(http.MethodGet, "https://examplebucket.s3.amazonaws.com/test.txt", nil)
	req.Header.Set("Range", "bytes=0-9")
	now, _ := time.Parse("20060102T150405Z", "20130524T000000Z")
	signV4(req, "AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "us-east-1", emptyPayloadSHA256, now)
	want := "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, " +
		"SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, " +
		"Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
	if got := req.Header.Get("Authorization"); got != want {
		t.Fatalf("Authorization:\n got %s\nwant %s", got, want)
	}
}

func TestObjectURLsAndKeys(t *testing.T) {
	c := &s3Client{scheme: "https", host: "10.0.0.1:9443", bucket: "snaps", folder: "dir", pathStyle: true}
	if got := c.url(c.objectKey("a b.zip"), nil).String(); got != "https://10.0.0.1:9443/snaps/dir/a%20b.zip" {
		t.Fatal(got)
	}
	c.pathStyle, c.folder = false, ""
	if got := c.url(c.objectKey("x.zip"), nil).String(); got != "https://snaps.10.0.0.1:9443/x.zip" {
		t.Fatal(got)
	}
}

func TestSnapshotLookupAndRollingExpiry(t *testing.T) {
	keys := []string{"f/snap-10.zip", "f/snap.zip", "f/snap-1"}
	if got := findSnapshot(keys, "f/snap"); got != "f/snap.zip" {
		t.Fatal(got)
	}
	if got := findSnapshot(keys, "f/none"); got != "" {
		t.Fatal(got)
	}
	cutoff, _ := time.Parse(time.RFC3339, "2021-01-08T00:00:00Z")
	got := expiredRolling([]string{
		"f/2021-01-07T21:16:56Z_etcd.zip", "f/2021-01-09T21:16:56Z_etcd.zip",
		"f/2021-01-01T00:00:00Z_etcd", "f/manual.zip", "f/sub/2020-01-01T00:00:00Z_etcd.zip",
	}, "f/", cutoff)
	if strings.Join(got, ",") != "f/2021-01-07T21:16:56Z_etcd.zip,f/2021-01-01T00:00:00Z_etcd" {
		t.Fatal(got)
	}
}

func TestKeysArriveBase64OrPlain(t *testing.T) {
	if decodeKey("UzNSVkVS") != "S3RVER" || decodeKey("plain-key!") != "plain-key!" {
		t.Fatal("decodeKey")
	}
}

// Against a real server when RKE_TOOLS_S3_TEST names one (scripts/s3-server start prints the
// values): RKE_TOOLS_S3_TEST=<endpoint>,<bucket>,<ca file>,<access key>,<secret key>.
func TestRoundTripAgainstServer(t *testing.T) {
	spec := os.Getenv("RKE_TOOLS_S3_TEST")
	if spec == "" {
		t.Skip("RKE_TOOLS_S3_TEST not set")
	}
	f := strings.Split(spec, ",")
	o := options{"s3-endpoint": f[0], "s3-bucketName": f[1], "s3-endpoint-ca": f[2],
		"s3-accessKey": base64.StdEncoding.EncodeToString([]byte(f[3])),
		"s3-secretKey": base64.StdEncoding.EncodeToString([]byte(f[4])), "s3-folder": "t"}
	c, err := s3FromOptions(o)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "snap x.zip")
	os.WriteFile(src, []byte("payload"), 0o600)
	if err := c.uploadSnapshot(src, 0); err != nil {
		t.Fatal(err)
	}
	keys, err := c.list("t/snap", false)
	if err != nil || findSnapshot(keys, "t/snap x") != "t/snap x.zip" {
		t.Fatal(keys, err)
	}
	dest := filepath.Join(dir, "back")
	if err := c.get("t/snap x.zip", dest); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(dest); string(b) != "payload" {
		t.Fatal(string(b))
	}
	if err := c.remove("t/snap x.zip"); err != nil {
		t.Fatal(err)
	}
	if there, err := c.exists("t/snap x.zip"); err != nil || there {
		t.Fatal(there, err)
	}
	o["s3-secretKey"] = base64.StdEncoding.EncodeToString([]byte("wrong-secret"))
	bad, _ := newS3Client(o)
	if err := bad.put("t/y", src, 0); err == nil || strings.Contains(err.Error(), "wrong-secret") {
		t.Fatalf("a wrong secret must be refused without being shown: %v", err)
	}
}
