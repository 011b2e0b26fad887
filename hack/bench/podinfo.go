package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"helm.sh/helm/v3/pkg/chart/loader"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
	"github.com/kumodo/convoy/e2e/framework"
	"github.com/kumodo/convoy/pkg/hooks"
	"github.com/kumodo/convoy/pkg/render"
)

// Names of the podinfo scenarios: convoy's Releases live in namespaceB on mgmt and apply into
// namespaceB on every target; the baselines use namespaces of their own on the same targets.
const (
	namespaceB     = "bench"
	namespaceBSSA  = "bench-ssa"
	namespaceBHelm = "bench-helm"
	// touchAnnotation is what scenario c changes to wake every Release without changing its render.
	touchAnnotation = "bench.convoy.kumodo.io/touched-at"
	// createParallel is how many requests the bench sends at once to create or patch Releases.
	createParallel = 8
)

// Values of the podinfo Releases: b renders messageB, d changes it to messageD.
const (
	messageB = "convoy bench b"
	messageD = "convoy bench d"
)

// podinfoRun is scenario b's state, which c and d continue.
type podinfoRun struct {
	chartDir string
	version  string
	repo     *framework.HelmRepo
	helm     *helmRunner // nil without bin/helm
	targets  []*framework.APIServer
	names    []string
	// target of each Release, by name.
	targetOf map[string]*framework.APIServer
	watch    *releaseWatch
	// objects is how many objects one render applies (hooks left out).
	objects int
	// seconds is b's time to all Applied, for d's goal.
	seconds float64
}

// close stops the repository, the proxies and the informer.
func (p *podinfoRun) close() {
	if p.watch != nil {
		p.watch.close()
	}
	if p.helm != nil {
		p.helm.close()
	}
	if p.repo != nil {
		_ = p.repo.Close()
	}
}

// podinfoValues are the inline values of a Release with the given UI message.
func podinfoValues(message string) map[string]any {
	return map[string]any{"ui": map[string]any{"message": message}}
}

// setupPodinfo publishes the chart, creates the namespaces and Clusters, and prepares the helm
// runner.
func (b *bench) setupPodinfo(ctx context.Context) (*podinfoRun, error) {
	env := b.env
	p := &podinfoRun{chartDir: filepath.Join(b.cfg.chartsDir, "podinfo"), targets: []*framework.APIServer{env.Live, env.Bare, env.Fault},
		targetOf: map[string]*framework.APIServer{}}
	repoDir := filepath.Join(env.WorkDir, "bench-helm-repo")
	if err := os.MkdirAll(repoDir, 0o755); err != nil {
		return nil, fmt.Errorf("repo dir: %w", err)
	}
	var err error
	if p.repo, err = framework.StartHelmRepo(repoDir); err != nil {
		return nil, err
	}
	if p.version, err = p.repo.AddChartDir(p.chartDir); err != nil {
		p.close()
		return nil, err
	}
	if err := createNamespaces(ctx, namespaceB, env.Mgmt); err != nil {
		p.close()
		return nil, err
	}
	for _, ns := range []string{namespaceB, namespaceBSSA, namespaceBHelm} {
		if err := createNamespaces(ctx, ns, p.targets...); err != nil {
			p.close()
			return nil, err
		}
	}
	if err := b.registerClusters(ctx, namespaceB, p.targets...); err != nil {
		p.close()
		return nil, err
	}
	for i := range b.cfg.releases {
		name := fmt.Sprintf("podinfo-%04d", i)
		p.names = append(p.names, name)
		p.targetOf[name] = p.targets[i%len(p.targets)]
	}
	helmBin := filepath.Join(b.root, "bin", "helm")
	if _, err := os.Stat(helmBin); !b.cfg.helm {
		say("-helm=false: the Helm baseline is skipped")
	} else if err == nil {
		ch, err := loader.LoadDir(p.chartDir)
		if err != nil {
			p.close()
			return nil, fmt.Errorf("load podinfo: %w", err)
		}
		archive, err := framework.PackageChart(ch, env.WorkDir)
		if err != nil {
			p.close()
			return nil, err
		}
		p.helm, err = newHelmRunner(helmBin, archive, filepath.Join(env.WorkDir, "bench-helm"), b.cfg.helmParallel, b.cfg.qps, b.cfg.burst, p.targets)
		if err != nil {
			p.close()
			return nil, err
		}
	} else {
		say("no bin/helm (hack/build-test-bins.sh helm builds it): the Helm baseline is skipped")
	}
	if p.watch, err = b.watchReleases(ctx, namespaceB); err != nil {
		p.close()
		return nil, err
	}
	return p, nil
}

