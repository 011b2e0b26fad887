package badinput

import (
	"fmt"
	"strconv"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/kumodo/convoy/apis/core/v1alpha1"
	"github.com/kumodo/convoy/e2e/framework"
)

// TestNegativeWave: a negative sync wave is valid input: wave -1 is applied, then wave 0.
func TestNegativeWave(t *testing.T) {
	t.Parallel()
	ns := env.NewNamespace(t)
	wave := func(w string) map[string]string { return map[string]string{convoyv1alpha1.SyncWaveAnnotation: w} }
	env.CreateSource(t, ns, "src", map[string]string{"app.yaml": framework.Docs(
		framework.ConfigMapDoc("late", nil, nil), framework.ConfigMapDoc("early", nil, wave("-1")), framework.ConfigMapDoc("earliest", nil, wave("-2147483648")))})
	env.CreateConfigMapRelease(t, ns, release, "bare", "src")
	r := env.WaitApplied(t, ns, release, convoyv1alpha1.ReasonApplied, applyTimeout, nil)
	got := fmt.Sprint(r.Status.Waves)
	var want []string
	for _, w := range []int32{-2147483648, -1, 0} {
		want = append(want, fmt.Sprintf("wave %d: 1 Applied", w))
	}
	var have []string
	for _, w := range r.Status.Waves {
		have = append(have, fmt.Sprintf("wave %d: %d %s", w.Wave, w.Objects, w.Phase))
	}
	if fmt.Sprint(have) != fmt.Sprint(want) {
		t.Errorf("status.waves %s, want %v", got, want)
	}
	checkKept(t, env.Bare, ns, release, "earliest", "early", "late")
	// The API server's resourceVersions of one etcd grow with each write: the lower wave was
	// written first.
	var versions []int
	for _, name := range []string{"earliest", "early", "late"} {
		cm, err := env.Bare.Kube.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		v, err := strconv.Atoi(cm.ResourceVersion)
		if err != nil {
			t.Fatalf("resourceVersion %q of %s: %v", cm.ResourceVersion, name, err)
		}
		versions = append(versions, v)
	}
	if !(versions[0] < versions[1] && versions[1] < versions[2]) {
		t.Errorf("resourceVersions of earliest, early, late = %v: want the waves applied in order", versions)
	}
	checkController(t)
}
