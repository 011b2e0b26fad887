package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/kumodo/convoy/apis/core/v1alpha1"
	"github.com/kumodo/convoy/e2e/framework"
)

// TestReleaseCreate: a new Release puts its objects on the target, labelled and annotated as
// convoy's, reports Applied, keeps an inventory of them and carries the prune finalizer.
func TestReleaseCreate(t *testing.T) {
	t.Parallel()
	ns := env.NewNamespace(t)
	env.CreateSource(t, ns, "web-manifests", map[string]string{
		"config.yaml":   framework.ConfigMapDoc("web-config", map[string]string{"color": "blue"}, nil),
		"workload.yaml": framework.Docs(deploymentDoc("web", 2), serviceDoc("web", "ClusterIP")),
	})
	env.CreateConfigMapRelease(t, ns, "web", "live", "web-manifests")

	r := env.WaitApplied(t, ns, "web", convoyv1alpha1.ReasonApplied, applyTimeout, nil)
	if appliedStatus(r) != metav1.ConditionTrue {
		t.Errorf("Applied status = %q, want True: %s", appliedStatus(r), framework.DescribeApplied(r))
	}
	if !slices.Contains(r.Finalizers, convoyv1alpha1.PruneWorkloadsFinalizer) {
		t.Errorf("finalizers = %v, want %s", r.Finalizers, convoyv1alpha1.PruneWorkloadsFinalizer)
	}

	kube := env.Live.Kube
	objects := map[framework.ObjRef]func() (metav1.Object, error){
		framework.ConfigMapRef(ns, "web-config"): func() (metav1.Object, error) {
			return kube.CoreV1().ConfigMaps(ns).Get(ctx, "web-config", metav1.GetOptions{})
		},
		{Group: "apps", Kind: "Deployment", Namespace: ns, Name: "web"}: func() (metav1.Object, error) {
			return kube.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		},
		{Kind: "Service", Namespace: ns, Name: "web"}: func() (metav1.Object, error) {
			return kube.CoreV1().Services(ns).Get(ctx, "web", metav1.GetOptions{})
		},
	}
	want := map[framework.ObjRef]bool{}
	for ref, get := range objects {
		want[ref] = true
		obj, err := get()
		if err != nil {
			t.Errorf("%s on live: %v", ref, err)
			continue
		}
		if problems := checkManaged(obj, ns, "web"); problems != "" {
			t.Errorf("%s: %s", ref, problems)
		}
	}

	inv, found, err := env.Inventory(ns, "web")
	if err != nil || !found {
		t.Fatalf("ReleaseInventory %s/web: found=%v err=%v", ns, found, err)
	}
	if n, missing := framework.SetDiff(want, inv); n > 0 {
		t.Errorf("inventory lacks %d applied objects: %s", n, missing)
	}
	if n, extra := framework.SetDiff(inv, want); n > 0 {
		t.Errorf("inventory lists %d objects not in the render: %s", n, extra)
	}
}

// TestReleaseUpdateAndPrune: changing the source updates the objects on the target and
// prunes the ones the render no longer holds.
func TestReleaseUpdateAndPrune(t *testing.T) {
	t.Parallel()
	ns := env.NewNamespace(t)
	env.CreateSource(t, ns, "app-manifests", map[string]string{
		"app.yaml": framework.Docs(
			framework.ConfigMapDoc("settings", map[string]string{"color": "blue"}, nil),
			framework.ConfigMapDoc("extra", map[string]string{"x": "1"}, nil),
			deploymentDoc("app", 1),
		),
	})
	env.CreateConfigMapRelease(t, ns, "app", "live", "app-manifests")
	first := env.WaitApplied(t, ns, "app", convoyv1alpha1.ReasonApplied, applyTimeout, nil)
	if _, err := configMapOnTarget(env.Live, ns, "extra"); err != nil {
		t.Fatalf("ConfigMap extra after the first apply: %v", err)
	}

	env.UpdateSource(t, ns, "app-manifests", map[string]string{
		"app.yaml": framework.Docs(
			framework.ConfigMapDoc("settings", map[string]string{"color": "green"}, nil),
			deploymentDoc("app", 1),
		),
	})
	env.WaitApplied(t, ns, "app", convoyv1alpha1.ReasonApplied, applyTimeout, renderChanged(framework.LastSuccessfulRef(first)))
	framework.Eventually(t, applyTimeout, func() (bool, string) {
		cm, err := configMapOnTarget(env.Live, ns, "settings")
		if err != nil {
			return false, fmt.Sprintf("get settings: %v", err)
		}
		if cm.Data["color"] != "green" {
			return false, fmt.Sprintf("settings color = %q, want green", cm.Data["color"])
		}
		return framework.NotFound("pruned ConfigMap extra", func() error { _, err := configMapOnTarget(env.Live, ns, "extra"); return err })
	})
	inv, _, err := env.Inventory(ns, "app")
	if err != nil {
		t.Fatal(err)
	}
	if inv[framework.ConfigMapRef(ns, "extra")] {
		t.Errorf("inventory still lists the pruned ConfigMap extra: %v", inv)
	}
	if !inv[framework.ConfigMapRef(ns, "settings")] {
		t.Errorf("inventory lacks ConfigMap settings: %v", inv)
	}
}

