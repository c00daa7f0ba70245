module rkers.local/rke-etcd-backup

go 1.21
