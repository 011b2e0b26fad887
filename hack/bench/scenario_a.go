package main

import (
	"context"
	"fmt"
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
// with the plain SSA loop.
func (b *bench) scenarioA(ctx context.Context) (*table, error) {
	say("scenario a: one Release of %d objects on the live target", b.cfg.objects)
	env := b.env
	if err := createNamespaces(ctx, namespaceA, env.Mgmt, env.Live); err != nil {
		return nil, err
	}
	if err := createNamespaces(ctx, namespaceASSA, env.Live); err != nil {
		return nil, err
	}
	if err := b.registerClusters(ctx, namespaceA, env.Live); err != nil {
		return nil, err
	}
	objs, stream, err := bigObjects(b.cfg.objects)
	if err != nil {
		return nil, err
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: releaseA + "-manifests", Namespace: namespaceA},
		Data: map[string]string{"objects.yaml": stream}}
	if _, err := env.Mgmt.Kube.CoreV1().ConfigMaps(namespaceA).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("create source ConfigMap: %w", err)
	}
	watch, err := b.watchReleases(ctx, namespaceA)
	if err != nil {
		return nil, err
	}
	defer watch.close()

	rel := &v1alpha1.Release{
		ObjectMeta: metav1.ObjectMeta{Name: releaseA, Namespace: namespaceA},
		Spec: v1alpha1.ReleaseSpec{
			ClusterRef:      v1alpha1.LocalObjectReference{Name: env.Live.Name},
			TargetNamespace: namespaceA,
			Source:          v1alpha1.ReleaseSource{ConfigMapRef: &v1alpha1.LocalObjectReference{Name: cm.Name}},
			ContentType:     v1alpha1.ContentTypeManifests,
			SyncPolicy:      v1alpha1.SyncPolicy{Interval: &metav1.Duration{Duration: time.Hour}},
		},
	}
	before, err := b.sampler.take(ctx)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	if _, err := env.Convoy().CoreV1alpha1().Releases(namespaceA).Create(ctx, rel, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("create Release: %w", err)
	}
	done, err := watch.waitApplied(ctx, 1, nil, b.cfg.timeout)
	if err != nil {
		return nil, err
	}
	after, err := b.sampler.take(ctx)
	if err != nil {
		return nil, err
	}
	convoy := between(before, after, b.mgmtHost)
	convoy.seconds = done.Sub(start).Seconds()
	say("  convoy: %.1f s; now the plain SSA loop", convoy.seconds)

	ssa, err := runSSABaseline(ctx, []ssaJob{{target: env.Live, objs: objs}}, namespaceASSA, float32(b.cfg.qps), b.cfg.burst)
	if err != nil {
		return nil, err
	}
	t := &table{
		title: fmt.Sprintf("(a) one Release of %d objects (ConfigMaps and Deployments) on the live target", len(objs)),
		rows: []row{
			{run: "convoy", releases: 1, objects: len(objs), usage: convoy},
			{run: "plain SSA loop", releases: 1, objects: len(objs), usage: ssa},
		},
		ratioTo: 1,
	}
	t.note("convoy applied %s in %s reconciles; %s.", describeApplied(before, after), describeReconciles(before, after), describeThrottle(convoy))
	ratio := convoy.seconds / ssa.seconds
	t.note("Goal: within 1.3x of the plain SSA loop: %.2fx, %s.", ratio, verdict(ratio <= 1.3))
	return t, nil
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
