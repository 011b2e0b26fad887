package inventory

import (
	"reflect"
	"testing"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
)

func entry(group, kind, ns, name string, wave int32) v1alpha1.InventoryEntry {
	return v1alpha1.InventoryEntry{Group: group, Version: "v1", Kind: kind, Namespace: ns, Name: name, Wave: wave}
}

func TestKey(t *testing.T) {
	tests := []struct {
		e    v1alpha1.InventoryEntry
		want string
	}{
		{e: entry("apps", "Deployment", "shop", "web", 3), want: "apps/Deployment/shop/web"},
		{e: v1alpha1.InventoryEntry{Version: "v1beta1", Kind: "Namespace", Name: "shop"}, want: "/Namespace//shop"},
	}
	for _, tt := range tests {
		if got := Key(tt.e); got != tt.want {
			t.Errorf("Key(%+v) = %q, want %q", tt.e, got, tt.want)
		}
	}
	a := entry("apps", "Deployment", "shop", "web", 0)
	b := a
	b.Version, b.Wave = "v2", 5
	if Key(a) != Key(b) {
		t.Error("Key depends on version or wave")
	}
}

func TestUnion(t *testing.T) {
	web := entry("apps", "Deployment", "shop", "web", 0)
	webMoved := entry("apps", "Deployment", "shop", "web", 2)
	cm := entry("", "ConfigMap", "shop", "cfg", 0)
	ns := entry("", "Namespace", "", "shop", -1)
	tests := []struct {
		name          string
		prev, applied []v1alpha1.InventoryEntry
		want          []v1alpha1.InventoryEntry
	}{
		{name: "both empty", want: []v1alpha1.InventoryEntry{}},
		{name: "only prev", prev: []v1alpha1.InventoryEntry{web, cm}, want: []v1alpha1.InventoryEntry{cm, ns}[:1:1]},
		{name: "applied wins", prev: []v1alpha1.InventoryEntry{web, ns}, applied: []v1alpha1.InventoryEntry{webMoved, cm},
			want: []v1alpha1.InventoryEntry{cm, ns, webMoved}},
		{name: "duplicates collapse", prev: []v1alpha1.InventoryEntry{cm, cm}, applied: []v1alpha1.InventoryEntry{cm},
			want: []v1alpha1.InventoryEntry{cm}},
	}
	tests[1].want = []v1alpha1.InventoryEntry{cm, web}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Union(tt.prev, tt.applied)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Union = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestStale(t *testing.T) {
	web := entry("apps", "Deployment", "shop", "web", 0)
	webV2 := web
	webV2.Version = "v2"
	cm := entry("", "ConfigMap", "shop", "cfg", 1)
	otherNS := entry("", "ConfigMap", "other", "cfg", 1)
	tests := []struct {
		name          string
		prev, applied []v1alpha1.InventoryEntry
		want          []v1alpha1.InventoryEntry
	}{
		{name: "nothing before"},
		{name: "all kept", prev: []v1alpha1.InventoryEntry{web, cm}, applied: []v1alpha1.InventoryEntry{cm, web}},
		{name: "version change is not stale", prev: []v1alpha1.InventoryEntry{web}, applied: []v1alpha1.InventoryEntry{webV2}},
		{name: "removed object", prev: []v1alpha1.InventoryEntry{web, cm, otherNS}, applied: []v1alpha1.InventoryEntry{cm},
			want: []v1alpha1.InventoryEntry{web, otherNS}},
		{name: "empty render prunes all, once", prev: []v1alpha1.InventoryEntry{cm, web, cm},
			want: []v1alpha1.InventoryEntry{cm, web}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Stale(tt.prev, tt.applied)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Stale = %+v, want %+v", got, tt.want)
			}
		})
	}
}