// render renders every Release's objects as convoy does (hooks left out), grouped by target, in
// namespace.
func (p *podinfoRun) render(ctx context.Context, message string) ([]ssaJob, int, error) {
	byTarget := map[string]*ssaJob{}
	var jobs []*ssaJob
	total := 0
	for _, name := range p.names {
		t := p.targetOf[name]
		objs, err := render.Render(ctx, render.Content{Type: v1alpha1.ContentTypeHelm, Dir: p.chartDir, Revision: p.version},
			podinfoValues(message), render.Capabilities{KubeVersion: "v1.37.2"}, render.Options{ReleaseName: name, Namespace: namespaceBSSA})
		if err != nil {
			return nil, 0, fmt.Errorf("render %s: %w", name, err)
		}
		applied, _ := hooks.Split(objs)
		j := byTarget[t.Name]
		if j == nil {
			j = &ssaJob{target: t}
			byTarget[t.Name] = j
			jobs = append(jobs, j)
		}
		j.objs = append(j.objs, applied...)
		total += len(applied)
	}
	out := make([]ssaJob, 0, len(jobs))
	for _, j := range jobs {
		out = append(out, *j)
	}
	return out, total, nil
}

// helmReleases are the helm baseline's releases with the given message.
func (p *podinfoRun) helmReleases(message string) []helmRelease {
	out := make([]helmRelease, 0, len(p.names))
	for _, name := range p.names {
		out = append(out, helmRelease{name: name, target: p.targetOf[name].Name, namespace: namespaceBHelm,
			set: []string{"ui.message=" + message}})
	}
	return out
}

