package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	convoyv1alpha1 "github.com/kumodo/convoy/apis/core/v1alpha1"
	"github.com/kumodo/convoy/e2e/framework"
)

// TestRenderHelmRepoSemver: a chart from an HTTP Helm repository, picked by a semver range, is
// applied; lastAttempted.revision is the chart version; the test hook and NOTES.txt are not.
func TestRenderHelmRepoSemver(t *testing.T) {
	t.Parallel()
	ns := env.NewNamespace(t)
	repo := framework.NewHelmRepo(t)
	framework.Publish(t, repo, chartVersion(t, "webapp", "1.0.0"), chartVersion(t, "webapp", "1.2.0"), chartVersion(t, "webapp", "2.0.0"))

	env.CreateHelmRelease(t, ns, "web", "live", repo.URL, "webapp", ">=1.1 <2")
	r := env.WaitApplied(t, ns, "web", convoyv1alpha1.ReasonApplied, applyTimeout, revisionIs("1.2.0"))
	if appliedStatus(r) != metav1.ConditionTrue {
		t.Errorf("Applied status = %q: %s", appliedStatus(r), framework.DescribeApplied(r))
	}

	cm := configMapData(t, env.Live, ns, "web-config", dataIs(map[string]string{
		"chartVersion": "1.2.0", "color": "blue", "namespace": ns,
	}))
	if problems := checkManaged(cm, ns, "web"); problems != "" {
		t.Errorf("ConfigMap web-config: %s", problems)
	}
	dep, err := env.Live.Kube.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("Deployment web on live: %v", err)
	}
	if got := dep.Spec.Template.Spec.Containers[0].Image; got != "registry.example/webapp:1.0" {
		t.Errorf("Deployment image = %q, want registry.example/webapp:1.0", got)
	}
	if _, err := env.Live.Kube.CoreV1().Pods(ns).Get(ctx, "web-test", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the chart's test hook Pod web-test: got err %v, want NotFound (test hooks are dropped)", err)
	}
	if _, err := env.Live.Kube.CoreV1().Services(ns).Get(ctx, "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Service web: got err %v, want NotFound (service.enabled defaults to false)", err)
	}
}

// TestRenderHelmCRDs: a chart's crds/ CRD and a custom resource of it are both applied, on a
// Cluster that allows cluster-scoped objects.
func TestRenderHelmCRDs(t *testing.T) {
	t.Parallel()
	ns := env.NewNamespace(t)
	allowClusterScoped(t, ns, "live")
	repo := framework.NewHelmRepo(t)
	framework.Publish(t, repo, loadTestChart(t, "widgets"))

	env.CreateHelmRelease(t, ns, "widgets", "live", repo.URL, "widgets", "0.1.0", framework.WithValues(map[string]any{"size": 5}))
	env.WaitApplied(t, ns, "widgets", convoyv1alpha1.ReasonApplied, applyTimeout, revisionIs("0.1.0"))

	crd := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	if _, err := env.Live.Dynamic.Resource(crd).Get(ctx, "widgets.e2e.convoy.kumodo.io", metav1.GetOptions{}); err != nil {
		t.Fatalf("CRD widgets.e2e.convoy.kumodo.io on live: %v", err)
	}
	widgets := schema.GroupVersionResource{Group: "e2e.convoy.kumodo.io", Version: "v1", Resource: "widgets"}
	w, err := env.Live.Dynamic.Resource(widgets).Namespace(ns).Get(ctx, "widgets", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("Widget %s/widgets on live: %v", ns, err)
	}
	if size, _, _ := unstructuredInt(w.Object, "spec", "size"); size != 5 {
		t.Errorf("Widget spec.size = %d, want 5 (from spec.values)", size)
	}
	if problems := checkManaged(w, ns, "widgets"); problems != "" {
		t.Errorf("Widget: %s", problems)
	}
}

