// Command cluster-proportional-autoscaler is rkers' own implementation of the linear mode of
// kubernetes-sigs/cluster-proportional-autoscaler, which the Go module proxy here does not serve.
// RKE1's DNS addon templates run it with these flags; it scales the target to
//
//	max(ceil(cores / coresPerReplica), ceil(nodes / nodesPerReplica))
//
// bounded by min and max, and at least 2 with preventSinglePointFailure on more than one node,
// counting the schedulable nodes that carry every --nodelabels label. The parameters come from
// the ConfigMap's "linear" key, which is created from --default-params when it is missing.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"math"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

type linear struct {
	CoresPerReplica           float64 `json:"coresPerReplica"`
	NodesPerReplica           float64 `json:"nodesPerReplica"`
	Min                       int32   `json:"min"`
	Max                       int32   `json:"max"`
	PreventSinglePointFailure bool    `json:"preventSinglePointFailure"`
	IncludeUnschedulableNodes bool    `json:"includeUnschedulableNodes"`
}

func replicas(p linear, nodes, cores int) int32 {
	want := 0.0
	if p.CoresPerReplica > 0 {
		want = math.Ceil(float64(cores) / p.CoresPerReplica)
	}
	if p.NodesPerReplica > 0 {
		want = math.Max(want, math.Ceil(float64(nodes)/p.NodesPerReplica))
	}
	n := int32(want)
	if p.PreventSinglePointFailure && nodes > 1 && n < 2 {
		n = 2
	}
	if n < p.Min {
		n = p.Min
	}
	if p.Max > 0 && n > p.Max {
		n = p.Max
	}
	if n < 1 {
		n = 1
	}
	return n
}

func main() {
	namespace := flag.String("namespace", "kube-system", "namespace of the ConfigMap and the target")
	configmap := flag.String("configmap", "", "ConfigMap holding the parameters")
	target := flag.String("target", "", "the target to scale, as Kind/name (Deployment, ReplicaSet, ReplicationController)")
	defaults := flag.String("default-params", "", "parameters written to the ConfigMap when it is missing")
	nodeLabels := flag.String("nodelabels", "", "count only nodes with these labels (key=value,...)")
	period := flag.Duration("poll-period", 10*time.Second, "how often to check")
	flag.Bool("logtostderr", true, "accepted for compatibility")
	flag.Int("v", 0, "accepted for compatibility")
	flag.Parse()

	kind, name, ok := strings.Cut(*target, "/")
	if !ok || *configmap == "" {
		log.Fatalf("--target Kind/name and --configmap are required (got %q, %q)", *target, *configmap)
	}
	resource := map[string]string{"deployment": "deployments", "replicaset": "replicasets", "replicationcontroller": "replicationcontrollers"}[strings.ToLower(kind)]
	if resource == "" {
		log.Fatalf("--target: unsupported kind %q", kind)
	}
	cfg, err := rest.InClusterConfig()
	if err != nil {
		log.Fatalf("in-cluster configuration: %v", err)
	}
	client := kubernetes.NewForConfigOrDie(cfg)

	var healthy atomic.Bool
	go func() {
		http.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
			if healthy.Load() {
				fmt.Fprintln(w, "ok")
				return
			}
			http.Error(w, "no successful poll yet", http.StatusServiceUnavailable)
		})
		log.Fatal(http.ListenAndServe(":8080", nil))
	}()

	for {
		if err := poll(client, *namespace, *configmap, *defaults, *nodeLabels, resource, name); err != nil {
			log.Printf("poll: %v", err)
		} else {
			healthy.Store(true)
		}
		time.Sleep(*period)
	}
}

func poll(client *kubernetes.Clientset, ns, cmName, defaults, nodeLabels, resource, name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cm, err := client.CoreV1().ConfigMaps(ns).Get(ctx, cmName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		data := map[string]string{}
		if defaults != "" {
			var params map[string]json.RawMessage
			if err := json.Unmarshal([]byte(defaults), &params); err != nil {
				return fmt.Errorf("--default-params: %v", err)
			}
			for k, v := range params {
				data[k] = string(v)
			}
		}
		cm, err = client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: cmName, Namespace: ns},
			Data:       data,
		}, metav1.CreateOptions{})
	}
	if err != nil {
		return fmt.Errorf("configmap %s/%s: %v", ns, cmName, err)
	}
	raw, ok := cm.Data["linear"]
	if !ok {
		return fmt.Errorf("configmap %s/%s has no \"linear\" key (only the linear mode is implemented)", ns, cmName)
	}
	var p linear
	if err := json.Unmarshal([]byte(raw), &p); err != nil {
		return fmt.Errorf("configmap %s/%s: linear: %v", ns, cmName, err)
	}
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: nodeLabels})
	if err != nil {
		return fmt.Errorf("nodes: %v", err)
	}
	count, cores := 0, 0
	for _, n := range nodes.Items {
		if n.Spec.Unschedulable && !p.IncludeUnschedulableNodes {
			continue
		}
		count++
		if c, ok := n.Status.Allocatable[corev1.ResourceCPU]; ok {
			cores += int(c.Value())
		}
	}
	want := replicas(p, count, cores)
	scale, err := getScale(ctx, client, ns, resource, name)
	if err != nil {
		return err
	}
	if scale.Spec.Replicas == want {
		return nil
	}
	log.Printf("%s/%s: %d nodes, %d cores: %d -> %d replicas", resource, name, count, cores, scale.Spec.Replicas, want)
	scale.Spec.Replicas = want
	return updateScale(ctx, client, ns, resource, name, scale)
}

func getScale(ctx context.Context, c *kubernetes.Clientset, ns, resource, name string) (*autoscalingv1.Scale, error) {
	switch resource {
	case "deployments":
		return c.AppsV1().Deployments(ns).GetScale(ctx, name, metav1.GetOptions{})
	case "replicasets":
		return c.AppsV1().ReplicaSets(ns).GetScale(ctx, name, metav1.GetOptions{})
	default:
		return c.CoreV1().ReplicationControllers(ns).GetScale(ctx, name, metav1.GetOptions{})
	}
}

func updateScale(ctx context.Context, c *kubernetes.Clientset, ns, resource, name string, s *autoscalingv1.Scale) error {
	var err error
	switch resource {
	case "deployments":
		_, err = c.AppsV1().Deployments(ns).UpdateScale(ctx, name, s, metav1.UpdateOptions{})
	case "replicasets":
		_, err = c.AppsV1().ReplicaSets(ns).UpdateScale(ctx, name, s, metav1.UpdateOptions{})
	default:
		_, err = c.CoreV1().ReplicationControllers(ns).UpdateScale(ctx, name, s, metav1.UpdateOptions{})
	}
	return err
}

func init() { log.SetOutput(os.Stderr) }
