package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	convoyv1alpha1 "github.com/kumodo/convoy/apis/core/v1alpha1"
	"github.com/kumodo/convoy/e2e/framework"
)

// Tests of issue 6 on the live target: the rollout state machine, lifecycle hooks, sync waves with
// health gates and cluster waves.

// rolloutTimeout bounds a wait that includes a progress deadline or a health verdict.
const rolloutTimeout = 3 * time.Minute

// withRollout enables the rollout state machine.
func withRollout(deadline time.Duration, action convoyv1alpha1.FailureAction) framework.ReleaseOption {
	return func(r *convoyv1alpha1.Release) {
		r.Spec.Rollout = &convoyv1alpha1.RolloutPolicy{ProgressDeadline: &metav1.Duration{Duration: deadline},
			FailurePolicy: &convoyv1alpha1.FailurePolicy{Action: action}}
	}
}

// withClusterWave sets the Release's cluster wave and its timeout (0: none).
func withClusterWave(wave int32, timeout time.Duration) framework.ReleaseOption {
	return func(r *convoyv1alpha1.Release) {
		r.Spec.SyncPolicy.ClusterWave = wave
		if timeout > 0 {
			r.Spec.SyncPolicy.ClusterWaveTimeout = &metav1.Duration{Duration: timeout}
		}
	}
}

// hookJobs lists the Jobs on the live target whose names start with prefix-.
func hookJobs(t *testing.T, ns, prefix string) []batchv1.Job {
	t.Helper()
	list, err := env.Live.Kube.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list Jobs on live: %v", err)
	}
	var out []batchv1.Job
	for _, j := range list.Items {
		if strings.HasPrefix(j.Name, prefix+"-") {
			out = append(out, j)
		}
	}
	return out
}

// lifecycleIs accepts a Release whose lifecycle has the given phase states.
func lifecycleIs(want map[string]string) func(*convoyv1alpha1.Release) (bool, string) {
	return func(r *convoyv1alpha1.Release) (bool, string) {
		for phase, state := range want {
			if got := framework.LifecycleState(r, phase); got != state {
				return false, fmt.Sprintf("lifecycle %s = %q, want %q (lifecycle %+v)", phase, got, state, r.Status.Lifecycle)
			}
		}
		return true, ""
	}
}

// rolloutIs accepts a Release whose rollout is in phase.
func rolloutIs(phase string) func(*convoyv1alpha1.Release) (bool, string) {
	return func(r *convoyv1alpha1.Release) (bool, string) {
		if r.Status.Rollout == nil || r.Status.Rollout.Phase != phase {
			return false, fmt.Sprintf("rollout %+v, want phase %s", r.Status.Rollout, phase)
		}
		return true, ""
	}
}

// all accepts a Release every check accepts.
func all(checks ...func(*convoyv1alpha1.Release) (bool, string)) func(*convoyv1alpha1.Release) (bool, string) {
	return func(r *convoyv1alpha1.Release) (bool, string) {
		for _, c := range checks {
			if ok, msg := c(r); !ok {
				return false, msg
			}
		}
		return true, ""
	}
}