// TestRenderHelmDependencies: a subchart unpacked in charts/ and a Chart.yaml dependency packaged
// in charts/ as an archive are both rendered, with the parent's values for them.
func TestRenderHelmDependencies(t *testing.T) {
	t.Parallel()
	ns := env.NewNamespace(t)
	// A copy of the deps chart with the declared dependency packaged into its charts/, as
	// `helm dependency build` would leave it.
	dir := filepath.Join(t.TempDir(), "deps")
	if err := os.CopyFS(dir, os.DirFS(filepath.Join(testChartsDir, "deps"))); err != nil {
		t.Fatalf("copy the deps chart: %v", err)
	}
	if _, err := framework.PackageChart(loadTestChart(t, "declared"), filepath.Join(dir, "charts")); err != nil {
		t.Fatal(err)
	}
	repo := framework.NewHelmRepo(t)
	if _, err := repo.AddChartDir(dir); err != nil {
		t.Fatalf("publish deps: %v", err)
	}

	env.CreateHelmRelease(t, ns, "deps", "live", repo.URL, "deps", "")
	env.WaitApplied(t, ns, "deps", convoyv1alpha1.ReasonApplied, applyTimeout, revisionIs("0.1.0"))
	configMapData(t, env.Live, ns, "deps-parent", dataIs(map[string]string{"chart": "deps"}))
	configMapData(t, env.Live, ns, "deps-inline", dataIs(map[string]string{"greeting": "from-parent"}))
	configMapData(t, env.Live, ns, "deps-declared", dataIs(map[string]string{"greeting": "from-parent"}))
}

// TestRenderHelmOCI: a chart pushed to an OCI registry with Helm's registry client is pulled by
// a semver constraint over the registry's tags and applied.
func TestRenderHelmOCI(t *testing.T) {
	t.Parallel()
	ns := env.NewNamespace(t)
	reg := framework.NewOCIRegistry(t)
	for _, v := range []string{"1.0.0", "1.1.0", "2.0.0"} {
		if _, err := reg.PushChart(chartVersion(t, "webapp", v), "charts"); err != nil {
			t.Fatal(err)
		}
	}

	env.CreateHelmRelease(t, ns, "web", "live", "oci://"+reg.Host+"/charts", "webapp", "1.x")
	env.WaitApplied(t, ns, "web", convoyv1alpha1.ReasonApplied, applyTimeout, revisionIs("1.1.0"))
	configMapData(t, env.Live, ns, "web-config", dataIs(map[string]string{"chartVersion": "1.1.0"}))
}

// TestRenderGitBranchAndTag: manifests from a git path at a branch and at a tag are applied, each
// with its commit as the revision.
func TestRenderGitBranchAndTag(t *testing.T) {
	t.Parallel()
	ns := env.NewNamespace(t)
	repo := framework.NewGitRepo(t, "app")
	first := framework.CommitFiles(t, repo, "blue", map[string]string{
		"manifests/app.yaml": framework.ConfigMapDoc("git-app", map[string]string{"color": "blue"}, nil),
		"README.md":          "not a manifest, and outside the path anyway\n",
	})
	if err := repo.Tag("v1"); err != nil {
		t.Fatal(err)
	}
	second := framework.CommitFiles(t, repo, "green", map[string]string{
		"manifests/app.yaml": framework.ConfigMapDoc("git-app", map[string]string{"color": "green"}, nil),
	})

	createGitRelease(t, ns, "at-branch", "live", repo.URL, convoyv1alpha1.GitRef{Branch: "main"}, "manifests", convoyv1alpha1.ContentTypeManifests)
	createGitRelease(t, ns, "at-tag", "bare", repo.URL, convoyv1alpha1.GitRef{Tag: "v1"}, "manifests", convoyv1alpha1.ContentTypeManifests)
	env.WaitApplied(t, ns, "at-branch", convoyv1alpha1.ReasonApplied, applyTimeout, revisionIs(second))
	env.WaitApplied(t, ns, "at-tag", convoyv1alpha1.ReasonApplied, applyTimeout, revisionIs(first))
	configMapData(t, env.Live, ns, "git-app", dataIs(map[string]string{"color": "green"}))
	configMapData(t, env.Bare, ns, "git-app", dataIs(map[string]string{"color": "blue"}))
}

