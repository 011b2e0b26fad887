package deployer

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
)

func entryOf(group, kind, ns, name string, wave int32) v1alpha1.InventoryEntry {
	return v1alpha1.InventoryEntry{Group: group, Version: "v1", Kind: kind, Namespace: ns, Name: name, Wave: wave}
}

func TestDelete(t *testing.T) {
	seed := []runtime.Object{
		owned(configMap("shop", "early", "1"), owner),
		owned(configMap("shop", "late", "1"), owner),
		withAnnotations(owned(configMap("shop", "keep", "1"), owner), v1alpha1.PruneAnnotation, "disabled"),
		owned(configMap("shop", "theirs", "1"), "team-b/other"),
		configMap("shop", "unannotated", "1"),
		owned(obj("apps/v1", "Deployment", "shop", "web", nil), owner),
		owned(obj("v1", "Namespace", "", "extra", nil), owner),
	}
	fc := newFakeCluster(t, seed...)
	refs := []v1alpha1.InventoryEntry{
		entryOf("", "Namespace", "", "extra", 0),
		entryOf("", "ConfigMap", "shop", "early", 0),
		entryOf("", "ConfigMap", "shop", "keep", 1),
		entryOf("", "ConfigMap", "shop", "late", 3),
		entryOf("", "ConfigMap", "shop", "theirs", 3),
		entryOf("", "ConfigMap", "shop", "unannotated", 0),
		entryOf("", "ConfigMap", "shop", "gone", 0),
		{Group: "apps", Version: "v1beta1", Kind: "Deployment", Namespace: "shop", Name: "web", Wave: 1}, // version no longer served
		entryOf("example.com", "Widget", "shop", "w", 5),                                                 // kind no longer served
	}
	deleted, err := Delete(context.Background(), fc.client, refs, owner)
	if err != nil {
		t.Fatalf("Delete: %v", err)
	}
	var got []string
	for _, e := range deleted {
		got = append(got, EntryRef(e))
	}
	want := []string{"ConfigMap shop/late", "Deployment shop/web", "ConfigMap shop/early", "Namespace extra"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("deleted = %v, want %v", got, want)
	}
	wantWrites := []string{"delete shop/late", "delete shop/web", "delete shop/early", "delete /extra"}
	if w := fc.writes(); !reflect.DeepEqual(w, wantWrites) {
		t.Errorf("delete requests = %v, want %v", w, wantWrites)
	}
	for _, name := range []string{"keep", "theirs", "unannotated"} {
		if fc.get(t, configMapsGVR, "shop", name) == nil {
			t.Errorf("ConfigMap %s was deleted", name)
		}
	}
	if fc.get(t, deploymentsGVR, "shop", "web") != nil {
		t.Error("Deployment web is still there")
	}
}

func TestDeleteContinuesAfterErrors(t *testing.T) {
	fc := newFakeCluster(t, owned(configMap("shop", "a", "1"), owner), owned(configMap("shop", "b", "1"), owner))
	fc.failOn("delete", "configmaps", "a", apierrors.NewInternalError(errors.New("etcd down")))
	refs := []v1alpha1.InventoryEntry{entryOf("", "ConfigMap", "shop", "a", 1), entryOf("", "ConfigMap", "shop", "b", 0)}
	deleted, err := Delete(context.Background(), fc.client, refs, owner)
	if err == nil || !strings.Contains(err.Error(), "delete ConfigMap shop/a") {
		t.Fatalf("Delete error = %v, want one naming ConfigMap shop/a", err)
	}
	if len(deleted) != 1 || deleted[0].Name != "b" {
		t.Errorf("deleted = %v, want only b", deleted)
	}
}