// TestReleasePruneDisabled: with syncPolicy.prune false, objects removed from the render stay.
func TestReleasePruneDisabled(t *testing.T) {
	t.Parallel()
	ns := env.NewNamespace(t)
	env.CreateSource(t, ns, "keep-manifests", map[string]string{
		"a.yaml": framework.ConfigMapDoc("settings", map[string]string{"color": "blue"}, nil),
		"b.yaml": framework.ConfigMapDoc("extra", map[string]string{"x": "1"}, nil),
	})
	env.CreateConfigMapRelease(t, ns, "keep", "bare", "keep-manifests", framework.WithPrune(false))
	first := env.WaitApplied(t, ns, "keep", convoyv1alpha1.ReasonApplied, applyTimeout, nil)

	env.UpdateSource(t, ns, "keep-manifests", map[string]string{
		"a.yaml": framework.ConfigMapDoc("settings", map[string]string{"color": "green"}, nil),
	})
	env.WaitApplied(t, ns, "keep", convoyv1alpha1.ReasonApplied, applyTimeout, renderChanged(framework.LastSuccessfulRef(first)))
	framework.Eventually(t, applyTimeout, func() (bool, string) {
		cm, err := configMapOnTarget(env.Bare, ns, "settings")
		if err != nil {
			return false, fmt.Sprintf("get settings: %v", err)
		}
		return cm.Data["color"] == "green", fmt.Sprintf("settings color = %q, want green", cm.Data["color"])
	})
	framework.Consistently(t, quietPeriod, func() (bool, string) {
		cm, err := configMapOnTarget(env.Bare, ns, "extra")
		if err != nil {
			return false, fmt.Sprintf("ConfigMap extra removed from the render was pruned despite prune: false: %v", err)
		}
		return cm.DeletionTimestamp == nil, "ConfigMap extra is being deleted"
	})
}

// TestReleaseDelete: deleting a Release deletes its objects and inventory, then the Release.
func TestReleaseDelete(t *testing.T) {
	t.Parallel()
	ns := env.NewNamespace(t)
	env.CreateSource(t, ns, "gone-manifests", map[string]string{
		"all.yaml": framework.Docs(framework.ConfigMapDoc("settings", map[string]string{"k": "v"}, nil), deploymentDoc("gone", 1)),
	})
	env.CreateConfigMapRelease(t, ns, "gone", "live", "gone-manifests")
	env.WaitApplied(t, ns, "gone", convoyv1alpha1.ReasonApplied, applyTimeout, nil)

	deleteRelease(t, ns, "gone")
	framework.Eventually(t, applyTimeout, func() (bool, string) {
		return framework.NotFound("Release gone", func() error { _, err := env.GetRelease(ns, "gone"); return err })
	})
	checks := map[string]func() error{
		"ConfigMap settings on live": func() error { _, err := configMapOnTarget(env.Live, ns, "settings"); return err },
		"Deployment gone on live": func() error {
			_, err := env.Live.Kube.AppsV1().Deployments(ns).Get(ctx, "gone", metav1.GetOptions{})
			return err
		},
		"ReleaseInventory gone": func() error {
			_, err := env.Convoy().CoreV1alpha1().ReleaseInventories(ns).Get(ctx, "gone", metav1.GetOptions{})
			return err
		},
	}
	for what, get := range checks {
		if ok, msg := framework.NotFound(what, get); !ok {
			t.Errorf("after the Release is gone: %s", msg)
		}
	}
}

