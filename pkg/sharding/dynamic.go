package sharding

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	coordinationclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
	"github.com/kumodo/convoy/pkg/metrics"
)

// Name prefixes of the Leases of dynamic sharding.
const (
	// ReplicaLeasePrefix + identity is a replica's membership Lease.
	ReplicaLeasePrefix = "convoy-replica-"
	// ShardLeasePrefix + shard number is a shard's Lease.
	ShardLeasePrefix = "convoy-shard-"
)

// staleMembershipFactor times the lease duration is how long a membership Lease stays after its
// replica stopped renewing it; then any replica deletes it (pods of a Deployment get new names).
const staleMembershipFactor = 20

// minWake keeps the renew loop from spinning when a computed wake-up is already due.
const minWake = 10 * time.Millisecond

// DynamicConfig configures a Dynamic gate; main fills it from flags.
type DynamicConfig struct {
	// Leases is the coordination.k8s.io/v1 client of the management cluster.
	Leases coordinationclient.LeasesGetter
	// Namespace holds the membership and shard Leases.
	Namespace string
	// Identity names this replica (pod name); it must be unique among the live replicas.
	Identity string
	// Shards is the number of shards.
	Shards int32
	// LeaseDuration is how long a Lease stays valid after its last renewal.
	LeaseDuration time.Duration
	// RenewPeriod is the time between two renewals of this replica's Leases.
	RenewPeriod time.Duration
	// Margin is how long before a held Lease could expire this replica already stops owning the
	// shard, so it stops acting before another replica may take over; zero means LeaseDuration/5.
	Margin time.Duration
	// Clock is the time source; nil means the real clock.
	Clock clock.WithDelayedExecution
}

// Dynamic is a Gate whose shards move between the live replicas through coordination Leases.
//
// Each replica keeps a membership Lease (convoy-replica-<identity>); the unexpired ones give the
// live replica count R. Each shard has a Lease (convoy-shard-<i>). A replica holds at most
// ceil(shards/R) shard Leases: it renews them every RenewPeriod, takes free or expired ones while it
// is below that share, and releases the ones above it, so a replica that joins (or comes back) gets
// shards. Every write is an Update carrying the resourceVersion that was read, so two replicas
// never both win a Lease.
//
// A replica owns a shard from a successful write until renewal time + LeaseDuration - Margin on
// its own clock, measured from before the write was sent; it drops the shard earlier when a renewal
// conflicts. Another replica takes the Lease over only after it has seen the same Lease record
// unchanged for a whole LeaseDuration on its own clock (as client-go's leader election does), which
// is later in real time, so no clock synchronisation is needed. A voluntarily released shard stops
// being owned at once, but its Lease is freed only one RenewPeriod later, so work in flight can stop
// before another replica starts.
type Dynamic struct {
	cfg        DynamicConfig
	clock      clock.WithDelayedExecution
	memberName string
	// leaseSeconds is LeaseDuration rounded up, as written into the Leases.
	leaseSeconds int32

	mu     sync.Mutex
	held   map[int32]*heldShard
	gen    uint64
	onGain []func(int32)
	onLose []func(int32)

	// The fields below belong to the renew loop (Run, tick) alone.
	member          *coordinationv1.Lease
	memberRenewedAt time.Time
	observed        map[string]observation
}

// heldShard is a shard Lease this replica holds, or releases.
type heldShard struct {
	// lease is the Lease as this replica last wrote it (its resourceVersion is the next write's).
	lease *coordinationv1.Lease
	// renewedAt is the local time just before the last successful write.
	renewedAt time.Time
	// validUntil ends the ownership: renewedAt + LeaseDuration - Margin.
	validUntil time.Time
	// releaseAt is set when the shard is being released: it is not owned any more, and the Lease
	// is freed at this time.
	releaseAt time.Time
	// ctx is cancelled when the ownership ends; ShardContext derives from it.
	ctx    context.Context
	cancel context.CancelCauseFunc
	timer  clock.Timer
	gen    uint64
}

// owned reports whether the shard is owned at now.
func (s *heldShard) owned(now time.Time) bool {
	return s.releaseAt.IsZero() && now.Before(s.validUntil)
}

