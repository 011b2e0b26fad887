package sharding

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	coordinationclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	k8stesting "k8s.io/client-go/testing"
	testingclock "k8s.io/utils/clock/testing"
)

const (
	testNamespace = "kube-system"
	testShards    = 4
	testDuration  = 15 * time.Second
	testRenew     = 5 * time.Second
	testMargin    = 3 * time.Second
	// testStep is the resolution of the simulated time: gates tick at their wake-up rounded up to
	// it, and the exclusivity invariant is checked after every step.
	testStep = 100 * time.Millisecond
)

var leasesGVR = coordinationv1.SchemeGroupVersion.WithResource("leases")

// newLeaseClientset is a fake clientset that keeps resourceVersions of Leases like an API server
// does: every write bumps it, and an Update or Delete carrying a stale one is a Conflict.
func newLeaseClientset() *fake.Clientset {
	cs := fake.NewClientset()
	var rv int64
	conflict := func(name string) error {
		return apierrors.NewConflict(leasesGVR.GroupResource(), name, errors.New("the object has been modified"))
	}
	current := func(ns, name string) (*coordinationv1.Lease, error) {
		obj, err := cs.Tracker().Get(leasesGVR, ns, name)
		if err != nil {
			return nil, err
		}
		return obj.(*coordinationv1.Lease), nil
	}
	cs.PrependReactor("create", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		l := a.(k8stesting.CreateAction).GetObject().(*coordinationv1.Lease).DeepCopy()
		rv++
		l.ResourceVersion = strconv.FormatInt(rv, 10)
		if err := cs.Tracker().Create(leasesGVR, l, l.Namespace); err != nil {
			return true, nil, err
		}
		return true, l.DeepCopy(), nil
	})
	cs.PrependReactor("update", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		l := a.(k8stesting.UpdateAction).GetObject().(*coordinationv1.Lease).DeepCopy()
		cur, err := current(l.Namespace, l.Name)
		if err != nil {
			return true, nil, err
		}
		if cur.ResourceVersion != l.ResourceVersion {
			return true, nil, conflict(l.Name)
		}
		rv++
		l.ResourceVersion = strconv.FormatInt(rv, 10)
		if err := cs.Tracker().Update(leasesGVR, l, l.Namespace); err != nil {
			return true, nil, err
		}
		return true, l.DeepCopy(), nil
	})
	cs.PrependReactor("delete", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		del := a.(k8stesting.DeleteAction)
		cur, err := current(del.GetNamespace(), del.GetName())
		if err != nil {
			return true, nil, err
		}
		if p := del.GetDeleteOptions().Preconditions; p != nil && p.ResourceVersion != nil && *p.ResourceVersion != cur.ResourceVersion {
			return true, nil, conflict(del.GetName())
		}
		return true, nil, cs.Tracker().Delete(leasesGVR, del.GetNamespace(), del.GetName())
	})
	return cs
}

// flakyLeases fails every Lease request of one replica while down is set (a replica cut off
// from the API server), only its writes of shard Leases while shardWritesDown is set, or only its
// lists while listDown is set.
type flakyLeases struct {
	coordinationclient.LeasesGetter
	down, shardWritesDown, listDown atomic.Bool
}

func (f *flakyLeases) Leases(ns string) coordinationclient.LeaseInterface {
	return flakyLeaseInterface{f.LeasesGetter.Leases(ns), f}
}

type flakyLeaseInterface struct {
	coordinationclient.LeaseInterface
	f *flakyLeases
}

// failWrite reports whether a write of the Lease named name fails.
func (f flakyLeaseInterface) failWrite(name string) bool {
	return f.f.down.Load() || f.f.shardWritesDown.Load() && strings.HasPrefix(name, ShardLeasePrefix)
}

var errDown = errors.New("connection refused")

func (f flakyLeaseInterface) List(ctx context.Context, o metav1.ListOptions) (*coordinationv1.LeaseList, error) {
	if f.f.down.Load() || f.f.listDown.Load() {
		return nil, errDown
	}
	return f.LeaseInterface.List(ctx, o)
}

