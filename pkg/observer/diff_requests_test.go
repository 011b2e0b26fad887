package observer

import (
	"context"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery/cached/memory"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/restmapper"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kumodo/convoy/pkg/clusters"
	"github.com/kumodo/convoy/pkg/deployer"
)

// TestDriftCheckRequests counts the target API requests of one drift check of a 50-object Release
// that is in sync: one GET and one dry-run apply per object, nothing else once discovery is warm.
func TestDriftCheckRequests(t *testing.T) {
	const objects = 50
	const owner = "team-a/shop"
	var desired []*unstructured.Unstructured
	var live []runtime.Object
	for i := range objects {
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": fmt.Sprintf("cm-%02d", i), "namespace": "shop"},
			"data":     map[string]any{"k": "v"},
		}}
		desired = append(desired, obj)
		live = append(live, deployer.Prepare(obj, owner, "shop"))
	}
	dyn := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme(), live...)
	// The fake client cannot server-side apply: a dry run of an object in sync returns the live object.
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	dyn.PrependReactor("patch", "configmaps", func(action clienttesting.Action) (bool, runtime.Object, error) {
		p := action.(clienttesting.PatchAction)
		obj, err := dyn.Tracker().Get(gvr, p.GetNamespace(), p.GetName())
		return true, obj, err
	})
	disco := &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{Resources: []*metav1.APIResourceList{{
		GroupVersion: "v1", APIResources: []metav1.APIResource{{Name: "configmaps", Namespaced: true, Kind: "ConfigMap"}},
	}}}}
	cached := memory.NewMemCacheClient(disco)
	client := &clusters.Client{Dynamic: dyn, Discovery: cached, Mapper: restmapper.NewDeferredDiscoveryRESTMapper(cached)}
	d := &differ{client: client, owner: owner, target: "shop"}
	// Warm the mapper, as every check after a cluster's first does.
	if _, err := d.mapping(desired[0]); err != nil {
		t.Fatal(err)
	}
	dyn.ClearActions()

	drifted, err := d.diffObjects(context.Background(), desired)
	if err != nil {
		t.Fatal(err)
	}
	if len(drifted) != 0 {
		t.Fatalf("drifted = %v, want none", drifted)
	}
	counts := map[string]int{}
	for _, a := range dyn.Actions() {
		counts[a.GetVerb()]++
	}
	t.Logf("one drift check of %d objects: %d requests %v", objects, len(dyn.Actions()), counts)
	if counts["get"] != objects || counts["patch"] != objects || len(dyn.Actions()) != 2*objects {
		t.Fatalf("requests = %v, want %d GETs and %d dry-run applies", counts, objects, objects)
	}
	for _, a := range dyn.Actions() {
		if p, ok := a.(clienttesting.PatchAction); ok && p.GetPatchType() != "application/apply-patch+yaml" {
			t.Fatalf("patch type %s, want server-side apply", p.GetPatchType())
		}
	}
}
