module rkers.local/data/kdm

go 1.24

require (
	github.com/blang/semver v3.5.1+incompatible
	// The one pinned source of RKE1's version data and addon templates: RKE v1.8.14 ships, as
	// data/data.json, the KDM data.json it was released with (KDM's
	// release-v2.11-rke-extended-life data, rke2 and k3s removed). No package of it is imported,
	// so `go mod tidy` drops this line: keep it (main.go downloads the module by this version,
	// verified by go.sum).
	github.com/rancher/rke v1.8.14
)