func (f flakyLeaseInterface) Update(ctx context.Context, l *coordinationv1.Lease, o metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	if f.failWrite(l.Name) {
		return nil, errDown
	}
	return f.LeaseInterface.Update(ctx, l, o)
}

func (f flakyLeaseInterface) Create(ctx context.Context, l *coordinationv1.Lease, o metav1.CreateOptions) (*coordinationv1.Lease, error) {
	if f.failWrite(l.Name) {
		return nil, errDown
	}
	return f.LeaseInterface.Create(ctx, l, o)
}

// replica is a simulated replica: a gate ticked by the simulation as Run would tick it.
type replica struct {
	name    string
	gate    *Dynamic
	client  *flakyLeases
	running bool
	nextAt  time.Time
	// gained and lost record the callbacks.
	mu           sync.Mutex
	gained, lost []int32
}

// sim drives replicas on one fake clock and checks after every step that no shard is owned by
// two replicas.
type sim struct {
	t        *testing.T
	clk      *testingclock.FakeClock
	cs       *fake.Clientset
	replicas []*replica
}

func newSim(t *testing.T) *sim {
	return &sim{t: t, clk: testingclock.NewFakeClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)), cs: newLeaseClientset()}
}

// add starts a replica with identity id.
func (s *sim) add(id string) *replica {
	s.t.Helper()
	client := &flakyLeases{LeasesGetter: s.cs.CoordinationV1()}
	g, err := NewDynamic(DynamicConfig{
		Leases: client, Namespace: testNamespace, Identity: id, Shards: testShards,
		LeaseDuration: testDuration, RenewPeriod: testRenew, Margin: testMargin, Clock: s.clk,
	})
	if err != nil {
		s.t.Fatalf("NewDynamic(%s): %v", id, err)
	}
	r := &replica{name: id, gate: g, client: client, running: true, nextAt: s.clk.Now()}
	g.OnGain(func(shard int32) { r.mu.Lock(); r.gained = append(r.gained, shard); r.mu.Unlock() })
	g.OnLose(func(shard int32) { r.mu.Lock(); r.lost = append(r.lost, shard); r.mu.Unlock() })
	s.replicas = append(s.replicas, r)
	return r
}

// run advances the clock by d in steps, ticking each running replica when its wake-up is due,
// and stops early when done (if non-nil) reports true; it returns the simulated time spent.
func (s *sim) run(d time.Duration, done func() bool) time.Duration {
	s.t.Helper()
	start := s.clk.Now()
	for s.clk.Since(start) < d {
		for _, r := range s.replicas {
			if r.running && !s.clk.Now().Before(r.nextAt) {
				r.nextAt = s.clk.Now().Add(r.gate.tick(context.Background()))
			}
		}
		s.checkExclusive()
		if done != nil && done() {
			return s.clk.Since(start)
		}
		s.clk.Step(testStep)
		s.checkExclusive()
	}
	if done != nil {
		s.t.Fatalf("condition not reached within %s of simulated time; owned: %s", d, s.owned())
	}
	return s.clk.Since(start)
}

// checkExclusive fails when two replicas own one shard at this instant.
func (s *sim) checkExclusive() {
	s.t.Helper()
	for shard := range int32(testShards) {
		var owners []string
		for _, r := range s.replicas {
			if r.gate.Owns(shard) {
				owners = append(owners, r.name)
			}
		}
		if len(owners) > 1 {
			s.t.Fatalf("at %s shard %d is owned by %v", s.clk.Now().Format(time.TimeOnly), shard, owners)
		}
	}
}

// owned describes who owns what, for messages.
func (s *sim) owned() string {
	out := ""
	for _, r := range s.replicas {
		out += fmt.Sprintf("%s=%v ", r.name, r.gate.Owned())
	}
	return out
}

// balanced reports whether every shard is owned and nobody owns more than maxEach.
func (s *sim) balanced(maxEach int) func() bool {
	return func() bool {
		total := 0
		for _, r := range s.replicas {
			n := len(r.gate.Owned())
			if n > maxEach {
				return false
			}
			total += n
		}
		return total == testShards
	}
}

