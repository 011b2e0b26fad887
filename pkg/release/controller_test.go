package release

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
	"github.com/kumodo/convoy/generated/clientset/versioned/fake"
	convoyinformers "github.com/kumodo/convoy/generated/informers/externalversions"
	"github.com/kumodo/convoy/pkg/clusters"
	"github.com/kumodo/convoy/pkg/coordinator"
	"github.com/kumodo/convoy/pkg/desired"
	"github.com/kumodo/convoy/pkg/sharding"
)

// fixture runs syncHandler against fake clientsets whose informers hold the given objects, as
// k8s.io/sample-controller's tests do, and records the actions sent to the convoy API.
type fixture struct {
	t       *testing.T
	convoy  *fake.Clientset
	c       *Controller
	status  []v1alpha1.ReleaseStatus // status bodies applied by the controller
	objects []runtime.Object
}

func newFixture(t *testing.T, objects ...runtime.Object) *fixture {
	t.Helper()
	f := &fixture{t: t, objects: objects}
	var convoyObjs, kubeObjs []runtime.Object
	for _, o := range objects {
		switch o.(type) {
		case *v1alpha1.Release, *v1alpha1.Cluster, *v1alpha1.ReleaseInventory:
			convoyObjs = append(convoyObjs, o)
		default:
			kubeObjs = append(kubeObjs, o)
		}
	}
	f.convoy = fake.NewSimpleClientset(convoyObjs...)
	// The fake clientset cannot server-side apply CRD types: record the status body instead.
	f.convoy.PrependReactor("patch", "releases", func(action clienttesting.Action) (bool, runtime.Object, error) {
		patch := action.(clienttesting.PatchAction)
		if patch.GetSubresource() != "status" {
			return false, nil, nil
		}
		var body v1alpha1.Release
		if err := json.Unmarshal(patch.GetPatch(), &body); err != nil {
			t.Fatalf("decoding status apply: %v", err)
		}
		f.status = append(f.status, body.Status)
		return true, &body, nil
	})
	kube := kubefake.NewSimpleClientset(kubeObjs...)
	kubeFactory := kubeinformers.NewSharedInformerFactory(kube, 0)
	convoyFactory := convoyinformers.NewSharedInformerFactory(f.convoy, 0)
	gate, err := sharding.NewStatic(1, 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	clients := clusters.NewCache(kubeFactory.Core().V1().Secrets().Lister(), clusters.Options{})
	renderer := &desired.Renderer{
		Coordinator: coordinator.New(kubeFactory.Core().V1().ConfigMaps().Lister()),
		Clients:     clients,
		Clusters:    convoyFactory.Core().V1alpha1().Clusters().Lister(),
		ConfigMaps:  kubeFactory.Core().V1().ConfigMaps().Lister(),
		Secrets:     kubeFactory.Core().V1().Secrets().Lister(),
	}
	f.c, err = NewController(ctx, f.convoy, convoyFactory.Core().V1alpha1().Releases(),
		convoyFactory.Core().V1alpha1().Clusters(), kubeFactory.Core().V1().ConfigMaps(),
		kubeFactory.Core().V1().Secrets(), renderer, clients,
		gate, record.NewFakeRecorder(20), Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range convoyObjs {
		switch o := o.(type) {
		case *v1alpha1.Release:
			_ = convoyFactory.Core().V1alpha1().Releases().Informer().GetIndexer().Add(o)
		case *v1alpha1.Cluster:
			_ = convoyFactory.Core().V1alpha1().Clusters().Informer().GetIndexer().Add(o)
		}
	}
	for _, o := range kubeObjs {
		if cm, ok := o.(*corev1.ConfigMap); ok {
			_ = kubeFactory.Core().V1().ConfigMaps().Informer().GetIndexer().Add(cm)
		}
	}
	f.convoy.ClearActions()
	return f
}

// actions returns "verb resource[/subresource]" of every action sent to the convoy API.
func (f *fixture) actions() []string {
	var out []string
	for _, a := range f.convoy.Actions() {
		s := a.GetVerb() + " " + a.GetResource().Resource
		if a.GetSubresource() != "" {
			s += "/" + a.GetSubresource()
		}
		out = append(out, s)
	}
	return out
}

func newRelease(mutate func(*v1alpha1.Release)) *v1alpha1.Release {
	rel := &v1alpha1.Release{
		ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "team-a", Generation: 2, ResourceVersion: "1"},
		Spec: v1alpha1.ReleaseSpec{
			ClusterRef:      v1alpha1.LocalObjectReference{Name: "prod"},
			TargetNamespace: "shop",
			Source:          v1alpha1.ReleaseSource{ConfigMapRef: &v1alpha1.LocalObjectReference{Name: "shop-manifests"}},
		},
	}
	if mutate != nil {
		mutate(rel)
	}
	return rel
}

var sourceConfigMap = &corev1.ConfigMap{
	ObjectMeta: metav1.ObjectMeta{Name: "shop-manifests", Namespace: "team-a", ResourceVersion: "7"},
	Data:       map[string]string{"a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n"},
}

func TestSyncHandlerAddsFinalizerAndReportsMissingCluster(t *testing.T) {
	f := newFixture(t, newRelease(nil), sourceConfigMap)
	if err := f.c.syncHandler(context.Background(), cache.ObjectName{Namespace: "team-a", Name: "shop"}); err != nil {
		t.Fatalf("syncHandler: %v", err)
	}
	if got, want := f.actions(), []string{"patch releases", "patch releases/status"}; !slices.Equal(got, want) {
		t.Fatalf("actions = %v, want %v", got, want)
	}
	// A merge patch of the finalizers alone, guarded by the resourceVersion: the spec is not sent.
	patch := string(f.convoy.Actions()[0].(clienttesting.PatchAction).GetPatch())
	if want := `{"metadata":{"finalizers":["` + v1alpha1.PruneWorkloadsFinalizer + `"],"resourceVersion":"1"}}`; patch != want {
		t.Errorf("finalizer patch = %s, want %s", patch, want)
	}
	st := f.status[0]
	cond := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionApplied)
	if cond == nil || cond.Reason != v1alpha1.ReasonClusterNotReady || cond.Status != metav1.ConditionFalse {
		t.Fatalf("Applied = %+v, want False/ClusterNotReady", cond)
	}
	if st.LastAttempted == nil || st.LastAttempted.Failures != 1 || st.LastAttempted.Revision != "configmap/shop-manifests@7" {
		t.Errorf("lastAttempted = %+v, want 1 failure and the ConfigMap revision", st.LastAttempted)
	}
	if st.ObservedGeneration != 2 {
		t.Errorf("observedGeneration = %d, want 2", st.ObservedGeneration)
	}
	if st.Health != nil || st.Drift != nil {
		t.Errorf("the release controller wrote fields of other managers: %+v", st)
	}
}