// observation is when this replica first saw a Lease record (resourceVersion).
type observation struct {
	resourceVersion string
	at              time.Time
}

// shardEvent is a gain or loss of a shard, reported to the callbacks outside the lock.
type shardEvent struct {
	shard  int32
	gained bool
}

// NewDynamic validates cfg and returns a gate owning nothing; Run acquires shards.
func NewDynamic(cfg DynamicConfig) (*Dynamic, error) {
	if cfg.Leases == nil {
		return nil, errors.New("dynamic sharding: no Lease client")
	}
	if cfg.Shards < 1 {
		return nil, fmt.Errorf("dynamic sharding: shard count must be at least 1, got %d", cfg.Shards)
	}
	if cfg.Namespace == "" {
		return nil, errors.New("dynamic sharding: no Lease namespace")
	}
	if cfg.Identity == "" {
		return nil, errors.New("dynamic sharding: no replica identity")
	}
	memberName := ReplicaLeasePrefix + cfg.Identity
	if errs := validation.IsDNS1123Subdomain(memberName); len(errs) > 0 {
		return nil, fmt.Errorf("dynamic sharding: identity %q does not make a valid Lease name: %s", cfg.Identity, strings.Join(errs, "; "))
	}
	if cfg.Margin == 0 {
		cfg.Margin = cfg.LeaseDuration / 5
	}
	if cfg.LeaseDuration < time.Second || cfg.RenewPeriod <= 0 || cfg.Margin < 0 || cfg.RenewPeriod+cfg.Margin >= cfg.LeaseDuration {
		return nil, fmt.Errorf("dynamic sharding: need lease duration >= 1s and renew period + margin < lease duration, got %s, %s, %s",
			cfg.LeaseDuration, cfg.RenewPeriod, cfg.Margin)
	}
	clk := cfg.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	d := &Dynamic{
		cfg:          cfg,
		clock:        clk,
		memberName:   memberName,
		leaseSeconds: int32((cfg.LeaseDuration + time.Second - 1) / time.Second),
		held:         map[int32]*heldShard{},
		observed:     map[string]observation{},
	}
	for i := range cfg.Shards {
		metrics.SetShardOwned(i, false)
	}
	return d, nil
}

// ShardOf implements Gate.
func (d *Dynamic) ShardOf(cl *v1alpha1.Cluster) int32 { return ShardOf(cl, d.cfg.Shards) }

// Owns implements Gate: the shard's Lease is held by this replica and, on the local clock, not
// within Margin of its expiry.
func (d *Dynamic) Owns(shard int32) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.held[shard]
	return s != nil && s.owned(d.clock.Now())
}

// Owned returns the shards this replica owns now, in order.
func (d *Dynamic) Owned() []int32 {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.clock.Now()
	var out []int32
	for shard, s := range d.held {
		if s.owned(now) {
			out = append(out, shard)
		}
	}
	slices.Sort(out)
	return out
}

// ShardContext implements Gate.
func (d *Dynamic) ShardContext(parent context.Context, shard int32) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	d.mu.Lock()
	s := d.held[shard]
	owned := s != nil && s.owned(d.clock.Now())
	d.mu.Unlock()
	if !owned {
		cancel(fmt.Errorf("shard %d: %w", shard, ErrShardLost))
		return ctx, func() { cancel(context.Canceled) }
	}
	stop := context.AfterFunc(s.ctx, func() { cancel(context.Cause(s.ctx)) })
	return ctx, func() {
		stop()
		cancel(context.Canceled)
	}
}

// OnGain registers f, called with each shard this replica gains, after Owns reports it. Register
// before Run.
func (d *Dynamic) OnGain(f func(shard int32)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.onGain = append(d.onGain, f)
}

// OnLose registers f, called with each shard this replica stops owning.
func (d *Dynamic) OnLose(f func(shard int32)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.onLose = append(d.onLose, f)
}

