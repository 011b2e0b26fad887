package badinput

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	convoyv1alpha1 "github.com/kumodo/convoy/apis/core/v1alpha1"
	"github.com/kumodo/convoy/e2e/framework"
)

// release is the name of the Release of every corpus case.
const release = "app"

// keepDoc is the good render of the manifests cases: one ConfigMap named keep.
var keepDoc = framework.ConfigMapDoc("keep", map[string]string{"v": "1"}, nil)

// caseEnv is what a corpus case works in: its own namespace, and the target its Release applies
// to (the Cluster of that name in the namespace).
type caseEnv struct {
	ns      string
	cluster string
	target  *framework.APIServer
	// repoURL is the Helm repository of the helm cases (startHelm).
	repoURL string
	// git is the repository of the git cases (startGit).
	git *framework.GitRepo
}

// corpusCase is one bad input. start creates the Release with a good source whose render is the
// ConfigMap keep; breakIt switches it to the bad input, after which the Release must show reason
// with a message holding every part of want, and an Event of eventReason (default reason) with
// them, while keep stays applied and inventoried.
type corpusCase struct {
	name    string
	start   func(t *testing.T, c *caseEnv)
	breakIt func(t *testing.T, c *caseEnv)
	// during runs right after breakIt, before the reason is awaited.
	during func(t *testing.T, c *caseEnv)
	reason string
	want   []string
	// eventReason and eventWant, when set, are the Event expected instead of reason and want.
	eventReason string
	eventWant   []string
	// after checks more once the reason is shown and keep was found intact.
	after func(t *testing.T, c *caseEnv)
	// live applies to the live target instead of bare.
	live bool
}

// corpusResult is one row of the table of bad inputs printed at the end of the run.
type corpusResult struct{ name, reason, message string }

var (
	resultsMu sync.Mutex
	results   []corpusResult
)

// recordResult adds a row to the table of bad inputs.
func recordResult(name, reason, message string) {
	resultsMu.Lock()
	defer resultsMu.Unlock()
	results = append(results, corpusResult{name, reason, message})
}

// startManifests creates Release app of the ConfigMap source src holding keep.
func startManifests(t *testing.T, c *caseEnv) {
	env.CreateSource(t, c.ns, "src", map[string]string{"app.yaml": keepDoc})
	env.CreateConfigMapRelease(t, c.ns, release, c.cluster, "src")
}

// breakSource replaces the ConfigMap source with data.
func breakSource(data map[string]string) func(*testing.T, *caseEnv) {
	return func(t *testing.T, c *caseEnv) { env.UpdateSource(t, c.ns, "src", data) }
}

// startHelm publishes the keep chart app 1.0.0 to a repository of the case and creates Release app
// of app 1.0.0.
func startHelm() func(*testing.T, *caseEnv) {
	return func(t *testing.T, c *caseEnv) {
		repo := framework.NewHelmRepo(t)
		framework.Publish(t, repo, keepChart("app", "1.0.0"))
		c.repoURL = repo.URL
		env.CreateHelmRelease(t, c.ns, release, c.cluster, repo.URL, "app", "1.0.0")
	}
}

// setHelm points the Release at chart version of repoURL (the case's repository when empty).
func setHelm(repoURL, chartName, version string) func(*testing.T, *caseEnv) {
	return func(t *testing.T, c *caseEnv) {
		if repoURL == "" {
			repoURL = c.repoURL
		}
		updateRelease(t, c.ns, release, func(r *convoyv1alpha1.Release) {
			r.Spec.Source.Helm = &convoyv1alpha1.HelmSource{RepoURL: repoURL, Chart: chartName, Version: version}
		})
	}
}

// startGit commits manifests/keep.yaml to a repository of the case and creates Release app of
// that path at branch main.
func startGit(t *testing.T, c *caseEnv) {
	c.git = framework.NewGitRepo(t, "app")
	framework.CommitFiles(t, c.git, "keep", map[string]string{"manifests/keep.yaml": keepDoc})
	r := framework.NewRelease(c.ns, release, c.cluster)
	r.Spec.Source.Git = &convoyv1alpha1.GitSource{URL: c.git.URL, Ref: convoyv1alpha1.GitRef{Branch: "main"}, Path: "manifests"}
	r.Spec.ContentType = convoyv1alpha1.ContentTypeManifests
	env.CreateRelease(t, r)
}

