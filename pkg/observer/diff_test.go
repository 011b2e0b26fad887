package observer

import (
	"testing"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
)

func TestDriftMessage(t *testing.T) {
	var ds []drifted
	for _, n := range []string{"a", "b", "c", "d", "e", "f", "g"} {
		ds = append(ds, drifted{ref: v1alpha1.ObjectReference{Kind: "ConfigMap", Namespace: "ns", Name: n}, reason: "missing"})
	}
	got := driftMessage(ds, 10)
	want := "7 of 10 objects drifted: ConfigMap ns/a (missing), ConfigMap ns/b (missing), ConfigMap ns/c (missing), ConfigMap ns/d (missing), ConfigMap ns/e (missing), and 2 more"
	if got != want {
		t.Errorf("driftMessage =\n%s\nwant\n%s", got, want)
	}
}

func TestWaveHealth(t *testing.T) {
	got := waveHealth(map[int32][]string{1: {"Healthy", "Progressing"}, -1: {"Healthy"}, 0: {"Missing"}})
	want := []v1alpha1.WaveHealth{{Wave: -1, Health: "Healthy"}, {Wave: 0, Health: "Degraded"}, {Wave: 1, Health: "Progressing"}}
	if len(got) != len(want) {
		t.Fatalf("waveHealth = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("waveHealth[%d] = %v, want %v", i, got[i], want[i])
		}
	}
}
