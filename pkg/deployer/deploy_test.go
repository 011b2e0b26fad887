package deployer

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
)

const owner = "team-a/shop"

var shopOpts = Options{Owner: owner, TargetNamespace: "shop"}

func configMap(ns, name, value string) *unstructured.Unstructured {
	return obj("v1", "ConfigMap", ns, name, map[string]any{"data": map[string]any{"k": value}})
}

func actions(changes []Change) []string {
	var out []string
	for _, c := range changes {
		out = append(out, c.Action+" "+EntryRef(c.Entry))
	}
	return out
}

func TestDeployCreateUnchangedConfigured(t *testing.T) {
	ctx := context.Background()
	fc := newFakeCluster(t)
	web := obj("apps/v1", "Deployment", "shop", "web", map[string]any{"spec": map[string]any{"replicas": int64(1)}})
	withAnnotations(web, v1alpha1.SyncWaveAnnotation, "2")
	objs := []*unstructured.Unstructured{configMap("", "cfg", "a"), web}

	changes, err := Deploy(ctx, fc.client, objs, shopOpts, nil)
	if err != nil {
		t.Fatalf("Deploy: %v", err)
	}
	if got, want := actions(changes), []string{"created ConfigMap shop/cfg", "created Deployment shop/web"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("changes = %v, want %v", got, want)
	}
	wantEntry := v1alpha1.InventoryEntry{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "shop", Name: "web", Wave: 2}
	if changes[1].Entry != wantEntry {
		t.Errorf("entry = %+v, want %+v", changes[1].Entry, wantEntry)
	}
	cm := fc.get(t, configMapsGVR, "shop", "cfg")
	if cm == nil || cm.GetLabels()[v1alpha1.ManagedByLabel] != "convoy" || cm.GetAnnotations()[v1alpha1.OwnerAnnotation] != owner {
		t.Fatalf("stored ConfigMap = %v", cm)
	}
	if objs[0].GetNamespace() != "" || objs[0].GetLabels() != nil {
		t.Error("Deploy mutated its input")
	}

	// The same objects again: dry runs only, no write.
	fc.dyn.ClearActions()
	changes, err = Deploy(ctx, fc.client, objs, shopOpts, nil)
	if err != nil {
		t.Fatalf("second Deploy: %v", err)
	}
	if got, want := actions(changes), []string{"unchanged ConfigMap shop/cfg", "unchanged Deployment shop/web"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("changes = %v, want %v", got, want)
	}
	if w := fc.writes(); len(w) != 0 {
		t.Errorf("unchanged objects were written: %v", w)
	}

	// A changed ConfigMap is configured.
	fc.dyn.ClearActions()
	changes, err = Deploy(ctx, fc.client, []*unstructured.Unstructured{configMap("shop", "cfg", "b")}, shopOpts, nil)
	if err != nil || len(changes) != 1 || changes[0].Action != ActionConfigured {
		t.Fatalf("Deploy of a change = %v, %v", actions(changes), err)
	}
	if got := fc.get(t, configMapsGVR, "shop", "cfg").Object["data"]; !reflect.DeepEqual(got, map[string]any{"k": "b"}) {
		t.Errorf("data = %v", got)
	}
	if w := fc.writes(); !reflect.DeepEqual(w, []string{"apply shop/cfg"}) {
		t.Errorf("writes = %v", w)
	}
}

func TestDeployOwnership(t *testing.T) {
	ctx := context.Background()
	foreign := owned(configMap("shop", "theirs", "x"), "team-b/other")
	adoptable := configMap("shop", "legacy", "x")
	fc := newFakeCluster(t, foreign, adoptable)

	changes, err := Deploy(ctx, fc.client, []*unstructured.Unstructured{configMap("shop", "legacy", "x"), configMap("shop", "theirs", "y")}, shopOpts, nil)
	var conflict *ConflictError
	if !errors.As(err, &conflict) || conflict.Owner != "team-b/other" || conflict.Object != "ConfigMap shop/theirs" {
		t.Fatalf("Deploy error = %v, want a ConflictError about shop/theirs", err)
	}
	if got := actions(changes); !reflect.DeepEqual(got, []string{"configured ConfigMap shop/legacy"}) {
		t.Errorf("changes before the conflict = %v", got)
	}
	if got := fc.get(t, configMapsGVR, "shop", "legacy").GetAnnotations()[v1alpha1.OwnerAnnotation]; got != owner {
		t.Errorf("adopted object's owner = %q", got)
	}
	if got := fc.get(t, configMapsGVR, "shop", "theirs").Object["data"]; !reflect.DeepEqual(got, map[string]any{"k": "x"}) {
		t.Errorf("the other Release's object was changed: %v", got)
	}
}

