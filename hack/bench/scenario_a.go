package main

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
)

// Names of scenario a.
const (
	namespaceA    = "bench-a"
	namespaceASSA = "bench-a-ssa"
	releaseA      = "big"
)

// bigObjects returns n objects, alternately a ConfigMap and a Deployment with 0 replicas (so
// the live cluster's controllers make ReplicaSets but no Pods), and the same as one YAML stream.
func bigObjects(n int) ([]*unstructured.Unstructured, string, error) {
	var objs []*unstructured.Unstructured
	var docs []string
	for i := range n {
		var obj map[string]any
		if i%2 == 0 {
			obj = map[string]any{
				"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": fmt.Sprintf("cm-%04d", i), "labels": map[string]any{"app": "bench"}},
				"data": map[string]any{
					"index":       fmt.Sprint(i),
					"config.yaml": strings.Repeat(fmt.Sprintf("key-%d: value\n", i), 8),
				},
			}
		} else {
			name := fmt.Sprintf("deploy-%04d", i)
			labels := map[string]any{"app": name}
			obj = map[string]any{
				"apiVersion": "apps/v1", "kind": "Deployment",
				"metadata": map[string]any{"name": name, "labels": map[string]any{"app": "bench"}},
				"spec": map[string]any{
					"replicas": int64(0),
					"selector": map[string]any{"matchLabels": labels},
					"template": map[string]any{
						"metadata": map[string]any{"labels": labels},
						"spec": map[string]any{"containers": []any{map[string]any{
							"name": "app", "image": "registry.k8s.io/pause:3.10",
							"env": []any{map[string]any{"name": "INDEX", "value": fmt.Sprint(i)}},
						}}},
					},
				},
			}
		}
		doc, err := yaml.Marshal(obj)
		if err != nil {
			return nil, "", fmt.Errorf("marshal object %d: %w", i, err)
		}
		docs = append(docs, string(doc))
		objs = append(objs, &unstructured.Unstructured{Object: obj})
	}
	return objs, strings.Join(docs, "---\n"), nil
}

// liftedQPS and liftedBurst are the client-side limits of scenario a's second pass: high enough
// that the API server, not the token bucket, is the limit.
const (
	liftedQPS   = 1000
	liftedBurst = 2000
)

// scenarioA applies one Release of cfg.objects objects on the live target, then the same objects
// with the plain SSA loop, cfg.roundsA times, at the run's QPS and burst. When the client-side
// limiter bound convoy there, it restarts the controller and does it again with the limits lifted
// for both (liftedQPS, liftedBurst), then restores the run's.
func (b *bench) scenarioA(ctx context.Context) ([]*table, error) {
	say("scenario a: one Release of %d objects on the live target, %d rounds", b.cfg.objects, b.cfg.roundsA)
	objs, stream, err := bigObjects(b.cfg.objects)
	if err != nil {
		return nil, err
	}
	t, bound, err := b.passA(ctx, objs, stream, 0, b.cfg.qps, b.cfg.burst)
	if err != nil || !bound {
		return []*table{t}, err
	}
	say("  the client-side limiter bound convoy: again with %d QPS and burst %d, for convoy and the loop", liftedQPS, liftedBurst)
	if err := b.restartController(ctx, liftedQPS, liftedBurst); err != nil {
		return nil, err
	}
	lifted, _, err := b.passA(ctx, objs, stream, b.cfg.roundsA, liftedQPS, liftedBurst)
	if err != nil {
		return nil, err
	}
	// Without its Releases, the controller restarted for b starts as the first one did: it would
	// otherwise reconcile them all on start and keep that memory into b's peak RSS.
	if err := b.deleteReleasesA(ctx); err != nil {
		return nil, err
	}
	if err := b.restartController(ctx, b.cfg.qps, b.cfg.burst); err != nil {
		return nil, err
	}
	return []*table{t, lifted}, nil
}

