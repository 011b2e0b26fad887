package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	convoyv1alpha1 "github.com/kumodo/convoy/apis/core/v1alpha1"
	"github.com/kumodo/convoy/e2e/framework"
)

// observeTimeout bounds the waits for the observer loops (checks every 2 s in these tests).
const observeTimeout = 60 * time.Second

// requestSyncAnnotation sets the sync annotation as `kubectl convoy sync` would.
func requestSyncAnnotation(t *testing.T, ns, name string) {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, convoyv1alpha1.SyncRequestedAtAnnotation, time.Now().UTC().Format(time.RFC3339))
	if _, err := env.Convoy().CoreV1alpha1().Releases(ns).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("request a sync of %s/%s: %v", ns, name, err)
	}
}

// describeInSync summarises the InSync condition and status.drift.
func describeInSync(r *convoyv1alpha1.Release) string {
	c := meta.FindStatusCondition(r.Status.Conditions, convoyv1alpha1.ConditionInSync)
	if c == nil {
		return "no InSync condition"
	}
	return fmt.Sprintf("InSync=%s reason=%s message=%q drift=%+v", c.Status, c.Reason, c.Message, r.Status.Drift)
}

// waitInSync waits until InSync has status and accept, if given, agrees.
func waitInSync(t *testing.T, ns, name string, status metav1.ConditionStatus, accept func(*convoyv1alpha1.Release) (bool, string)) *convoyv1alpha1.Release {
	t.Helper()
	var out *convoyv1alpha1.Release
	framework.Eventually(t, observeTimeout, func() (bool, string) {
		r, err := env.GetRelease(ns, name)
		if err != nil {
			return false, err.Error()
		}
		c := meta.FindStatusCondition(r.Status.Conditions, convoyv1alpha1.ConditionInSync)
		if c == nil || c.Status != status {
			return false, fmt.Sprintf("want InSync=%s; %s", status, describeInSync(r))
		}
		if accept != nil {
			if ok, msg := accept(r); !ok {
				return false, msg + "; " + describeInSync(r)
			}
		}
		out = r
		return true, ""
	})
	return out
}

// driftLists accepts a Release whose status.drift names every given object (Kind/name).
func driftLists(objs ...string) func(*convoyv1alpha1.Release) (bool, string) {
	return func(r *convoyv1alpha1.Release) (bool, string) {
		if r.Status.Drift == nil {
			return false, "no status.drift"
		}
		listed := map[string]bool{}
		for _, o := range r.Status.Drift.Objects {
			listed[o.Kind+"/"+o.Name] = true
		}
		for _, o := range objs {
			if !listed[o] {
				return false, fmt.Sprintf("status.drift does not list %s", o)
			}
		}
		if int(r.Status.Drift.Drifted) != len(objs) {
			return false, fmt.Sprintf("drifted = %d, want %d", r.Status.Drift.Drifted, len(objs))
		}
		return true, ""
	}
}

// scalableDeploymentDoc is a Deployment that leaves spec.replicas to others (an HPA).
func scalableDeploymentDoc(name string) string {
	labels := map[string]any{"app": name}
	return framework.Doc(map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{
			"selector": map[string]any{"matchLabels": labels},
			"template": map[string]any{
				"metadata": map[string]any{"labels": labels},
				"spec":     map[string]any{"containers": []any{map[string]any{"name": "app", "image": "registry.example/" + name + ":1"}}},
			},
		},
	})
}

// setConfigMapData changes a ConfigMap on a target, as a person with kubectl edit would.
func setConfigMapData(t *testing.T, target *framework.APIServer, ns, name string, data map[string]string) {
	t.Helper()
	cms := target.Kube.CoreV1().ConfigMaps(ns)
	cm, err := cms.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get ConfigMap %s on %s: %v", name, target.Name, err)
	}
	cm.Data = data
	if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatalf("update ConfigMap %s on %s: %v", name, target.Name, err)
	}
}

