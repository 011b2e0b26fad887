// Command bench is what `make bench` runs: it measures convoy against the apply limit and against
// Helm, at fleet scale, and prints one Markdown table per scenario.
//
// It starts the e2e environment with the e2e framework (etcd; the management kube-apiserver with
// convoy's CRDs; the live target with kube-controller-manager, kube-scheduler and kwok; the bare and
// fault targets, API servers only) and convoy-controller-manager with the release and cluster
// controllers (-observer adds the observer) and the flags below. Each table has, per run, the
// Releases, the objects, the seconds until every Release is Applied, the API requests (reads:
// GET, which covers gets, lists and watches; writes: POST, PUT, PATCH, DELETE, with dry runs
// apart) to the management cluster and to the targets, the peak RSS and the CPU seconds.
//
// The controller's numbers come from its own /metrics (convoy_rest_client_requests_total, which
// counts every client-go request by verb and host, read before and after the scenario) and from
// /proc: CPU is the utime+stime delta, peak RSS is VmHWM, the peak since the process started or
// since the bench restarted it (so it is the peak up to the end of that scenario). The baselines
// run in the same process and environment right after convoy:
//
//   - plain SSA loop: the same objects, rendered the same way, applied by a plain client-go
//     server-side apply loop (one PATCH per object) per target with the controller's QPS and burst
//     to targets, into a namespace of their own: the physical limit. Its CPU is the bench
//     process's; its RSS is not measured.
//   - helm upgrade --install (podinfo scenarios): the same chart and values, one helm process per
//     release (bin/helm, built from the helm.sh/helm/v3 of go.mod by hack/build-test-bins.sh),
//     -helm-parallel at a time, with the same QPS and burst, through a counting proxy per target.
//     Peak RSS is the largest helm process's, CPU the sum of all of them.
//
// Scenarios (-scenarios, default all):
//
//	a  one Release of -objects objects (ConfigMaps and Deployments with 0 replicas, half each) on
//	   the live target, from a ConfigMap source; -rounds-a rounds, the table shows the median.
//	   When the client-side limiter bound convoy (the dry-run gate sends twice the loop's requests),
//	   the controller is restarted and a second table compares them at 1000 QPS and burst 2000,
//	   where the API server is the limit.
//	b  -releases Releases of the podinfo chart from $CONVOY_REAL_CHARTS/podinfo, packaged and served
//	   from a Helm repository on 127.0.0.1, spread over the live, bare and fault targets.
//	c  steady state: every Release of b is reconciled again with nothing changed (an annotation is
//	   touched, which wakes the controller but does not change the render); the table adds the
//	   requests per reconcile and how many Release statuses and inventories were written (goal:
//	   zero writes to targets, zero status writes).
//	d  a render change on every Release of b (an inline value changes), until all are Applied with
//	   the new render.
//
// c and d need b's Releases: asking for either runs b too. Without $CONVOY_REAL_CHARTS only a
// runs. Goals on a 2-core machine, reported under each table: (a) within 1.3x of the plain SSA
// loop; (b) under 120 s to all Applied and under 250 MiB RSS; (c) zero writes; (d) under 1.5x of
// (b)'s time. The Releases' sync interval and the controller's informer resync (-resync) are 1h
// so that no periodic reconcile of every Release mixes into a measurement (with the default 10m
// resync, a sweep of all 1,000 Releases fell inside d). -profile-dir turns on the controller's
// --profiling and saves a CPU profile of the first -profile-seconds of b and d, and heap and
// allocs profiles after them.
//
// It runs from the repository root (make bench). Never assert a time in a test: these numbers
// depend on the machine and on whatever else runs on it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kumodo/convoy/e2e/framework"
)

// config is the command line.
type config struct {
	scenarios      map[string]bool
	releases       int
	objects        int
	roundsA        int
	resync         time.Duration
	workers        int
	qps            float64
	burst          int
	helmParallel   int
	observer       bool
	helm           bool
	timeout        time.Duration
	out            string
	profileDir     string
	profileSeconds int
	workDir        string
	chartsDir      string
	verbosity      int
}

func main() {
	cfg, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	context.AfterFunc(ctx, stop)
	err = run(ctx, cfg)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "\nbench failed: %v\n", err)
		os.Exit(1)
	}
}

