package deployer

import (
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
)

func TestEntriesPlaceNamespacesLikeDeploy(t *testing.T) {
	widgetsWave1 := obj("example.com/v1", "Widget", "", "w", nil)
	widgetsWave1.SetAnnotations(map[string]string{v1alpha1.SyncWaveAnnotation: "1"})
	tests := []struct {
		name    string
		objs    []*unstructured.Unstructured
		render  []*unstructured.Unstructured
		want    []v1alpha1.InventoryEntry
		wantErr bool
	}{
		{
			name: "namespaced kind without namespace goes to the target namespace",
			objs: []*unstructured.Unstructured{obj("v1", "ConfigMap", "", "a", nil), obj("v1", "ConfigMap", "other", "b", nil)},
			want: []v1alpha1.InventoryEntry{
				{Version: "v1", Kind: "ConfigMap", Namespace: "shop", Name: "a"},
				{Version: "v1", Kind: "ConfigMap", Namespace: "other", Name: "b"},
			},
		},
		{
			name: "cluster-scoped kind has no namespace",
			objs: []*unstructured.Unstructured{obj("v1", "Namespace", "shop", "extra", nil)},
			want: []v1alpha1.InventoryEntry{{Version: "v1", Kind: "Namespace", Name: "extra"}},
		},
		{
			name:   "unserved kind takes the scope of its CRD in an earlier wave",
			objs:   []*unstructured.Unstructured{widgetsWave1},
			render: []*unstructured.Unstructured{widgetCRD("Namespaced"), widgetsWave1},
			want:   []v1alpha1.InventoryEntry{{Group: "example.com", Version: "v1", Kind: "Widget", Namespace: "shop", Name: "w", Wave: 1}},
		},
		{
			name:    "unserved kind without a CRD is rejected",
			objs:    []*unstructured.Unstructured{obj("example.com/v1", "Gadget", "", "g", nil)},
			wantErr: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fc := newFakeCluster(t)
			render := tt.render
			if render == nil {
				render = tt.objs
			}
			got, err := Entries(fc.client, tt.objs, render, Options{Owner: owner, TargetNamespace: "shop"})
			var rej *RejectedError
			if tt.wantErr {
				if !errors.As(err, &rej) {
					t.Fatalf("Entries error = %v, want a RejectedError", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("Entries = %+v, want %+v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("entry %d = %+v, want %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}