// scenarioB creates the podinfo Releases and waits until all are Applied, then runs the baselines.
func (b *bench) scenarioB(ctx context.Context) (*table, error) {
	n := b.cfg.releases
	say("scenario b: %d Releases of podinfo across the live, bare and fault targets", n)
	p, err := b.setupPodinfo(ctx)
	if err != nil {
		return nil, err
	}
	b.podinfo = p
	raw, err := json.Marshal(podinfoValues(messageB))
	if err != nil {
		return nil, err
	}
	stopProfile := b.profile(ctx, "b")
	before, err := b.sampler.take(ctx)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	releases := b.env.Convoy().CoreV1alpha1().Releases(namespaceB)
	err = forEach(n, createParallel, func(i int) error {
		name := p.names[i]
		rel := &v1alpha1.Release{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespaceB},
			Spec: v1alpha1.ReleaseSpec{
				ClusterRef:      v1alpha1.LocalObjectReference{Name: p.targetOf[name].Name},
				TargetNamespace: namespaceB,
				Source:          v1alpha1.ReleaseSource{Helm: &v1alpha1.HelmSource{RepoURL: p.repo.URL, Chart: "podinfo", Version: p.version}},
				ContentType:     v1alpha1.ContentTypeHelm,
				Values:          &apiextensionsv1.JSON{Raw: raw},
				SyncPolicy:      v1alpha1.SyncPolicy{Interval: &metav1.Duration{Duration: time.Hour}},
			},
		}
		if _, err := releases.Create(ctx, rel, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create Release %s: %w", name, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	say("  %d Releases created in %.1f s", n, time.Since(start).Seconds())
	convoy, after, err := b.measureConvoy(ctx, n, nil, before, start, stopProfile)
	if err != nil {
		return nil, err
	}
	p.seconds = convoy.seconds
	say("  convoy: %.1f s; now the baselines", convoy.seconds)

	jobs, objects, err := p.render(ctx, messageB)
	if err != nil {
		return nil, err
	}
	p.objects = objects / n
	t := &table{
		title:   fmt.Sprintf("(b) %d Releases of podinfo %s across 3 targets (live, bare, fault)", n, p.version),
		rows:    []row{{run: "convoy", releases: n, objects: objects, usage: convoy}},
		ratioTo: 1,
	}
	ssa, err := runSSABaseline(ctx, jobs, namespaceBSSA, float32(b.cfg.qps), b.cfg.burst)
	if err != nil {
		return nil, err
	}
	t.rows = append(t.rows, row{run: "plain SSA loop (one per target)", releases: n, objects: objects, usage: ssa})
	if p.helm != nil {
		say("  plain SSA loop: %.1f s; now helm upgrade --install, %d at a time", ssa.seconds, p.helm.parallel)
		h, err := p.helm.run(ctx, p.helmReleases(messageB))
		if err != nil {
			return nil, err
		}
		t.rows = append(t.rows, row{run: fmt.Sprintf("helm upgrade --install (%d parallel)", p.helm.parallel), releases: n, objects: objects, usage: h})
		if p.helm.failed > 0 {
			t.note("%d helm releases failed (see the log).", p.helm.failed)
		}
	}
	t.note("convoy applied %s in %s reconciles; %s. The Releases' Helm source is a repository on 127.0.0.1 serving the packaged chart, helm installs the same archive from disk.",
		describeApplied(before, after), describeReconciles(before, after), describeThrottle(convoy))
	if p.helm != nil {
		t.note("helm runs %d processes at a time; its requests are counted by a proxy in front of each target, its peak RSS is the largest single helm process's, its CPU the sum over all of them.", p.helm.parallel)
	}
	if rels, err := b.env.Convoy().CoreV1alpha1().Releases(namespaceB).List(ctx, metav1.ListOptions{}); err == nil {
		gens := map[string]int{}
		for _, r := range rels.Items {
			gens[fmt.Sprint(r.Generation)]++
		}
		t.note("Releases by metadata.generation after b: %s (the bench created them at 1 and changed no spec).", describeCounts(gens))
	}
	mib := float64(after.hwm) / (1 << 20)
	t.note("Goal: under 120 s and 250 MiB: %.1f s and %.0f MiB, %s (Flux's public benchmark: 1,000 HelmReleases in 8m1s with 400 MiB).",
		convoy.seconds, mib, verdict(convoy.seconds < 120 && mib < 250))
	return t, nil
}

// scenarioC touches every Release so it is reconciled with nothing changed, and counts what the
// reconciles cost.
func (b *bench) scenarioC(ctx context.Context) (*table, error) {
	p := b.podinfo
	n := len(p.names)
	say("scenario c: %d Releases reconciled again with nothing changed", n)
	if err := b.waitQuiet(ctx); err != nil {
		return nil, err
	}
	convoy := b.env.Convoy().CoreV1alpha1()
	invBefore, err := inventoryVersions(ctx, b, namespaceB)
	if err != nil {
		return nil, err
	}
	before, err := b.sampler.take(ctx)
	if err != nil {
		return nil, err
	}
	touched := make([]string, n) // the Releases' resourceVersions after the touch
	start := time.Now()
	stamp := start.UTC().Format(time.RFC3339Nano)
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, touchAnnotation, stamp)
	err = forEach(n, createParallel, func(i int) error {
		rel, err := convoy.Releases(namespaceB).Patch(ctx, p.names[i], types.MergePatchType, patch, metav1.PatchOptions{})
		if err != nil {
			return fmt.Errorf("touch Release %s: %w", p.names[i], err)
		}
		touched[i] = rel.ResourceVersion
		return nil
	})
	if err != nil {
		return nil, err
	}
	after, err := b.waitReconciles(ctx, before.reconciles+float64(n))
	if err != nil {
		return nil, err
	}
	u := between(before, after, b.mgmtHost)
	u.seconds = after.at.Sub(start).Seconds()
	reconciles := after.reconciles - before.reconciles

	// Read from the API server, not the informer, which may lag by a moment.
	list, err := convoy.Releases(namespaceB).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list Releases: %w", err)
	}
	current := map[string]string{}
	for _, r := range list.Items {
		current[r.Name] = r.ResourceVersion
	}
	statusWritten := 0
	for i, name := range p.names {
		if current[name] != touched[i] {
			statusWritten++
		}
	}
	invAfter, err := inventoryVersions(ctx, b, namespaceB)
	if err != nil {
		return nil, err
	}
	invWritten := 0
	for name, rv := range invAfter {
		if invBefore[name] != rv {
			invWritten++
		}
	}

	jobs, objects, err := p.render(ctx, messageB)
	if err != nil {
		return nil, err
	}
	ssa, err := runSSABaseline(ctx, jobs, namespaceBSSA, float32(b.cfg.qps), b.cfg.burst)
	if err != nil {
		return nil, err
	}
	t := &table{
		title: fmt.Sprintf("(c) steady state: %d Releases reconciled again with nothing changed", n),
		rows: []row{
			{run: "convoy", releases: n, objects: objects, usage: u},
			{run: "plain SSA loop, same objects again", releases: n, objects: objects, usage: ssa},
		},
		ratioTo: 1,
	}
	t.note("%s reconciles (the touch wakes each Release once; any other wake-up in the window is counted too). Per reconcile: "+
		"mgmt reads %s, mgmt writes %s, target reads %s, target writes %s, target dry runs %s.",
		describeReconciles(before, after), perReconcile(u.mgmtReads, reconciles), perReconcile(u.mgmtWrites, reconciles),
		perReconcile(u.targetReads, reconciles), perReconcile(u.targetWrites, reconciles), perReconcile(u.targetDryRuns, reconciles))
	t.note("Releases whose object changed after the touch (status writes): %d of %d; ReleaseInventories written: %d; objects: %s; %s.",
		statusWritten, n, invWritten, describeApplied(before, after), describeThrottle(u))
	t.note("Goal: zero writes to targets and zero status writes: %.0f target writes, %d status writes, %s.",
		u.targetWrites, statusWritten, verdict(u.targetWrites == 0 && statusWritten == 0))
	t.note("The plain SSA loop sends every object again (a no-op for the API server, but one write request each); helm has no no-op upgrade (each writes a release revision), so it has no row here.")
	return t, nil
}

