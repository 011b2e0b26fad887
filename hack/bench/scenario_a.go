package main

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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

// scenarioA applies one Release of cfg.objects objects on the live target, then the same objects
// with the plain SSA loop, cfg.roundsA times (each round in namespaces of its own), and reports
// the round of median time of each: one round of a few seconds on two shared cores is noise.
func (b *bench) scenarioA(ctx context.Context) (*table, error) {
	say("scenario a: one Release of %d objects on the live target, %d rounds", b.cfg.objects, b.cfg.roundsA)
	objs, stream, err := bigObjects(b.cfg.objects)
	if err != nil {
		return nil, err
	}
	var convoys, ssas []usage
	var before, after sample
	for i := range b.cfg.roundsA {
		convoy, ssa, s0, s1, err := b.roundA(ctx, i, objs, stream)
		if err != nil {
			return nil, fmt.Errorf("round %d: %w", i+1, err)
		}
		say("  round %d: convoy %.1f s, plain SSA loop %.1f s", i+1, convoy.seconds, ssa.seconds)
		convoys, ssas = append(convoys, convoy), append(ssas, ssa)
		if i == 0 {
			before = s0
		}
		after = s1
	}
	convoy, ssa := median(convoys), median(ssas)
	t := &table{
		title: fmt.Sprintf("(a) one Release of %d objects (ConfigMaps and Deployments) on the live target, median of %d rounds",
			len(objs), len(convoys)),
		rows: []row{
			{run: "convoy", releases: 1, objects: len(objs), usage: convoy},
			{run: "plain SSA loop", releases: 1, objects: len(objs), usage: ssa},
		},
		ratioTo: 1,
	}
	t.note("Seconds of each round: convoy %s; plain SSA loop %s.", secondsList(convoys), secondsList(ssas))
	t.note("convoy applied %s in %s reconciles over all rounds; in the median round %s.",
		describeApplied(before, after), describeReconciles(before, after), describeThrottle(convoy))
	if floor := limiterFloor(convoy, b.cfg.qps, b.cfg.burst); floor > ssa.seconds {
		t.note("The client-side limiter alone (%g QPS, burst %d) holds convoy's %.0f target requests for %.1f s and the loop's %.0f for %.1f s: "+
			"the dry-run gate sends every object once as a dry run before it is applied, so at a QPS that binds, %.1fx is the floor "+
			"(-qps=1000 -burst=2000 compares them where the API server is the limit).",
			b.cfg.qps, b.cfg.burst, targetRequests(convoy), floor, targetRequests(ssa), limiterFloor(ssa, b.cfg.qps, b.cfg.burst),
			floor/max(limiterFloor(ssa, b.cfg.qps, b.cfg.burst), ssa.seconds))
	}
	ratio := convoy.seconds / ssa.seconds
	t.note("Goal: within 1.3x of the plain SSA loop: %.2fx, %s.", ratio, verdict(ratio <= 1.3))
	return t, nil
}

// roundA is round i of scenario a: a Release of objs (whose YAML is stream) created in namespace
// bench-a-<i> and timed until Applied, then objs applied by the plain SSA loop into bench-a-ssa-<i>.
// It returns both costs and the controller's samples around the Release.
func (b *bench) roundA(ctx context.Context, i int, objs []*unstructured.Unstructured, stream string) (usage, usage, sample, sample, error) {
	env := b.env
	ns, nsSSA := fmt.Sprintf("%s-%d", namespaceA, i), fmt.Sprintf("%s-%d", namespaceASSA, i)
	fail := func(err error) (usage, usage, sample, sample, error) {
		return usage{}, usage{}, sample{}, sample{}, err
	}
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
	ssa, err := runSSABaseline(ctx, []ssaJob{{target: env.Live, objs: objs}}, nsSSA, float32(b.cfg.qps), b.cfg.burst)
	if err != nil {
		return fail(err)
	}
	return convoy, ssa, before, after, nil
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
