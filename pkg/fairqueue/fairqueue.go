// Package fairqueue is a rate-limited work queue that serves its keys round-robin across groups (for
// the release controller: the Releases of one Cluster), so that one slow cluster or one huge chart
// cannot starve the others. It is client-go's workqueue — the same dirty/processing bookkeeping,
// delays, rate limiting and metrics — with a different ordering underneath: client-go lets a queue
// plug in its own ordering (workqueue.Queue), and this package's ordering picks, on every Get, the
// group with the fewest keys in processing among those with keys waiting, in round-robin order on
// ties. With W workers and G groups that all have work, each group holds about W/G workers; a group
// alone uses them all.
package fairqueue

import (
	"sync"

	"k8s.io/client-go/util/workqueue"
)

// Queue is a rate-limiting work queue with fair ordering across groups. Use it like client-go's
// TypedRateLimitingInterface; Done also releases the key's group share.
type Queue[T comparable] struct {
	workqueue.TypedRateLimitingInterface[T]
	order *order[T]
}

// New returns a fair queue named name (for the workqueue metrics) whose keys are grouped by groupOf.
func New[T comparable](name string, rateLimiter workqueue.TypedRateLimiter[T], groupOf func(T) string) *Queue[T] {
	o := &order[T]{groupOf: groupOf, groups: map[string]*group[T]{}, popped: map[T]string{}}
	base := workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[T]{Name: name, Queue: o})
	delaying := workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[T]{Name: name, Queue: base})
	return &Queue[T]{
		TypedRateLimitingInterface: workqueue.NewTypedRateLimitingQueueWithConfig(rateLimiter,
			workqueue.TypedRateLimitingQueueConfig[T]{Name: name, DelayingQueue: delaying}),
		order: o,
	}
}

// Done marks the key as processed, as client-go's Done does, and frees its place in its group.
func (q *Queue[T]) Done(item T) {
	q.order.done(item)
	q.TypedRateLimitingInterface.Done(item)
}

// group is the waiting keys of one group, in FIFO order, and how many of its keys are in processing.
type group[T comparable] struct {
	name     string
	items    []T
	inFlight int
}

// order implements workqueue.Queue. client-go calls Push, Pop, Len and Touch under its queue lock;
// done comes from the workers, so order has its own lock too.
type order[T comparable] struct {
	mu      sync.Mutex
	groupOf func(T) string
	groups  map[string]*group[T]
	// ring is the round-robin order of the groups that have waiting keys; next is where the next
	// search starts.
	ring   []*group[T]
	next   int
	size   int
	popped map[T]string // key in processing -> its group when popped
}

var _ workqueue.Queue[string] = &order[string]{}

// Push appends a key to its group, adding the group to the ring when it had nothing waiting.
func (o *order[T]) Push(item T) {
	o.mu.Lock()
	defer o.mu.Unlock()
	name := o.groupOf(item)
	g, ok := o.groups[name]
	if !ok {
		g = &group[T]{name: name}
		o.groups[name] = g
	}
	if len(g.items) == 0 {
		o.ring = append(o.ring, g)
	}
	g.items = append(g.items, item)
	o.size++
}

// Touch keeps a re-added key where it is: its turn comes with its group's.
func (o *order[T]) Touch(T) {}

// Len returns the number of waiting keys.
func (o *order[T]) Len() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.size
}

// Pop returns the head of the group with the fewest keys in processing, searching the ring from
// the group after the last one served. client-go only calls it when Len() > 0.
func (o *order[T]) Pop() T {
	o.mu.Lock()
	defer o.mu.Unlock()
	best := -1
	for i := range o.ring {
		idx := (o.next + i) % len(o.ring)
		if best < 0 || o.ring[idx].inFlight < o.ring[best].inFlight {
			best = idx
		}
	}
	g := o.ring[best]
	item := g.items[0]
	var zero T
	g.items[0] = zero
	g.items = g.items[1:]
	g.inFlight++
	o.size--
	o.popped[item] = g.name
	if len(g.items) == 0 {
		o.ring = append(o.ring[:best], o.ring[best+1:]...)
		o.next = best
	} else {
		o.next = best + 1
	}
	if len(o.ring) > 0 {
		o.next %= len(o.ring)
	} else {
		o.next = 0
	}
	return item
}

// done frees the processing share of a popped key; a group with nothing waiting or processing is
// forgotten.
func (o *order[T]) done(item T) {
	o.mu.Lock()
	defer o.mu.Unlock()
	name, ok := o.popped[item]
	if !ok {
		return
	}
	delete(o.popped, item)
	g := o.groups[name]
	g.inFlight--
	if g.inFlight == 0 && len(g.items) == 0 {
		delete(o.groups, name)
	}
}