// TestReleaseDeleteKeepWorkloads: with deletionPolicy.keepWorkloads, the objects outlive the
// Release; the inventory does not.
func TestReleaseDeleteKeepWorkloads(t *testing.T) {
	t.Parallel()
	ns := env.NewNamespace(t)
	env.CreateSource(t, ns, "kept-manifests", map[string]string{
		"all.yaml": framework.Docs(framework.ConfigMapDoc("settings", map[string]string{"k": "v"}, nil), serviceDoc("kept", "ClusterIP")),
	})
	env.CreateConfigMapRelease(t, ns, "kept", "bare", "kept-manifests", framework.WithKeepWorkloads())
	env.WaitApplied(t, ns, "kept", convoyv1alpha1.ReasonApplied, applyTimeout, nil)

	deleteRelease(t, ns, "kept")
	framework.Eventually(t, applyTimeout, func() (bool, string) {
		return framework.NotFound("Release kept", func() error { _, err := env.GetRelease(ns, "kept"); return err })
	})
	if ok, msg := framework.NotFound("ReleaseInventory kept", func() error {
		_, err := env.Convoy().CoreV1alpha1().ReleaseInventories(ns).Get(ctx, "kept", metav1.GetOptions{})
		return err
	}); !ok {
		t.Errorf("after the Release is gone: %s", msg)
	}
	framework.Consistently(t, quietPeriod, func() (bool, string) {
		if _, err := configMapOnTarget(env.Bare, ns, "settings"); err != nil {
			return false, fmt.Sprintf("ConfigMap settings with keepWorkloads: %v", err)
		}
		if _, err := env.Bare.Kube.CoreV1().Services(ns).Get(ctx, "kept", metav1.GetOptions{}); err != nil {
			return false, fmt.Sprintf("Service kept with keepWorkloads: %v", err)
		}
		return true, ""
	})
}

// TestReleaseUnappliable: one object the API server rejects makes the whole render
// Unappliable, naming the object, and nothing of the render reaches the target.
func TestReleaseUnappliable(t *testing.T) {
	t.Parallel()
	ns := env.NewNamespace(t)
	env.CreateSource(t, ns, "broken-manifests", map[string]string{
		"1-good.yaml": framework.ConfigMapDoc("good-a", map[string]string{"k": "v"}, nil),
		"2-bad.yaml":  serviceDoc("bad-svc", "NoSuchType"),
		"3-good.yaml": framework.Docs(framework.ConfigMapDoc("good-b", map[string]string{"k": "v"}, nil), deploymentDoc("good-c", 1)),
	})
	env.CreateConfigMapRelease(t, ns, "broken", "bare", "broken-manifests")
	r := env.WaitApplied(t, ns, "broken", convoyv1alpha1.ReasonUnappliable, applyTimeout, nil)
	c := findApplied(r)
	if !strings.Contains(c.Message, "bad-svc") {
		t.Errorf("Unappliable message does not name the rejected object bad-svc: %q", c.Message)
	}
	if c.Status != metav1.ConditionFalse {
		t.Errorf("Applied status = %s, want False", c.Status)
	}
	framework.Consistently(t, quietPeriod, func() (bool, string) {
		cms, err := env.Bare.Kube.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, cm := range cms.Items {
			if cm.Name == "good-a" || cm.Name == "good-b" {
				return false, fmt.Sprintf("ConfigMap %s of the unappliable render is on the target", cm.Name)
			}
		}
		if ok, msg := framework.NotFound("Deployment good-c", func() error {
			_, err := env.Bare.Kube.AppsV1().Deployments(ns).Get(ctx, "good-c", metav1.GetOptions{})
			return err
		}); !ok {
			return false, msg + " (of the unappliable render)"
		}
		return framework.NotFound("Service bad-svc", func() error {
			_, err := env.Bare.Kube.CoreV1().Services(ns).Get(ctx, "bad-svc", metav1.GetOptions{})
			return err
		})
	})
	if inv, _, err := env.Inventory(ns, "broken"); err != nil || len(inv) > 0 {
		t.Errorf("inventory of an unappliable first render = %v (err %v), want empty", inv, err)
	}
}

