package badinput

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/chart"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/yaml"

	convoyv1alpha1 "github.com/kumodo/convoy/apis/core/v1alpha1"
	"github.com/kumodo/convoy/e2e/framework"
)

// Helpers of this package; those it shares with the other e2e packages are in e2e/framework.

// Timeouts of the waits: generous, since the machine is shared; no test asserts a duration.
const (
	applyTimeout = 90 * time.Second
	quietPeriod  = 3 * time.Second
)

// ctx is the context of the tests' API calls.
var ctx = context.Background()

// updateRelease changes the Release with mutate, retrying on conflicts with the controller's
// writes.
func updateRelease(t *testing.T, ns, name string, mutate func(*convoyv1alpha1.Release)) {
	t.Helper()
	releases := env.Convoy().CoreV1alpha1().Releases(ns)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		r, err := releases.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		mutate(r)
		_, err = releases.Update(ctx, r, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("update Release %s/%s: %v", ns, name, err)
	}
}

// createSecret creates a Secret on mgmt holding data.
func createSecret(t *testing.T, ns, name string, data map[string]string) {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, StringData: data}
	if _, err := env.Mgmt.Kube.CoreV1().Secrets(ns).Create(ctx, s, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create Secret %s/%s: %v", ns, name, err)
	}
}

// stays fails the test if the Release's Applied reason leaves reason during quietPeriod.
func stays(t *testing.T, ns, name, reason string) {
	t.Helper()
	framework.Consistently(t, quietPeriod, func() (bool, string) {
		r, err := env.GetRelease(ns, name)
		if err != nil {
			return false, err.Error()
		}
		if c := framework.AppliedCondition(r); c == nil || c.Reason != reason {
			return false, framework.DescribeApplied(r)
		}
		return true, ""
	})
}

// checkKept fails the test unless each ConfigMap of names is on target, still owned by Release
// ns/release with the data it was applied with, and listed in the Release's inventory: a bad
// input deletes nothing.
func checkKept(t *testing.T, target *framework.APIServer, ns, release string, names ...string) {
	t.Helper()
	inv, _, err := env.Inventory(ns, release)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		cm, err := target.Kube.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Errorf("ConfigMap %s/%s of the earlier render on %s: %v", ns, name, target.Name, err)
			continue
		}
		if owner := cm.Annotations[convoyv1alpha1.OwnerAnnotation]; owner != ns+"/"+release {
			t.Errorf("ConfigMap %s/%s owner %q, want %s/%s", ns, name, owner, ns, release)
		}
		if cm.DeletionTimestamp != nil {
			t.Errorf("ConfigMap %s/%s is being deleted", ns, name)
		}
		if !inv[framework.ConfigMapRef(ns, name)] {
			t.Errorf("ConfigMap %s/%s is not in the inventory of %s any more: %v", ns, name, release, inv)
		}
	}
}

// waitEvent waits for an Event on Release ns/name with reason whose message holds every part,
// read from the management API server, and returns it.
func waitEvent(t *testing.T, ns, name, reason string, parts ...string) corev1.Event {
	t.Helper()
	var out corev1.Event
	selector := fields.Set{"involvedObject.kind": "Release", "involvedObject.name": name}.AsSelector().String()
	framework.Eventually(t, applyTimeout, func() (bool, string) {
		list, err := env.Mgmt.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: selector})
		if err != nil {
			return false, fmt.Sprintf("list Events: %v", err)
		}
		var seen []string
		for _, ev := range list.Items {
			seen = append(seen, ev.Reason+": "+ev.Message)
			if ev.Reason != reason {
				continue
			}
			missing := ""
			for _, p := range parts {
				if !strings.Contains(ev.Message, p) {
					missing = p
				}
			}
			if missing == "" {
				out = ev
				return true, ""
			}
		}
		return false, fmt.Sprintf("no Event %s on Release %s/%s with %q; Events: %q", reason, ns, name, parts, seen)
	})
	return out
}

// withNamespace sets metadata.namespace of a manifest document.
func withNamespace(d, ns string) string {
	var obj map[string]any
	if err := yaml.Unmarshal([]byte(d), &obj); err != nil {
		panic(fmt.Sprintf("unmarshal manifest: %v", err)) // the tests' own literals
	}
	obj["metadata"].(map[string]any)["namespace"] = ns
	return framework.Doc(obj)
}

// simpleChart is a Helm chart of the given templates (file name under templates/ -> content) and
// default values.
func simpleChart(name, version string, templates map[string]string, values string) *chart.Chart {
	ch := &chart.Chart{
		Metadata: &chart.Metadata{APIVersion: chart.APIVersionV2, Name: name, Version: version, Type: "application"},
		Values:   map[string]any{},
	}
	if values != "" {
		if err := yaml.Unmarshal([]byte(values), &ch.Values); err != nil {
			panic(fmt.Sprintf("chart values: %v", err)) // the tests' own literals
		}
		ch.Raw = append(ch.Raw, &chart.File{Name: "values.yaml", Data: []byte(values)})
	}
	names := make([]string, 0, len(templates))
	for n := range templates {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		ch.Templates = append(ch.Templates, &chart.File{Name: "templates/" + n, Data: []byte(templates[n])})
	}
	return ch
}

// keepChart is the good chart of the helm cases: one ConfigMap named keep.
func keepChart(name, version string) *chart.Chart {
	return simpleChart(name, version, map[string]string{"keep.yaml": framework.ConfigMapDoc("keep", map[string]string{"v": "1"}, nil)}, "")
}

// findControllerPID finds the process of the controller by its --health-addr flag in /proc.
func findControllerPID(c *framework.Controller) (int, error) {
	flagValue := "--health-addr=" + strings.TrimPrefix(c.HealthURL(), "http://")
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, fmt.Errorf("find the controller process: %w", err)
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		for _, arg := range bytes.Split(cmdline, []byte{0}) {
			if string(arg) == flagValue {
				return pid, nil
			}
		}
	}
	return 0, fmt.Errorf("no process with %s in /proc", flagValue)
}

// controllerProblem says what shows that the controller crashed or restarted: another PID, a
// panic or an exit in its log, or no answer on /healthz. "" when none.
func controllerProblem() string {
	pid, err := findControllerPID(env.Controller)
	if err != nil {
		return err.Error()
	}
	if pid != controllerPID {
		return fmt.Sprintf("the controller runs as pid %d, not %d: it restarted", pid, controllerPID)
	}
	log, err := os.ReadFile(env.Controller.LogPath())
	if err != nil {
		return fmt.Sprintf("read the controller log: %v", err)
	}
	for _, marker := range []string{"panic:", "fatal error:", "exit convoy-controller-manager"} {
		if bytes.Contains(log, []byte(marker)) {
			return fmt.Sprintf("the controller log %s contains %q", env.Controller.LogPath(), marker)
		}
	}
	if n := bytes.Count(log, []byte("start convoy-controller-manager")); n != 1 {
		return fmt.Sprintf("the controller started %d times", n)
	}
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get(env.Controller.HealthURL() + "/healthz")
	if err != nil {
		return fmt.Sprintf("GET /healthz: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Sprintf("GET /healthz: %s", resp.Status)
	}
	return ""
}

// checkController fails the test when the controller crashed or restarted.
func checkController(t *testing.T) {
	t.Helper()
	if problem := controllerProblem(); problem != "" {
		t.Errorf("controller: %s", problem)
	}
}