// deleteReleasesA deletes the Releases of scenario a and waits until they are gone (their
// objects pruned, their finalizers removed).
func (b *bench) deleteReleasesA(ctx context.Context) error {
	releases := b.env.Convoy().CoreV1alpha1().Releases("")
	left := 0
	err := wait.PollUntilContextTimeout(ctx, time.Second, b.cfg.timeout, true, func(ctx context.Context) (bool, error) {
		list, err := releases.List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, fmt.Errorf("list Releases: %w", err)
		}
		left = 0
		for _, rel := range list.Items {
			if !strings.HasPrefix(rel.Namespace, namespaceA+"-") {
				continue
			}
			left++
			if rel.DeletionTimestamp == nil {
				err := b.env.Convoy().CoreV1alpha1().Releases(rel.Namespace).Delete(ctx, rel.Name, metav1.DeleteOptions{})
				if err != nil && !apierrors.IsNotFound(err) {
					return false, fmt.Errorf("delete Release %s/%s: %w", rel.Namespace, rel.Name, err)
				}
			}
		}
		return left == 0, nil
	})
	if err != nil {
		return fmt.Errorf("delete the Releases of scenario a (%d left, within %s): %w", left, b.cfg.timeout, err)
	}
	return nil
}

// passA runs cfg.roundsA rounds of scenario a (numbered from first, each in namespaces of its
// own) with the controller's and the loop's target QPS and burst at qps and burst, and returns
// the table of the round of median time of each (one round of a few seconds on two shared cores
// is noise) and whether the client-side limiter bound convoy.
func (b *bench) passA(ctx context.Context, objs []*unstructured.Unstructured, stream string, first int, qps float64, burst int) (*table, bool, error) {
	var convoys, ssas []usage
	var before, after sample
	for i := first; i < first+b.cfg.roundsA; i++ {
		r, err := b.roundA(ctx, i, objs, stream, qps, burst)
		if err != nil {
			return nil, false, fmt.Errorf("round %d: %w", i+1, err)
		}
		say("  round %d (%g QPS, burst %d): convoy %.1f s, plain SSA loop %.1f s", i+1, qps, burst, r.convoy.seconds, r.ssa.seconds)
		convoys, ssas = append(convoys, r.convoy), append(ssas, r.ssa)
		if i == first {
			before = r.before
		}
		after = r.after
	}
	convoy, ssa := median(convoys), median(ssas)
	t := &table{
		title: fmt.Sprintf("(a) one Release of %d objects (ConfigMaps and Deployments) on the live target, %g QPS and burst %d to it, median of %d rounds",
			len(objs), qps, burst, len(convoys)),
		rows: []row{
			{run: "convoy", releases: 1, objects: len(objs), usage: convoy},
			{run: "plain SSA loop", releases: 1, objects: len(objs), usage: ssa},
		},
		ratioTo: 1,
	}
	t.note("Seconds of each round: convoy %s; plain SSA loop %s.", secondsList(convoys), secondsList(ssas))
	t.note("convoy applied %s in %s reconciles over all rounds; in the median round %s.",
		describeApplied(before, after), describeReconciles(before, after), describeThrottle(convoy))
	ratio := convoy.seconds / ssa.seconds
	floor, ssaFloor := limiterFloor(convoy, qps, burst), limiterFloor(ssa, qps, burst)
	bound := floor > ssa.seconds
	if !bound {
		t.note("Goal: within 1.3x of the plain SSA loop: %.2fx, %s.", ratio, verdict(ratio <= 1.3))
		return t, false, nil
	}
	t.note("The client-side limiter alone holds convoy's %.0f target requests for %.1f s and the loop's %.0f for %.1f s: "+
		"the dry-run gate sends every object once as a dry run before it is applied, so at a QPS that binds, %.1fx is the floor.",
		targetRequests(convoy), floor, targetRequests(ssa), ssaFloor, floor/max(ssaFloor, ssa.seconds))
	t.note("Goal: within 1.3x of the plain SSA loop: %.2fx here, where the token bucket is the limit; "+
		"the next table compares them where the API server is.", ratio)
	return t, true, nil
}

// roundResult is one round of scenario a: both costs and the controller's samples around convoy's.
type roundResult struct {
	convoy, ssa   usage
	before, after sample
}

