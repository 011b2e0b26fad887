package inventory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
	"github.com/kumodo/convoy/generated/clientset/versioned/fake"
)

// newFakeClientset returns a fake clientset whose server-side apply of ReleaseInventories stores
// the applied object as a sole field manager would: the body replaces metadata owner references
// and the spec. The generated field-managed fake cannot apply CRD types (it has no OpenAPI schema
// for them), so this reactor stands in; the e2e tests cover a real API server.
func newFakeClientset(t *testing.T) *fake.Clientset {
	cs := fake.NewSimpleClientset()
	cs.PrependReactor("patch", "releaseinventories", func(action clienttesting.Action) (bool, runtime.Object, error) {
		p := action.(clienttesting.PatchActionImpl)
		if p.PatchType != types.ApplyPatchType {
			return false, nil, nil
		}
		if p.PatchOptions.FieldManager != FieldManager || p.PatchOptions.Force == nil || !*p.PatchOptions.Force {
			t.Errorf("apply options = %+v, want field manager %s and force", p.PatchOptions, FieldManager)
		}
		var applied v1alpha1.ReleaseInventory
		if err := json.Unmarshal(p.Patch, &applied); err != nil {
			return true, nil, err
		}
		if applied.Kind != "ReleaseInventory" || applied.APIVersion != v1alpha1.SchemeGroupVersion.String() ||
			applied.Name != p.Name || applied.Namespace != p.Namespace {
			t.Errorf("applied object is %s %s %s/%s", applied.APIVersion, applied.Kind, applied.Namespace, applied.Name)
		}
		gvr := v1alpha1.SchemeGroupVersion.WithResource("releaseinventories")
		tracker := cs.Tracker()
		existing, err := tracker.Get(gvr, p.Namespace, p.Name)
		switch {
		case apierrors.IsNotFound(err):
			return true, &applied, tracker.Create(gvr, &applied, p.Namespace)
		case err != nil:
			return true, nil, err
		}
		inv := existing.(*v1alpha1.ReleaseInventory).DeepCopy()
		inv.OwnerReferences = applied.OwnerReferences
		inv.Spec = applied.Spec
		return true, inv, tracker.Update(gvr, inv, p.Namespace)
	})
	return cs
}

func release() *v1alpha1.Release {
	return &v1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "shop", UID: "rel-uid"}}
}

func TestPutAndDelete(t *testing.T) {
	ctx := context.Background()
	cs := newFakeClientset(t)
	rel := release()
	created := metav1.Now()
	spec := v1alpha1.ReleaseInventorySpec{
		RenderRef: "sha256:abc",
		Entries:   []v1alpha1.InventoryEntry{entry("apps", "Deployment", "shop", "web", 1), entry("", "Namespace", "", "shop", -1)},
		Hooks:     []v1alpha1.HookEntry{{Phase: "preSync", Version: "v1", Kind: "Job", Namespace: "shop", Name: "migrate-abc", CreatedAt: &created}},
	}
	if err := Put(ctx, cs, rel, spec); err != nil {
		t.Fatalf("Put: %v", err)
	}
	got, err := cs.CoreV1alpha1().ReleaseInventories("team-a").Get(ctx, "shop", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if got.Spec.RenderRef != spec.RenderRef || len(got.Spec.Entries) != 2 || got.Spec.Entries[0] != spec.Entries[0] ||
		len(got.Spec.Hooks) != 1 || got.Spec.Hooks[0].Name != "migrate-abc" {
		t.Errorf("spec = %+v, want %+v", got.Spec, spec)
	}
	if refs := got.OwnerReferences; len(refs) != 1 || refs[0].UID != rel.UID || refs[0].Kind != "Release" ||
		refs[0].Controller == nil || !*refs[0].Controller {
		t.Errorf("ownerReferences = %+v", refs)
	}

	// A second Put replaces the spec: the exact applied set.
	spec2 := v1alpha1.ReleaseInventorySpec{RenderRef: "sha256:def", Entries: spec.Entries[:1]}
	if err := Put(ctx, cs, rel, spec2); err != nil {
		t.Fatalf("second Put: %v", err)
	}
	got, err = cs.CoreV1alpha1().ReleaseInventories("team-a").Get(ctx, "shop", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec.RenderRef != "sha256:def" || len(got.Spec.Entries) != 1 || len(got.Spec.Hooks) != 0 {
		t.Errorf("spec after second Put = %+v", got.Spec)
	}

	if err := Delete(ctx, cs, "team-a", "shop"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if err := Delete(ctx, cs, "team-a", "shop"); err != nil {
		t.Fatalf("Delete of a missing inventory: %v", err)
	}
}

func TestPutRefusesTooLarge(t *testing.T) {
	cs := newFakeClientset(t)
	var entries []v1alpha1.InventoryEntry
	for i := range 20000 {
		entries = append(entries, entry("apps", "Deployment", "some-namespace", fmt.Sprintf("deployment-with-a-long-name-%05d", i), 0))
	}
	err := Put(context.Background(), cs, release(), v1alpha1.ReleaseInventorySpec{Entries: entries})
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "20000 entries") {
		t.Fatalf("Put = %v, want ErrTooLarge naming the entry count", err)
	}
	if len(cs.Actions()) != 0 {
		t.Errorf("Put sent %d requests for a refused spec", len(cs.Actions()))
	}
}

func TestPutNeedsUID(t *testing.T) {
	rel := release()
	rel.UID = ""
	if err := Put(context.Background(), newFakeClientset(t), rel, v1alpha1.ReleaseInventorySpec{}); err == nil {
		t.Fatal("Put without a Release UID succeeded")
	}
}
