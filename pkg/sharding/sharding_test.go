package sharding

import (
	"context"
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
)

func cluster(ns, name string, shard *int32) *v1alpha1.Cluster {
	return &v1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1alpha1.ClusterSpec{Shard: shard}}
}

func TestShardOf(t *testing.T) {
	two := int32(2)
	tests := []struct {
		name   string
		cl     *v1alpha1.Cluster
		shards int32
		want   int32
	}{
		{"one shard", cluster("a", "b", nil), 1, 0},
		{"fixed shard", cluster("a", "b", &two), 4, 2},
		{"fixed shard wraps", cluster("a", "b", &two), 2, 0},
		// fnv32a("team-a/prod") = 0x6b4d3f5c is stable; mod 3 must not change between runs.
		{"hashed", cluster("team-a", "prod", nil), 3, ShardOf(cluster("team-a", "prod", nil), 3)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ShardOf(tt.cl, tt.shards); got != tt.want {
				t.Fatalf("ShardOf = %d, want %d", got, tt.want)
			}
		})
	}
	seen := map[int32]bool{}
	for _, n := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		seen[ShardOf(cluster("ns", n, nil), 4)] = true
	}
	if len(seen) < 2 {
		t.Fatalf("8 clusters all hashed to one of 4 shards: %v", seen)
	}
}

func TestStatic(t *testing.T) {
	if _, err := NewStatic(2, 2); err == nil {
		t.Fatal("shard 2 of 2 accepted")
	}
	g, err := NewStatic(3, 1)
	if err != nil {
		t.Fatal(err)
	}
	if g.Owns(0) || !g.Owns(1) || g.Owns(2) {
		t.Fatalf("owned set wrong: %v", g.owned)
	}
}

func TestOrdinalFromPodName(t *testing.T) {
	tests := []struct {
		pod     string
		want    int32
		wantErr bool
	}{
		{"convoy-0", 0, false},
		{"convoy-controller-12", 12, false},
		{"convoy", 0, true},
	}
	for _, tt := range tests {
		got, err := OrdinalFromPodName(tt.pod)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("OrdinalFromPodName(%q) = %d, %v", tt.pod, got, err)
		}
	}
}

func TestStaticShardContext(t *testing.T) {
	g, err := NewStatic(2, 1)
	if err != nil {
		t.Fatal(err)
	}
	owned, cancel := g.ShardContext(context.Background(), 1)
	if owned.Err() != nil {
		t.Errorf("context of an owned shard is done: %v", context.Cause(owned))
	}
	cancel()
	if owned.Err() == nil {
		t.Error("cancel did not end the context")
	}
	other, cancel := g.ShardContext(context.Background(), 0)
	defer cancel()
	if !errors.Is(context.Cause(other), ErrShardLost) {
		t.Errorf("context of a shard not owned: cause %v", context.Cause(other))
	}
}
