// Package sharding decides which replica handles a Cluster. A Cluster's shard is spec.shard when set,
// else fnv32a("namespace/name") mod the shard count; every loop (release, drift, health, cluster) asks
// the Gate before it touches a key, and a key whose shard this replica does not own is left alone.
//
// Two gates implement it: Static owns a fixed set of shards (--shard, or a StatefulSet ordinal);
// Dynamic (dynamic.go) holds coordination Leases, one per shard, and moves shards between the live
// replicas.
package sharding

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"regexp"
	"strconv"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
	"github.com/kumodo/convoy/pkg/metrics"
)

// ErrShardLost is the cancel cause of a shard context whose shard this replica does not own (any
// more): work under it must stop before its next write.
var ErrShardLost = errors.New("this replica does not own the shard")

// Gate tells whether this replica owns a shard.
type Gate interface {
	// ShardOf returns the shard of a Cluster.
	ShardOf(cl *v1alpha1.Cluster) int32
	// Owns reports whether this replica currently owns the shard.
	Owns(shard int32) bool
	// ShardContext returns a child of parent that is cancelled, with cause ErrShardLost, when this
	// replica stops owning the shard (at once when it does not own it now). Call the CancelFunc
	// when the work is done.
	ShardContext(parent context.Context, shard int32) (context.Context, context.CancelFunc)
}

// ShardOf computes a Cluster's shard for a given shard count.
func ShardOf(cl *v1alpha1.Cluster, shards int32) int32 {
	if shards <= 1 {
		return 0
	}
	if cl.Spec.Shard != nil {
		return *cl.Spec.Shard % shards
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(cl.Namespace + "/" + cl.Name))
	return int32(h.Sum32() % uint32(shards))
}

// Static is a Gate that owns a fixed set of shards (--shards=N --shard=i).
type Static struct {
	shards int32
	owned  map[int32]bool
}

// NewStatic returns a Gate owning the given shards out of n.
func NewStatic(n int32, owned ...int32) (*Static, error) {
	if n < 1 {
		return nil, fmt.Errorf("shard count must be at least 1, got %d", n)
	}
	s := &Static{shards: n, owned: map[int32]bool{}}
	for _, o := range owned {
		if o < 0 || o >= n {
			return nil, fmt.Errorf("shard %d is outside 0..%d", o, n-1)
		}
		s.owned[o] = true
	}
	for i := range n {
		metrics.SetShardOwned(i, s.owned[i])
	}
	return s, nil
}

// ShardOf implements Gate.
func (s *Static) ShardOf(cl *v1alpha1.Cluster) int32 { return ShardOf(cl, s.shards) }

// Owns implements Gate.
func (s *Static) Owns(shard int32) bool { return s.owned[shard] }

// ShardContext implements Gate: a static replica never loses a shard it owns.
func (s *Static) ShardContext(parent context.Context, shard int32) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	if !s.Owns(shard) {
		cancel(fmt.Errorf("shard %d: %w", shard, ErrShardLost))
	}
	return ctx, func() { cancel(context.Canceled) }
}

var ordinalRE = regexp.MustCompile(`-(\d+)$`)

// OrdinalFromPodName returns the StatefulSet ordinal at the end of a pod name ("convoy-2" -> 2).
func OrdinalFromPodName(pod string) (int32, error) {
	m := ordinalRE.FindStringSubmatch(pod)
	if m == nil {
		return 0, fmt.Errorf("pod name %q has no StatefulSet ordinal", pod)
	}
	n, err := strconv.ParseInt(m[1], 10, 32)
	if err != nil {
		return 0, fmt.Errorf("pod name %q: %w", pod, err)
	}
	return int32(n), nil
}