func TestDeployErrors(t *testing.T) {
	invalid := apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, "bad",
		field.ErrorList{field.Invalid(field.NewPath("data"), "x", "too big")})
	tests := []struct {
		name      string
		objs      []*unstructured.Unstructured
		opts      Options
		setup     func(fc *fakeCluster)
		rejected  string // substring of the RejectedError message
		transient string // substring of a plain error
		wantDone  int
	}{
		// Objects of one kind are checked before any of them is sent: nothing of the batch is applied.
		{name: "namespace policy", objs: []*unstructured.Unstructured{configMap("shop", "ok", "1"), configMap("kube-system", "x", "1")},
			opts: shopOpts, rejected: "namespace kube-system is neither the target namespace", wantDone: 0},
		{name: "server rejects one of a batch, later stages not sent", objs: []*unstructured.Unstructured{configMap("shop", "ok", "1"), configMap("shop", "bad", "1"),
			obj("apps/v1", "Deployment", "shop", "later", nil)}, opts: shopOpts,
			setup: func(fc *fakeCluster) { fc.failOn("patch", "configmaps", "bad", invalid) }, rejected: "too big", wantDone: 1},
		{name: "cluster-scoped policy", objs: []*unstructured.Unstructured{obj("rbac.authorization.k8s.io/v1", "ClusterRole", "", "r", nil)},
			opts: shopOpts, rejected: "cluster-scoped ClusterRole/r needs Cluster spec.allowClusterScoped"},
		{name: "server rejects", objs: []*unstructured.Unstructured{configMap("shop", "bad", "1")}, opts: shopOpts,
			setup: func(fc *fakeCluster) { fc.failOn("patch", "configmaps", "bad", invalid) }, rejected: "too big"},
		{name: "missing namespace", objs: []*unstructured.Unstructured{configMap("gone", "x", "1")},
			opts: Options{Owner: owner, TargetNamespace: "shop", AllowedNamespaces: []string{"*"}}, rejected: `namespaces "gone" not found`},
		{name: "server error is transient", objs: []*unstructured.Unstructured{configMap("shop", "x", "1")}, opts: shopOpts,
			setup: func(fc *fakeCluster) {
				fc.failOn("get", "configmaps", "x", apierrors.NewInternalError(errors.New("etcd down")))
			}, transient: "get ConfigMap shop/x"},
		{name: "kind not served", objs: []*unstructured.Unstructured{obj("example.com/v1", "Gadget", "shop", "g", nil)}, opts: shopOpts,
			rejected: "kind example.com/v1 Gadget is not served by the cluster"},
		{name: "no owner", objs: []*unstructured.Unstructured{configMap("shop", "x", "1")}, opts: Options{TargetNamespace: "shop"},
			transient: "Options.Owner is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fc := newFakeCluster(t)
			if tt.setup != nil {
				tt.setup(fc)
			}
			changes, err := Deploy(context.Background(), fc.client, tt.objs, tt.opts, nil)
			var rej *RejectedError
			switch {
			case tt.rejected != "":
				if !errors.As(err, &rej) || !strings.Contains(rej.Message, tt.rejected) {
					t.Fatalf("error = %v, want a RejectedError containing %q", err, tt.rejected)
				}
			default:
				if err == nil || errors.As(err, &rej) || !strings.Contains(err.Error(), tt.transient) {
					t.Fatalf("error = %v, want a plain error containing %q", err, tt.transient)
				}
			}
			if len(changes) != tt.wantDone {
				t.Errorf("changes = %v, want %d", actions(changes), tt.wantDone)
			}
		})
	}
}

