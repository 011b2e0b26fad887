package deployer

import (
	"encoding/json"
	"slices"
	"strconv"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery/cached/memory"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/restmapper"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kumodo/convoy/pkg/clusters"
)

// fakeCluster is a clusters.Client over a fake dynamic client and a fake discovery, with a reactor
// that emulates server-side apply closely enough for the deployer's flow: create or merge
// top-level fields, labels and annotations; honour dryRun; refuse objects in missing namespaces.
type fakeCluster struct {
	client *clusters.Client
	dyn    *dynamicfake.FakeDynamicClient
	disco  *fakediscovery.FakeDiscovery
}

var (
	namespacesGVR  = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	configMapsGVR  = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	deploymentsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	widgetsGVR     = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
)

// widgetResources is the discovery document of the Widget CRD once it is established.
var widgetResources = &metav1.APIResourceList{GroupVersion: "example.com/v1", APIResources: []metav1.APIResource{
	{Name: "widgets", Namespaced: true, Kind: "Widget", Verbs: metav1.Verbs{"get", "patch", "delete"}},
}}

func newFakeCluster(t *testing.T, objs ...runtime.Object) *fakeCluster {
	t.Helper()
	verbs := metav1.Verbs{"get", "list", "patch", "delete"}
	disco := &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{Resources: []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "namespaces", Namespaced: false, Kind: "Namespace", Verbs: verbs},
			{Name: "configmaps", Namespaced: true, Kind: "ConfigMap", Verbs: verbs},
			{Name: "secrets", Namespaced: true, Kind: "Secret", Verbs: verbs},
		}},
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{
			{Name: "deployments", Namespaced: true, Kind: "Deployment", Verbs: verbs},
		}},
		{GroupVersion: "apiextensions.k8s.io/v1", APIResources: []metav1.APIResource{
			{Name: "customresourcedefinitions", Namespaced: false, Kind: "CustomResourceDefinition", Verbs: verbs},
		}},
		{GroupVersion: "rbac.authorization.k8s.io/v1", APIResources: []metav1.APIResource{
			{Name: "clusterroles", Namespaced: false, Kind: "ClusterRole", Verbs: verbs},
		}},
	}}}
	seed := append([]runtime.Object{obj("v1", "Namespace", "", "shop", nil)}, objs...)
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{crdResource: "CustomResourceDefinitionList", configMapsGVR: "ConfigMapList"}, seed...)
	cached := memory.NewMemCacheClient(disco)
	fc := &fakeCluster{
		client: &clusters.Client{Dynamic: dyn, Discovery: cached, Mapper: restmapper.NewDeferredDiscoveryRESTMapper(cached)},
		dyn:    dyn,
		disco:  disco,
	}
	dyn.PrependReactor("patch", "*", fc.applyReactor)
	return fc
}

func (fc *fakeCluster) applyReactor(action clienttesting.Action) (bool, runtime.Object, error) {
	p, ok := action.(clienttesting.PatchActionImpl)
	if !ok || p.PatchType != types.ApplyPatchType {
		return false, nil, nil
	}
	applied := &unstructured.Unstructured{}
	if err := json.Unmarshal(p.Patch, &applied.Object); err != nil {
		return true, nil, apierrors.NewBadRequest(err.Error())
	}
	tracker := fc.dyn.Tracker()
	if p.Namespace != "" {
		if _, err := tracker.Get(namespacesGVR, "", p.Namespace); apierrors.IsNotFound(err) {
			return true, nil, apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, p.Namespace)
		}
	}
	existing, err := tracker.Get(p.Resource, p.Namespace, p.Name)
	created := apierrors.IsNotFound(err)
	var result *unstructured.Unstructured
	switch {
	case created:
		result = applied.DeepCopy()
		result.SetResourceVersion("1")
		result.SetUID(types.UID("uid-" + p.Name))
	case err != nil:
		return true, nil, err
	default:
		result = existing.(*unstructured.Unstructured).DeepCopy()
		for k, v := range applied.Object {
			if k != "metadata" {
				result.Object[k] = v
			}
		}
		result.SetLabels(merge(result.GetLabels(), applied.GetLabels()))
		result.SetAnnotations(merge(result.GetAnnotations(), applied.GetAnnotations()))
	}
	if slices.Contains(p.PatchOptions.DryRun, metav1.DryRunAll) {
		// As the API server does: a dry run stores nothing, so the resourceVersion stays.
		return true, result, nil
	}
	if !created {
		rv, _ := strconv.Atoi(result.GetResourceVersion())
		result.SetResourceVersion(strconv.Itoa(rv + 1))
	}
	if created {
		err = tracker.Create(p.Resource, result, p.Namespace)
	} else {
		err = tracker.Update(p.Resource, result, p.Namespace)
	}
	return true, result, err
}

func merge(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// get returns a stored object or nil.
func (fc *fakeCluster) get(t *testing.T, gvr schema.GroupVersionResource, ns, name string) *unstructured.Unstructured {
	t.Helper()
	o, err := fc.dyn.Tracker().Get(gvr, ns, name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return o.(*unstructured.Unstructured)
}

// writes returns "verb namespace/name" of the patch (non-dry-run) and delete requests so far.
func (fc *fakeCluster) writes() []string {
	var out []string
	for _, a := range fc.dyn.Actions() {
		switch act := a.(type) {
		case clienttesting.PatchActionImpl:
			if !slices.Contains(act.PatchOptions.DryRun, metav1.DryRunAll) {
				out = append(out, "apply "+act.Namespace+"/"+act.Name)
			}
		case clienttesting.DeleteActionImpl:
			out = append(out, "delete "+act.Namespace+"/"+act.Name)
		}
	}
	return out
}

// dryRuns returns "namespace/name" of the dry-run applies so far.
func (fc *fakeCluster) dryRuns() []string {
	var out []string
	for _, a := range fc.dyn.Actions() {
		if act, ok := a.(clienttesting.PatchActionImpl); ok && slices.Contains(act.PatchOptions.DryRun, metav1.DryRunAll) {
			out = append(out, act.Namespace+"/"+act.Name)
		}
	}
	slices.Sort(out) // dry runs are sent in parallel
	return out
}

// failOn makes verb on the named object fail with err.
func (fc *fakeCluster) failOn(verb, resource, name string, err error) {
	fc.dyn.PrependReactor(verb, resource, func(action clienttesting.Action) (bool, runtime.Object, error) {
		type named interface{ GetName() string }
		if n, ok := action.(named); ok && n.GetName() == name {
			return true, nil, err
		}
		return false, nil, nil
	})
}

// owned marks an object as applied by the Release owner.
func owned(o *unstructured.Unstructured, owner string) *unstructured.Unstructured {
	return withAnnotations(o, "release.core.convoy.kumodo.io/owner", owner)
}
