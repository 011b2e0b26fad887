package e2e

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	convoyv1alpha1 "github.com/kumodo/convoy/apis/core/v1alpha1"
	"github.com/kumodo/convoy/e2e/framework"
)

// Timeouts of the waits in the tests: generous, since the machine is shared; no test asserts
// a duration.
const (
	applyTimeout = 90 * time.Second
	quietPeriod  = 3 * time.Second
)

// ctx is the context of the tests' API calls.
var ctx = context.Background()

// releaseOption adjusts a Release before it is created.
type releaseOption func(*convoyv1alpha1.Release)

// withInterval makes the controller reconcile every d, so it sees source ConfigMap changes.
func withInterval(d time.Duration) releaseOption {
	return func(r *convoyv1alpha1.Release) { r.Spec.SyncPolicy.Interval = &metav1.Duration{Duration: d} }
}

// withPrune sets syncPolicy.prune.
func withPrune(prune bool) releaseOption {
	return func(r *convoyv1alpha1.Release) { r.Spec.SyncPolicy.Prune = &prune }
}

// withManualSync sets syncPolicy.mode Manual.
func withManualSync() releaseOption {
	return func(r *convoyv1alpha1.Release) { r.Spec.SyncPolicy.Mode = convoyv1alpha1.SyncModeManual }
}

// withKeepWorkloads sets deletionPolicy.keepWorkloads.
func withKeepWorkloads() releaseOption {
	return func(r *convoyv1alpha1.Release) { r.Spec.DeletionPolicy.KeepWorkloads = true }
}

// withBackoff sets a short retry backoff, so recovery after an outage does not wait minutes.
func withBackoff(initial, max time.Duration) releaseOption {
	return func(r *convoyv1alpha1.Release) {
		factor := int32(2)
		r.Spec.SyncPolicy.Backoff = &convoyv1alpha1.Backoff{
			Initial: &metav1.Duration{Duration: initial},
			Factor:  &factor,
			Max:     &metav1.Duration{Duration: max},
		}
	}
}

// createSource creates the manifests ConfigMap a Release renders, on mgmt.
func createSource(t *testing.T, ns, name string, data map[string]string) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Data: data}
	if _, err := env.Mgmt.Kube.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create source ConfigMap %s/%s: %v", ns, name, err)
	}
}

// updateSource replaces the data of a source ConfigMap.
func updateSource(t *testing.T, ns, name string, data map[string]string) {
	t.Helper()
	cms := env.Mgmt.Kube.CoreV1().ConfigMaps(ns)
	cm, err := cms.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get source ConfigMap %s/%s: %v", ns, name, err)
	}
	cm.Data = data
	if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update source ConfigMap %s/%s: %v", ns, name, err)
	}
}

// createRelease creates a Release of the manifests in ConfigMap source, applied to cluster
// with targetNamespace ns.
func createRelease(t *testing.T, ns, name, cluster, source string, opts ...releaseOption) {
	t.Helper()
	r := &convoyv1alpha1.Release{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: convoyv1alpha1.ReleaseSpec{
			ClusterRef:      convoyv1alpha1.LocalObjectReference{Name: cluster},
			TargetNamespace: ns,
			Source:          convoyv1alpha1.ReleaseSource{ConfigMapRef: &convoyv1alpha1.LocalObjectReference{Name: source}},
			ContentType:     convoyv1alpha1.ContentTypeManifests,
		},
	}
	for _, o := range opts {
		o(r)
	}
	if _, err := env.Convoy().CoreV1alpha1().Releases(ns).Create(ctx, r, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create Release %s/%s: %v", ns, name, err)
	}
}

// getRelease reads a Release from mgmt.
func getRelease(ns, name string) (*convoyv1alpha1.Release, error) {
	return env.Convoy().CoreV1alpha1().Releases(ns).Get(ctx, name, metav1.GetOptions{})
}

// deleteRelease deletes a Release.
func deleteRelease(t *testing.T, ns, name string) {
	t.Helper()
	if err := env.Convoy().CoreV1alpha1().Releases(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete Release %s/%s: %v", ns, name, err)
	}
}