// startOwnCluster registers the bare target as Cluster tenant, whose kubeconfig Secret the case
// may break, and creates Release app of keep on it.
func startOwnCluster(t *testing.T, c *caseEnv) {
	if err := env.RegisterCluster(ctx, c.ns, "tenant", env.Bare); err != nil {
		t.Fatal(err)
	}
	c.cluster = "tenant"
	env.CreateSource(t, c.ns, "src", map[string]string{"app.yaml": keepDoc})
	env.CreateConfigMapRelease(t, c.ns, release, c.cluster, "src", framework.WithInterval(2*time.Second))
}

// breakKubeconfig replaces the user of Cluster tenant's kubeconfig with user.
func breakKubeconfig(user *clientcmdapi.AuthInfo) func(*testing.T, *caseEnv) {
	return func(t *testing.T, c *caseEnv) {
		cfg := clientcmdapi.NewConfig()
		cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: env.Bare.URL, CertificateAuthorityData: env.Bare.Config.CAData}
		cfg.AuthInfos["u"] = user
		cfg.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
		cfg.CurrentContext = "c"
		data, err := clientcmd.Write(*cfg)
		if err != nil {
			t.Fatal(err)
		}
		secrets := env.Mgmt.Kube.CoreV1().Secrets(c.ns)
		s, err := secrets.Get(ctx, "tenant-kubeconfig", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s.Data[framework.KubeconfigSecretKey] = data
		if _, err := secrets.Update(ctx, s, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// releasesGVR is the resource of Releases, for writes with fields the typed client cannot send.
var releasesGVR = schema.GroupVersionResource{Group: convoyv1alpha1.SchemeGroupVersion.Group,
	Version: convoyv1alpha1.SchemeGroupVersion.Version, Resource: "releases"}

// mergePatchRelease sends a JSON merge patch to Release app through the dynamic client, so it may
// carry fields the API does not have (such as a namespace in a reference), and returns the stored
// Release as the API server kept it.
func mergePatchRelease(t *testing.T, ns, patch string) *unstructured.Unstructured {
	t.Helper()
	out, err := env.Mgmt.Dynamic.Resource(releasesGVR).Namespace(ns).Patch(ctx, release, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	if err != nil {
		t.Fatalf("patch Release %s/%s with %s: %v", ns, release, patch, err)
	}
	return out
}

// foreignNamespace creates a namespace next to the case's on mgmt, for objects of another tenant.
func foreignNamespace(t *testing.T, c *caseEnv) string {
	t.Helper()
	name := c.ns + "-foreign"
	if _, err := env.Mgmt.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = env.Convoy().CoreV1alpha1().Clusters(name).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
		_ = env.Mgmt.Kube.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{})
	})
	return name
}

// hookWatch is how long the never-ending hook case watches the Release keep waiting.
const hookWatch = 10 * time.Second

// zeroRef is a render reference no store holds.
var zeroRef = "sha256:" + strings.Repeat("0", 64)

// TestBadInput runs the corpus: each case in a namespace of its own, in parallel.
func TestBadInput(t *testing.T) {
	t.Parallel()
	hostile := newHostileRepo(t)
	execMarker := filepath.Join(t.TempDir(), "exec-plugin-ran")
	cases := []corpusCase{{
		name:    "invalid-yaml",
		start:   startManifests,
		breakIt: breakSource(map[string]string{"app.yaml": keepDoc + "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: [broken\n"}),
		reason:  convoyv1alpha1.ReasonRenderFailed, want: []string{"app.yaml", "document 2"},
	}, {
		name:    "no-apiversion",
		start:   startManifests,
		breakIt: breakSource(map[string]string{"app.yaml": "kind: ConfigMap\nmetadata:\n  name: x\n"}),
		reason:  convoyv1alpha1.ReasonRenderFailed, want: []string{"app.yaml", "missing apiVersion"},
	}, {
		name:    "no-kind",
		start:   startManifests,
		breakIt: breakSource(map[string]string{"app.yaml": "apiVersion: v1\nmetadata:\n  name: x\n"}),
		reason:  convoyv1alpha1.ReasonRenderFailed, want: []string{"app.yaml", "missing kind"},
	}, {
		name:    "no-name",
		start:   startManifests,
		breakIt: breakSource(map[string]string{"app.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n"}),
		reason:  convoyv1alpha1.ReasonRenderFailed, want: []string{"app.yaml", "missing metadata.name"},
	}, {
		name:  "unknown-kind",
		start: startManifests,
		breakIt: breakSource(map[string]string{"app.yaml": framework.Docs(keepDoc,
			"apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n")}),
		reason: convoyv1alpha1.ReasonUnappliable, want: []string{"Widget", "not served by the cluster"},
	}, {
		name:    "duplicate-objects",
		start:   startManifests,
		breakIt: breakSource(map[string]string{"app.yaml": framework.Docs(keepDoc, keepDoc)}),
		reason:  convoyv1alpha1.ReasonRenderFailed, want: []string{"duplicate object", "keep"},
	}, {
		name:    "name-not-a-dns-subdomain",
		start:   startManifests,
		breakIt: breakSource(map[string]string{"app.yaml": framework.Docs(keepDoc, framework.ConfigMapDoc("Not_A_Name", nil, nil))}),
		reason:  convoyv1alpha1.ReasonRenderFailed, want: []string{"invalid metadata.name", "Not_A_Name"},
	}, {
		// A Service name must be a DNS-1035 label: a dotted subdomain passes the render, and the
		// API server refuses it in the dry run.
		name:  "name-not-a-dns-label",
		start: startManifests,
		breakIt: breakSource(map[string]string{"app.yaml": framework.Docs(keepDoc, framework.Doc(map[string]any{
			"apiVersion": "v1", "kind": "Service", "metadata": map[string]any{"name": "web.v1"},
			"spec": map[string]any{"ports": []any{map[string]any{"port": 80}}},
		}))}),
		reason: convoyv1alpha1.ReasonUnappliable, want: []string{"Service", "web.v1", "metadata.name: Invalid value", "must not contain dots"},
	}, {
		name:  "wave-not-a-number",
		start: startManifests,
		breakIt: breakSource(map[string]string{"app.yaml": framework.Docs(keepDoc,
			framework.ConfigMapDoc("soon", nil, map[string]string{convoyv1alpha1.SyncWaveAnnotation: "soon"}))}),
		reason: convoyv1alpha1.ReasonUnappliable, want: []string{"soon", convoyv1alpha1.SyncWaveAnnotation, "not an int32 integer"},
	}, {
		name:  "wave-out-of-range",
		start: startManifests,
		breakIt: breakSource(map[string]string{"app.yaml": framework.Docs(keepDoc,
			framework.ConfigMapDoc("far", nil, map[string]string{convoyv1alpha1.SyncWaveAnnotation: "99999999999"}))}),
		reason: convoyv1alpha1.ReasonUnappliable, want: []string{"far", "99999999999", "not an int32 integer"},
	}, {
		name:    "empty-render",
		start:   startManifests,
		breakIt: breakSource(map[string]string{"app.yaml": "# nothing left\n"}),
		reason:  convoyv1alpha1.ReasonUnappliable,
		want:    []string{"no objects while the inventory holds 1", convoyv1alpha1.AllowEmptyAnnotation},
		after: func(t *testing.T, c *caseEnv) {
			// Opting in prunes everything.
			updateRelease(t, c.ns, release, func(r *convoyv1alpha1.Release) {
				metav1.SetMetaDataAnnotation(&r.ObjectMeta, convoyv1alpha1.AllowEmptyAnnotation, "true")
			})
			env.WaitApplied(t, c.ns, release, convoyv1alpha1.ReasonApplied, applyTimeout, nil)
			framework.Eventually(t, applyTimeout, func() (bool, string) {
				return framework.NotFound("ConfigMap keep after the opted-in empty render", func() error {
					_, err := c.target.Kube.CoreV1().ConfigMaps(c.ns).Get(ctx, "keep", metav1.GetOptions{})
					return err
				})
			})
			env.CheckNothingApplied(t, c.target, c.ns, release)
		},
	}, {
		name:  "pin-unknown-render",
		start: startManifests,
		breakIt: func(t *testing.T, c *caseEnv) {
			updateRelease(t, c.ns, release, func(r *convoyv1alpha1.Release) { r.Spec.Pin = &convoyv1alpha1.Pin{RenderRef: zeroRef} })
		},
		reason: convoyv1alpha1.ReasonPinned, want: []string{zeroRef[:15]},
	}, {
		name:  "hook-never-ends",
		live:  true,
		start: startManifests,
		// The Job's pod asks for a node that does not exist: it stays Pending, the Job active.
		breakIt: breakSource(map[string]string{"app.yaml": framework.Docs(keepDoc, framework.ConfigMapDoc("after-hook", nil, nil),
			framework.HookJobDoc("forever", "preSync", false, map[string]any{"nodeSelector": map[string]any{"convoy-e2e/no-such-node": "true"}}))}),
		reason: convoyv1alpha1.ReasonWaitingForHook, want: []string{"Job", "forever", "running"},
		after: func(t *testing.T, c *caseEnv) {
			// The Release keeps reporting it; the objects after the hook are not applied.
			time.Sleep(hookWatch)
			r := env.WaitApplied(t, c.ns, release, convoyv1alpha1.ReasonWaitingForHook, applyTimeout, framework.MessageContains("forever"))
			if got := framework.LifecycleState(r, "preSync"); got != "Running" {
				t.Errorf("lifecycle preSync = %q, want Running (lifecycle %+v)", got, r.Status.Lifecycle)
			}
			if _, err := c.target.Kube.CoreV1().ConfigMaps(c.ns).Get(ctx, "after-hook", metav1.GetOptions{}); err == nil {
				t.Error("ConfigMap after-hook was applied while its preSync hook runs")
			}
			jobs, err := c.target.Kube.BatchV1().Jobs(c.ns).List(ctx, metav1.ListOptions{})
			if err != nil || len(jobs.Items) != 1 || jobs.Items[0].Status.CompletionTime != nil {
				t.Errorf("hook Jobs on live: %v (err %v), want one that has not completed", jobs, err)
			}
		},
	}, {
		name:  "sync-annotation-not-a-time",
		start: startManifests,
		breakIt: func(t *testing.T, c *caseEnv) {
			updateRelease(t, c.ns, release, func(r *convoyv1alpha1.Release) {
				metav1.SetMetaDataAnnotation(&r.ObjectMeta, convoyv1alpha1.SyncRequestedAtAnnotation, "yesterday at noon")
			})
		},
		// The request is ignored with an Event: the Release stays Applied.
		reason: convoyv1alpha1.ReasonApplied, want: []string{"applied render"},
		eventReason: "InvalidAnnotation", eventWant: []string{convoyv1alpha1.SyncRequestedAtAnnotation, "yesterday at noon"},
	}, {
		name:  "values-break-template",
		start: startHelm(),
		breakIt: func(t *testing.T, c *caseEnv) {
			repo := framework.NewHelmRepo(t)
			framework.Publish(t, repo, simpleChart("strict", "1.0.0", map[string]string{
				"cfg.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  name: {{ .Values.config.name | quote }}\n",
			}, "config:\n  name: default\n"))
			updateRelease(t, c.ns, release, func(r *convoyv1alpha1.Release) {
				r.Spec.Source.Helm = &convoyv1alpha1.HelmSource{RepoURL: repo.URL, Chart: "strict", Version: "1.0.0"}
				r.Spec.Values = framework.RawJSON(map[string]any{"config": "flat"})
			})
		},
		reason: convoyv1alpha1.ReasonRenderFailed, want: []string{"strict/templates/cfg.yaml", "line 6", "config.name"},
	}, {
		name:    "chart-50MiB",
		start:   startHelm(),
		breakIt: setHelm(hostile.URL+"/big", "big", "0.1.0"),
		reason:  convoyv1alpha1.ReasonFetchFailed,
		want:    []string{"big 0.1.0", fmt.Sprintf("%d bytes, over the download limit of %d bytes", bigArchiveBytes, framework.ControllerMaxDownloadBytes)},
	}, {
		name:    "chart-50MiB-unannounced",
		start:   startHelm(),
		breakIt: setHelm(hostile.URL+"/chunked", "big", "0.1.0"),
		reason:  convoyv1alpha1.ReasonFetchFailed,
		want:    []string{"big 0.1.0", fmt.Sprintf("over the download limit of %d bytes", framework.ControllerMaxDownloadBytes)},
	}, {
		name:  "tar-bomb",
		start: startHelm(),
		breakIt: func(t *testing.T, c *caseEnv) {
			hostile.addArchive(t, "bomb", tarBombChart())
			setHelm(hostile.URL+"/bomb", "bomb", "0.1.0")(t, c)
		},
		reason: convoyv1alpha1.ReasonFetchFailed, want: []string{"bomb 0.1.0", fmt.Sprintf("over the limit of %d bytes", maxUnpackedBytes)},
	}, {
		name:    "index-never-ends",
		start:   startHelm(),
		breakIt: setHelm(hostile.URL+"/endless", "app", "1.0.0"),
		reason:  convoyv1alpha1.ReasonFetchFailed,
		want:    []string{"index.yaml", fmt.Sprintf("over the download limit of %d bytes", framework.ControllerMaxDownloadBytes)},
	}, {
		name:    "index-never-ends-slowly",
		start:   startHelm(),
		breakIt: setHelm(hostile.URL+"/slow", "app", "1.0.0"),
		// While the fetch hangs, the controller serves another Release.
		during: func(t *testing.T, c *caseEnv) {
			env.CreateSource(t, c.ns, "other-src", map[string]string{"other.yaml": framework.ConfigMapDoc("other", nil, nil)})
			env.CreateConfigMapRelease(t, c.ns, "other", c.cluster, "other-src")
			env.WaitApplied(t, c.ns, "other", convoyv1alpha1.ReasonApplied, applyTimeout, nil)
			r, err := env.GetRelease(c.ns, release)
			if err != nil {
				t.Fatal(err)
			}
			// Informative only: on a loaded machine the fetch may have timed out already.
			t.Logf("when the other Release was applied: %s", framework.DescribeApplied(r))
		},
		reason: convoyv1alpha1.ReasonFetchFailed, want: []string{"index", "deadline exceeded"},
	}, {
		name:  "schema-ref-to-device",
		start: startHelm(),
		breakIt: func(t *testing.T, c *caseEnv) {
			ch := keepChart("schema", "1.0.0")
			ch.Schema = []byte(`{"$ref": "file:///dev/zero"}`)
			repo := framework.NewHelmRepo(t)
			framework.Publish(t, repo, ch)
			setHelm(repo.URL, "schema", "1.0.0")(t, c)
		},
		reason: convoyv1alpha1.ReasonRenderFailed, want: []string{"schema/values.schema.json", "file:///dev/zero", "may only refer to itself"},
	}, {
		name:  "schema-ref-loop",
		start: startHelm(),
		breakIt: func(t *testing.T, c *caseEnv) {
			ch := keepChart("schema", "1.0.0")
			ch.Schema = []byte(`{"$ref": "#/definitions/a", "definitions": {"a": {"$ref": "#/definitions/b"}, "b": {"$ref": "#/definitions/a"}}}`)
			repo := framework.NewHelmRepo(t)
			framework.Publish(t, repo, ch)
			setHelm(repo.URL, "schema", "1.0.0")(t, c)
		},
		reason: convoyv1alpha1.ReasonRenderFailed, want: []string{"schema/values.schema.json", "reference cycle"},
	}, {
		name:    "link-local-helm-repo",
		start:   startHelm(),
		breakIt: setHelm("http://169.254.169.254/latest/meta-data", "app", "1.0.0"),
		reason:  convoyv1alpha1.ReasonFetchFailed,
		want:    []string{"169.254.169.254", "link-local or cloud metadata address", "--allow-link-local-sources"},
	}, {
		name:    "link-local-oci-registry",
		start:   startHelm(),
		breakIt: setHelm("oci://169.254.169.254/charts", "app", "1.0.0"),
		reason:  convoyv1alpha1.ReasonFetchFailed,
		want:    []string{"169.254.169.254", "link-local or cloud metadata address"},
	}, {
		name:  "link-local-git",
		start: startGit,
		breakIt: func(t *testing.T, c *caseEnv) {
			updateRelease(t, c.ns, release, func(r *convoyv1alpha1.Release) { r.Spec.Source.Git.URL = "http://[fe80::a9fe:a9fe]/app.git" })
		},
		reason: convoyv1alpha1.ReasonFetchFailed, want: []string{"fe80::a9fe:a9fe", "link-local or cloud metadata address"},
	}, {
		name:  "git-path-dotdot",
		start: startGit,
		breakIt: func(t *testing.T, c *caseEnv) {
			updateRelease(t, c.ns, release, func(r *convoyv1alpha1.Release) { r.Spec.Source.Git.Path = "manifests/../../../etc" })
		},
		reason: convoyv1alpha1.ReasonFetchFailed, want: []string{"manifests/../../../etc", "leaves the tree"},
	}, {
		name:  "kustomize-resource-out-of-repo",
		start: startGit,
		breakIt: func(t *testing.T, c *caseEnv) {
			framework.CommitFiles(t, c.git, "escape", map[string]string{"overlay/kustomization.yaml": "resources:\n- ../../../../../etc/hostname\n"})
			updateRelease(t, c.ns, release, func(r *convoyv1alpha1.Release) {
				r.Spec.Source.Git.Path, r.Spec.ContentType = "overlay", convoyv1alpha1.ContentTypeKustomize
			})
		},
		reason: convoyv1alpha1.ReasonRenderFailed, want: []string{"etc/hostname"},
	}, {
		name:  "git-symlink-out-of-repo",
		start: startGit,
		breakIt: func(t *testing.T, c *caseEnv) {
			if err := c.git.Symlink("manifests/passwd.yaml", "../../../../../etc/passwd"); err != nil {
				t.Fatal(err)
			}
			framework.CommitFiles(t, c.git, "escape", nil)
			if err := c.git.Tag("escape"); err != nil {
				t.Fatal(err)
			}
			updateRelease(t, c.ns, release, func(r *convoyv1alpha1.Release) { r.Spec.Source.Git.Ref = convoyv1alpha1.GitRef{Tag: "escape"} })
		},
		reason: convoyv1alpha1.ReasonFetchFailed, want: []string{"manifests/passwd.yaml", "points outside the repository"},
	}, {
		// valuesFrom has no namespace: the API server drops one, and the name is looked up in
		// the Release's own namespace, where it does not exist.
		name:  "values-secret-in-another-namespace",
		start: startHelm(),
		breakIt: func(t *testing.T, c *caseEnv) {
			foreign := foreignNamespace(t, c)
			createSecret(t, foreign, "foreign-values", map[string]string{"values.yaml": "stolen: true\n"})
			stored := mergePatchRelease(t, c.ns, fmt.Sprintf(
				`{"spec":{"valuesFrom":[{"kind":"Secret","name":"foreign-values","namespace":%q}]}}`, foreign))
			refs, _, _ := unstructured.NestedSlice(stored.Object, "spec", "valuesFrom")
			if len(refs) != 1 || refs[0].(map[string]any)["namespace"] != nil {
				t.Errorf("stored valuesFrom %v: the namespace should have been dropped", refs)
			}
		},
		reason: convoyv1alpha1.ReasonRenderFailed, want: []string{"valuesFrom[0]: Secret ", "/foreign-values key values.yaml not found"},
		after: func(t *testing.T, c *caseEnv) {
			r, _ := env.GetRelease(c.ns, release)
			if msg := framework.AppliedCondition(r).Message; !strings.Contains(msg, "Secret "+c.ns+"/foreign-values") {
				t.Errorf("message %q: want the Secret looked up in the Release's namespace %s", msg, c.ns)
			}
		},
	}, {
		// clusterRef is a name only: a Ready Cluster of that name in another namespace is not used.
		name:  "cluster-in-another-namespace",
		start: startManifests,
		breakIt: func(t *testing.T, c *caseEnv) {
			foreign := foreignNamespace(t, c)
			if err := env.RegisterCluster(ctx, foreign, "remote", env.Live); err != nil {
				t.Fatal(err)
			}
			framework.Eventually(t, applyTimeout, func() (bool, string) {
				cl, err := env.Convoy().CoreV1alpha1().Clusters(foreign).Get(ctx, "remote", metav1.GetOptions{})
				if err != nil || !meta.IsStatusConditionTrue(cl.Status.Conditions, convoyv1alpha1.ConditionReady) {
					return false, fmt.Sprintf("Cluster %s/remote not Ready yet: %v %+v", foreign, err, cl)
				}
				return true, ""
			})
			stored := mergePatchRelease(t, c.ns, fmt.Sprintf(`{"spec":{"clusterRef":{"name":"remote","namespace":%q}}}`, foreign))
			if ns, found, _ := unstructured.NestedString(stored.Object, "spec", "clusterRef", "namespace"); found {
				t.Errorf("stored clusterRef.namespace %q: it should have been dropped", ns)
			}
		},
		reason: convoyv1alpha1.ReasonClusterNotReady, want: []string{"/remote not found"},
		after: func(t *testing.T, c *caseEnv) {
			r, _ := env.GetRelease(c.ns, release)
			if msg := framework.AppliedCondition(r).Message; !strings.Contains(msg, "cluster "+c.ns+"/remote not found") {
				t.Errorf("message %q: want the Cluster looked up in the Release's namespace %s", msg, c.ns)
			}
			if _, err := env.Live.Kube.CoreV1().ConfigMaps(c.ns).Get(ctx, "keep", metav1.GetOptions{}); err == nil {
				t.Error("ConfigMap keep reached the live target of the foreign Cluster")
			}
		},
	}, {
		name:  "kubeconfig-exec-plugin",
		start: startOwnCluster,
		breakIt: breakKubeconfig(&clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{
			APIVersion: "client.authentication.k8s.io/v1", Command: "/usr/bin/touch", Args: []string{execMarker},
			InteractiveMode: clientcmdapi.NeverExecInteractiveMode,
		}}),
		reason: convoyv1alpha1.ReasonClusterNotReady, want: []string{"tenant", "exec plugins are not allowed"},
		after: func(t *testing.T, _ *caseEnv) {
			if _, err := os.Stat(execMarker); err == nil {
				t.Errorf("the exec plugin ran: %s exists", execMarker)
			}
		},
	}, {
		name:  "kubeconfig-auth-provider",
		start: startOwnCluster,
		breakIt: breakKubeconfig(&clientcmdapi.AuthInfo{AuthProvider: &clientcmdapi.AuthProviderConfig{
			Name: "oidc", Config: map[string]string{"idp-issuer-url": "https://169.254.169.254/"},
		}}),
		reason: convoyv1alpha1.ReasonClusterNotReady, want: []string{"tenant", "auth-provider plugins are not allowed"},
	}, {
		name:    "kubeconfig-token-file",
		start:   startOwnCluster,
		breakIt: breakKubeconfig(&clientcmdapi.AuthInfo{TokenFile: "/var/run/secrets/kubernetes.io/serviceaccount/token"}),
		reason:  convoyv1alpha1.ReasonClusterNotReady, want: []string{"tenant", "tokenFile paths are not allowed"},
	}, {
		name:    "kubeconfig-client-certificate-file",
		start:   startOwnCluster,
		breakIt: breakKubeconfig(&clientcmdapi.AuthInfo{ClientCertificate: "/etc/kubernetes/pki/admin.crt", ClientKey: "/etc/kubernetes/pki/admin.key"}),
		reason:  convoyv1alpha1.ReasonClusterNotReady, want: []string{"tenant", "client-certificate file paths are not allowed"},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			runCorpusCase(t, tc)
		})
	}
}