// parseFlags reads the flags.
func parseFlags(args []string) (config, error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	var c config
	scenarios := fs.String("scenarios", "a,b,c,d", "comma-separated scenarios to run (a, b, c, d); c and d run b too")
	fs.IntVar(&c.releases, "releases", 1000, "Releases of podinfo in scenarios b, c and d")
	fs.IntVar(&c.objects, "objects", 200, "objects of the one Release of scenario a")
	fs.IntVar(&c.roundsA, "rounds-a", 5, "rounds of scenario a (the table shows the median)")
	fs.DurationVar(&c.resync, "resync", time.Hour, "controller --resync (the Releases' interval): a sweep of every Release must not fall inside a scenario")
	fs.IntVar(&c.workers, "workers", 4, "controller --workers")
	fs.Float64Var(&c.qps, "qps", 50, "controller --qps and --target-qps, and the baselines' QPS")
	fs.IntVar(&c.burst, "burst", 100, "controller --burst and --target-burst, and the baselines' burst")
	fs.IntVar(&c.helmParallel, "helm-parallel", 8, "helm processes at a time in the Helm baseline")
	fs.BoolVar(&c.helm, "helm", true, "run the helm baseline (needs bin/helm)")
	fs.BoolVar(&c.observer, "observer", false, "run the observer (drift and health loops, default intervals) too")
	fs.DurationVar(&c.timeout, "timeout", 30*time.Minute, "longest wait for one scenario's Releases")
	fs.StringVar(&c.out, "out", "", "also write the tables to this Markdown file")
	fs.StringVar(&c.profileDir, "profile-dir", "", "run the controller with --profiling and save pprof profiles of b and d here")
	fs.IntVar(&c.profileSeconds, "profile-seconds", 30, "length of the CPU profiles of -profile-dir")
	fs.IntVar(&c.verbosity, "controller-v", 1, "controller log verbosity (-v)")
	fs.StringVar(&c.workDir, "workdir", "", "work directory of the environment (logs, etcd); empty: a temporary one, removed unless the run fails")
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("unexpected arguments %v", fs.Args())
	}
	var err error
	if c.scenarios, err = parseScenarios(*scenarios); err != nil {
		return config{}, err
	}
	if c.releases < 1 || c.objects < 2 || c.workers < 1 || c.roundsA < 1 || c.resync <= 0 || c.qps <= 0 || c.burst < 1 || c.helmParallel < 1 || c.profileSeconds < 1 {
		return config{}, errors.New("-releases, -rounds-a, -resync, -workers, -qps, -burst, -helm-parallel and -profile-seconds must be positive, -objects at least 2")
	}
	c.chartsDir = os.Getenv("CONVOY_REAL_CHARTS")
	return c, nil
}

// parseScenarios parses -scenarios; c and d bring b.
func parseScenarios(s string) (map[string]bool, error) {
	out := map[string]bool{}
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		switch name {
		case "a", "b", "c", "d":
			out[name] = true
		case "":
		default:
			return nil, fmt.Errorf("-scenarios: unknown scenario %q (want a, b, c, d)", name)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("-scenarios selects nothing")
	}
	if out["c"] || out["d"] {
		out["b"] = true
	}
	return out, nil
}

// controllerArgs are the controller's flags after the harness's: production intervals, not the
// tests' short ones, and the benchmark's settings.
func (c config) controllerArgs() []string {
	controllers := "release,cluster"
	if c.observer {
		controllers += ",observer"
	}
	args := []string{
		"--controllers=" + controllers,
		fmt.Sprintf("--workers=%d", c.workers),
		fmt.Sprintf("--resync=%s", c.resync),
		fmt.Sprintf("--qps=%g", c.qps), fmt.Sprintf("--burst=%d", c.burst),
		fmt.Sprintf("--target-qps=%g", c.qps), fmt.Sprintf("--target-burst=%d", c.burst),
		"--cluster-probe-interval=30s", "--health-interval=30s",
		fmt.Sprintf("-v=%d", c.verbosity),
	}
	if c.profileDir != "" {
		args = append(args, "--profiling")
	}
	return args
}

// bench is one run: the environment, the controller's sampler and the tables so far.
type bench struct {
	cfg      config
	root     string
	env      *framework.Env
	sampler  *sampler
	mgmtHost string
	tables   []*table
	// podinfo is scenario b's state, which c and d continue.
	podinfo *podinfoRun
}

func run(ctx context.Context, cfg config) error {
	root, err := os.Getwd()
	if err != nil {
		return fmt.Errorf("working directory: %w", err)
	}
	if _, err := os.Stat(filepath.Join(root, "manifests", "crds")); err != nil {
		return fmt.Errorf("run the benchmark from the repository root (make bench): %w", err)
	}
	if cfg.scenarios["b"] && cfg.chartsDir == "" {
		say("CONVOY_REAL_CHARTS is not set: skipping scenarios b, c and d (they need the podinfo chart)")
		delete(cfg.scenarios, "b")
		delete(cfg.scenarios, "c")
		delete(cfg.scenarios, "d")
		if !cfg.scenarios["a"] {
			return nil
		}
	}
	if cfg.profileDir != "" {
		if err := os.MkdirAll(cfg.profileDir, 0o755); err != nil {
			return fmt.Errorf("profile dir: %w", err)
		}
	}
	load := loadAverage()
	say("starting etcd, the management and three target API servers, the live cluster's components and convoy-controller-manager %s",
		strings.Join(cfg.controllerArgs(), " "))
	startCtx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	env, err := framework.StartWith(startCtx, framework.Options{
		Root:        root,
		WorkDir:     cfg.workDir,
		Controllers: []framework.ControllerOptions{{Args: cfg.controllerArgs()}},
		// Every podinfo release has a Service, three times over (convoy, SSA loop, helm): the
		// harness's /24 would run out of ClusterIPs.
		APIServerArgs: []string{"--service-cluster-ip-range=10.0.0.0/16"},
		// The harness caps each API server's heap at 150 MiB to keep the test suites small; with
		// 1,000 Releases the management API server's live heap passes that and its garbage
		// collector runs without pause (92% of its CPU in a profile, 0.75 of a core while idle).
		APIServerEnv: []string{"GOMEMLIMIT=off"},
	})
	cancel()
	if err != nil {
		return err
	}
	b := &bench{cfg: cfg, root: root, env: env}
	err = b.runScenarios(ctx)
	if err != nil {
		env.MarkFailed()
		fmt.Fprintf(os.Stderr, "controller log, last 40 lines:\n%s\n", env.Controller.LogTail(40))
	}
	if b.podinfo != nil {
		b.podinfo.close()
	}
	say("stopping the environment")
	env.Stop()
	if len(b.tables) > 0 {
		if werr := b.report(os.Stdout, load); werr != nil {
			err = errors.Join(err, werr)
		}
	}
	return err
}