// Run keeps the membership and shard Leases until ctx is done, then releases them (so the other
// replicas take the shards over at once) and deletes the membership Lease.
func (d *Dynamic) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithName("sharding")
	ctx = klog.NewContext(ctx, logger)
	logger.Info("Starting dynamic sharding", "identity", d.cfg.Identity, "namespace", d.cfg.Namespace, "shards", d.cfg.Shards,
		"leaseDuration", d.cfg.LeaseDuration, "renewPeriod", d.cfg.RenewPeriod, "margin", d.cfg.Margin)
	defer d.shutdown(logger)
	for {
		wake := d.tick(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-d.clock.After(wake):
		}
	}
}

// tick reads the Leases once, renews what is due, releases or acquires shards towards the fair
// share, and returns how long to wait until the next tick.
func (d *Dynamic) tick(ctx context.Context) time.Duration {
	logger := klog.FromContext(ctx)
	leases, err := d.list(ctx)
	now := d.clock.Now()
	if err != nil {
		// Renewing needs no listing; nothing is taken or given away on a stale view. Shards not
		// renewed in time end on their timers.
		logger.Error(err, "Listing the sharding Leases failed")
		d.finishReleases(ctx, now)
		d.fire(d.renewHeld(ctx, now))
		return d.cfg.RenewPeriod / 2
	}
	members, shards := d.split(leases)
	d.renewMembership(ctx, members[d.memberName], now)
	d.collectStaleMembers(ctx, members, now)
	replicas := d.liveReplicas(members, now)
	fair := (d.cfg.Shards + replicas - 1) / replicas
	d.observe(shards, now)

	var events []shardEvent
	d.finishReleases(ctx, now)
	events = append(events, d.renewHeld(ctx, now)...)
	switch owned := int32(len(d.Owned())); {
	case owned > fair:
		events = append(events, d.beginRelease(owned-fair, now)...)
	case owned < fair:
		events = append(events, d.acquire(ctx, shards, fair-owned, now)...)
	}
	for _, e := range events {
		logger.Info("Shard ownership changed", "shard", e.shard, "owned", e.gained, "replicas", replicas, "fairShare", fair, "ownedShards", d.Owned())
	}
	d.fire(events)
	return d.nextWake(members, shards)
}

// list reads the Leases of the namespace.
func (d *Dynamic) list(ctx context.Context) ([]coordinationv1.Lease, error) {
	ctx, cancel := context.WithTimeout(ctx, d.cfg.RenewPeriod)
	defer cancel()
	list, err := d.cfg.Leases.Leases(d.cfg.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing Leases in %s: %w", d.cfg.Namespace, err)
	}
	return list.Items, nil
}

// split sorts the Leases into membership Leases by name and shard Leases by shard.
func (d *Dynamic) split(leases []coordinationv1.Lease) (map[string]*coordinationv1.Lease, map[int32]*coordinationv1.Lease) {
	members := map[string]*coordinationv1.Lease{}
	shards := map[int32]*coordinationv1.Lease{}
	for i := range leases {
		l := &leases[i]
		switch {
		case strings.HasPrefix(l.Name, ReplicaLeasePrefix):
			members[l.Name] = l
		case strings.HasPrefix(l.Name, ShardLeasePrefix):
			n, err := strconv.ParseInt(strings.TrimPrefix(l.Name, ShardLeasePrefix), 10, 32)
			if err == nil && n >= 0 && int32(n) < d.cfg.Shards && l.Name == shardLeaseName(int32(n)) {
				shards[int32(n)] = l
			}
		}
	}
	return members, shards
}

// shardLeaseName is the name of a shard's Lease.
func shardLeaseName(shard int32) string { return ShardLeasePrefix + strconv.Itoa(int(shard)) }

// renewMembership writes this replica's membership Lease when a renewal is due.
func (d *Dynamic) renewMembership(ctx context.Context, listed *coordinationv1.Lease, now time.Time) {
	if d.member != nil && now.Before(d.memberRenewedAt.Add(d.cfg.RenewPeriod)) {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, d.cfg.RenewPeriod)
	defer cancel()
	leases := d.cfg.Leases.Leases(d.cfg.Namespace)
	var out *coordinationv1.Lease
	var err error
	if listed == nil {
		lease := d.newLease(d.memberName, now)
		out, err = leases.Create(ctx, lease, metav1.CreateOptions{})
	} else {
		lease := listed.DeepCopy()
		d.stamp(lease, now, false)
		out, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
	}
	if err != nil {
		// The next tick retries with what it lists then; a missing membership only lowers the
		// others' count of replicas, never the safety of the shard Leases.
		klog.FromContext(ctx).V(2).Info("Renewing the membership Lease failed", "lease", d.memberName, "err", err)
		return
	}
	d.member, d.memberRenewedAt = out, now
}