// TestDriftManual: in Manual mode a changed managed field and a deleted object are drift, named in
// status.drift, and stay as they are; a field convoy does not manage (replicas set by an HPA, a
// label added by someone else) is not drift.
func TestDriftManual(t *testing.T) {
	t.Parallel()
	ns := env.NewNamespace(t)
	env.CreateSource(t, ns, "drift-manifests", map[string]string{
		"all.yaml": framework.Docs(
			framework.ConfigMapDoc("settings", map[string]string{"color": "blue"}, nil),
			serviceDoc("web", "ClusterIP"),
			scalableDeploymentDoc("web"),
		),
	})
	env.CreateConfigMapRelease(t, ns, "drift", "bare", "drift-manifests", framework.WithManualSync(), framework.WithInterval(2*time.Second))
	env.WaitApplied(t, ns, "drift", convoyv1alpha1.ReasonWaitingForSync, applyTimeout, nil)
	// Nothing is applied yet: the drift is not known (not "3 of 3 missing"), and no sync is
	// requested for it.
	waitInSync(t, ns, "drift", metav1.ConditionUnknown, func(r *convoyv1alpha1.Release) (bool, string) {
		c := meta.FindStatusCondition(r.Status.Conditions, convoyv1alpha1.ConditionInSync)
		return c.Reason == "NotApplied" && strings.Contains(c.Message, "is not applied yet"), "want reason NotApplied"
	})
	if r, err := env.GetRelease(ns, "drift"); err != nil {
		t.Fatal(err)
	} else if at := r.Annotations[convoyv1alpha1.SyncRequestedAtAnnotation]; at != "" {
		t.Fatalf("a sync was requested (at %s) before anything was applied", at)
	}
	requestSyncAnnotation(t, ns, "drift")
	applied := env.WaitApplied(t, ns, "drift", convoyv1alpha1.ReasonApplied, applyTimeout, func(r *convoyv1alpha1.Release) (bool, string) {
		return framework.LastSuccessfulRef(r) != "", "nothing applied yet"
	})
	waitInSync(t, ns, "drift", metav1.ConditionTrue, func(r *convoyv1alpha1.Release) (bool, string) {
		if r.Status.Drift == nil || r.Status.Drift.RenderRef != framework.LastSuccessfulRef(applied) {
			return false, "drift not checked against the applied render"
		}
		return true, ""
	})

	// Fields convoy does not manage: replicas set by an HPA's scale, a label of another manager.
	scale, err := env.Bare.Kube.AppsV1().Deployments(ns).GetScale(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get scale: %v", err)
	}
	scale.Spec.Replicas = 5
	if _, err := env.Bare.Kube.AppsV1().Deployments(ns).UpdateScale(ctx, "web", scale, metav1.UpdateOptions{FieldManager: "hpa"}); err != nil {
		t.Fatalf("scale Deployment web: %v", err)
	}
	labelPatch := `{"metadata":{"labels":{"team":"checkout"}}}`
	if _, err := env.Bare.Kube.CoreV1().Services(ns).Patch(ctx, "web", types.MergePatchType, []byte(labelPatch), metav1.PatchOptions{FieldManager: "someone"}); err != nil {
		t.Fatalf("label Service web: %v", err)
	}
	before, err := env.GetRelease(ns, "drift")
	if err != nil {
		t.Fatal(err)
	}
	checked := before.Status.Drift.CheckedAt.Time
	// Two more checks must find no drift.
	framework.Eventually(t, observeTimeout, func() (bool, string) {
		r, err := env.GetRelease(ns, "drift")
		if err != nil {
			return false, err.Error()
		}
		if c := meta.FindStatusCondition(r.Status.Conditions, convoyv1alpha1.ConditionInSync); c == nil || c.Status != metav1.ConditionTrue {
			t.Fatalf("unmanaged changes reported as drift: %s", describeInSync(r))
		}
		if r.Status.Drift.CheckedAt.Time.Before(checked.Add(3 * time.Second)) {
			return false, "waiting for two more drift checks"
		}
		return true, ""
	})

	// A managed field changed, and an object deleted.
	setConfigMapData(t, env.Bare, ns, "settings", map[string]string{"color": "red"})
	waitInSync(t, ns, "drift", metav1.ConditionFalse, driftLists("ConfigMap/settings"))
	if err := env.Bare.Kube.CoreV1().Services(ns).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete Service web: %v", err)
	}
	r := waitInSync(t, ns, "drift", metav1.ConditionFalse, driftLists("ConfigMap/settings", "Service/web"))
	msg := meta.FindStatusCondition(r.Status.Conditions, convoyv1alpha1.ConditionInSync).Message
	for _, want := range []string{"ConfigMap " + ns + "/settings (changed data)", "Service " + ns + "/web (missing)"} {
		if !strings.Contains(msg, want) {
			t.Errorf("InSync message %q does not contain %q", msg, want)
		}
	}

	// Manual mode: convoy leaves the drift alone.
	framework.Consistently(t, quietPeriod, func() (bool, string) {
		cm, err := configMapOnTarget(env.Bare, ns, "settings")
		if err != nil {
			return false, err.Error()
		}
		if cm.Data["color"] != "red" {
			return false, "the drifted ConfigMap was repaired in Manual mode"
		}
		_, err = env.Bare.Kube.CoreV1().Services(ns).Get(ctx, "web", metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			return false, fmt.Sprintf("Service web came back in Manual mode (err %v)", err)
		}
		return true, ""
	})
	r, err = env.GetRelease(ns, "drift")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := r.Annotations[convoyv1alpha1.SyncRequestedAtAnnotation]; ok && r.Annotations[convoyv1alpha1.SyncRequestedAtAnnotation] != before.Annotations[convoyv1alpha1.SyncRequestedAtAnnotation] {
		t.Errorf("the drift loop requested a sync in Manual mode: %v", r.Annotations)
	}
}