// TestRolloutRollsBack: with failurePolicy Rollback, a render whose Deployment never becomes
// Available fails after progressDeadline and is rolled back to the last healthy render, which the
// drift loop then treats as desired; a fixed render rolls out to Succeeded.
func TestRolloutRollsBack(t *testing.T) {
	t.Parallel()
	ns := env.NewNamespace(t)
	good := map[string]string{"app.yaml": framework.Docs(deploymentDoc("web", 1), framework.ConfigMapDoc("version", map[string]string{"v": "1"}, nil))}
	env.CreateSource(t, ns, "app", good)
	env.CreateConfigMapRelease(t, ns, "app", "live", "app", framework.WithInterval(2*time.Second),
		withRollout(20*time.Second, convoyv1alpha1.FailureActionRollback))
	r := env.WaitApplied(t, ns, "app", convoyv1alpha1.ReasonApplied, rolloutTimeout, all(rolloutIs("Succeeded"),
		func(r *convoyv1alpha1.Release) (bool, string) {
			return r.Status.LastHealthy != nil, "no lastHealthy yet"
		}))
	healthyRef := r.Status.LastHealthy.RenderRef
	if c := meta.FindStatusCondition(r.Status.Conditions, convoyv1alpha1.ConditionRolloutSucceeded); c == nil || c.Status != metav1.ConditionTrue {
		t.Fatalf("RolloutSucceeded = %+v, want True", c)
	}

	env.UpdateSource(t, ns, "app", map[string]string{"app.yaml": framework.Docs(badDeploymentDoc("web", 600),
		framework.ConfigMapDoc("version", map[string]string{"v": "2"}, nil))})
	configMapData(t, env.Live, ns, "version", dataIs(map[string]string{"v": "2"}))
	r = env.WaitApplied(t, ns, "app", convoyv1alpha1.ReasonRolledBack, rolloutTimeout, rolloutIs("RolledBack"))
	if r.Status.Rollout.RenderRef == healthyRef || !strings.Contains(r.Status.Rollout.Message, "progressDeadline") {
		t.Errorf("rollout %+v: want the failed render and a message naming the progressDeadline", r.Status.Rollout)
	}
	if c := meta.FindStatusCondition(r.Status.Conditions, convoyv1alpha1.ConditionRolloutSucceeded); c == nil ||
		c.Status != metav1.ConditionFalse || c.Reason != "RolledBack" {
		t.Errorf("RolloutSucceeded = %+v, want False/RolledBack", c)
	}
	// The old objects are back on the target, and the inventory names the healthy render.
	configMapData(t, env.Live, ns, "version", dataIs(map[string]string{"v": "1"}))
	framework.Eventually(t, applyTimeout, func() (bool, string) {
		dep, err := env.Live.Kube.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if _, bad := dep.Spec.Template.Labels["convoy-e2e/bad"]; bad {
			return false, "the Deployment still has the failed render's pod template"
		}
		return true, ""
	})
	inv, err := env.Convoy().CoreV1alpha1().ReleaseInventories(ns).Get(ctx, "app", metav1.GetOptions{})
	if err != nil || inv.Spec.RenderRef != healthyRef {
		t.Fatalf("inventory %v: renderRef %q, want the last healthy %s", err, inv.Spec.RenderRef, healthyRef)
	}
	// The drift loop compares against the rolled-back render: the target is in sync.
	waitInSync(t, ns, "app", metav1.ConditionTrue, func(r *convoyv1alpha1.Release) (bool, string) {
		if r.Status.Drift == nil || r.Status.Drift.RenderRef != healthyRef {
			return false, fmt.Sprintf("drift %+v, want it checked against %s", r.Status.Drift, healthyRef)
		}
		return true, ""
	})

	// A fixed render rolls out again.
	env.UpdateSource(t, ns, "app", map[string]string{"app.yaml": framework.Docs(deploymentDoc("web", 1),
		framework.ConfigMapDoc("version", map[string]string{"v": "3"}, nil))})
	r = env.WaitApplied(t, ns, "app", convoyv1alpha1.ReasonApplied, rolloutTimeout, rolloutIs("Succeeded"))
	if r.Status.Rollout.RenderRef == healthyRef || r.Status.LastHealthy.RenderRef != r.Status.Rollout.RenderRef {
		t.Errorf("rollout %+v lastHealthy %+v: want the new render healthy", r.Status.Rollout, r.Status.LastHealthy)
	}
	configMapData(t, env.Live, ns, "version", dataIs(map[string]string{"v": "3"}))
}

// TestRolloutHalt: with failurePolicy Halt a failed render stays applied and the rollout Failed.
func TestRolloutHalt(t *testing.T) {
	t.Parallel()
	ns := env.NewNamespace(t)
	env.CreateSource(t, ns, "app", map[string]string{"app.yaml": deploymentDoc("web", 1)})
	env.CreateConfigMapRelease(t, ns, "app", "live", "app", framework.WithInterval(2*time.Second),
		withRollout(15*time.Second, convoyv1alpha1.FailureActionHalt))
	env.WaitApplied(t, ns, "app", convoyv1alpha1.ReasonApplied, rolloutTimeout, rolloutIs("Succeeded"))
	env.UpdateSource(t, ns, "app", map[string]string{"app.yaml": badDeploymentDoc("web", 600)})
	env.WaitApplied(t, ns, "app", convoyv1alpha1.ReasonApplied, rolloutTimeout, all(rolloutIs("Failed"),
		func(r *convoyv1alpha1.Release) (bool, string) {
			return strings.Contains(r.Status.Rollout.Message, "Halt"), "the rollout message does not say it halted"
		}))
	framework.Consistently(t, quietPeriod, func() (bool, string) {
		dep, err := env.Live.Kube.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if _, bad := dep.Spec.Template.Labels["convoy-e2e/bad"]; !bad {
			return false, "Halt rolled the Deployment back"
		}
		return true, ""
	})
}