// roundA is round i of scenario a: a Release of objs (whose YAML is stream) created in namespace
// bench-a-<i> and timed until Applied, then objs applied by the plain SSA loop into bench-a-ssa-<i>
// with qps and burst.
func (b *bench) roundA(ctx context.Context, i int, objs []*unstructured.Unstructured, stream string, qps float64, burst int) (roundResult, error) {
	env := b.env
	ns, nsSSA := fmt.Sprintf("%s-%d", namespaceA, i), fmt.Sprintf("%s-%d", namespaceASSA, i)
	fail := func(err error) (roundResult, error) { return roundResult{}, err }
	if err := createNamespaces(ctx, ns, env.Mgmt, env.Live); err != nil {
		return fail(err)
	}
	if err := createNamespaces(ctx, nsSSA, env.Live); err != nil {
		return fail(err)
	}
	if err := b.registerClusters(ctx, ns, env.Live); err != nil {
		return fail(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: releaseA + "-manifests", Namespace: ns},
		Data: map[string]string{"objects.yaml": stream}}
	if _, err := env.Mgmt.Kube.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		return fail(fmt.Errorf("create source ConfigMap: %w", err))
	}
	watch, err := b.watchReleases(ctx, ns)
	if err != nil {
		return fail(err)
	}
	defer watch.close()

	rel := &v1alpha1.Release{
		ObjectMeta: metav1.ObjectMeta{Name: releaseA, Namespace: ns},
		Spec: v1alpha1.ReleaseSpec{
			ClusterRef:      v1alpha1.LocalObjectReference{Name: env.Live.Name},
			TargetNamespace: ns,
			Source:          v1alpha1.ReleaseSource{ConfigMapRef: &v1alpha1.LocalObjectReference{Name: cm.Name}},
			ContentType:     v1alpha1.ContentTypeManifests,
			SyncPolicy:      v1alpha1.SyncPolicy{Interval: &metav1.Duration{Duration: time.Hour}},
		},
	}
	before, err := b.sampler.take(ctx)
	if err != nil {
		return fail(err)
	}
	start := time.Now()
	if _, err := env.Convoy().CoreV1alpha1().Releases(ns).Create(ctx, rel, metav1.CreateOptions{}); err != nil {
		return fail(fmt.Errorf("create Release: %w", err))
	}
	done, err := watch.waitApplied(ctx, 1, nil, b.cfg.timeout)
	if err != nil {
		return fail(err)
	}
	after, err := b.sampler.take(ctx)
	if err != nil {
		return fail(err)
	}
	convoy := between(before, after, b.mgmtHost)
	convoy.seconds = done.Sub(start).Seconds()
	ssa, err := runSSABaseline(ctx, []ssaJob{{target: env.Live, objs: objs}}, nsSSA, float32(qps), burst)
	if err != nil {
		return fail(err)
	}
	return roundResult{convoy: convoy, ssa: ssa, before: before, after: after}, nil
}

// median returns the usage of median seconds (the lower middle one of an even count).
func median(us []usage) usage {
	sorted := slices.SortedFunc(slices.Values(us), func(a, b usage) int { return cmp.Compare(a.seconds, b.seconds) })
	return sorted[(len(sorted)-1)/2]
}

// targetRequests is every request u sent to targets.
func targetRequests(u usage) float64 { return u.targetReads + u.targetWrites + u.targetDryRuns }

// limiterFloor is how long a token bucket of qps and burst takes to let u's target requests
// through: the least time they can take at those settings.
func limiterFloor(u usage, qps float64, burst int) float64 {
	return max(0, targetRequests(u)-float64(burst)) / qps
}

// secondsList formats the seconds of us in order.
func secondsList(us []usage) string {
	parts := make([]string, len(us))
	for i, u := range us {
		parts[i] = fmt.Sprintf("%.1f", u.seconds)
	}
	return strings.Join(parts, ", ")
}

// describeReconciles formats the release reconciles between two samples, by Applied reason.
func describeReconciles(a, b sample) string {
	var parts []string
	for _, reason := range sortedKeys(b.byReason) {
		if d := b.byReason[reason] - a.byReason[reason]; d > 0 {
			parts = append(parts, fmt.Sprintf("%.0f %s", d, reason))
		}
	}
	if len(parts) == 0 {
		return "no"
	}
	return fmt.Sprintf("%.0f (%s)", b.reconciles-a.reconciles, strings.Join(parts, ", "))
}

// describeThrottle formats the controller's waits for its client-side rate limiters.
func describeThrottle(u usage) string {
	return fmt.Sprintf("requests waited %.1f s (mgmt) and %.1f s (targets) for the client-side rate limiters, summed over requests",
		u.mgmtThrottled, u.targetThrottled)
}

// describeApplied formats convoy_objects_applied_total's delta by action.
func describeApplied(a, b sample) string {
	var parts []string
	for _, action := range sortedKeys(b.applied) {
		if d := b.applied[action] - a.applied[action]; d > 0 {
			parts = append(parts, fmt.Sprintf("%.0f %s", d, action))
		}
	}
	if len(parts) == 0 {
		return "no object"
	}
	return strings.Join(parts, ", ")
}
