package main

import (
	"bytes"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
	"github.com/kumodo/convoy/pkg/renderstore"
)

func TestParseArgs(t *testing.T) {
	o, pos, err := parseArgs([]string{"-n", "team-a", "sync", "shop", "--force", "--store", "file:///x"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(pos, []string{"sync", "shop"}) || o.namespace != "team-a" || !o.force || o.store != "file:///x" {
		t.Fatalf("parseArgs = %+v %v", o, pos)
	}
}

func TestRequestTime(t *testing.T) {
	now := time.Date(2026, 7, 1, 12, 0, 0, 500_000_000, time.UTC)
	tests := []struct {
		name    string
		pending string
		handled time.Time
		want    string
	}{
		{"first request", "", time.Time{}, "2026-07-01T12:00:00Z"},
		{"older request pending", "2026-07-01T11:00:00Z", time.Time{}, "2026-07-01T12:00:00Z"},
		{"same second as the pending one", "2026-07-01T12:00:00Z", time.Time{}, "2026-07-01T12:00:01Z"},
		{"same second as the handled one", "", now.Truncate(time.Second), "2026-07-01T12:00:01Z"},
		{"clock behind the handled one", "", now.Add(time.Minute), "2026-07-01T12:01:01Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := requestTime(now, tt.pending, tt.handled); got != tt.want {
				t.Fatalf("requestTime = %s, want %s", got, tt.want)
			}
		})
	}
}

func testRelease() *v1alpha1.Release {
	at := metav1.NewTime(time.Date(2026, 7, 1, 11, 0, 0, 0, time.UTC))
	a, b := "sha256:"+strings.Repeat("a", 64), "sha256:"+strings.Repeat("b", 64)
	return &v1alpha1.Release{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "shop", Generation: 3},
		Spec: v1alpha1.ReleaseSpec{ClusterRef: v1alpha1.LocalObjectReference{Name: "live"}, TargetNamespace: "shop",
			Source: v1alpha1.ReleaseSource{ConfigMapRef: &v1alpha1.LocalObjectReference{Name: "src"}},
			Pin:    &v1alpha1.Pin{RenderRef: a}},
		Status: v1alpha1.ReleaseStatus{
			ObservedGeneration: 3,
			Conditions:         []metav1.Condition{{Type: "Applied", Status: "True", Reason: "Applied", Message: "applied render aaaaaaaaaaaa", LastTransitionTime: at}},
			LastAttempted:      &v1alpha1.AttemptRecord{RenderRef: a, At: &at, Reason: "Applied"},
			LastSuccessful:     &v1alpha1.RenderRecord{RenderRef: a, At: &at, Revision: "v1"},
			LastHealthy:        &v1alpha1.HealthyRecord{RenderRef: b, At: &at},
			Pin:                &v1alpha1.PinStatus{RenderRef: a, Applied: true, Message: "applied the stored render"},
			Waves:              []v1alpha1.WaveStatus{{Wave: 0, Objects: 2, Phase: "Applied"}},
			Drift:              &v1alpha1.DriftStatus{RenderRef: a, Drifted: 1, Objects: []v1alpha1.ObjectReference{{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "web"}}},
		},
	}
}

func TestWriteStatus(t *testing.T) {
	now := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	var plain, colored bytes.Buffer
	writeStatus(&plain, testRelease(), now, palette{})
	writeStatus(&colored, testRelease(), now, palette{on: true})
	for _, want := range []string{"Release team-a/shop", "configMap src", "Applied", "60m ago", "aaaaaaaaaaaa", "pinned",
		"applied", "Waves", "Drift", "1 drifted", "apps/Deployment shop/web"} {
		if !strings.Contains(plain.String(), want) {
			t.Errorf("status lacks %q:\n%s", want, plain.String())
		}
	}
	if strings.Contains(plain.String(), "\x1b[") || !strings.Contains(colored.String(), "\x1b[32mApplied\x1b[0m") {
		t.Errorf("colour only on a terminal:\nplain %q\ncolored %q", plain.String(), colored.String())
	}
}

func TestWriteHistory(t *testing.T) {
	now := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	rel := testRelease()
	var buf bytes.Buffer
	writeHistory(&buf, rel, []renderstore.Entry{
		{Number: 1, RenderRef: rel.Status.LastHealthy.RenderRef, Revision: "v0", Generation: 1, Time: now.Add(-time.Hour)},
		{Number: 2, RenderRef: rel.Status.LastSuccessful.RenderRef, Revision: "v1", Generation: 3, Time: now.Add(-time.Minute)},
	}, "file:///x", now)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[1], "healthy") || !strings.Contains(lines[2], "current,pinned") || !strings.Contains(lines[2], "60s ago") {
		t.Fatalf("history:\n%s", buf.String())
	}
}
