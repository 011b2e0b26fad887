package fairqueue

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/util/workqueue"
)

// groupOf groups "cluster/release" keys by cluster.
func groupOf(key string) string { return strings.SplitN(key, "/", 2)[0] }

func newQueue() *Queue[string] {
	return New("", workqueue.DefaultTypedControllerRateLimiter[string](), groupOf)
}

func TestRoundRobin(t *testing.T) {
	tests := []struct {
		name string
		adds []string
		want []string
	}{
		{"one group keeps FIFO", []string{"a/1", "a/2", "a/3"}, []string{"a/1", "a/2", "a/3"}},
		{"groups alternate", []string{"a/1", "a/2", "a/3", "b/1", "b/2", "c/1"},
			[]string{"a/1", "b/1", "c/1", "a/2", "b/2", "a/3"}},
		{"duplicates collapse", []string{"a/1", "a/1", "b/1", "a/1"}, []string{"a/1", "b/1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := newQueue()
			defer q.ShutDown()
			for _, k := range tt.adds {
				q.Add(k)
			}
			var got []string
			for q.Len() > 0 {
				k, _ := q.Get()
				got = append(got, k)
				q.Done(k) // done before the next Get: no group holds a worker
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Fatalf("order %v, want %v", got, tt.want)
			}
		})
	}
}

// TestBusyGroupWaits: a group whose key is in processing yields to a group with none, even when it
// is its turn; alone, it is served.
func TestBusyGroupWaits(t *testing.T) {
	q := newQueue()
	defer q.ShutDown()
	for _, k := range []string{"slow/1", "slow/2", "slow/3", "fast/1", "fast/2"} {
		q.Add(k)
	}
	first, _ := q.Get() // slow/1, kept in processing
	if first != "slow/1" {
		t.Fatalf("first = %s", first)
	}
	var got []string
	for range 2 {
		k, _ := q.Get()
		got = append(got, k)
		q.Done(k)
	}
	if strings.Join(got, ",") != "fast/1,fast/2" {
		t.Fatalf("with slow/1 in processing got %v, want the fast group first", got)
	}
	k, _ := q.Get()
	if k != "slow/2" {
		t.Fatalf("alone, the busy group is served: got %s", k)
	}
	q.Done(k)
	q.Done(first)
	if k, _ = q.Get(); k != "slow/3" {
		t.Fatalf("got %s, want slow/3", k)
	}
	q.Done(k)
	// A key re-added while processing comes back after Done, as with client-go's queue.
	q.Add("fast/1")
	k, _ = q.Get()
	q.Add("fast/1")
	if q.Len() != 0 {
		t.Fatalf("len %d, want 0 while fast/1 is processing", q.Len())
	}
	q.Done(k)
	if q.Len() != 1 {
		t.Fatalf("len %d after Done, want the re-added key back", q.Len())
	}
}

// BenchmarkSlowCluster: one cluster whose Releases take 50 ms each (slow API server, huge chart)
// and 100 Releases on a fast cluster taking 1 ms, 4 workers. It reports how long the fast
// Releases wait until all are done, with the fair queue and with client-go's FIFO queue.
func BenchmarkSlowCluster(b *testing.B) {
	for _, impl := range []struct {
		name string
		new  func() workqueue.TypedRateLimitingInterface[string]
	}{
		{"fair", func() workqueue.TypedRateLimitingInterface[string] { return newQueue() }},
		{"fifo", func() workqueue.TypedRateLimitingInterface[string] {
			return workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
		}},
	} {
		b.Run(impl.name, func(b *testing.B) {
			var total time.Duration
			for range b.N {
				total += fastDone(impl.new(), 4, 40, 100)
			}
			b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms-until-fast-done")
		})
	}
}

// fastDone runs slow keys of the slow cluster (added first) and fast keys of the fast one through
// q with workers and returns when the last fast key was done.
func fastDone(q workqueue.TypedRateLimitingInterface[string], workers, slow, fast int) time.Duration {
	defer q.ShutDown()
	for i := range slow {
		q.Add(fmt.Sprintf("slow/%d", i))
	}
	for i := range fast {
		q.Add(fmt.Sprintf("fast/%d", i))
	}
	start := time.Now()
	var mu sync.Mutex
	var last time.Duration
	left := fast
	var wg sync.WaitGroup
	done := make(chan struct{})
	for range workers {
		wg.Go(func() {
			for {
				k, shutdown := q.Get()
				if shutdown {
					return
				}
				if strings.HasPrefix(k, "slow/") {
					time.Sleep(50 * time.Millisecond)
				} else {
					time.Sleep(time.Millisecond)
				}
				q.Done(k)
				if strings.HasPrefix(k, "fast/") {
					mu.Lock()
					left--
					last = time.Since(start)
					if left == 0 {
						close(done)
					}
					mu.Unlock()
				}
			}
		})
	}
	<-done
	q.ShutDown()
	wg.Wait()
	return last
}