// TestDriftAutomatic: in Automatic mode a changed or deleted object is restored (the drift loop
// requests a sync) and InSync returns to True.
func TestDriftAutomatic(t *testing.T) {
	t.Parallel()
	ns := env.NewNamespace(t)
	env.CreateSource(t, ns, "auto-manifests", map[string]string{
		"all.yaml": framework.Docs(framework.ConfigMapDoc("settings", map[string]string{"color": "blue"}, nil), serviceDoc("web", "ClusterIP")),
	})
	env.CreateConfigMapRelease(t, ns, "auto", "bare", "auto-manifests", framework.WithInterval(2*time.Second))
	env.WaitApplied(t, ns, "auto", convoyv1alpha1.ReasonApplied, applyTimeout, nil)
	r := waitInSync(t, ns, "auto", metav1.ConditionTrue, nil)
	// The objects missing before the first apply were not drift: no sync was requested.
	if at := r.Annotations[convoyv1alpha1.SyncRequestedAtAnnotation]; at != "" {
		t.Errorf("the drift loop requested a sync (at %s) before any drift", at)
	}

	setConfigMapData(t, env.Bare, ns, "settings", map[string]string{"color": "red"})
	if err := env.Bare.Kube.CoreV1().Services(ns).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete Service web: %v", err)
	}
	framework.Eventually(t, observeTimeout, func() (bool, string) {
		cm, err := configMapOnTarget(env.Bare, ns, "settings")
		if err != nil {
			return false, err.Error()
		}
		if cm.Data["color"] != "blue" {
			return false, fmt.Sprintf("ConfigMap settings color = %q, want blue", cm.Data["color"])
		}
		if _, err := env.Bare.Kube.CoreV1().Services(ns).Get(ctx, "web", metav1.GetOptions{}); err != nil {
			return false, fmt.Sprintf("Service web: %v", err)
		}
		return true, ""
	})
	waitInSync(t, ns, "auto", metav1.ConditionTrue, func(r *convoyv1alpha1.Release) (bool, string) {
		if r.Status.Drift == nil || r.Status.Drift.Drifted != 0 || len(r.Status.Drift.Objects) != 0 {
			return false, "drift still listed"
		}
		return true, ""
	})
}