// scenarioD changes an inline value of every Release and waits until all are Applied with it.
func (b *bench) scenarioD(ctx context.Context) (*table, error) {
	p := b.podinfo
	n := len(p.names)
	say("scenario d: a render change on %d Releases", n)
	if err := b.waitQuiet(ctx); err != nil {
		return nil, err
	}
	stopProfile := b.profile(ctx, "d")
	convoy := b.env.Convoy().CoreV1alpha1()
	values, err := json.Marshal(map[string]any{"spec": map[string]any{"values": podinfoValues(messageD)}})
	if err != nil {
		return nil, err
	}
	before, err := b.sampler.take(ctx)
	if err != nil {
		return nil, err
	}
	generations := make([]int64, n)
	start := time.Now()
	err = forEach(n, createParallel, func(i int) error {
		rel, err := convoy.Releases(namespaceB).Patch(ctx, p.names[i], types.MergePatchType, values, metav1.PatchOptions{})
		if err != nil {
			return fmt.Errorf("change Release %s: %w", p.names[i], err)
		}
		generations[i] = rel.Generation
		return nil
	})
	if err != nil {
		return nil, err
	}
	minGen := map[string]int64{}
	for i, name := range p.names {
		minGen[name] = generations[i]
	}
	u, after, err := b.measureConvoy(ctx, n, minGen, before, start, stopProfile)
	if err != nil {
		return nil, err
	}
	say("  convoy: %.1f s; now the baselines", u.seconds)

	jobs, objects, err := p.render(ctx, messageD)
	if err != nil {
		return nil, err
	}
	t := &table{
		title:   fmt.Sprintf("(d) a render change (an inline value) on %d Releases", n),
		rows:    []row{{run: "convoy", releases: n, objects: objects, usage: u}},
		ratioTo: 1,
	}
	ssa, err := runSSABaseline(ctx, jobs, namespaceBSSA, float32(b.cfg.qps), b.cfg.burst)
	if err != nil {
		return nil, err
	}
	t.rows = append(t.rows, row{run: "plain SSA loop (one per target)", releases: n, objects: objects, usage: ssa})
	if p.helm != nil {
		h, err := p.helm.run(ctx, p.helmReleases(messageD))
		if err != nil {
			return nil, err
		}
		t.rows = append(t.rows, row{run: fmt.Sprintf("helm upgrade --install (%d parallel)", p.helm.parallel), releases: n, objects: objects, usage: h})
		if p.helm.failed > 0 {
			t.note("%d helm upgrades failed (see the log).", p.helm.failed)
		}
	}
	t.note("convoy applied %s in %s reconciles; %s.", describeApplied(before, after), describeReconciles(before, after), describeThrottle(u))
	ratio := u.seconds / p.seconds
	t.note("Goal: under 1.5x of (b)'s time (%.1f s): %.2fx, %s.", p.seconds, ratio, verdict(ratio < 1.5))
	return t, nil
}

