package deployer

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clienttesting "k8s.io/client-go/testing"
)

func TestDryRunSkipsWhatCannotBeJudgedYet(t *testing.T) {
	fc := newFakeCluster(t)
	objs := []*unstructured.Unstructured{
		obj("v1", "Namespace", "", "extra", nil),
		widgetCRD("Namespaced"),
		configMap("shop", "cfg", "1"),
		configMap("extra", "in-new-namespace", "1"),       // its namespace is created by the render
		obj("example.com/v1", "Widget", "shop", "w", nil), // its kind is defined by the render
	}
	opts := Options{Owner: owner, TargetNamespace: "shop", AllowClusterScoped: true, AllowedNamespaces: []string{"extra"}}
	if _, err := DryRun(context.Background(), fc.client, objs, opts); err != nil {
		t.Fatalf("DryRun: %v", err)
	}
	want := []string{"/extra", "/widgets.example.com", "shop/cfg"}
	if got := fc.dryRuns(); !reflect.DeepEqual(got, want) {
		t.Errorf("dry-run applies = %v, want %v", got, want)
	}
	if w := fc.writes(); len(w) != 0 {
		t.Errorf("DryRun wrote: %v", w)
	}
	if fc.get(t, configMapsGVR, "shop", "cfg") != nil {
		t.Error("DryRun stored an object")
	}
}

func TestDryRunJudgesObjectsInExistingNamespaces(t *testing.T) {
	// The render creates Namespace shop, which already exists: its objects are judged.
	fc := newFakeCluster(t)
	objs := []*unstructured.Unstructured{obj("v1", "Namespace", "", "shop", nil), configMap("shop", "cfg", "1")}
	opts := Options{Owner: owner, TargetNamespace: "shop", AllowClusterScoped: true}
	if _, err := DryRun(context.Background(), fc.client, objs, opts); err != nil {
		t.Fatalf("DryRun: %v", err)
	}
	if got := fc.dryRuns(); !reflect.DeepEqual(got, []string{"/shop", "shop/cfg"}) {
		t.Errorf("dry-run applies = %v", got)
	}
}

func TestDryRunErrors(t *testing.T) {
	invalid := apierrors.NewInvalid(schema.GroupKind{Group: "apps", Kind: "Deployment"}, "web",
		field.ErrorList{field.Required(field.NewPath("spec", "selector"), "")})
	tests := []struct {
		name     string
		seed     []runtime.Object
		objs     []*unstructured.Unstructured
		opts     Options
		setup    func(fc *fakeCluster)
		rejected string // substring of a RejectedError message
		conflict string // owner of a ConflictError
		plain    string // substring of a transient error
	}{
		{name: "unknown kind without CRD", objs: []*unstructured.Unstructured{obj("example.com/v1", "Gadget", "shop", "g", nil)},
			opts: shopOpts, rejected: "not served by the cluster"},
		{name: "policy applies to a kind defined by the render", opts: Options{Owner: owner, TargetNamespace: "shop", AllowClusterScoped: true},
			objs:     []*unstructured.Unstructured{widgetCRD("Namespaced"), obj("example.com/v1", "Widget", "kube-system", "w", nil)},
			rejected: "namespace kube-system is neither"},
		{name: "CRD needs allowClusterScoped", opts: shopOpts, objs: []*unstructured.Unstructured{widgetCRD("Namespaced")},
			rejected: "cluster-scoped CustomResourceDefinition/widgets.example.com needs Cluster spec.allowClusterScoped"},
		{name: "server rejects", opts: shopOpts,
			objs:     []*unstructured.Unstructured{obj("apps/v1", "Deployment", "shop", "web", map[string]any{"spec": map[string]any{}})},
			setup:    func(fc *fakeCluster) { fc.failOn("patch", "deployments", "web", invalid) },
			rejected: "spec.selector: Required value"},
		{name: "object of another release", opts: shopOpts, seed: []runtime.Object{owned(configMap("shop", "cfg", "1"), "team-b/x")},
			objs: []*unstructured.Unstructured{configMap("shop", "cfg", "2")}, conflict: "team-b/x"},
		{name: "namespace not created by the render", opts: Options{Owner: owner, TargetNamespace: "shop", AllowedNamespaces: []string{"*"}},
			objs: []*unstructured.Unstructured{configMap("nowhere", "cfg", "1")}, rejected: `namespaces "nowhere" not found`},
		{name: "transient", opts: shopOpts, objs: []*unstructured.Unstructured{configMap("shop", "cfg", "1")},
			setup: func(fc *fakeCluster) {
				fc.failOn("patch", "configmaps", "cfg", apierrors.NewServiceUnavailable("try later"))
			}, plain: "dry-run apply ConfigMap shop/cfg"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fc := newFakeCluster(t, tt.seed...)
			if tt.setup != nil {
				tt.setup(fc)
			}
			_, err := DryRun(context.Background(), fc.client, tt.objs, tt.opts)
			var rej *RejectedError
			var conflict *ConflictError
			switch {
			case tt.rejected != "":
				if !errors.As(err, &rej) || !strings.Contains(rej.Message, tt.rejected) {
					t.Fatalf("DryRun = %v, want a RejectedError containing %q", err, tt.rejected)
				}
			case tt.conflict != "":
				if !errors.As(err, &conflict) || conflict.Owner != tt.conflict {
					t.Fatalf("DryRun = %v, want a ConflictError with owner %s", err, tt.conflict)
				}
			default:
				if err == nil || errors.As(err, &rej) || errors.As(err, &conflict) || !strings.Contains(err.Error(), tt.plain) {
					t.Fatalf("DryRun = %v, want a plain error containing %q", err, tt.plain)
				}
			}
		})
	}
}

