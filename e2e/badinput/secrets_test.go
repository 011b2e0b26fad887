package badinput

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/kumodo/convoy/apis/core/v1alpha1"
	"github.com/kumodo/convoy/e2e/framework"
)

// leakyChart renders the value db.password into a Secret and, with break set, into a template
// error: a chart that is careless with a secret.
func leakyChart() string {
	return "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\nstringData:\n  password: {{ .Values.db.password | quote }}\n" +
		"{{- if .Values.break }}\n{{ fail (printf \"cannot reach the database with password %s\" .Values.db.password) }}\n{{- end }}\n"
}

// TestSecretsNeverLeak: a value planted in a valuesFrom Secret reaches the target's Secret object,
// but neither the controller's log, nor any Release status, Event or ReleaseInventory of the
// namespace: not when the target drifts from it, not when a template error prints it.
func TestSecretsNeverLeak(t *testing.T) {
	t.Parallel()
	ns := env.NewNamespace(t)
	planted := "planted-" + strings.ToLower(rand.Text())
	createSecret(t, ns, "db-values", map[string]string{"values.yaml": "db:\n  password: " + planted + "\n"})
	repo := framework.NewHelmRepo(t)
	framework.Publish(t, repo, simpleChart("leaky", "1.0.0", map[string]string{"secret.yaml": leakyChart()}, "db:\n  password: none\nbreak: false\n"))
	// Manual mode, so the drift stays until a sync; the interval makes the drift loop look again soon.
	env.CreateHelmRelease(t, ns, release, "live", repo.URL, "leaky", "1.0.0", framework.WithManualSync(), framework.WithInterval(2*time.Second),
		framework.WithValuesFrom(convoyv1alpha1.ValuesReference{Kind: "Secret", Name: "db-values"}))
	env.WaitApplied(t, ns, release, convoyv1alpha1.ReasonWaitingForSync, applyTimeout, nil)
	updateRelease(t, ns, release, func(r *convoyv1alpha1.Release) {
		metav1.SetMetaDataAnnotation(&r.ObjectMeta, convoyv1alpha1.SyncRequestedAtAnnotation, time.Now().UTC().Format(time.RFC3339))
	})
	env.WaitApplied(t, ns, release, convoyv1alpha1.ReasonApplied, applyTimeout, nil)
	secret, err := env.Live.Kube.CoreV1().Secrets(ns).Get(ctx, "db", metav1.GetOptions{})
	if err != nil || string(secret.Data["password"]) != planted {
		t.Fatalf("Secret db on live: %v, password %q; want the planted value", err, secret.Data["password"])
	}

	// Drift on the Secret: the drift output names it, without its data.
	secret.Data["password"] = []byte("changed-on-the-target")
	if _, err := env.Live.Kube.CoreV1().Secrets(ns).Update(ctx, secret, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, applyTimeout, func() (bool, string) {
		r, err := env.GetRelease(ns, release)
		if err != nil {
			return false, err.Error()
		}
		if r.Status.Drift != nil && r.Status.Drift.Drifted > 0 {
			return true, ""
		}
		c := meta.FindStatusCondition(r.Status.Conditions, convoyv1alpha1.ConditionInSync)
		return false, fmt.Sprintf("no drift seen yet: InSync %+v, drift %+v", c, r.Status.Drift)
	})

	// A template error that prints the password.
	updateRelease(t, ns, release, func(r *convoyv1alpha1.Release) { r.Spec.Values = framework.RawJSON(map[string]any{"break": true}) })
	r := env.WaitApplied(t, ns, release, convoyv1alpha1.ReasonRenderFailed, applyTimeout,
		framework.MessageContains("cannot reach the database with password [redacted]", "leaky/templates/secret.yaml"))
	recordResult("secret-in-template-error", convoyv1alpha1.ReasonRenderFailed, framework.AppliedCondition(r).Message)
	waitEvent(t, ns, release, convoyv1alpha1.ReasonRenderFailed, "[redacted]")
	// The drift loop renders too: its InSync message carries the same error.
	framework.Eventually(t, applyTimeout, func() (bool, string) {
		r, err := env.GetRelease(ns, release)
		if err != nil {
			return false, err.Error()
		}
		c := meta.FindStatusCondition(r.Status.Conditions, convoyv1alpha1.ConditionInSync)
		return c != nil && strings.Contains(c.Message, "[redacted]"), fmt.Sprintf("InSync %+v, want the render error", c)
	})

	// Nothing of the namespace on mgmt, and nothing in the controller's log, holds the value.
	var places []string
	check := func(what string, v any) {
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(data), planted) {
			places = append(places, what)
		}
	}
	releases, err := env.Convoy().CoreV1alpha1().Releases(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range releases.Items {
		check("Release "+r.Name, r)
	}
	invs, err := env.Convoy().CoreV1alpha1().ReleaseInventories(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	check("ReleaseInventories", invs)
	events, err := env.Mgmt.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	check("Events", events)
	clusters, err := env.Convoy().CoreV1alpha1().Clusters(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	check("Clusters", clusters)
	log, err := os.ReadFile(env.Controller.LogPath())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(log), planted) {
		places = append(places, "the controller log "+env.Controller.LogPath())
	}
	if len(places) > 0 {
		t.Errorf("the planted secret value shows in: %s", strings.Join(places, ", "))
	}
	if len(events.Items) == 0 || len(log) == 0 {
		t.Errorf("%d Events and a log of %d bytes: nothing was searched", len(events.Items), len(log))
	}
	checkController(t)
}