// describeApplied summarises the Applied condition for failure messages.
func describeApplied(r *convoyv1alpha1.Release) string {
	c := meta.FindStatusCondition(r.Status.Conditions, convoyv1alpha1.ConditionApplied)
	if c == nil {
		return fmt.Sprintf("Release %s/%s has no Applied condition (generation %d, status %+v)", r.Namespace, r.Name, r.Generation, r.Status)
	}
	return fmt.Sprintf("Release %s/%s Applied=%s reason=%s message=%q (observedGeneration %d, generation %d)",
		r.Namespace, r.Name, c.Status, c.Reason, c.Message, c.ObservedGeneration, r.Generation)
}

// waitApplied waits until the Release's Applied condition has reason (for the current
// generation) and accept, if given, agrees; it returns the Release then.
func waitApplied(t *testing.T, ns, name, reason string, timeout time.Duration, accept func(*convoyv1alpha1.Release) (bool, string)) *convoyv1alpha1.Release {
	t.Helper()
	var out *convoyv1alpha1.Release
	framework.Eventually(t, timeout, func() (bool, string) {
		r, err := getRelease(ns, name)
		if err != nil {
			return false, fmt.Sprintf("get Release %s/%s: %v", ns, name, err)
		}
		c := meta.FindStatusCondition(r.Status.Conditions, convoyv1alpha1.ConditionApplied)
		if c == nil || c.Reason != reason || c.ObservedGeneration != r.Generation {
			return false, fmt.Sprintf("want reason %s; %s", reason, describeApplied(r))
		}
		if accept != nil {
			if ok, msg := accept(r); !ok {
				return false, fmt.Sprintf("reason %s but %s; %s", reason, msg, describeApplied(r))
			}
		}
		out = r
		return true, ""
	})
	return out
}

// appliedStatus returns the status of the Applied condition, or "" without one.
func appliedStatus(r *convoyv1alpha1.Release) metav1.ConditionStatus {
	if c := meta.FindStatusCondition(r.Status.Conditions, convoyv1alpha1.ConditionApplied); c != nil {
		return c.Status
	}
	return ""
}

// lastSuccessfulRef returns status.lastSuccessful.renderRef, or "".
func lastSuccessfulRef(r *convoyv1alpha1.Release) string {
	if r.Status.LastSuccessful == nil {
		return ""
	}
	return r.Status.LastSuccessful.RenderRef
}

// renderChanged accepts a Release whose last successful render is not old.
func renderChanged(old string) func(*convoyv1alpha1.Release) (bool, string) {
	return func(r *convoyv1alpha1.Release) (bool, string) {
		if ref := lastSuccessfulRef(r); ref == "" || ref == old {
			return false, fmt.Sprintf("lastSuccessful.renderRef is still %q", ref)
		}
		return true, ""
	}
}

// objRef names an object the way tests compare inventories with targets.
type objRef struct{ Group, Kind, Namespace, Name string }

func (o objRef) String() string {
	return strings.TrimPrefix(o.Group+"/", "/") + o.Kind + " " + o.Namespace + "/" + o.Name
}

// cmRef names a ConfigMap.
func cmRef(ns, name string) objRef { return objRef{Kind: "ConfigMap", Namespace: ns, Name: name} }

// inventory returns the ReleaseInventory's entries; found is false when it does not exist.
func inventory(ns, name string) (refs map[objRef]bool, found bool, err error) {
	inv, err := env.Convoy().CoreV1alpha1().ReleaseInventories(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return map[objRef]bool{}, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("get ReleaseInventory %s/%s: %w", ns, name, err)
	}
	refs = map[objRef]bool{}
	for _, e := range inv.Spec.Entries {
		refs[objRef{Group: e.Group, Kind: e.Kind, Namespace: e.Namespace, Name: e.Name}] = true
	}
	return refs, true, nil
}

