package badinput

import (
	"bytes"
	"context"
	"encoding/json"
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
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/yaml"

	convoyv1alpha1 "github.com/kumodo/convoy/apis/core/v1alpha1"
	"github.com/kumodo/convoy/e2e/framework"
)

// Helpers of this package; the first ones are copies of those of package e2e (e2e/helpers_test.go,
// e2e/render_helpers_test.go, e2e/lifecycle_test.go), which a test package cannot import.

// Timeouts of the waits: generous, since the machine is shared; no test asserts a duration.
const (
	applyTimeout = 90 * time.Second
	quietPeriod  = 3 * time.Second
)

// ctx is the context of the tests' API calls.
var ctx = context.Background()

// releaseOption adjusts a Release before it is created.
type releaseOption func(*convoyv1alpha1.Release)

// withInterval makes the controller reconcile every d, so it sees changes that send no event.
func withInterval(d time.Duration) releaseOption {
	return func(r *convoyv1alpha1.Release) { r.Spec.SyncPolicy.Interval = &metav1.Duration{Duration: d} }
}

// withManualSync sets syncPolicy.mode Manual.
func withManualSync() releaseOption {
	return func(r *convoyv1alpha1.Release) { r.Spec.SyncPolicy.Mode = convoyv1alpha1.SyncModeManual }
}

// withBackoff sets a short retry backoff.
func withBackoff(initial, max time.Duration) releaseOption {
	return func(r *convoyv1alpha1.Release) {
		factor := int32(2)
		r.Spec.SyncPolicy.Backoff = &convoyv1alpha1.Backoff{Initial: &metav1.Duration{Duration: initial}, Factor: &factor,
			Max: &metav1.Duration{Duration: max}}
	}
}

// withValues sets spec.values.
func withValues(values map[string]any) releaseOption {
	return func(r *convoyv1alpha1.Release) { r.Spec.Values = rawJSON(values) }
}

// withValuesFrom sets spec.valuesFrom.
func withValuesFrom(refs ...convoyv1alpha1.ValuesReference) releaseOption {
	return func(r *convoyv1alpha1.Release) { r.Spec.ValuesFrom = refs }
}

// rawJSON is v as an apiextensions JSON value.
func rawJSON(v any) *apiextensionsv1.JSON {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("marshal %v: %v", v, err)) // the tests' own literals
	}
	return &apiextensionsv1.JSON{Raw: raw}
}

// newRelease is a Release of ns applied to cluster with targetNamespace ns, without a source.
func newRelease(ns, name, cluster string) *convoyv1alpha1.Release {
	return &convoyv1alpha1.Release{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: convoyv1alpha1.ReleaseSpec{
			ClusterRef:      convoyv1alpha1.LocalObjectReference{Name: cluster},
			TargetNamespace: ns,
		},
	}
}

// createReleaseObject creates r after applying opts.
func createReleaseObject(t *testing.T, r *convoyv1alpha1.Release, opts ...releaseOption) {
	t.Helper()
	for _, o := range opts {
		o(r)
	}
	if _, err := env.Convoy().CoreV1alpha1().Releases(r.Namespace).Create(ctx, r, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create Release %s/%s: %v", r.Namespace, r.Name, err)
	}
}

// createRelease creates a Release of the manifests in ConfigMap source.
func createRelease(t *testing.T, ns, name, cluster, source string, opts ...releaseOption) {
	t.Helper()
	r := newRelease(ns, name, cluster)
	r.Spec.Source.ConfigMapRef = &convoyv1alpha1.LocalObjectReference{Name: source}
	r.Spec.ContentType = convoyv1alpha1.ContentTypeManifests
	createReleaseObject(t, r, opts...)
}

// createHelmRelease creates a Release of chart from the repository at repoURL.
func createHelmRelease(t *testing.T, ns, name, cluster, repoURL, chartName, version string, opts ...releaseOption) {
	t.Helper()
	r := newRelease(ns, name, cluster)
	r.Spec.Source.Helm = &convoyv1alpha1.HelmSource{RepoURL: repoURL, Chart: chartName, Version: version}
	r.Spec.ContentType = convoyv1alpha1.ContentTypeHelm
	createReleaseObject(t, r, opts...)
}

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

// createSource creates the manifests ConfigMap a Release renders, on mgmt.
func createSource(t *testing.T, ns, name string, data map[string]string) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Data: data}
	if _, err := env.Mgmt.Kube.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create source ConfigMap %s/%s: %v", ns, name, err)
	}
}