// collectStaleMembers deletes membership Leases of replicas gone for staleMembershipFactor lease
// durations; the resourceVersion precondition spares one that came back meanwhile.
func (d *Dynamic) collectStaleMembers(ctx context.Context, members map[string]*coordinationv1.Lease, now time.Time) {
	for name, l := range members {
		if name == d.memberName || l.Spec.RenewTime == nil ||
			now.Before(l.Spec.RenewTime.Add(staleMembershipFactor*d.leaseDuration(l))) {
			continue
		}
		rv := l.ResourceVersion
		reqCtx, cancel := context.WithTimeout(ctx, d.cfg.RenewPeriod)
		err := d.cfg.Leases.Leases(d.cfg.Namespace).Delete(reqCtx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &rv}})
		cancel()
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			klog.FromContext(ctx).V(2).Info("Deleting a stale membership Lease failed", "lease", name, "err", err)
		}
	}
}

// liveReplicas counts the replicas whose membership Lease is unexpired on the local clock, this
// one always included. The count only sets the fair share; exclusivity rests on the shard Leases.
func (d *Dynamic) liveReplicas(members map[string]*coordinationv1.Lease, now time.Time) int32 {
	n := int32(1)
	for name, l := range members {
		if name == d.memberName || holder(l) == "" || l.Spec.RenewTime == nil {
			continue
		}
		if now.Before(l.Spec.RenewTime.Add(d.leaseDuration(l))) {
			n++
		}
	}
	return n
}

// observe records when each shard Lease record was first seen.
func (d *Dynamic) observe(shards map[int32]*coordinationv1.Lease, now time.Time) {
	seen := map[string]bool{}
	for _, l := range shards {
		seen[l.Name] = true
		if o, ok := d.observed[l.Name]; !ok || o.resourceVersion != l.ResourceVersion {
			d.observed[l.Name] = observation{resourceVersion: l.ResourceVersion, at: now}
		}
	}
	for name := range d.observed {
		if !seen[name] {
			delete(d.observed, name)
		}
	}
}

// takeable reports whether a shard Lease this replica does not hold may be taken: it is free, or
// its record has not changed for a whole lease duration since this replica first saw it.
func (d *Dynamic) takeable(l *coordinationv1.Lease, now time.Time) bool {
	if holder(l) == "" {
		return true
	}
	o, ok := d.observed[l.Name]
	return ok && o.resourceVersion == l.ResourceVersion && !now.Before(o.at.Add(d.leaseDuration(l)))
}

// leaseDuration is the longer of the Lease's own duration and this replica's.
func (d *Dynamic) leaseDuration(l *coordinationv1.Lease) time.Duration {
	dur := d.cfg.LeaseDuration
	if l.Spec.LeaseDurationSeconds != nil {
		dur = max(dur, time.Duration(*l.Spec.LeaseDurationSeconds)*time.Second)
	}
	return dur
}

// holder is the Lease's holder identity, "" when free.
func holder(l *coordinationv1.Lease) string {
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// newLease is a Lease named name, held by this replica since now.
func (d *Dynamic) newLease(name string, now time.Time) *coordinationv1.Lease {
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: d.cfg.Namespace}}
	d.stamp(l, now, true)
	return l
}