// runCorpusCase runs one case: good render, bad input, reason, Event, nothing deleted, no crash.
func runCorpusCase(t *testing.T, tc corpusCase) {
	c := &caseEnv{ns: env.NewNamespace(t), cluster: framework.TargetBare, target: env.Bare}
	if tc.live {
		c.cluster, c.target = framework.TargetLive, env.Live
	}
	tc.start(t, c) // startOwnCluster names another Cluster of the bare target
	env.WaitApplied(t, c.ns, release, convoyv1alpha1.ReasonApplied, applyTimeout, nil)
	checkKept(t, c.target, c.ns, release, "keep")

	tc.breakIt(t, c)
	if tc.during != nil {
		tc.during(t, c)
	}
	r := env.WaitApplied(t, c.ns, release, tc.reason, applyTimeout, framework.MessageContains(tc.want...))
	msg := framework.AppliedCondition(r).Message
	t.Logf("%s: %s: %s", tc.name, tc.reason, msg)
	eventReason, eventWant := tc.reason, tc.want
	if tc.eventReason != "" {
		eventReason, eventWant = tc.eventReason, tc.eventWant
	}
	ev := waitEvent(t, c.ns, release, eventReason, eventWant...)
	if tc.eventReason != "" {
		msg = ev.Message
	}
	recordResult(tc.name, eventReason, msg)
	stays(t, c.ns, release, tc.reason)
	checkKept(t, c.target, c.ns, release, "keep")
	if tc.after != nil {
		tc.after(t, c)
	}
	checkController(t)
}
