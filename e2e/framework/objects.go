package framework

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/chart"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	convoyv1alpha1 "github.com/kumodo/convoy/apis/core/v1alpha1"
)

// ObjRef names an object the way tests compare inventories with targets.
type ObjRef struct{ Group, Kind, Namespace, Name string }

func (o ObjRef) String() string {
	return strings.TrimPrefix(o.Group+"/", "/") + o.Kind + " " + o.Namespace + "/" + o.Name
}

// ConfigMapRef names a ConfigMap.
func ConfigMapRef(ns, name string) ObjRef {
	return ObjRef{Kind: "ConfigMap", Namespace: ns, Name: name}
}

// Inventory returns the entries of ReleaseInventory ns/name; found is false when it does not
// exist.
func (e *Env) Inventory(ns, name string) (refs map[ObjRef]bool, found bool, err error) {
	inv, err := e.Convoy().CoreV1alpha1().ReleaseInventories(ns).Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return map[ObjRef]bool{}, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("get ReleaseInventory %s/%s: %w", ns, name, err)
	}
	refs = map[ObjRef]bool{}
	for _, en := range inv.Spec.Entries {
		refs[ObjRef{Group: en.Group, Kind: en.Kind, Namespace: en.Namespace, Name: en.Name}] = true
	}
	return refs, true, nil
}

// OwnedConfigMaps lists the ConfigMaps on target carrying the owner annotation of Release
// ns/name.
func OwnedConfigMaps(target *APIServer, ns, name string) (map[ObjRef]bool, error) {
	list, err := target.Kube.CoreV1().ConfigMaps(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list ConfigMaps on %s: %w", target.Name, err)
	}
	out := map[ObjRef]bool{}
	for _, cm := range list.Items {
		if cm.Annotations[convoyv1alpha1.OwnerAnnotation] == ns+"/"+name {
			out[ConfigMapRef(ns, cm.Name)] = true
		}
	}
	return out, nil
}

// CheckNothingApplied fails the test when Release ns/name owns any ConfigMap on target or has
// inventory entries: a render, fetch or check that failed applied nothing.
func (e *Env) CheckNothingApplied(t *testing.T, target *APIServer, ns, name string) {
	t.Helper()
	owned, err := OwnedConfigMaps(target, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	if len(owned) > 0 {
		n, sample := SetDiff(owned, nil)
		t.Errorf("Release %s/%s applied %d ConfigMaps to %s: %s", ns, name, n, target.Name, sample)
	}
	inv, _, err := e.Inventory(ns, name)
	if err != nil {
		t.Fatal(err)
	}
	if len(inv) > 0 {
		n, sample := SetDiff(inv, nil)
		t.Errorf("Release %s/%s has %d inventory entries: %s", ns, name, n, sample)
	}
}

// SetDiff returns the members of a missing from b, sorted, at most 10 of them named.
func SetDiff(a, b map[ObjRef]bool) (n int, sample string) {
	var missing []string
	for r := range a {
		if !b[r] {
			missing = append(missing, r.String())
		}
	}
	sort.Strings(missing)
	n = len(missing)
	if len(missing) > 10 {
		missing = append(missing[:10], "…")
	}
	return n, strings.Join(missing, ", ")
}

// Consistently fails the test if cond reports false at any poll during d.
func Consistently(t *testing.T, d time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if ok, msg := cond(); !ok {
			t.Fatalf("condition broke within %s: %s", d, msg)
		}
		time.Sleep(pollInterval)
	}
}

// NotFound is a condition that an object is absent, for the given getter.
func NotFound(what string, get func() error) (bool, string) {
	err := get()
	if apierrors.IsNotFound(err) {
		return true, ""
	}
	if err != nil {
		return false, fmt.Sprintf("get %s: %v", what, err)
	}
	return false, what + " still exists"
}

// Doc renders one manifest document; it panics on what cannot be marshalled (the tests' own
// literals).
func Doc(obj map[string]any) string {
	out, err := yaml.Marshal(obj)
	if err != nil {
		panic(fmt.Sprintf("marshal manifest: %v", err))
	}
	return string(out)
}

// Docs joins manifest documents into one multi-document YAML stream.
func Docs(ds ...string) string { return strings.Join(ds, "---\n") }

// ConfigMapDoc is a ConfigMap manifest; annotations may be nil.
func ConfigMapDoc(name string, data map[string]string, annotations map[string]string) string {
	md := map[string]any{"name": name}
	if len(annotations) > 0 {
		md["annotations"] = annotations
	}
	return Doc(map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": md, "data": data})
}

// Annotated adds annotations to a manifest document.
func Annotated(d string, annotations map[string]string) string {
	var obj map[string]any
	if err := yaml.Unmarshal([]byte(d), &obj); err != nil {
		panic(fmt.Sprintf("unmarshal manifest: %v", err))
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
	return Doc(obj)
}

// HookJobDoc is a Job hook of phase whose pod is labelled hook=name. With fail its pod carries the
// label the kwok stages fail (convoy-e2e/fail=true), otherwise it completes; podSpec extras
// (nodeSelector, ...) go into the pod spec and may be nil.
func HookJobDoc(name, phase string, fail bool, podSpec map[string]any) string {
	podLabels := map[string]any{"hook": name}
	if fail {
		podLabels["convoy-e2e/fail"] = "true"
	}
	spec := map[string]any{
		"restartPolicy": "Never",
		"containers":    []any{map[string]any{"name": "hook", "image": "registry.example/hook:1"}},
	}
	for k, v := range podSpec {
		spec[k] = v
	}
	return Annotated(Doc(map[string]any{
		"apiVersion": "batch/v1", "kind": "Job",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{
			"backoffLimit": 0,
			"template":     map[string]any{"metadata": map[string]any{"labels": podLabels}, "spec": spec},
		},
	}), map[string]string{convoyv1alpha1.HookAnnotation: phase})
}

// Publish adds charts to repo, failing the test on error.
func Publish(t *testing.T, repo *HelmRepo, charts ...*chart.Chart) {
	t.Helper()
	for _, ch := range charts {
		if err := repo.AddChart(ch); err != nil {
			t.Fatalf("publish chart %s %s: %v", ch.Name(), ch.Metadata.Version, err)
		}
	}
}

// NewGitRepo creates repository name on a git server of its own for the test.
func NewGitRepo(t *testing.T, name string) *GitRepo {
	t.Helper()
	repo, err := NewGitServer(t).NewRepo(name)
	if err != nil {
		t.Fatal(err)
	}
	return repo
}

// CommitFiles writes files into repo's work tree, commits them all and returns the commit id.
func CommitFiles(t *testing.T, repo *GitRepo, message string, files map[string]string) string {
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