// setDiff returns the members of a missing from b, sorted, at most 10 of them named.
func setDiff(a, b map[objRef]bool) (n int, sample string) {
	var missing []string
	for r := range a {
		if !b[r] {
			missing = append(missing, r.String())
		}
	}
	sort.Strings(missing)
	n = len(missing)
	if len(missing) > 10 {
		missing = append(missing[:10], "…")
	}
	return n, strings.Join(missing, ", ")
}

// configMapOnTarget reads a ConfigMap from a target cluster.
func configMapOnTarget(target *framework.APIServer, ns, name string) (*corev1.ConfigMap, error) {
	return target.Kube.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
}

// ownedConfigMaps lists the ConfigMaps on target carrying the owner annotation of Release
// ns/name.
func ownedConfigMaps(target *framework.APIServer, ns, name string) (map[objRef]bool, error) {
	list, err := target.Kube.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list ConfigMaps on %s: %w", target.Name, err)
	}
	out := map[objRef]bool{}
	for _, cm := range list.Items {
		if cm.Annotations[convoyv1alpha1.OwnerAnnotation] == ns+"/"+name {
			out[cmRef(ns, cm.Name)] = true
		}
	}
	return out, nil
}

// checkManaged reports what is wrong with an applied object's convoy label and annotation.
func checkManaged(obj metav1.Object, ns, release string) string {
	var problems []string
	if v := obj.GetLabels()[convoyv1alpha1.ManagedByLabel]; v != convoyv1alpha1.ManagedByValue {
		problems = append(problems, fmt.Sprintf("label %s=%q", convoyv1alpha1.ManagedByLabel, v))
	}
	if v := obj.GetAnnotations()[convoyv1alpha1.OwnerAnnotation]; v != ns+"/"+release {
		problems = append(problems, fmt.Sprintf("annotation %s=%q, want %q", convoyv1alpha1.OwnerAnnotation, v, ns+"/"+release))
	}
	return strings.Join(problems, "; ")
}

// consistently fails the test if cond reports false at any poll during d.
func consistently(t *testing.T, d time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if ok, msg := cond(); !ok {
			t.Fatalf("condition broke within %s: %s", d, msg)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// notFound is a condition that target object ns/name is absent, for the given getter.
func notFound(what string, get func() error) (bool, string) {
	err := get()
	if apierrors.IsNotFound(err) {
		return true, ""
	}
	if err != nil {
		return false, fmt.Sprintf("get %s: %v", what, err)
	}
	return false, what + " still exists"
}

// doc renders one manifest document.
func doc(obj map[string]any) string {
	out, err := yaml.Marshal(obj)
	if err != nil {
		panic(fmt.Sprintf("marshal manifest: %v", err)) // the tests' own literals: a bug here is ours
	}
	return string(out)
}

// docs joins manifest documents into one multi-document YAML stream.
func docs(ds ...string) string { return strings.Join(ds, "---\n") }

// configMapDoc is a ConfigMap manifest; annotations may be nil.
func configMapDoc(name string, data map[string]string, annotations map[string]string) string {
	md := map[string]any{"name": name}
	if len(annotations) > 0 {
		md["annotations"] = annotations
	}
	return doc(map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": md, "data": data})
}

// deploymentDoc is a Deployment manifest of replicas pods of one container.
func deploymentDoc(name string, replicas int) string {
	labels := map[string]any{"app": name}
	return doc(map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{
			"replicas": replicas,
			"selector": map[string]any{"matchLabels": labels},
			"template": map[string]any{
				"metadata": map[string]any{"labels": labels},
				"spec": map[string]any{"containers": []any{
					map[string]any{"name": "app", "image": "registry.example/" + name + ":1"},
				}},
			},
		},
	})
}

// serviceDoc is a Service manifest of the given type on port 80.
func serviceDoc(name, serviceType string) string {
	return doc(map[string]any{
		"apiVersion": "v1", "kind": "Service",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{
			"type":     serviceType,
			"selector": map[string]any{"app": name},
			"ports":    []any{map[string]any{"port": 80, "targetPort": 8080}},
		},
	})
}