// TestRenderKustomizeFromGit: a kustomize overlay in a git repository, with a base beside it, is
// built and applied.
func TestRenderKustomizeFromGit(t *testing.T) {
	t.Parallel()
	ns := env.NewNamespace(t)
	repo := framework.NewGitRepo(t, "kustomized")
	commit := framework.CommitFiles(t, repo, "overlay", map[string]string{
		"base/kustomization.yaml": "resources:\n- config.yaml\n- deployment.yaml\n",
		"base/config.yaml":        framework.ConfigMapDoc("settings", map[string]string{"color": "blue"}, nil),
		"base/deployment.yaml":    deploymentDoc("api", 1),
		"overlays/prod/kustomization.yaml": "resources:\n- ../../base\nnamePrefix: prod-\n" +
			"labels:\n- pairs:\n    tier: prod\n  includeSelectors: false\n" +
			"patches:\n- patch: |-\n    apiVersion: v1\n    kind: ConfigMap\n    metadata:\n      name: settings\n    data:\n      color: red\n",
	})

	createGitRelease(t, ns, "api", "live", repo.URL, convoyv1alpha1.GitRef{Branch: "main"}, "overlays/prod", convoyv1alpha1.ContentTypeKustomize)
	env.WaitApplied(t, ns, "api", convoyv1alpha1.ReasonApplied, applyTimeout, revisionIs(commit))
	cm := configMapData(t, env.Live, ns, "prod-settings", dataIs(map[string]string{"color": "red"}))
	if cm.Labels["tier"] != "prod" {
		t.Errorf("ConfigMap prod-settings labels %v, want tier=prod", cm.Labels)
	}
	if _, err := env.Live.Kube.AppsV1().Deployments(ns).Get(ctx, "prod-api", metav1.GetOptions{}); err != nil {
		t.Errorf("Deployment prod-api on live: %v", err)
	}
}

// TestRenderMutations: labels, image and JSON patch mutations are visible on the target.
func TestRenderMutations(t *testing.T) {
	t.Parallel()
	ns := env.NewNamespace(t)
	repo := framework.NewHelmRepo(t)
	framework.Publish(t, repo, loadTestChart(t, "webapp"))

	env.CreateHelmRelease(t, ns, "web", "live", repo.URL, "webapp", "1.0.0", withMutations(
		convoyv1alpha1.Mutation{Target: &convoyv1alpha1.MutationTarget{Kind: "ConfigMap"}, Labels: map[string]string{"team": "payments"}},
		convoyv1alpha1.Mutation{Images: []convoyv1alpha1.ImageMutation{{Name: "registry.example/webapp", NewName: "mirror.example/webapp", NewTag: "2.0"}}},
		convoyv1alpha1.Mutation{Target: &convoyv1alpha1.MutationTarget{Group: "apps", Kind: "Deployment", Name: "web"},
			JSONPatch: []convoyv1alpha1.JSONPatchOperation{{Op: "replace", Path: "/spec/replicas", Value: framework.RawJSON(3)}}},
	))
	env.WaitApplied(t, ns, "web", convoyv1alpha1.ReasonApplied, applyTimeout, nil)

	cm, err := configMapOnTarget(env.Live, ns, "web-config")
	if err != nil {
		t.Fatalf("ConfigMap web-config on live: %v", err)
	}
	if cm.Labels["team"] != "payments" {
		t.Errorf("ConfigMap web-config labels %v, want team=payments", cm.Labels)
	}
	dep, err := env.Live.Kube.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("Deployment web on live: %v", err)
	}
	if got := dep.Spec.Template.Spec.Containers[0].Image; got != "mirror.example/webapp:2.0" {
		t.Errorf("Deployment image = %q, want mirror.example/webapp:2.0", got)
	}
	if got := ptr.Deref(dep.Spec.Replicas, 0); got != 3 {
		t.Errorf("Deployment replicas = %d, want 3", got)
	}
	if dep.Labels["team"] != "" {
		t.Errorf("Deployment got the ConfigMap-only label team=%q", dep.Labels["team"])
	}
}