// waitDone waits (real time) until ctx is done: timers fire their callbacks on goroutines.
func waitDone(t *testing.T, ctx context.Context, what string) {
	t.Helper()
	select {
	case <-ctx.Done():
		if !errors.Is(context.Cause(ctx), ErrShardLost) {
			t.Errorf("%s: cause %v, want ErrShardLost", what, context.Cause(ctx))
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: context not cancelled", what)
	}
}

func TestDynamicFailoverAndRebalance(t *testing.T) {
	s := newSim(t)
	a, b := s.add("a"), s.add("b")

	// Both start: the first to tick takes all four, then gives two away to the other.
	s.run(10*testDuration, s.balanced(2))
	if got := len(a.gate.Owned()) + len(b.gate.Owned()); got != testShards {
		t.Fatalf("owned %s", s.owned())
	}
	aShards := a.gate.Owned()
	var aCtxs []context.Context
	for _, shard := range aShards {
		ctx, cancel := a.gate.ShardContext(context.Background(), shard)
		defer cancel()
		if ctx.Err() != nil {
			t.Fatalf("ShardContext of owned shard %d is already done: %v", shard, context.Cause(ctx))
		}
		aCtxs = append(aCtxs, ctx)
	}

	// a stops renewing (a crash): b takes all four within a lease duration and a renew period.
	a.running = false
	took := s.run(10*testDuration, func() bool { return len(b.gate.Owned()) == testShards })
	t.Logf("b owns all shards %s after a stopped: %s", took, s.owned())
	if took > testDuration+testRenew {
		t.Errorf("takeover took %s, want at most %s", took, testDuration+testRenew)
	}
	if took < testDuration-testRenew {
		t.Errorf("takeover after %s: before a's leases could have expired", took)
	}
	for i, ctx := range aCtxs {
		waitDone(t, ctx, fmt.Sprintf("a's context of shard %d", aShards[i]))
	}
	if owned := a.gate.Owned(); len(owned) != 0 {
		t.Errorf("crashed replica a still owns %v", owned)
	}

	// a comes back (same identity, fresh process) and c joins: ceil(4/3) = 2 at most each.
	bCtx, cancel := b.gate.ShardContext(context.Background(), b.gate.Owned()[testShards-1])
	defer cancel()
	a2, c := s.add("a"), s.add("c")
	s.run(10*testDuration, s.balanced(2))
	if n := len(b.gate.Owned()); n > 2 {
		t.Errorf("b owns %d shards after rebalancing", n)
	}
	if len(a2.gate.Owned())+len(c.gate.Owned()) < 2 {
		t.Errorf("joined replicas got nothing: %s", s.owned())
	}
	waitDone(t, bCtx, "b's context of a released shard")
	b.mu.Lock()
	if len(b.lost) < 2 {
		t.Errorf("b reported %v lost, want the two it released", b.lost)
	}
	b.mu.Unlock()

	// Steady state: nothing moves any more.
	before := s.owned()
	s.run(5*testDuration, nil)
	if after := s.owned(); after != before {
		t.Errorf("ownership kept moving: %s, then %s", before, after)
	}
}

func TestDynamicRenewFailure(t *testing.T) {
	s := newSim(t)
	a := s.add("a")
	s.run(testDuration, func() bool { return len(a.gate.Owned()) == testShards })
	ctx, cancel := a.gate.ShardContext(context.Background(), 0)
	defer cancel()

	// Cut off: a may not act past its last renewal + duration - margin, even though no other
	// replica exists to take over.
	a.client.down.Store(true)
	lastRenew := s.clk.Now()
	a.gate.mu.Lock()
	for _, h := range a.gate.held {
		lastRenew = h.renewedAt
	}
	a.gate.mu.Unlock()
	s.run(testDuration, func() bool { return len(a.gate.Owned()) == 0 })
	if lost, want := s.clk.Now().Sub(lastRenew), testDuration-testMargin; lost > want+testStep || lost < want-testStep {
		t.Errorf("ownership ended %s after the last renewal, want %s", lost, want)
	}
	waitDone(t, ctx, "context of shard 0")

	// Back online: the leases still name a, but a fresh observation must age a whole duration
	// first. b, started meanwhile, competes; the invariant holds throughout.
	a.client.down.Store(false)
	s.add("b")
	s.run(10*testDuration, s.balanced(2))
}

// TestDynamicShardLeaseExpiry isolates the shard Leases' expiry from the replica count: a stays a
// live member but cannot write its shard Leases, so b (fair share 2) may take two of them only once
// they expired, never while a still owns them.
func TestDynamicShardLeaseExpiry(t *testing.T) {
	s := newSim(t)
	a := s.add("a")
	s.run(testDuration, func() bool { return len(a.gate.Owned()) == testShards })
	a.client.shardWritesDown.Store(true)
	b := s.add("b")
	took := s.run(10*testDuration, func() bool { return len(b.gate.Owned()) == 2 })
	if took < testDuration-testMargin {
		t.Errorf("b took two shards after %s, before a's ownership could have ended", took)
	}
	if n := len(a.gate.Owned()); n != 0 {
		t.Errorf("a, unable to renew, still owns %d shards", n)
	}
}

// TestDynamicReleaseDrains: a shard given away stops being owned at once, but its Lease is freed
// only a renew period later, so work in flight can stop before the other replica starts.
func TestDynamicReleaseDrains(t *testing.T) {
	s := newSim(t)
	a := s.add("a")
	s.run(testDuration, func() bool { return len(a.gate.Owned()) == testShards })
	b := s.add("b")
	s.run(testDuration, func() bool { return len(a.gate.Owned()) == 2 })
	holders := func() map[string]string {
		list, err := s.cs.CoordinationV1().Leases(testNamespace).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, l := range list.Items {
			if strings.HasPrefix(l.Name, ShardLeasePrefix) {
				out[l.Name] = holder(&l)
			}
		}
		return out
	}
	for name, h := range holders() {
		if h != "a" {
			t.Errorf("Lease %s held by %q right after a began releasing, want still a", name, h)
		}
	}
	freed := s.run(testDuration, func() bool {
		n := 0
		for _, h := range holders() {
			if h == "a" {
				n++
			}
		}
		return n == 2
	})
	if freed < testRenew-testStep {
		t.Errorf("a freed the Leases %s after it gave the shards up, want a renew period (%s)", freed, testRenew)
	}
	s.run(testDuration, func() bool { return len(b.gate.Owned()) == 2 })
}

// TestDynamicRenewsWithoutList: renewing needs no listing, so a replica whose lists fail keeps its
// shards.
func TestDynamicRenewsWithoutList(t *testing.T) {
	s := newSim(t)
	a := s.add("a")
	s.run(testDuration, func() bool { return len(a.gate.Owned()) == testShards })
	a.client.listDown.Store(true)
	// Three lease durations: ownership would have ended twice over without renewals.
	s.run(3*testDuration, nil)
	if owned := a.gate.Owned(); len(owned) != testShards {
		t.Errorf("a owns %v after its lists failed for %s", owned, 3*testDuration)
	}
}

func TestDynamicConflictDropsAtOnce(t *testing.T) {
	s := newSim(t)
	a := s.add("a")
	s.run(testDuration, func() bool { return len(a.gate.Owned()) == testShards })

	// Someone else writes shard 2's Lease: a's next renewal conflicts and a drops it at once.
	leases := s.cs.CoordinationV1().Leases(testNamespace)
	l, err := leases.Get(context.Background(), shardLeaseName(2), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	intruder := "intruder"
	l.Spec.HolderIdentity = &intruder
	if _, err := leases.Update(context.Background(), l, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	s.run(testRenew+testStep, func() bool { return !a.gate.Owns(2) })
	if !a.gate.Owns(0) || !a.gate.Owns(1) || !a.gate.Owns(3) {
		t.Errorf("a lost other shards too: %v", a.gate.Owned())
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if !slices.Contains(a.lost, 2) {
		t.Errorf("OnLose not called for shard 2: %v", a.lost)
	}
}

func TestDynamicRunReleasesOnShutdown(t *testing.T) {
	cs := newLeaseClientset()
	clk := testingclock.NewFakeClock(time.Now())
	g, err := NewDynamic(DynamicConfig{
		Leases: cs.CoordinationV1(), Namespace: testNamespace, Identity: "a", Shards: testShards,
		LeaseDuration: testDuration, RenewPeriod: testRenew, Clock: clk,
	})
	if err != nil {
		t.Fatal(err)
	}
	var gained atomic.Int32
	g.OnGain(func(int32) { gained.Add(1) })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- g.Run(ctx) }()
	deadline := time.Now().Add(5 * time.Second)
	for len(g.Owned()) < testShards {
		if time.Now().After(deadline) {
			t.Fatalf("Run acquired only %v", g.Owned())
		}
		time.Sleep(10 * time.Millisecond)
	}
	shardCtx, stop := g.ShardContext(context.Background(), 1)
	defer stop()
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if gained.Load() != testShards {
		t.Errorf("OnGain called %d times", gained.Load())
	}
	if len(g.Owned()) != 0 {
		t.Errorf("still owns %v after Run returned", g.Owned())
	}
	waitDone(t, shardCtx, "context of shard 1")
	list, err := cs.CoordinationV1().Leases(testNamespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range list.Items {
		names = append(names, l.Name)
		if holder(&l) != "" {
			t.Errorf("Lease %s still held by %q after shutdown", l.Name, holder(&l))
		}
	}
	if len(names) != testShards || slices.Contains(names, ReplicaLeasePrefix+"a") {
		t.Errorf("Leases after shutdown: %v, want the %d shard Leases and no membership", names, testShards)
	}
}

func TestDynamicShardContextNotOwned(t *testing.T) {
	g, err := NewDynamic(DynamicConfig{
		Leases: newLeaseClientset().CoordinationV1(), Namespace: testNamespace, Identity: "a", Shards: 2,
		LeaseDuration: testDuration, RenewPeriod: testRenew,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := g.ShardContext(context.Background(), 0)
	defer cancel()
	if !errors.Is(context.Cause(ctx), ErrShardLost) {
		t.Errorf("context of a shard never owned: cause %v", context.Cause(ctx))
	}
}

func TestNewDynamicValidates(t *testing.T) {
	valid := DynamicConfig{
		Leases: newLeaseClientset().CoordinationV1(), Namespace: testNamespace, Identity: "convoy-0", Shards: 4,
		LeaseDuration: 15 * time.Second, RenewPeriod: 5 * time.Second,
	}
	tests := []struct {
		name   string
		change func(*DynamicConfig)
		ok     bool
	}{
		{"valid", func(*DynamicConfig) {}, true},
		{"no client", func(c *DynamicConfig) { c.Leases = nil }, false},
		{"no shards", func(c *DynamicConfig) { c.Shards = 0 }, false},
		{"no namespace", func(c *DynamicConfig) { c.Namespace = "" }, false},
		{"no identity", func(c *DynamicConfig) { c.Identity = "" }, false},
		{"identity not a name", func(c *DynamicConfig) { c.Identity = "Host_Name" }, false},
		{"renew period too long", func(c *DynamicConfig) { c.RenewPeriod = 13 * time.Second }, false},
		{"margin too long", func(c *DynamicConfig) { c.Margin = 11 * time.Second }, false},
		{"sub-second lease", func(c *DynamicConfig) {
			c.LeaseDuration, c.RenewPeriod = 900*time.Millisecond, 100*time.Millisecond
		}, false},
		{"short leases", func(c *DynamicConfig) { c.LeaseDuration, c.RenewPeriod = 6*time.Second, 2*time.Second }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := valid
			tt.change(&cfg)
			_, err := NewDynamic(cfg)
			if (err == nil) != tt.ok {
				t.Errorf("NewDynamic error = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}