// stamp makes l held by this replica, renewed at now. Acquiring sets the acquire time; taking a
// Lease from another holder counts a transition.
func (d *Dynamic) stamp(l *coordinationv1.Lease, now time.Time, acquire bool) {
	t := metav1.NewMicroTime(now)
	if acquire || holder(l) != d.cfg.Identity {
		if h := holder(l); h != "" && h != d.cfg.Identity {
			transitions := int32(1)
			if l.Spec.LeaseTransitions != nil {
				transitions += *l.Spec.LeaseTransitions
			}
			l.Spec.LeaseTransitions = &transitions
		}
		l.Spec.AcquireTime = &t
	}
	id, secs := d.cfg.Identity, d.leaseSeconds
	l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds, l.Spec.RenewTime = &id, &secs, &t
}

// renewHeld renews the held shard Leases whose renewal is due. A conflict or a vanished Lease
// means another replica took it: the shard is dropped at once.
func (d *Dynamic) renewHeld(ctx context.Context, now time.Time) []shardEvent {
	type due struct {
		shard int32
		gen   uint64
		lease *coordinationv1.Lease
	}
	var todo []due
	d.mu.Lock()
	for shard, s := range d.held {
		if s.releaseAt.IsZero() && !now.Before(s.renewedAt.Add(d.cfg.RenewPeriod)) {
			todo = append(todo, due{shard, s.gen, s.lease.DeepCopy()})
		}
	}
	d.mu.Unlock()
	var events []shardEvent
	for _, t := range todo {
		start := d.clock.Now()
		d.stamp(t.lease, start, false)
		out, err := d.update(ctx, t.lease)
		switch {
		case err == nil:
			events = append(events, d.setHeld(t.shard, out, start)...)
		case apierrors.IsConflict(err) || apierrors.IsNotFound(err):
			klog.FromContext(ctx).Info("Shard Lease taken by another replica", "shard", t.shard, "err", err)
			events = append(events, d.drop(t.shard, t.gen, fmt.Errorf("shard %d: lease taken over: %w", t.shard, ErrShardLost))...)
		default:
			// The shard stays owned until its validity ends; the next tick retries.
			klog.FromContext(ctx).Error(err, "Renewing a shard Lease failed", "shard", t.shard)
		}
	}
	return events
}

// update writes a Lease with optimistic concurrency (its resourceVersion).
func (d *Dynamic) update(ctx context.Context, l *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	ctx, cancel := context.WithTimeout(ctx, d.cfg.RenewPeriod)
	defer cancel()
	return d.cfg.Leases.Leases(d.cfg.Namespace).Update(ctx, l, metav1.UpdateOptions{})
}

// beginRelease stops owning the n highest held shards above the fair share; finishReleases frees
// their Leases one renew period later.
func (d *Dynamic) beginRelease(n int32, now time.Time) []shardEvent {
	d.mu.Lock()
	defer d.mu.Unlock()
	var owned []int32
	for shard, s := range d.held {
		if s.owned(now) {
			owned = append(owned, shard)
		}
	}
	slices.Sort(owned)
	// A shard may have expired since the caller counted.
	n = min(n, int32(len(owned)))
	var events []shardEvent
	for _, shard := range owned[len(owned)-int(n):] {
		s := d.held[shard]
		s.releaseAt = now.Add(d.cfg.RenewPeriod)
		s.cancel(fmt.Errorf("shard %d released to rebalance: %w", shard, ErrShardLost))
		metrics.SetShardOwned(shard, false)
		events = append(events, shardEvent{shard: shard})
	}
	return events
}

// finishReleases frees the Leases whose release time has come: holder cleared, so another
// replica may take them at once.
func (d *Dynamic) finishReleases(ctx context.Context, now time.Time) {
	type due struct {
		shard int32
		gen   uint64
		lease *coordinationv1.Lease
	}
	var todo []due
	d.mu.Lock()
	for shard, s := range d.held {
		if !s.releaseAt.IsZero() && !now.Before(s.releaseAt) {
			todo = append(todo, due{shard, s.gen, s.lease.DeepCopy()})
		}
	}
	d.mu.Unlock()
	for _, t := range todo {
		t.lease.Spec.HolderIdentity = nil
		_, err := d.update(ctx, t.lease)
		if err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			klog.FromContext(ctx).Error(err, "Releasing a shard Lease failed; retrying", "shard", t.shard)
			continue
		}
		klog.FromContext(ctx).Info("Released shard Lease", "shard", t.shard)
		d.drop(t.shard, t.gen, nil)
	}
}