// updateSource replaces the data of a source ConfigMap.
func updateSource(t *testing.T, ns, name string, data map[string]string) {
	t.Helper()
	cms := env.Mgmt.Kube.CoreV1().ConfigMaps(ns)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cm, err := cms.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cm.Data = data
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("update source ConfigMap %s/%s: %v", ns, name, err)
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

// getRelease reads a Release from mgmt.
func getRelease(ns, name string) (*convoyv1alpha1.Release, error) {
	return env.Convoy().CoreV1alpha1().Releases(ns).Get(ctx, name, metav1.GetOptions{})
}

// appliedCondition returns the Applied condition, or nil.
func appliedCondition(r *convoyv1alpha1.Release) *metav1.Condition {
	return meta.FindStatusCondition(r.Status.Conditions, convoyv1alpha1.ConditionApplied)
}

// describeApplied summarises the Applied condition for failure messages.
func describeApplied(r *convoyv1alpha1.Release) string {
	c := appliedCondition(r)
	if c == nil {
		return fmt.Sprintf("Release %s/%s has no Applied condition (generation %d)", r.Namespace, r.Name, r.Generation)
	}
	return fmt.Sprintf("Release %s/%s Applied=%s reason=%s message=%q (observedGeneration %d, generation %d)",
		r.Namespace, r.Name, c.Status, c.Reason, c.Message, c.ObservedGeneration, r.Generation)
}

// check is a condition on a Release: ok, or what is wrong.
type check func(*convoyv1alpha1.Release) (bool, string)

// waitApplied waits until the Release's Applied condition has reason for the current generation
// and accept, if given, agrees; it returns the Release then.
func waitApplied(t *testing.T, ns, name, reason string, timeout time.Duration, accept check) *convoyv1alpha1.Release {
	t.Helper()
	var out *convoyv1alpha1.Release
	framework.Eventually(t, timeout, func() (bool, string) {
		r, err := getRelease(ns, name)
		if err != nil {
			return false, fmt.Sprintf("get Release %s/%s: %v", ns, name, err)
		}
		c := appliedCondition(r)
		if c == nil || c.Reason != reason || c.ObservedGeneration != r.Generation {
			return false, fmt.Sprintf("want reason %s; %s", reason, describeApplied(r))
		}
		if accept != nil {
			if ok, msg := accept(r); !ok {
				return false, fmt.Sprintf("reason %s but %s; %s", reason, msg, describeApplied(r))
			}
		}
		out = r
		return true, ""
	})
	return out
}

// messageContains accepts a Release whose Applied message holds every part.
func messageContains(parts ...string) check {
	return func(r *convoyv1alpha1.Release) (bool, string) {
		msg := ""
		if c := appliedCondition(r); c != nil {
			msg = c.Message
		}
		for _, p := range parts {
			if !strings.Contains(msg, p) {
				return false, fmt.Sprintf("message lacks %q", p)
			}
		}
		return true, ""
	}
}

// lastSuccessfulRef returns status.lastSuccessful.renderRef, or "".
func lastSuccessfulRef(r *convoyv1alpha1.Release) string {
	if r.Status.LastSuccessful == nil {
		return ""
	}
	return r.Status.LastSuccessful.RenderRef
}

// stays fails the test if the Release's Applied reason leaves reason during quietPeriod.
func stays(t *testing.T, ns, name, reason string) {
	t.Helper()
	consistently(t, quietPeriod, func() (bool, string) {
		r, err := getRelease(ns, name)
		if err != nil {
			return false, err.Error()
		}
		if c := appliedCondition(r); c == nil || c.Reason != reason {
			return false, describeApplied(r)
		}
		return true, ""
	})
}

// consistently fails the test if cond reports false at any poll during d.
func consistently(t *testing.T, d time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if ok, msg := cond(); !ok {
			t.Fatalf("condition broke within %s: %s", d, msg)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// objRef names an object the way tests compare inventories with targets.
type objRef struct{ Group, Kind, Namespace, Name string }

func (o objRef) String() string {
	return strings.TrimPrefix(o.Group+"/", "/") + o.Kind + " " + o.Namespace + "/" + o.Name
}

// cmRef names a ConfigMap.
func cmRef(ns, name string) objRef { return objRef{Kind: "ConfigMap", Namespace: ns, Name: name} }

// inventoryRefs returns the ReleaseInventory's entries (empty when it does not exist).
func inventoryRefs(ns, name string) (map[objRef]bool, error) {
	inv, err := env.Convoy().CoreV1alpha1().ReleaseInventories(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return map[objRef]bool{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get ReleaseInventory %s/%s: %w", ns, name, err)
	}
	refs := map[objRef]bool{}
	for _, e := range inv.Spec.Entries {
		refs[objRef{Group: e.Group, Kind: e.Kind, Namespace: e.Namespace, Name: e.Name}] = true
	}
	return refs, nil
}

// checkKept fails the test unless each ConfigMap of names is on target, still owned by Release
// ns/release with the data it was applied with, and listed in the Release's inventory: a bad
// input deletes nothing.
func checkKept(t *testing.T, target *framework.APIServer, ns, release string, names ...string) {
	t.Helper()
	inv, err := inventoryRefs(ns, release)
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
		if !inv[cmRef(ns, name)] {
			t.Errorf("ConfigMap %s/%s is not in the inventory of %s any more: %v", ns, name, release, inv)
		}
	}
}

// checkNothingApplied fails the test when Release ns/name owns a ConfigMap on target or has
// inventory entries.
func checkNothingApplied(t *testing.T, target *framework.APIServer, ns, name string) {
	t.Helper()
	list, err := target.Kube.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, cm := range list.Items {
		if cm.Annotations[convoyv1alpha1.OwnerAnnotation] == ns+"/"+name {
			t.Errorf("Release %s/%s applied ConfigMap %s to %s", ns, name, cm.Name, target.Name)
		}
	}
	if inv, err := inventoryRefs(ns, name); err != nil || len(inv) > 0 {
		t.Errorf("Release %s/%s inventory %v (err %v), want empty", ns, name, inv, err)
	}
}

// notFound is a condition that an object is absent, for the given getter.
func notFound(what string, get func() error) (bool, string) {
	err := get()
	if apierrors.IsNotFound(err) {
		return true, ""
	}
	if err != nil {
		return false, fmt.Sprintf("get %s: %v", what, err)
	}
	return false, what + " exists"
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

// doc renders one manifest document.
func doc(obj map[string]any) string {
	out, err := yaml.Marshal(obj)
	if err != nil {
		panic(fmt.Sprintf("marshal manifest: %v", err)) // the tests' own literals
	}
	return string(out)
}

// docs joins manifest documents into one multi-document YAML stream.
func docs(ds ...string) string { return strings.Join(ds, "---\n") }

// configMapDoc is a ConfigMap manifest; annotations may be nil.
func configMapDoc(name string, data map[string]string, annotations map[string]string) string {
	md := map[string]any{"name": name}
	if len(annotations) > 0 {
		md["annotations"] = annotations
	}
	return doc(map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": md, "data": data})
}

// annotated adds annotations to a manifest document.
func annotated(d string, annotations map[string]string) string {
	var obj map[string]any
	if err := yaml.Unmarshal([]byte(d), &obj); err != nil {
		panic(fmt.Sprintf("unmarshal manifest: %v", err)) // the tests' own literals
	}
	md := obj["metadata"].(map[string]any)
	ann, _ := md["annotations"].(map[string]any)
	if ann == nil {
		ann = map[string]any{}
	}
	for k, v := range annotations {
		ann[k] = v
	}
	md["annotations"] = ann
	return doc(obj)
}

// withNamespace sets metadata.namespace of a manifest document.
func withNamespace(d, ns string) string {
	var obj map[string]any
	if err := yaml.Unmarshal([]byte(d), &obj); err != nil {
		panic(fmt.Sprintf("unmarshal manifest: %v", err)) // the tests' own literals
	}
	obj["metadata"].(map[string]any)["namespace"] = ns
	return doc(obj)
}

// hookJobDoc is a Job hook of phase; podSpec extras (nodeSelector, ...) go into its pod spec.
func hookJobDoc(name, phase string, podSpec map[string]any) string {
	spec := map[string]any{
		"restartPolicy": "Never",
		"containers":    []any{map[string]any{"name": "hook", "image": "registry.example/hook:1"}},
	}
	for k, v := range podSpec {
		spec[k] = v
	}
	return annotated(doc(map[string]any{
		"apiVersion": "batch/v1", "kind": "Job",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{
			"backoffLimit": 0,
			"template":     map[string]any{"metadata": map[string]any{"labels": map[string]any{"hook": name}}, "spec": spec},
		},
	}), map[string]string{convoyv1alpha1.HookAnnotation: phase})
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
	return simpleChart(name, version, map[string]string{"keep.yaml": configMapDoc("keep", map[string]string{"v": "1"}, nil)}, "")
}

// publish adds charts to repo.
func publish(t *testing.T, repo *framework.HelmRepo, charts ...*chart.Chart) {
	t.Helper()
	for _, ch := range charts {
		if err := repo.AddChart(ch); err != nil {
			t.Fatalf("publish chart %s %s: %v", ch.Name(), ch.Metadata.Version, err)
		}
	}
}

// newGitRepo creates repository name on a git server of its own for the test.
func newGitRepo(t *testing.T, name string) *framework.GitRepo {
	t.Helper()
	repo, err := framework.NewGitServer(t).NewRepo(name)
	if err != nil {
		t.Fatal(err)
	}
	return repo
}

// commitFiles writes files into repo's work tree, commits them all and returns the commit id.
func commitFiles(t *testing.T, repo *framework.GitRepo, message string, files map[string]string) string {
	t.Helper()
	if err := repo.WriteFiles(files); err != nil {
		t.Fatal(err)
	}
	commit, err := repo.Commit(message)
	if err != nil {
		t.Fatal(err)
	}
	return commit
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