// TestRenderFailures: each broken input gives its reason and a message naming the cause, and
// nothing is applied.
func TestRenderFailures(t *testing.T) {
	t.Parallel()
	ns := env.NewNamespace(t)
	repo := framework.NewHelmRepo(t)
	framework.Publish(t, repo, loadTestChart(t, "broken"), loadTestChart(t, "webapp"), bigChart(t))
	unreachable := closedURL(t)
	git := framework.NewGitRepo(t, "escape")
	framework.CommitFiles(t, git, "ok", map[string]string{"manifests/ok.yaml": framework.ConfigMapDoc("escape-ok", map[string]string{"a": "b"}, nil)})
	if err := git.Symlink("manifests/passwd.yaml", "../../../../../etc/passwd"); err != nil {
		t.Fatal(err)
	}
	framework.CommitFiles(t, git, "escape", nil)

	tests := []struct {
		name   string
		create func(name string)
		reason string
		want   []string
	}{{
		name:   "broken-template",
		create: func(name string) { env.CreateHelmRelease(t, ns, name, "live", repo.URL, "broken", "") },
		reason: convoyv1alpha1.ReasonRenderFailed,
		want:   []string{"broken/templates/bad.yaml", "line 7"},
	}, {
		name: "missing-values-secret",
		create: func(name string) {
			env.CreateHelmRelease(t, ns, name, "live", repo.URL, "webapp", "1.0.0",
				framework.WithValuesFrom(convoyv1alpha1.ValuesReference{Kind: "Secret", Name: "absent-values"}))
		},
		reason: convoyv1alpha1.ReasonRenderFailed,
		want:   []string{"valuesFrom[0]", "Secret " + ns + "/absent-values", "not found"},
	}, {
		name:   "unreachable-repo",
		create: func(name string) { env.CreateHelmRelease(t, ns, name, "live", unreachable, "webapp", "1.0.0") },
		reason: convoyv1alpha1.ReasonFetchFailed,
		want:   []string{"index", "connection refused"},
	}, {
		name:   "too-large-chart",
		create: func(name string) { env.CreateHelmRelease(t, ns, name, "live", repo.URL, "big", "") },
		reason: convoyv1alpha1.ReasonFetchFailed,
		want:   []string{"big", fmt.Sprintf("over the download limit of %d bytes", framework.ControllerMaxDownloadBytes)},
	}, {
		name: "symlink-escape",
		create: func(name string) {
			createGitRelease(t, ns, name, "live", git.URL, convoyv1alpha1.GitRef{Branch: "main"}, "manifests", convoyv1alpha1.ContentTypeManifests)
		},
		reason: convoyv1alpha1.ReasonFetchFailed,
		want:   []string{"manifests/passwd.yaml", "points outside the repository"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.create(tt.name)
			r := env.WaitApplied(t, ns, tt.name, tt.reason, applyTimeout, framework.MessageContains(tt.want...))
			t.Logf("%s", framework.DescribeApplied(r))
			if appliedStatus(r) != metav1.ConditionFalse {
				t.Errorf("Applied status = %q, want False: %s", appliedStatus(r), framework.DescribeApplied(r))
			}
			// The failure is stable: nothing gets applied while it lasts.
			framework.Consistently(t, quietPeriod, func() (bool, string) {
				r, err := env.GetRelease(ns, tt.name)
				if err != nil {
					return false, err.Error()
				}
				if c := framework.AppliedCondition(r); c == nil || c.Reason != tt.reason {
					return false, framework.DescribeApplied(r)
				}
				return true, ""
			})
			env.CheckNothingApplied(t, env.Live, ns, tt.name)
		})
	}
	for _, name := range []string{"broken-good", "broken-bad", "escape-ok"} {
		if _, err := configMapOnTarget(env.Live, ns, name); !apierrors.IsNotFound(err) {
			t.Errorf("ConfigMap %s on live: got err %v, want NotFound", name, err)
		}
	}
}