// acquire takes up to want shard Leases that are missing, free or expired, starting at a shard
// derived from the identity so that replicas do not all race for the same one.
func (d *Dynamic) acquire(ctx context.Context, shards map[int32]*coordinationv1.Lease, want int32, now time.Time) []shardEvent {
	h := fnv.New32a()
	_, _ = h.Write([]byte(d.cfg.Identity))
	first := int32(h.Sum32() % uint32(d.cfg.Shards))
	var events []shardEvent
	for k := range d.cfg.Shards {
		if want == 0 {
			break
		}
		shard := (first + k) % d.cfg.Shards
		d.mu.Lock()
		_, held := d.held[shard]
		d.mu.Unlock()
		if held {
			continue
		}
		listed := shards[shard]
		if listed != nil && !d.takeable(listed, now) {
			continue
		}
		start := d.clock.Now()
		reqCtx, cancel := context.WithTimeout(ctx, d.cfg.RenewPeriod)
		var out *coordinationv1.Lease
		var err error
		if listed == nil {
			out, err = d.cfg.Leases.Leases(d.cfg.Namespace).Create(reqCtx, d.newLease(shardLeaseName(shard), start), metav1.CreateOptions{})
		} else {
			lease := listed.DeepCopy()
			d.stamp(lease, start, true)
			out, err = d.cfg.Leases.Leases(d.cfg.Namespace).Update(reqCtx, lease, metav1.UpdateOptions{})
		}
		cancel()
		if err != nil {
			// Lost a race (conflict, already exists) or the API failed: try again next tick.
			klog.FromContext(ctx).V(2).Info("Acquiring a shard Lease failed", "shard", shard, "err", err)
			continue
		}
		ev := d.setHeld(shard, out, start)
		events = append(events, ev...)
		if len(ev) > 0 {
			want--
		}
	}
	return events
}

// setHeld records a successful write of a shard Lease made at start, arming the timer that ends the
// ownership when no renewal follows. A write that took too long to leave any validity owns nothing.
func (d *Dynamic) setHeld(shard int32, lease *coordinationv1.Lease, start time.Time) []shardEvent {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.clock.Now()
	validUntil := start.Add(d.cfg.LeaseDuration - d.cfg.Margin)
	s := d.held[shard]
	if !now.Before(validUntil) {
		if s != nil {
			return d.dropLocked(shard, fmt.Errorf("shard %d: renewal too slow: %w", shard, ErrShardLost))
		}
		return nil
	}
	var events []shardEvent
	if s == nil {
		s = &heldShard{}
		s.ctx, s.cancel = context.WithCancelCause(context.Background())
		d.held[shard] = s
		metrics.SetShardOwned(shard, true)
		events = append(events, shardEvent{shard: shard, gained: true})
	}
	s.lease, s.renewedAt, s.validUntil = lease, start, validUntil
	if s.timer != nil {
		s.timer.Stop()
	}
	d.gen++
	s.gen = d.gen
	gen := s.gen
	// The callback runs on its own goroutine: a fake clock calls it with its own lock held.
	s.timer = d.clock.AfterFunc(validUntil.Sub(now), func() { go d.expire(shard, gen) })
	return events
}

// expire ends the ownership of a shard whose validity ran out without a renewal.
func (d *Dynamic) expire(shard int32, gen uint64) {
	events := d.drop(shard, gen, fmt.Errorf("shard %d: lease not renewed in time: %w", shard, ErrShardLost))
	if len(events) > 0 {
		klog.Background().WithName("sharding").Info("Shard ownership expired", "shard", shard)
	}
	d.fire(events)
}

// drop forgets a held shard if it is still the generation gen.
func (d *Dynamic) drop(shard int32, gen uint64, cause error) []shardEvent {
	d.mu.Lock()
	defer d.mu.Unlock()
	if s := d.held[shard]; s == nil || s.gen != gen {
		return nil
	}
	return d.dropLocked(shard, cause)
}