// TestDriftRequestsSync: the drift loop's POST /sync sets the sync annotation. The Release is in
// Automatic mode with a long interval, so the release controller does not repair the drift by
// itself before the drift loop sees it (both run on a spec change, which this test makes after
// the drift).
func TestDriftRequestsSync(t *testing.T) {
	t.Parallel()
	ns := env.NewNamespace(t)
	env.CreateSource(t, ns, "req-manifests", map[string]string{"all.yaml": framework.ConfigMapDoc("settings", map[string]string{"color": "blue"}, nil)})
	env.CreateConfigMapRelease(t, ns, "req", "bare", "req-manifests", framework.WithInterval(time.Hour))
	env.WaitApplied(t, ns, "req", convoyv1alpha1.ReasonApplied, applyTimeout, nil)
	waitInSync(t, ns, "req", metav1.ConditionTrue, nil)
	if err := env.Bare.Kube.CoreV1().ConfigMaps(ns).Delete(ctx, "settings", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// Wake both loops with a spec change that keeps the render: whichever acts first, the object
	// comes back; when the drift loop saw it first, it requested a sync.
	patch := `{"spec":{"syncPolicy":{"interval":"59m"}}}`
	if _, err := env.Convoy().CoreV1alpha1().Releases(ns).Patch(ctx, "req", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, observeTimeout, func() (bool, string) {
		_, err := configMapOnTarget(env.Bare, ns, "settings")
		if err != nil {
			return false, err.Error()
		}
		return true, ""
	})
	r := waitInSync(t, ns, "req", metav1.ConditionTrue, nil)
	if at := r.Annotations[convoyv1alpha1.SyncRequestedAtAnnotation]; at != "" {
		t.Logf("the drift loop requested a sync at %s", at)
	} else {
		t.Logf("the release controller repaired the drift before the drift loop saw it")
	}
}

// healthOf returns the Release's health verdict and Healthy condition.
func describeHealth(r *convoyv1alpha1.Release) string {
	c := meta.FindStatusCondition(r.Status.Conditions, convoyv1alpha1.ConditionHealthy)
	return fmt.Sprintf("Healthy=%v health=%+v", c, r.Status.Health)
}

// waitVerdict waits until status.health has verdict for the last successful render.
func waitVerdict(t *testing.T, ns, name, verdict string, timeout time.Duration) *convoyv1alpha1.Release {
	t.Helper()
	var out *convoyv1alpha1.Release
	framework.Eventually(t, timeout, func() (bool, string) {
		r, err := env.GetRelease(ns, name)
		if err != nil {
			return false, err.Error()
		}
		h := r.Status.Health
		if h == nil || h.Verdict != verdict || h.RenderRef == "" || h.RenderRef != framework.LastSuccessfulRef(r) {
			return false, fmt.Sprintf("want verdict %s for render %s; %s", verdict, framework.LastSuccessfulRef(r), describeHealth(r))
		}
		want := metav1.ConditionFalse
		switch verdict {
		case "Healthy":
			want = metav1.ConditionTrue
		case "Unknown":
			want = metav1.ConditionUnknown
		}
		if c := meta.FindStatusCondition(r.Status.Conditions, convoyv1alpha1.ConditionHealthy); c == nil || c.Status != want || c.Reason != verdict {
			return false, fmt.Sprintf("Healthy condition does not match verdict %s; %s", verdict, describeHealth(r))
		}
		out = r
		return true, ""
	})
	return out
}

// TestHealthDeployment: a Deployment on the live cluster becomes Available, the verdict turns
// Healthy for the applied render, the inventory status says so per object and wave, and
// lastHealthy advances to the render.
func TestHealthDeployment(t *testing.T) {
	t.Parallel()
	ns := env.NewNamespace(t)
	env.CreateSource(t, ns, "web-manifests", map[string]string{
		"all.yaml": framework.Docs(framework.ConfigMapDoc("web-config", map[string]string{"k": "v"}, nil), deploymentDoc("web", 3)),
	})
	env.CreateConfigMapRelease(t, ns, "web", "live", "web-manifests", framework.WithInterval(2*time.Second))
	r := waitVerdict(t, ns, "web", "Healthy", applyTimeout)
	ref := r.Status.Health.RenderRef

	inv, err := env.Convoy().CoreV1alpha1().ReleaseInventories(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(inv.Status.Objects) != 2 {
		t.Errorf("inventory status objects = %+v, want 2", inv.Status.Objects)
	}
	for _, o := range inv.Status.Objects {
		if o.Health != "Healthy" {
			t.Errorf("inventory status: %s %s is %s (%s)", o.Kind, o.Name, o.Health, o.Message)
		}
	}
	if len(inv.Status.Waves) != 1 || inv.Status.Waves[0].Health != "Healthy" {
		t.Errorf("inventory status waves = %+v, want wave 0 Healthy", inv.Status.Waves)
	}
	framework.Eventually(t, observeTimeout, func() (bool, string) {
		r, err := env.GetRelease(ns, "web")
		if err != nil {
			return false, err.Error()
		}
		if r.Status.LastHealthy == nil || r.Status.LastHealthy.RenderRef != ref {
			return false, fmt.Sprintf("lastHealthy = %+v, want render %s", r.Status.LastHealthy, ref)
		}
		return true, ""
	})
}

// badDeploymentDoc is a Deployment whose pods a kwok stage keeps unready, with a short progress
// deadline.
func badDeploymentDoc(name string, deadlineSeconds int) string {
	labels := map[string]any{"app": name}
	podLabels := map[string]any{"app": name, "convoy-e2e/bad": "true"}
	return framework.Doc(map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{
			"replicas":                1,
			"progressDeadlineSeconds": deadlineSeconds,
			"selector":                map[string]any{"matchLabels": labels},
			"template": map[string]any{
				"metadata": map[string]any{"labels": podLabels},
				"spec":     map[string]any{"containers": []any{map[string]any{"name": "app", "image": "registry.example/" + name + ":1"}}},
			},
		},
	})
}

// TestHealthUnreadyPods: pods kept unready by a kwok stage make the verdict Progressing, then
// Degraded once the Deployment's progress deadline has passed.
func TestHealthUnreadyPods(t *testing.T) {
	t.Parallel()
	ns := env.NewNamespace(t)
	env.CreateSource(t, ns, "bad-manifests", map[string]string{"all.yaml": badDeploymentDoc("bad", 15)})
	env.CreateConfigMapRelease(t, ns, "bad", "live", "bad-manifests", framework.WithInterval(2*time.Second))
	waitVerdict(t, ns, "bad", "Progressing", applyTimeout)
	r := waitVerdict(t, ns, "bad", "Degraded", applyTimeout)
	if !strings.Contains(r.Status.Health.Message, "progress deadline") {
		t.Errorf("verdict message %q does not mention the progress deadline", r.Status.Health.Message)
	}
	if r.Status.LastHealthy != nil {
		t.Errorf("lastHealthy = %+v for a render that never was healthy", r.Status.LastHealthy)
	}
}

// TestHealthFailedJob: a Job whose pod fails makes the verdict Degraded.
func TestHealthFailedJob(t *testing.T) {
	t.Parallel()
	ns := env.NewNamespace(t)
	job := framework.Doc(map[string]any{
		"apiVersion": "batch/v1", "kind": "Job",
		"metadata": map[string]any{"name": "migrate"},
		"spec": map[string]any{
			"backoffLimit": 0,
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"convoy-e2e/fail": "true"}},
				"spec": map[string]any{
					"restartPolicy": "Never",
					"containers":    []any{map[string]any{"name": "migrate", "image": "registry.example/migrate:1"}},
				},
			},
		},
	})
	env.CreateSource(t, ns, "job-manifests", map[string]string{"job.yaml": job})
	env.CreateConfigMapRelease(t, ns, "job", "live", "job-manifests", framework.WithInterval(2*time.Second))
	r := waitVerdict(t, ns, "job", "Degraded", applyTimeout)
	if !strings.Contains(r.Status.Health.Message, "Job "+ns+"/migrate") {
		t.Errorf("verdict message %q does not name the Job", r.Status.Health.Message)
	}
}