// TestRealChartsPodinfo: the podinfo chart from $CONVOY_REAL_CHARTS, packaged at test time and
// served from the test repository, with values-prod.yaml as a valuesFrom layer, is applied and
// its objects are on the live target. Its Helm hook Jobs are enabled: pre-install runs as a preSync
// hook and post-install as a postSync hook (both deleted by their hook-succeeded policy once done),
// and deleting the Release runs pre-delete before the prune and post-delete after it.
func TestRealChartsPodinfo(t *testing.T) {
	dir := filepath.Join(realChartsDir(t), "podinfo")
	t.Parallel()
	prod, err := os.ReadFile(filepath.Join(dir, "values-prod.yaml"))
	if err != nil {
		t.Fatalf("read podinfo values-prod.yaml: %v", err)
	}
	ns := env.NewNamespace(t)
	repo := framework.NewHelmRepo(t)
	version, err := repo.AddChartDir(dir)
	if err != nil {
		t.Fatalf("publish podinfo: %v", err)
	}
	createValuesConfigMap(t, ns, "podinfo-prod", "values-prod.yaml", string(prod))

	hookJob := map[string]any{"job": map[string]any{"enabled": true}}
	env.CreateHelmRelease(t, ns, "podinfo", "live", repo.URL, "podinfo", version,
		framework.WithValuesFrom(convoyv1alpha1.ValuesReference{Kind: "ConfigMap", Name: "podinfo-prod", Key: "values-prod.yaml"}),
		framework.WithValues(map[string]any{"hooks": map[string]any{"preInstall": hookJob, "postInstall": hookJob,
			"preDelete": hookJob, "postDelete": hookJob}}))
	env.WaitApplied(t, ns, "podinfo", convoyv1alpha1.ReasonApplied, 2*applyTimeout, all(revisionIs(version),
		lifecycleIs(map[string]string{"preSync": "Succeeded", "postSync": "Succeeded"})))

	kube := env.Live.Kube
	for _, name := range []string{"podinfo", "podinfo-redis"} {
		dep, err := kube.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Errorf("Deployment %s on live: %v", name, err)
			continue
		}
		if problems := checkManaged(dep, ns, "podinfo"); problems != "" {
			t.Errorf("Deployment %s: %s", name, problems)
		}
	}
	for _, name := range []string{"podinfo", "podinfo-redis"} {
		if _, err := kube.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("Service %s on live: %v", name, err)
		}
	}
	// values-prod.yaml turns the HPA on; the chart's defaults leave it off.
	if _, err := kube.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, "podinfo", metav1.GetOptions{}); err != nil {
		t.Errorf("HorizontalPodAutoscaler podinfo on live (from values-prod.yaml): %v", err)
	}
	if _, err := kube.CoreV1().ConfigMaps(ns).Get(ctx, "podinfo-redis", metav1.GetOptions{}); err != nil {
		t.Errorf("ConfigMap podinfo-redis on live: %v", err)
	}
	dep, err := kube.AppsV1().Deployments(ns).Get(ctx, "podinfo", metav1.GetOptions{})
	if err == nil && dep.Spec.Template.Spec.Containers[0].Resources.Limits.Memory().String() != "256Mi" {
		t.Errorf("podinfo memory limit = %s, want 256Mi (from values-prod.yaml)", dep.Spec.Template.Spec.Containers[0].Resources.Limits.Memory())
	}
	checkPodinfoHooks(t, ns, dep)
}