// TestPreSyncHookFailure: a failing preSync Job stops the sync with HookFailed and nothing applied;
// with hook-on-failure Continue the sync goes on.
func TestPreSyncHookFailure(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name      string
		onFailure string
		reason    string
	}{
		{"fail", "Fail", convoyv1alpha1.ReasonHookFailed},
		{"continue", "Continue", convoyv1alpha1.ReasonApplied},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ns := env.NewNamespace(t)
			env.CreateSource(t, ns, "app", map[string]string{"app.yaml": framework.Docs(framework.ConfigMapDoc("config", map[string]string{"a": "1"}, nil),
				framework.Annotated(framework.HookJobDoc("migrate", "preSync", true, nil),
					map[string]string{convoyv1alpha1.HookOnFailureAnnotation: tt.onFailure}))})
			env.CreateConfigMapRelease(t, ns, "app", "live", "app")
			r := env.WaitApplied(t, ns, "app", tt.reason, applyTimeout, lifecycleIs(map[string]string{"preSync": "Failed"}))
			if tt.reason == convoyv1alpha1.ReasonHookFailed {
				if !strings.Contains(framework.DescribeApplied(r), "migrate") {
					t.Errorf("%s does not name the hook", framework.DescribeApplied(r))
				}
				env.CheckNothingApplied(t, env.Live, ns, "app")
			} else {
				configMapData(t, env.Live, ns, "config", dataIs(map[string]string{"a": "1"}))
			}
			if c := meta.FindStatusCondition(r.Status.Conditions, convoyv1alpha1.ConditionLifecycleSucceeded); c == nil || c.Status != metav1.ConditionFalse {
				t.Errorf("LifecycleSucceeded = %+v, want False", c)
			}
			if jobs := hookJobs(t, ns, "migrate"); len(jobs) != 1 {
				t.Errorf("%d migrate Jobs on live, want 1 (one run per render)", len(jobs))
			}
		})
	}
}