// runScenarios runs the selected scenarios in order.
func (b *bench) runScenarios(ctx context.Context) error {
	mgmt, err := url.Parse(b.env.Mgmt.URL)
	if err != nil {
		return fmt.Errorf("management URL: %w", err)
	}
	b.mgmtHost = mgmt.Host
	if err := b.startSampler(); err != nil {
		return err
	}
	one := func(fn func(context.Context) (*table, error)) func(context.Context) ([]*table, error) {
		return func(ctx context.Context) ([]*table, error) {
			t, err := fn(ctx)
			return []*table{t}, err
		}
	}
	steps := []struct {
		name string
		fn   func(context.Context) ([]*table, error)
	}{
		{"a", b.scenarioA},
		{"b", one(b.scenarioB)},
		{"c", one(b.scenarioC)},
		{"d", one(b.scenarioD)},
	}
	for _, s := range steps {
		if !b.cfg.scenarios[s.name] {
			continue
		}
		ts, err := s.fn(ctx)
		if err != nil {
			return fmt.Errorf("scenario %s: %w", s.name, err)
		}
		for _, t := range ts {
			t.write(os.Stdout)
		}
		b.tables = append(b.tables, ts...)
	}
	return nil
}

// startSampler points the sampler at the running controller process.
func (b *bench) startSampler() error {
	b.sampler = &sampler{metricsURL: b.env.Controller.HealthURL() + "/metrics", pid: b.env.Controller.PID(),
		client: &http.Client{Timeout: 10 * time.Second}}
	if b.sampler.pid == 0 {
		return errors.New("the controller is not running")
	}
	return nil
}

// restartController restarts the controller with the given QPS and burst to targets and waits
// until it has reconciled every Release it finds on start (each once, after its Cluster's first
// probe), so that none of them is reconciled inside the next measurement. Its counters start
// again, and its peak RSS is reset once it has settled: the start's own peak is not the next
// scenario's.
func (b *bench) restartController(ctx context.Context, qps float64, burst int) error {
	releases, err := b.env.Convoy().CoreV1alpha1().Releases("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list Releases: %w", err)
	}
	if err := b.env.Controller.RestartWith(fmt.Sprintf("--target-qps=%g", qps), fmt.Sprintf("--target-burst=%d", burst)); err != nil {
		return fmt.Errorf("restart the controller: %w", err)
	}
	if err := b.startSampler(); err != nil {
		return err
	}
	if _, err := b.waitReconciles(ctx, float64(len(releases.Items))); err != nil {
		return fmt.Errorf("after the restart: %w", err)
	}
	if err := b.waitQuiet(ctx); err != nil {
		return err
	}
	// 5 resets VmHWM to the current RSS (proc(5), /proc/pid/clear_refs).
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", b.sampler.pid), []byte("5"), 0); err != nil {
		return fmt.Errorf("reset the controller's peak RSS: %w", err)
	}
	return nil
}

// report prints all tables again after the logs, and writes them to -out.
func (b *bench) report(stdout io.Writer, load string) error {
	var sb strings.Builder
	fmt.Fprintf(&sb, "## convoy benchmark (%s)\n\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(&sb, "Machine: %d CPUs, load average %s at the start (shared machine); %s. Controller: %s.\n\n",
		runtime.NumCPU(), load, runtime.Version(), strings.Join(b.cfg.controllerArgs(), " "))
	for _, t := range b.tables {
		t.write(&sb)
	}
	fmt.Fprintf(stdout, "\n%s", sb.String())
	if b.cfg.out == "" {
		return nil
	}
	if err := os.WriteFile(b.cfg.out, []byte(sb.String()), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", b.cfg.out, err)
	}
	say("tables written to %s", b.cfg.out)
	return nil
}

// loadAverage returns the 1, 5 and 15 minute load averages, or "unknown".
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// say prints a line of progress on stderr.
func say(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "==> %s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

// sortedKeys returns the keys of m in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