// checkPodinfoHooks checks the sync hooks of the podinfo Release in the inventory, then deletes the
// Release and checks the order of its delete hooks around the prune of its Deployment.
func checkPodinfoHooks(t *testing.T, ns string, dep *appsv1.Deployment) {
	t.Helper()
	inv, err := env.Convoy().CoreV1alpha1().ReleaseInventories(ns).Get(ctx, "podinfo", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	phases := map[string]convoyv1alpha1.HookEntry{}
	for _, h := range inv.Spec.Hooks {
		phases[h.Phase] = h
	}
	pre, post := phases["preSync"], phases["postSync"]
	if pre.Hook != "podinfo-pre-install" || pre.State != "Succeeded" || post.Hook != "podinfo-post-install" || post.State != "Succeeded" {
		t.Fatalf("hook entries %+v, want pre-install as a succeeded preSync hook and post-install as a succeeded postSync hook", inv.Spec.Hooks)
	}
	if dep != nil && (pre.CreatedAt.After(dep.CreationTimestamp.Time) || post.CreatedAt.Before(&dep.CreationTimestamp)) {
		t.Errorf("preSync hook created %v, Deployment %v, postSync hook %v: want that order", pre.CreatedAt, dep.CreationTimestamp, post.CreatedAt)
	}
	// hook-succeeded removed the finished Jobs.
	framework.Eventually(t, applyTimeout, func() (bool, string) {
		jobs, err := env.Live.Kube.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{})
		if err != nil || len(jobs.Items) > 0 {
			return false, fmt.Sprintf("Jobs left on live: %v %d", err, len(jobs.Items))
		}
		return true, ""
	})

	jobs, err := env.Live.Kube.BatchV1().Jobs(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer jobs.Stop()
	deps, err := env.Live.Kube.AppsV1().Deployments(ns).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=podinfo"})
	if err != nil {
		t.Fatal(err)
	}
	defer deps.Stop()
	deleteRelease(t, ns, "podinfo")
	var order []string
	deadline := time.After(2 * applyTimeout)
	for len(order) < 3 {
		select {
		case ev := <-jobs.ResultChan():
			if j, ok := ev.Object.(*batchv1.Job); ok && ev.Type == watch.Added {
				order = append(order, strings.TrimPrefix(j.Name[:strings.LastIndex(j.Name, "-")], "podinfo-"))
			}
		case ev := <-deps.ResultChan():
			if ev.Type == watch.Deleted {
				order = append(order, "pruned")
			}
		case <-deadline:
			t.Fatalf("events so far %v, want pre-delete, pruned, post-delete", order)
		}
	}
	if want := []string{"pre-delete", "pruned", "post-delete"}; !slices.Equal(order, want) {
		t.Fatalf("order %v, want %v", order, want)
	}
}

// TestRenderHelmRepoCredentials: a repository that requires basic auth is read with the
// Release's secretRef; without it the fetch fails with the server's answer and no credential in
// the message.
func TestRenderHelmRepoCredentials(t *testing.T) {
	t.Parallel()
	ns := env.NewNamespace(t)
	repo := framework.NewHelmRepo(t)
	framework.Publish(t, repo, loadTestChart(t, "webapp"))
	repo.RequireBasicAuth("deployer", "s3cret-password")
	createValuesSecret(t, ns, "repo-creds", "password", "s3cret-password")
	secrets := env.Mgmt.Kube.CoreV1().Secrets(ns)
	creds, err := secrets.Get(ctx, "repo-creds", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	creds.Data["username"] = []byte("deployer")
	if _, err := secrets.Update(ctx, creds, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	env.CreateHelmRelease(t, ns, "with-creds", "live", repo.URL, "webapp", "1.0.0", func(r *convoyv1alpha1.Release) {
		r.Spec.Source.SecretRef = &convoyv1alpha1.LocalObjectReference{Name: "repo-creds"}
	})
	env.CreateHelmRelease(t, ns, "anonymous", "bare", repo.URL, "webapp", "1.0.0")
	env.WaitApplied(t, ns, "with-creds", convoyv1alpha1.ReasonApplied, applyTimeout, revisionIs("1.0.0"))
	configMapData(t, env.Live, ns, "with-creds-config", dataIs(map[string]string{"chartVersion": "1.0.0"}))
	r := env.WaitApplied(t, ns, "anonymous", convoyv1alpha1.ReasonFetchFailed, applyTimeout, framework.MessageContains("401 Unauthorized"))
	if c := framework.AppliedCondition(r); c != nil && strings.Contains(c.Message, "s3cret-password") {
		t.Errorf("the Applied message shows the password: %s", c.Message)
	}
	env.CheckNothingApplied(t, env.Bare, ns, "anonymous")
}