func TestSyncHandlerWritesNoUnchangedStatus(t *testing.T) {
	// The status already says what this attempt decides: no write at all.
	at := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	rel := newRelease(func(r *v1alpha1.Release) {
		r.Finalizers = []string{v1alpha1.PruneWorkloadsFinalizer}
		// An unsupported source/contentType pair: a hold that needs no cluster.
		r.Spec.ContentType = v1alpha1.ContentTypeKustomize
	})
	f := newFixture(t, rel, sourceConfigMap)
	key := cache.ObjectName{Namespace: "team-a", Name: "shop"}
	if err := f.c.syncHandler(context.Background(), key); err != nil {
		t.Fatal(err)
	}
	if len(f.status) != 1 {
		t.Fatalf("first sync wrote %d statuses, want 1", len(f.status))
	}
	// Feed the written status back into the cache, as the informer would.
	rel = rel.DeepCopy()
	rel.Status = f.status[0]
	rel.Status.ReconciledAt = &at
	if err := f.c.releaseIndexer.Update(rel); err != nil {
		t.Fatal(err)
	}
	f.convoy.ClearActions()
	if err := f.c.syncHandler(context.Background(), key); err != nil {
		t.Fatal(err)
	}
	if got := f.actions(); len(got) != 0 {
		t.Fatalf("a steady reconcile sent %v, want nothing", got)
	}
}

func TestFinalize(t *testing.T) {
	deleting := func(block bool) *v1alpha1.Release {
		return newRelease(func(r *v1alpha1.Release) {
			r.Finalizers = []string{v1alpha1.PruneWorkloadsFinalizer}
			r.DeletionTimestamp = &metav1.Time{Time: time.Now()}
			r.Spec.DeletionPolicy.BlockOnClusterUnreachable = block
		})
	}
	inv := &v1alpha1.ReleaseInventory{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "team-a"}}
	tests := []struct {
		name        string
		rel         *v1alpha1.Release
		wantErr     bool
		wantActions []string
	}{
		{"missing cluster skips prune", deleting(false), false,
			[]string{"get releaseinventories", "delete releaseinventories", "update releases"}},
		{"blockOnClusterUnreachable waits", deleting(true), true, []string{"get releaseinventories"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, tt.rel, inv.DeepCopy())
			err := f.c.syncHandler(context.Background(), cache.ObjectName{Namespace: "team-a", Name: "shop"})
			if (err != nil) != tt.wantErr {
				t.Fatalf("syncHandler error = %v, want error %v", err, tt.wantErr)
			}
			if got := f.actions(); !slices.Equal(got, tt.wantActions) {
				t.Fatalf("actions = %v, want %v", got, tt.wantActions)
			}
			if !tt.wantErr {
				updated := f.convoy.Actions()[2].(clienttesting.UpdateAction).GetObject().(*v1alpha1.Release)
				if slices.Contains(updated.Finalizers, v1alpha1.PruneWorkloadsFinalizer) {
					t.Errorf("finalizer not removed: %v", updated.Finalizers)
				}
			}
		})
	}
}