// findApplied returns the Applied condition, which waitApplied has found.
func findApplied(r *convoyv1alpha1.Release) metav1.Condition {
	for _, c := range r.Status.Conditions {
		if c.Type == convoyv1alpha1.ConditionApplied {
			return c
		}
	}
	return metav1.Condition{}
}

// TestReleaseManualSync: in Manual mode nothing is applied until a sync is requested through
// the annotation; then the render is applied and the request recorded as handled.
func TestReleaseManualSync(t *testing.T) {
	t.Parallel()
	ns := env.NewNamespace(t)
	env.CreateSource(t, ns, "manual-manifests", map[string]string{
		"all.yaml": framework.Docs(framework.ConfigMapDoc("settings", map[string]string{"k": "v"}, nil), serviceDoc("manual", "ClusterIP")),
	})
	env.CreateConfigMapRelease(t, ns, "manual", "bare", "manual-manifests", framework.WithManualSync())
	env.WaitApplied(t, ns, "manual", convoyv1alpha1.ReasonWaitingForSync, applyTimeout, nil)
	framework.Consistently(t, quietPeriod, func() (bool, string) {
		return framework.NotFound("ConfigMap settings before a sync was requested", func() error {
			_, err := configMapOnTarget(env.Bare, ns, "settings")
			return err
		})
	})

	requested := time.Now().UTC().Truncate(time.Second)
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, convoyv1alpha1.SyncRequestedAtAnnotation, requested.Format(time.RFC3339))
	if _, err := env.Convoy().CoreV1alpha1().Releases(ns).Patch(ctx, "manual", "application/merge-patch+json", []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("request a sync: %v", err)
	}
	env.WaitApplied(t, ns, "manual", convoyv1alpha1.ReasonApplied, applyTimeout, func(r *convoyv1alpha1.Release) (bool, string) {
		at := r.Status.LastHandledSyncAt
		if at == nil || at.Time.Before(requested) {
			return false, fmt.Sprintf("lastHandledSyncAt = %v, want >= %s", at, requested.Format(time.RFC3339))
		}
		return true, ""
	})
	if _, err := configMapOnTarget(env.Bare, ns, "settings"); err != nil {
		t.Errorf("ConfigMap settings after the sync: %v", err)
	}
	if _, err := env.Bare.Kube.CoreV1().Services(ns).Get(ctx, "manual", metav1.GetOptions{}); err != nil {
		t.Errorf("Service manual after the sync: %v", err)
	}
}

// TestReleaseConflict: a Release whose render holds an object another Release owns gets
// Conflict, and the object stays the first Release's.
func TestReleaseConflict(t *testing.T) {
	t.Parallel()
	ns := env.NewNamespace(t)
	env.CreateSource(t, ns, "first-manifests", map[string]string{
		"all.yaml": framework.Docs(framework.ConfigMapDoc("shared", map[string]string{"owner": "first"}, nil), framework.ConfigMapDoc("first-only", map[string]string{"k": "v"}, nil)),
	})
	env.CreateSource(t, ns, "second-manifests", map[string]string{
		"all.yaml": framework.Docs(framework.ConfigMapDoc("shared", map[string]string{"owner": "second"}, nil), framework.ConfigMapDoc("second-only", map[string]string{"k": "v"}, nil)),
	})
	env.CreateConfigMapRelease(t, ns, "first", "bare", "first-manifests")
	env.WaitApplied(t, ns, "first", convoyv1alpha1.ReasonApplied, applyTimeout, nil)

	env.CreateConfigMapRelease(t, ns, "second", "bare", "second-manifests")
	r := env.WaitApplied(t, ns, "second", convoyv1alpha1.ReasonConflict, applyTimeout, nil)
	if msg := findApplied(r).Message; !strings.Contains(msg, "shared") {
		t.Errorf("Conflict message does not name the ConfigMap shared: %q", msg)
	}
	cm, err := configMapOnTarget(env.Bare, ns, "shared")
	if err != nil {
		t.Fatalf("get shared: %v", err)
	}
	if problems := checkManaged(cm, ns, "first"); problems != "" {
		t.Errorf("shared after the conflict: %s", problems)
	}
	if cm.Data["owner"] != "first" {
		t.Errorf("shared data owner = %q, want first (taken over by the second Release)", cm.Data["owner"])
	}
}