// TestDryRunListsManyObjectsOfOneKind: listThreshold objects of one resource in one namespace are
// read with one list, not a get each, and the judgment still tells existing from missing ones.
func TestDryRunListsManyObjectsOfOneKind(t *testing.T) {
	ctx := context.Background()
	fc := newFakeCluster(t)
	var objs []*unstructured.Unstructured
	for i := range listThreshold {
		objs = append(objs, configMap("shop", fmt.Sprintf("cm-%02d", i), "1"))
	}
	if _, err := Deploy(ctx, fc.client, objs[:listThreshold/2], shopOpts, nil); err != nil {
		t.Fatal(err)
	}
	fc.dyn.ClearActions()
	judged, err := DryRun(ctx, fc.client, objs, shopOpts)
	if err != nil {
		t.Fatal(err)
	}
	verbs := map[string]int{}
	for _, a := range fc.dyn.Actions() {
		verbs[a.GetVerb()]++
	}
	if want := map[string]int{"list": 1, "patch": listThreshold}; !reflect.DeepEqual(verbs, want) {
		t.Errorf("requests by verb = %v, want %v", verbs, want)
	}
	fc.dyn.ClearActions()
	changes, err := Deploy(ctx, fc.client, objs, shopOpts, judged)
	if err != nil {
		t.Fatal(err)
	}
	created := 0
	for _, ch := range changes {
		if ch.Action == ActionCreated {
			created++
		}
	}
	if created != listThreshold/2 || len(fc.writes()) != listThreshold/2 {
		t.Errorf("created %d, writes %v; want the %d missing objects only", created, fc.writes(), listThreshold/2)
	}
}

// TestDryRunDoesNotJudgeAnObjectChangedBetweenItsReads: when the read and the dry run saw different
// resourceVersions (a controller wrote the object between them), the object gets no judgment and
// Deploy reads it again.
func TestDryRunDoesNotJudgeAnObjectChangedBetweenItsReads(t *testing.T) {
	ctx := context.Background()
	fc := newFakeCluster(t)
	cm := configMap("shop", "busy", "1")
	if _, err := Deploy(ctx, fc.client, []*unstructured.Unstructured{cm}, shopOpts, nil); err != nil {
		t.Fatal(err)
	}
	stale := fc.get(t, configMapsGVR, "shop", "busy")
	stale.SetResourceVersion("0")
	fc.dyn.PrependReactor("get", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, stale.DeepCopy(), nil
	})
	judged, err := DryRun(ctx, fc.client, []*unstructured.Unstructured{cm}, shopOpts)
	if err != nil || judged.Len() != 0 {
		t.Fatalf("DryRun judged %d objects, %v; want none", judged.Len(), err)
	}
}