// widgetCRD is a namespaced custom resource with a status subresource, which the test writes as the
// Widget's controller would.
var widgetCRD = &unstructured.Unstructured{Object: map[string]any{
	"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
	"metadata": map[string]any{"name": "widgets.e2e.convoy.kumodo.io"},
	"spec": map[string]any{
		"group": "e2e.convoy.kumodo.io", "scope": "Namespaced",
		"names": map[string]any{"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
		"versions": []any{map[string]any{
			"name": "v1", "served": true, "storage": true,
			"subresources": map[string]any{"status": map[string]any{}},
			"schema": map[string]any{"openAPIV3Schema": map[string]any{
				"type": "object", "x-kubernetes-preserve-unknown-fields": true,
			}},
		}},
	},
}}

// TestHealthCustomResource: a custom resource with Ready=False makes the verdict Degraded (kstatus
// and convoy's rule for an explicit Ready=False).
func TestHealthCustomResource(t *testing.T) {
	t.Parallel()
	crds := env.Live.Dynamic.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	if _, err := crds.Create(ctx, widgetCRD, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create CRD: %v", err)
	}
	widgets := schema.GroupVersionResource{Group: "e2e.convoy.kumodo.io", Version: "v1", Resource: "widgets"}
	framework.Eventually(t, applyTimeout, func() (bool, string) {
		_, err := env.Live.Dynamic.Resource(widgets).Namespace(corev1.NamespaceDefault).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, fmt.Sprintf("Widget not served yet: %v", err)
		}
		return true, ""
	})
	ns := env.NewNamespace(t)
	widget := framework.Doc(map[string]any{
		"apiVersion": "e2e.convoy.kumodo.io/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "gadget"},
		"spec":     map[string]any{"size": 3},
	})
	env.CreateSource(t, ns, "widget-manifests", map[string]string{"widget.yaml": widget})
	env.CreateConfigMapRelease(t, ns, "widget", "live", "widget-manifests", framework.WithInterval(2*time.Second))
	env.WaitApplied(t, ns, "widget", convoyv1alpha1.ReasonApplied, applyTimeout, nil)
	// The Widget's controller reports it not Ready.
	status := `{"status":{"observedGeneration":1,"conditions":[{"type":"Ready","status":"False","reason":"OutOfStock","message":"no gadgets left"}]}}`
	if _, err := env.Live.Dynamic.Resource(widgets).Namespace(ns).Patch(ctx, "gadget", types.MergePatchType, []byte(status),
		metav1.PatchOptions{FieldManager: "widget-controller"}, "status"); err != nil {
		t.Fatalf("write the Widget's status: %v", err)
	}
	r := waitVerdict(t, ns, "widget", "Degraded", applyTimeout)
	if !strings.Contains(r.Status.Health.Message, "OutOfStock") {
		t.Errorf("verdict message %q does not carry the condition's reason", r.Status.Health.Message)
	}
}