// dropLocked forgets a held shard, cancelling its context; a shard being released was reported
// lost already.
func (d *Dynamic) dropLocked(shard int32, cause error) []shardEvent {
	s := d.held[shard]
	delete(d.held, shard)
	if s.timer != nil {
		s.timer.Stop()
	}
	if !s.releaseAt.IsZero() {
		return nil
	}
	if cause == nil {
		cause = fmt.Errorf("shard %d: %w", shard, ErrShardLost)
	}
	s.cancel(cause)
	metrics.SetShardOwned(shard, false)
	return []shardEvent{{shard: shard}}
}

// fire calls the callbacks; never with the lock held, as they may call Owns.
func (d *Dynamic) fire(events []shardEvent) {
	if len(events) == 0 {
		return
	}
	d.mu.Lock()
	onGain, onLose := slices.Clone(d.onGain), slices.Clone(d.onLose)
	d.mu.Unlock()
	for _, e := range events {
		fs := onLose
		if e.gained {
			fs = onGain
		}
		for _, f := range fs {
			f(e.shard)
		}
	}
}

// nextWake is the time until the next tick: the next renewal or release due, or the moment a
// Lease of another replica could expire (a shard to take over, a replica to stop counting), at
// most RenewPeriod. A write that is overdue (it failed) is retried after a quarter period.
func (d *Dynamic) nextWake(members map[string]*coordinationv1.Lease, shards map[int32]*coordinationv1.Lease) time.Duration {
	now := d.clock.Now()
	next := now.Add(d.cfg.RenewPeriod)
	consider := func(t time.Time) {
		if !t.After(now) {
			t = now.Add(d.cfg.RenewPeriod / 4)
		}
		if t.Before(next) {
			next = t
		}
	}
	if d.member != nil {
		consider(d.memberRenewedAt.Add(d.cfg.RenewPeriod))
	} else {
		consider(now)
	}
	d.mu.Lock()
	for _, s := range d.held {
		if s.releaseAt.IsZero() {
			consider(s.renewedAt.Add(d.cfg.RenewPeriod))
		} else {
			consider(s.releaseAt)
		}
	}
	for shard, l := range shards {
		if _, ours := d.held[shard]; ours || holder(l) == "" {
			continue
		}
		if o, ok := d.observed[l.Name]; ok {
			if exp := o.at.Add(d.leaseDuration(l)); exp.After(now) {
				consider(exp)
			}
		}
	}
	d.mu.Unlock()
	for name, l := range members {
		if name != d.memberName && l.Spec.RenewTime != nil {
			if exp := l.Spec.RenewTime.Add(d.leaseDuration(l)); exp.After(now) {
				consider(exp)
			}
		}
	}
	return max(next.Sub(now), minWake)
}

// shutdown ends every ownership, frees the Leases still valid and deletes the membership Lease,
// so the other replicas need not wait for expiry.
func (d *Dynamic) shutdown(logger klog.Logger) {
	d.mu.Lock()
	now := d.clock.Now()
	var release []*coordinationv1.Lease
	var events []shardEvent
	for shard, s := range d.held {
		if now.Before(s.validUntil) {
			release = append(release, s.lease.DeepCopy())
		}
		events = append(events, d.dropLocked(shard, fmt.Errorf("shard %d: replica stopping: %w", shard, ErrShardLost))...)
	}
	d.mu.Unlock()
	d.fire(events)
	ctx, cancel := context.WithTimeout(context.Background(), d.cfg.RenewPeriod)
	defer cancel()
	leases := d.cfg.Leases.Leases(d.cfg.Namespace)
	for _, l := range release {
		l.Spec.HolderIdentity = nil
		if _, err := leases.Update(ctx, l, metav1.UpdateOptions{}); err != nil {
			logger.Info("Releasing a shard Lease on shutdown failed; it will expire", "lease", l.Name, "err", err)
		}
	}
	if d.member != nil {
		rv := d.member.ResourceVersion
		err := leases.Delete(ctx, d.memberName, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &rv}})
		if err != nil && !apierrors.IsNotFound(err) {
			logger.Info("Deleting the membership Lease on shutdown failed; it will expire", "lease", d.memberName, "err", err)
		}
	}
	logger.Info("Stopped dynamic sharding", "released", len(release))
}
