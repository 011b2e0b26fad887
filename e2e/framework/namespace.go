package framework

import (
	"bufio"
	"context"
	"crypto/rand"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/kumodo/convoy/apis/core/v1alpha1"
)

// KubeconfigSecretKey is the key of the kubeconfig in each Cluster's Secret.
const KubeconfigSecretKey = "value"

// Timeouts of NewNamespace: Clusters must turn Ready within a few probe intervals, and on
// cleanup the controller gets this long to finalize the test's Releases.
const (
	clusterReadyTimeout  = 30 * time.Second
	releaseDeleteTimeout = 60 * time.Second
)

// targets returns the target clusters that were started, by the name their Cluster gets: the
// standard ones, then Options.BareTargets by name.
func (e *Env) targets() []*APIServer {
	var out []*APIServer
	for _, a := range []*APIServer{e.Live, e.Bare, e.Fault} {
		if a != nil {
			out = append(out, a)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(e.BareTargets)) {
		out = append(out, e.BareTargets[name])
	}
	return out
}

// NewNamespace creates a fresh namespace on mgmt with, per target (live, bare, fault), a
// Secret "<target>-kubeconfig" (key "value") and a Cluster of that name, plus a namespace of
// the same name on every target. It returns once every Cluster is Ready.
//
// Cleanup deletes the test's Releases (waiting for the controller to finalize them), its
// Clusters, then the namespaces. When the test failed, nothing is deleted: the objects stay
// for inspection, the work directory is kept, and the controller's log lines about the
// namespace are logged.
func (e *Env) NewNamespace(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	name := namespaceName(t.Name())
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"convoy-e2e/test": "true"}}}
	if _, err := e.Mgmt.Kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s on mgmt: %v", name, err)
	}
	t.Cleanup(func() { e.cleanupNamespace(t, name) })
	for _, target := range e.targets() {
		if _, err := target.Kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create namespace %s on %s: %v", name, target.Name, err)
		}
		if err := e.RegisterCluster(ctx, name, target.Name, target); err != nil {
			t.Fatalf("register cluster %s in %s: %v", target.Name, name, err)
		}
	}
	Eventually(t, clusterReadyTimeout, func() (bool, string) {
		for _, target := range e.targets() {
			cl, err := e.convoy.CoreV1alpha1().Clusters(name).Get(ctx, target.Name, metav1.GetOptions{})
			if err != nil {
				return false, fmt.Sprintf("get Cluster %s: %v", target.Name, err)
			}
			if !meta.IsStatusConditionTrue(cl.Status.Conditions, convoyv1alpha1.ConditionReady) {
				return false, fmt.Sprintf("Cluster %s/%s not Ready: %+v", name, target.Name, cl.Status.Conditions)
			}
		}
		return true, ""
	})
	return name
}

// RegisterCluster registers target on mgmt as the Cluster clusterName in namespace: it creates
// the Secret "<clusterName>-kubeconfig" with target's admin kubeconfig under
// KubeconfigSecretKey, and the Cluster referring to it. The namespace must exist.
func (e *Env) RegisterCluster(ctx context.Context, namespace, clusterName string, target *APIServer) error {
	return e.RegisterClusterKubeconfig(ctx, namespace, clusterName, target.Kubeconfig)
}

// cleanupNamespace is NewNamespace's cleanup.
func (e *Env) cleanupNamespace(t *testing.T, name string) {
	if t.Failed() {
		e.MarkFailed()
		for _, c := range e.allControllers() {
			t.Logf("namespace %s kept; controller log: %s", name, c.LogPath())
			t.Logf("controller log lines about %s (last 60):\n%s", name, grepTail(c.LogPath(), name, 60))
		}
		return
	}
	ctx := context.Background()
	releases := e.convoy.CoreV1alpha1().Releases(name)
	if err := releases.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		t.Logf("cleanup: delete Releases in %s: %v", name, err)
	}
	// mgmt runs no namespace controller: the namespace would never empty itself, so the
	// Releases are deleted (and finalized by the controller) first, while their Clusters exist.
	deadline := time.Now().Add(releaseDeleteTimeout)
	for {
		list, err := releases.List(ctx, metav1.ListOptions{})
		if err == nil && len(list.Items) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("cleanup: Releases in %s not finalized within %s (err %v): %s", name, releaseDeleteTimeout, err, releaseNames(list))
			e.MarkFailed()
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	// Without a namespace controller the mgmt namespace stays Terminating with its contents,
	// so its Clusters are deleted explicitly: the controller would probe them all run long.
	if err := e.convoy.CoreV1alpha1().Clusters(name).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		t.Logf("cleanup: delete Clusters in %s: %v", name, err)
	}
	for _, a := range append([]*APIServer{e.Mgmt}, e.targets()...) {
		err := a.Kube.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Logf("cleanup: delete namespace %s on %s: %v", name, a.Name, err)
		}
	}
}

// releaseNames lists the Releases still present, for the cleanup's error.
func releaseNames(list *convoyv1alpha1.ReleaseList) string {
	if list == nil {
		return ""
	}
	var names []string
	for _, r := range list.Items {
		names = append(names, fmt.Sprintf("%s (finalizers %v, deleting since %v)", r.Name, r.Finalizers, r.DeletionTimestamp))
	}
	return strings.Join(names, ", ")
}

var nonNameChars = regexp.MustCompile(`[^a-z0-9]+`)

// namespaceName derives a valid, unique namespace name from the test name.
func namespaceName(testName string) string {
	slug := strings.Trim(nonNameChars.ReplaceAllString(strings.ToLower(testName), "-"), "-")
	if len(slug) > 40 {
		slug = strings.TrimRight(slug[:40], "-")
	}
	return "e2e-" + slug + "-" + strings.ToLower(rand.Text()[:5])
}

// grepTail returns the last n lines of the file at path that contain s.
func grepTail(path, s string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	for sc.Scan() {
		if strings.Contains(sc.Text(), s) {
			lines = append(lines, sc.Text())
			if len(lines) > n {
				lines = lines[1:]
			}
		}
	}
	return strings.Join(lines, "\n")
}