// TestHookPhases: a preSync Job completes before the objects are applied, a postSync Job runs after
// them and its failure does not change the result; hook objects carry a render suffix, and a forced
// sync runs the hooks of the same render again.
func TestHookPhases(t *testing.T) {
	t.Parallel()
	ns := env.NewNamespace(t)
	env.CreateSource(t, ns, "app", map[string]string{"app.yaml": framework.Docs(framework.ConfigMapDoc("config", map[string]string{"a": "1"}, nil),
		framework.HookJobDoc("migrate", "preSync", false, nil), framework.HookJobDoc("smoke", "postSync", true, nil))})
	env.CreateConfigMapRelease(t, ns, "app", "live", "app")
	r := env.WaitApplied(t, ns, "app", convoyv1alpha1.ReasonApplied, applyTimeout,
		lifecycleIs(map[string]string{"preSync": "Succeeded", "postSync": "Failed"}))
	if c := meta.FindStatusCondition(r.Status.Conditions, convoyv1alpha1.ConditionApplied); c.Status != metav1.ConditionTrue {
		t.Errorf("Applied = %s after a failed postSync hook, want True", c.Status)
	}
	cm := configMapData(t, env.Live, ns, "config", dataIs(map[string]string{"a": "1"}))
	pre, post := hookJobs(t, ns, "migrate"), hookJobs(t, ns, "smoke")
	if len(pre) != 1 || len(post) != 1 {
		t.Fatalf("%d migrate and %d smoke Jobs on live, want 1 each", len(pre), len(post))
	}
	if pre[0].Status.CompletionTime == nil || pre[0].Status.CompletionTime.After(cm.CreationTimestamp.Time) {
		t.Errorf("preSync Job completed at %v, after the ConfigMap was created at %v", pre[0].Status.CompletionTime, cm.CreationTimestamp)
	}
	if post[0].CreationTimestamp.Before(&cm.CreationTimestamp) {
		t.Errorf("postSync Job created at %v, before the ConfigMap at %v", post[0].CreationTimestamp, cm.CreationTimestamp)
	}
	inv, err := env.Convoy().CoreV1alpha1().ReleaseInventories(ns).Get(ctx, "app", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{pre[0].Name, post[0].Name} {
		if !slices.ContainsFunc(inv.Spec.Hooks, func(h convoyv1alpha1.HookEntry) bool { return h.Name == name }) {
			t.Errorf("hook %s not in the inventory's hooks %+v", name, inv.Spec.Hooks)
		}
	}

	// A forced sync runs the hooks of the same render again, under new names; the earlier run's Job is
	// deleted first (before-hook-creation, the default), and the new run is not repeated afterwards.
	at := time.Now().UTC().Add(time.Second).Format(time.RFC3339)
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, convoyv1alpha1.ForceSyncRequestedAtAnnotation, at)
	if _, err := env.Convoy().CoreV1alpha1().Releases(ns).Patch(ctx, "app", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	var rerun string
	framework.Eventually(t, applyTimeout, func() (bool, string) {
		jobs := hookJobs(t, ns, "migrate")
		if len(jobs) != 1 || jobs[0].Name == pre[0].Name || jobs[0].Status.CompletionTime == nil {
			return false, fmt.Sprintf("%d migrate Jobs, want one completed run other than %s", len(jobs), pre[0].Name)
		}
		rerun = jobs[0].Name
		return true, ""
	})
	env.WaitApplied(t, ns, "app", convoyv1alpha1.ReasonApplied, applyTimeout, func(r *convoyv1alpha1.Release) (bool, string) {
		return r.Status.LastHandledForceSyncAt != nil, "the forced sync is not handled yet"
	})
	framework.Consistently(t, 2*pollInterval, func() (bool, string) {
		jobs := hookJobs(t, ns, "migrate")
		if len(jobs) != 1 || jobs[0].Name != rerun {
			return false, fmt.Sprintf("migrate Jobs changed after the forced run %s: %d Jobs", rerun, len(jobs))
		}
		return true, ""
	})
}

// pollInterval is the controller's requeue while it waits for a hook (pkg/release).
const pollInterval = 5 * time.Second

// TestSyncFailedHook: an object the API server rejects makes the sync Unappliable, and the
// syncFailed hook runs.
func TestSyncFailedHook(t *testing.T) {
	t.Parallel()
	ns := env.NewNamespace(t)
	env.CreateSource(t, ns, "app", map[string]string{"app.yaml": framework.Docs(framework.ConfigMapDoc("config", nil, nil), serviceDoc("web", "Bogus"),
		framework.HookJobDoc("notify", "syncFailed", false, nil), framework.HookJobDoc("never", "postSync", false, nil))})
	env.CreateConfigMapRelease(t, ns, "app", "live", "app")
	env.WaitApplied(t, ns, "app", convoyv1alpha1.ReasonUnappliable, applyTimeout, nil)
	framework.Eventually(t, applyTimeout, func() (bool, string) {
		if n := len(hookJobs(t, ns, "notify")); n != 1 {
			return false, fmt.Sprintf("%d notify Jobs, want 1", n)
		}
		return true, ""
	})
	if n := len(hookJobs(t, ns, "never")); n != 0 {
		t.Errorf("%d postSync Jobs after a failed sync, want 0", n)
	}
	env.CheckNothingApplied(t, env.Live, ns, "app")
}

// TestDeleteHooks: deleting the Release runs the preDelete hook before the objects are pruned and
// the postDelete hook after.
func TestDeleteHooks(t *testing.T) {
	t.Parallel()
	ns := env.NewNamespace(t)
	env.CreateSource(t, ns, "app", map[string]string{"app.yaml": framework.Docs(framework.ConfigMapDoc("config", nil, nil),
		framework.HookJobDoc("backup", "preDelete", false, nil), framework.HookJobDoc("goodbye", "postDelete", false, nil))})
	env.CreateConfigMapRelease(t, ns, "app", "live", "app")
	env.WaitApplied(t, ns, "app", convoyv1alpha1.ReasonApplied, applyTimeout, nil)
	if n := len(hookJobs(t, ns, "backup")) + len(hookJobs(t, ns, "goodbye")); n != 0 {
		t.Fatalf("%d delete hooks ran before the deletion", n)
	}

	jobs, err := env.Live.Kube.BatchV1().Jobs(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer jobs.Stop()
	cms, err := env.Live.Kube.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=config"})
	if err != nil {
		t.Fatal(err)
	}
	defer cms.Stop()
	deleteRelease(t, ns, "app")

	var order []string
	deadline := time.After(applyTimeout)
	for len(order) < 3 {
		select {
		case ev := <-jobs.ResultChan():
			if j, ok := ev.Object.(*batchv1.Job); ok && ev.Type == watch.Added {
				order = append(order, "job "+strings.SplitN(j.Name, "-", 2)[0])
			}
		case ev := <-cms.ResultChan():
			if _, ok := ev.Object.(*corev1.ConfigMap); ok && ev.Type == watch.Deleted {
				order = append(order, "pruned")
			}
		case <-deadline:
			t.Fatalf("events so far %v, want job backup, pruned, job goodbye", order)
		}
	}
	if want := []string{"job backup", "pruned", "job goodbye"}; !slices.Equal(order, want) {
		t.Fatalf("order %v, want %v", order, want)
	}
	framework.Eventually(t, applyTimeout, func() (bool, string) {
		return framework.NotFound("Release", func() error { _, err := env.GetRelease(ns, "app"); return err })
	})
}

// TestWaveHealthGate: wave 1 needs wave 0 to be healthy: it is held while wave 0's Deployment is not
// Available, fails after waveHealthTimeout, and goes on once wave 0 is fixed.
func TestWaveHealthGate(t *testing.T) {
	t.Parallel()
	ns := env.NewNamespace(t)
	wave := func(n string) map[string]string { return map[string]string{convoyv1alpha1.SyncWaveAnnotation: n} }
	waves := func(db string) map[string]string {
		return map[string]string{"app.yaml": framework.Docs(db,
			framework.ConfigMapDoc("app", nil, map[string]string{convoyv1alpha1.SyncWaveAnnotation: "1", convoyv1alpha1.WaveHealthAnnotation: "required"}),
			framework.ConfigMapDoc("late", nil, wave("2")))}
	}
	env.CreateSource(t, ns, "app", waves(badDeploymentDoc("db", 600)))
	env.CreateConfigMapRelease(t, ns, "app", "live", "app", framework.WithInterval(2*time.Second), func(r *convoyv1alpha1.Release) {
		r.Spec.SyncPolicy.WaveHealthTimeout = &metav1.Duration{Duration: 20 * time.Second}
	})
	r := env.WaitApplied(t, ns, "app", convoyv1alpha1.ReasonWaitingForWaveHealth, applyTimeout, nil)
	if len(r.Status.Waves) != 3 || r.Status.Waves[0].Phase != "Applied" || r.Status.Waves[1].Phase != "Waiting" {
		t.Errorf("waves %+v, want wave 0 Applied and wave 1 Waiting", r.Status.Waves)
	}
	for _, name := range []string{"app", "late"} {
		if _, err := configMapOnTarget(env.Live, ns, name); err == nil {
			t.Errorf("ConfigMap %s applied while wave 0 is not healthy", name)
		}
	}
	env.WaitApplied(t, ns, "app", convoyv1alpha1.ReasonWaveUnhealthy, applyTimeout, framework.MessageContains("waveHealthTimeout"))

	env.UpdateSource(t, ns, "app", waves(framework.Annotated(deploymentDoc("db", 1), wave("0"))))
	r = env.WaitApplied(t, ns, "app", convoyv1alpha1.ReasonApplied, applyTimeout, nil)
	for _, name := range []string{"app", "late"} {
		if _, err := configMapOnTarget(env.Live, ns, name); err != nil {
			t.Errorf("ConfigMap %s: %v", name, err)
		}
	}
	for _, w := range r.Status.Waves {
		if w.Phase != "Applied" {
			t.Errorf("wave %d is %s, want Applied", w.Wave, w.Phase)
		}
	}
}

// TestClusterWaves: a Release of cluster wave 1 waits for the wave 0 Release of its cluster to be
// Applied and Healthy, then applies; one with a clusterWaveTimeout gives up with ClusterWaveFailed.
func TestClusterWaves(t *testing.T) {
	t.Parallel()
	ns := env.NewNamespace(t)
	env.CreateSource(t, ns, "first", map[string]string{"app.yaml": badDeploymentDoc("db", 600)})
	env.CreateSource(t, ns, "second", map[string]string{"app.yaml": framework.ConfigMapDoc("second", nil, nil)})
	env.CreateSource(t, ns, "third", map[string]string{"app.yaml": framework.ConfigMapDoc("third", nil, nil)})
	env.CreateConfigMapRelease(t, ns, "first", "live", "first", framework.WithInterval(2*time.Second))
	env.CreateConfigMapRelease(t, ns, "second", "live", "second", withClusterWave(1, 0))
	env.CreateConfigMapRelease(t, ns, "third", "live", "third", withClusterWave(1, 10*time.Second))

	env.WaitApplied(t, ns, "second", convoyv1alpha1.ReasonWaitingForClusterWave, applyTimeout, framework.MessageContains("first (wave 0)"))
	env.WaitApplied(t, ns, "third", convoyv1alpha1.ReasonClusterWaveFailed, applyTimeout, framework.MessageContains("clusterWaveTimeout"))
	if _, err := configMapOnTarget(env.Live, ns, "second"); err == nil {
		t.Fatal("the wave 1 Release applied while wave 0 is not healthy")
	}

	env.UpdateSource(t, ns, "first", map[string]string{"app.yaml": deploymentDoc("db", 1)})
	env.WaitApplied(t, ns, "second", convoyv1alpha1.ReasonApplied, rolloutTimeout, nil)
	if _, err := configMapOnTarget(env.Live, ns, "second"); err != nil {
		t.Fatalf("ConfigMap second: %v", err)
	}
}