// inventoryVersions returns the resourceVersion of every ReleaseInventory in namespace.
func inventoryVersions(ctx context.Context, b *bench, namespace string) (map[string]string, error) {
	list, err := b.env.Convoy().CoreV1alpha1().ReleaseInventories(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list ReleaseInventories: %w", err)
	}
	out := make(map[string]string, len(list.Items))
	for _, inv := range list.Items {
		out[inv.Name] = inv.ResourceVersion
	}
	return out, nil
}

// waitQuiet waits until the release queue is empty and no reconcile happened for 3 seconds.
func (b *bench) waitQuiet(ctx context.Context) error {
	const quiet = 3 * time.Second
	last, err := b.sampler.take(ctx)
	if err != nil {
		return err
	}
	since := time.Now()
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, b.cfg.timeout, false, func(ctx context.Context) (bool, error) {
		s, err := b.sampler.take(ctx)
		if err != nil {
			return false, err
		}
		if s.reconciles != last.reconciles || s.queueDepth > 0 {
			last, since = s, time.Now()
		}
		return time.Since(since) >= quiet, nil
	})
	if err != nil {
		return fmt.Errorf("wait for the release controller to settle (within %s): %w", b.cfg.timeout, err)
	}
	return nil
}

// waitReconciles waits until the controller counted at least want reconciles and its queue is
// empty, and returns the sample then.
func (b *bench) waitReconciles(ctx context.Context, want float64) (sample, error) {
	var s sample
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, b.cfg.timeout, true, func(ctx context.Context) (bool, error) {
		var err error
		s, err = b.sampler.take(ctx)
		return err == nil && s.reconciles >= want && s.queueDepth == 0, err
	})
	if err != nil {
		return sample{}, fmt.Errorf("%.0f reconciles, want %.0f (within %s): %w", s.reconciles, want, b.cfg.timeout, err)
	}
	return s, nil
}

// profile starts saving the controller's CPU profile of the next -profile-seconds for scenario
// name, when -profile-dir is set; the returned func waits for it and saves heap and allocs.
func (b *bench) profile(ctx context.Context, name string) func() {
	if b.cfg.profileDir == "" {
		return func() {}
	}
	base := b.env.Controller.HealthURL() + "/debug/pprof/"
	done := make(chan struct{})
	go func() {
		defer close(done)
		save(ctx, fmt.Sprintf("%sprofile?seconds=%d", base, b.cfg.profileSeconds), filepath.Join(b.cfg.profileDir, name+"-cpu.pb.gz"))
	}()
	return func() {
		<-done
		save(ctx, base+"heap", filepath.Join(b.cfg.profileDir, name+"-heap.pb.gz"))
		save(ctx, base+"allocs", filepath.Join(b.cfg.profileDir, name+"-allocs.pb.gz"))
	}
}

// save writes what url answers to path; a failure is only reported.
func save(ctx context.Context, url, path string) {
	err := func() error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s", resp.Status)
		}
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		if _, err := io.Copy(f, resp.Body); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}()
	if err != nil {
		say("  profile %s: %v", url, err)
		return
	}
	say("  profile saved: %s", path)
}

// measureConvoy waits until n Releases are Applied (at least at minGen's generations), stops the
// profile and returns convoy's usage since before, timed from start, and the sample it ends with.
func (b *bench) measureConvoy(ctx context.Context, n int, minGen map[string]int64, before sample, start time.Time, stopProfile func()) (usage, sample, error) {
	done, err := b.podinfo.watch.waitApplied(ctx, n, minGen, b.cfg.timeout)
	if err != nil {
		return usage{}, sample{}, err
	}
	after, err := b.sampler.take(ctx)
	if err != nil {
		return usage{}, sample{}, err
	}
	stopProfile()
	u := between(before, after, b.mgmtHost)
	u.seconds = done.Sub(start).Seconds()
	return u, after, nil
}