// establishWidgetsOnSecondGet makes the Widget CRD Established, and its kind discoverable, on the
// second read of the CRD: the deployer must wait for it.
func establishWidgetsOnSecondGet(t *testing.T, fc *fakeCluster) *int {
	gets := 0
	fc.dyn.PrependReactor("get", "customresourcedefinitions", func(action clienttesting.Action) (bool, runtime.Object, error) {
		gets++
		if gets == 2 {
			crd := fc.get(t, crdResource, "", "widgets.example.com")
			_ = unstructured.SetNestedSlice(crd.Object, []any{map[string]any{"type": "Established", "status": "True"}}, "status", "conditions")
			if err := fc.dyn.Tracker().Update(crdResource, crd, ""); err != nil {
				return true, nil, err
			}
			fc.disco.Resources = append(fc.disco.Resources, widgetResources)
		}
		return false, nil, nil
	})
	return &gets
}

func TestDeployWaitsForNewCRD(t *testing.T) {
	fc := newFakeCluster(t)
	gets := establishWidgetsOnSecondGet(t, fc)
	objs := []*unstructured.Unstructured{
		widgetCRD("Namespaced"),
		obj("example.com/v1", "Widget", "", "w", map[string]any{"spec": map[string]any{"size": int64(1)}}),
	}
	opts := Options{Owner: owner, TargetNamespace: "shop", AllowClusterScoped: true}
	changes, err := Deploy(context.Background(), fc.client, objs, opts, nil)
	if err != nil {
		t.Fatalf("Deploy: %v", err)
	}
	if got, want := actions(changes), []string{"created CustomResourceDefinition widgets.example.com", "created Widget shop/w"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("changes = %v, want %v", got, want)
	}
	if *gets < 2 {
		t.Errorf("the CRD was read %d times, want a wait for Established", *gets)
	}
	if fc.get(t, widgetsGVR, "shop", "w") == nil {
		t.Error("the Widget was not stored")
	}
}

func TestDeployRejectsUnservedCRDVersion(t *testing.T) {
	crd := widgetCRD("Namespaced")
	_ = unstructured.SetNestedSlice(crd.Object, []any{map[string]any{"type": "Established", "status": "True"}}, "status", "conditions")
	fc := newFakeCluster(t, crd)
	_, err := Deploy(context.Background(), fc.client, []*unstructured.Unstructured{obj("example.com/v0", "Widget", "shop", "w", nil)}, shopOpts, nil)
	var rej *RejectedError
	if !errors.As(err, &rej) || !strings.Contains(rej.Message, "version v0 of Widget is not served by CustomResourceDefinition widgets.example.com") {
		t.Fatalf("Deploy = %v, want a RejectedError about the unserved version", err)
	}
}

// TestDeployTakesTheDryRunsJudgment: after a dry run of the same objects, Deploy sends only the
// writes the judgment calls for: a create, an apply of a changed object, nothing for an unchanged one.
func TestDeployTakesTheDryRunsJudgment(t *testing.T) {
	ctx := context.Background()
	fc := newFakeCluster(t)
	if _, err := Deploy(ctx, fc.client, []*unstructured.Unstructured{configMap("shop", "same", "a"), configMap("shop", "changed", "a")}, shopOpts, nil); err != nil {
		t.Fatal(err)
	}
	objs := []*unstructured.Unstructured{configMap("shop", "same", "a"), configMap("shop", "changed", "b"), configMap("shop", "new", "a")}
	judged, err := DryRun(ctx, fc.client, objs, shopOpts)
	if err != nil || judged.Len() != 3 {
		t.Fatalf("DryRun judged %d objects, %v; want 3", judged.Len(), err)
	}
	fc.dyn.ClearActions()
	changes, err := Deploy(ctx, fc.client, objs, shopOpts, judged)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"unchanged ConfigMap shop/same", "configured ConfigMap shop/changed", "created ConfigMap shop/new"}
	if got := actions(changes); !reflect.DeepEqual(got, want) {
		t.Fatalf("changes = %v, want %v", got, want)
	}
	if n, w := len(fc.dyn.Actions()), fc.writes(); n != 2 || len(w) != 2 {
		t.Errorf("Deploy sent %d requests (writes %v); want exactly the 2 writes", n, w)
	}
}
