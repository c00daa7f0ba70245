package main

import "testing"

func TestReplicas(t *testing.T) {
	rke := linear{CoresPerReplica: 128, NodesPerReplica: 4, Min: 1, PreventSinglePointFailure: true}
	for _, c := range []struct {
		p            linear
		nodes, cores int
		want         int32
	}{
		{rke, 1, 2, 1},
		{rke, 3, 6, 2},
		{rke, 9, 18, 3},
		{rke, 2, 300, 3},
		{linear{NodesPerReplica: 1, Max: 2}, 5, 5, 2},
		{linear{NodesPerReplica: 10, Min: 3}, 1, 1, 3},
	} {
		if got := replicas(c.p, c.nodes, c.cores); got != c.want {
			t.Errorf("replicas(%+v, %d nodes, %d cores) = %d, want %d", c.p, c.nodes, c.cores, got, c.want)
		}
	}
}
