package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kumodo/convoy/e2e/framework"
)

// ssaFieldManager is the field manager of the plain server-side apply baseline.
const ssaFieldManager = "bench-ssa"

// requestCounter counts HTTP requests by whether they read (GET, HEAD) or write, and the dry
// runs among the writes.
type requestCounter struct {
	reads, writes, dryRuns atomic.Int64
}

// count records one request.
func (c *requestCounter) count(r *http.Request) {
	switch {
	case isRead(r.Method):
		c.reads.Add(1)
	case r.URL.Query().Has("dryRun"):
		c.dryRuns.Add(1)
	default:
		c.writes.Add(1)
	}
}

// countingTransport counts the requests of a client-go client.
type countingTransport struct {
	next    http.RoundTripper
	counter *requestCounter
}

func (t countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	t.counter.count(r)
	return t.next.RoundTrip(r)
}

// ssaClient applies objects to one target with plain server-side apply: one PATCH per object,
// through a client with the controller's QPS and burst to targets.
type ssaClient struct {
	dynamic dynamic.Interface
	mapper  meta.RESTMapper
}

// newSSAClient builds the baseline's client of a target; its requests count in counter.
func newSSAClient(target *framework.APIServer, qps float32, burst int, counter *requestCounter) (*ssaClient, error) {
	cfg := rest.CopyConfig(target.Config)
	cfg.QPS, cfg.Burst = qps, burst
	cfg.UserAgent = "convoy-bench-ssa"
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return countingTransport{next: rt, counter: counter} }
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("dynamic client of %s: %w", target.Name, err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("discovery client of %s: %w", target.Name, err)
	}
	return &ssaClient{dynamic: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))}, nil
}

// apply sends every object, in order, as a server-side apply (force) into namespace.
func (c *ssaClient) apply(ctx context.Context, objs []*unstructured.Unstructured, namespace string) error {
	for _, obj := range objs {
		gvk := obj.GroupVersionKind()
		m, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return fmt.Errorf("map %s: %w", gvk, err)
		}
		var res dynamic.ResourceInterface = c.dynamic.Resource(m.Resource)
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			obj = obj.DeepCopy()
			obj.SetNamespace(namespace)
			res = c.dynamic.Resource(m.Resource).Namespace(namespace)
		}
		if _, err := res.Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: ssaFieldManager, Force: true}); err != nil {
			return fmt.Errorf("apply %s %s/%s: %w", obj.GetKind(), namespace, obj.GetName(), err)
		}
	}
	return nil
}

// ssaJob is the objects the baseline applies to one target.
type ssaJob struct {
	target *framework.APIServer
	objs   []*unstructured.Unstructured
}

// runSSABaseline applies each job's objects with its own plain SSA loop, the loops of different
// targets concurrently (as the controller has one client per target), and returns the cost. The
// CPU is this process's, which does little else meanwhile; its RSS is not comparable.
func runSSABaseline(ctx context.Context, jobs []ssaJob, namespace string, qps float32, burst int) (usage, error) {
	var counter requestCounter
	clients := make([]*ssaClient, len(jobs))
	for i, j := range jobs {
		c, err := newSSAClient(j.target, qps, burst, &counter)
		if err != nil {
			return usage{}, err
		}
		clients[i] = c
	}
	cpu0, err := procStat("/proc", os.Getpid())
	if err != nil {
		return usage{}, err
	}
	start := time.Now()
	errs := make([]error, len(jobs))
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Go(func() { errs[i] = clients[i].apply(ctx, j.objs, namespace) })
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := errors.Join(errs...); err != nil {
		return usage{}, fmt.Errorf("plain SSA loop: %w", err)
	}
	cpu1, err := procStat("/proc", os.Getpid())
	if err != nil {
		return usage{}, err
	}
	return usage{
		seconds:      elapsed.Seconds(),
		targetReads:  float64(counter.reads.Load()),
		targetWrites: float64(counter.writes.Load()),
		peakRSS:      -1,
		cpu:          (cpu1 - cpu0).Seconds(),
	}, nil
}

// countingProxy is a plain-HTTP reverse proxy on 127.0.0.1 to one target API server that adds the
// admin credentials and counts the requests: the helm CLI talks to it, so its requests can be
// counted as the controller's are.
type countingProxy struct {
	url     string
	counter *requestCounter
	srv     *http.Server
}

// startCountingProxy starts a proxy to target whose requests count in counter.
func startCountingProxy(target *framework.APIServer, counter *requestCounter) (*countingProxy, error) {
	rt, err := rest.TransportFor(target.Config)
	if err != nil {
		return nil, fmt.Errorf("transport of %s: %w", target.Name, err)
	}
	upstream, err := url.Parse(target.URL)
	if err != nil {
		return nil, fmt.Errorf("URL of %s: %w", target.Name, err)
	}
	rp := httputil.NewSingleHostReverseProxy(upstream)
	rp.Transport = rt
	rp.FlushInterval = -1                    // watches stream
	rp.ErrorLog = log.New(io.Discard, "", 0) // helm reports the failure itself
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("proxy of %s: listen: %w", target.Name, err)
	}
	p := &countingProxy{url: "http://" + ln.Addr().String(), counter: counter}
	p.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		counter.count(r)
		rp.ServeHTTP(w, r)
	}), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

// close stops the proxy.
func (p *countingProxy) close() { _ = p.srv.Close() }

// writeProxyKubeconfig writes a kubeconfig that reaches the proxy without credentials.
func writeProxyKubeconfig(path, name, server string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: server}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	cfg.CurrentContext = name
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("write kubeconfig %s: %w", path, err)
	}
	return nil
}

// helmRunner runs `helm upgrade --install` for many releases with bounded parallelism, each
// target through its counting proxy.
type helmRunner struct {
	bin      string
	chart    string // packaged chart archive
	dir      string // HOME and Helm's cache, config and data homes
	parallel int
	qps      float64
	burst    int
	// kubeconfigs by target name, and the one counter of all proxies.
	kubeconfigs map[string]string
	counter     *requestCounter
	proxies     []*countingProxy
	// failed is how many releases the last run could not install or upgrade.
	failed int
}

// newHelmRunner starts one counting proxy per target and writes their kubeconfigs under dir.
func newHelmRunner(bin, chart, dir string, parallel int, qps float64, burst int, targets []*framework.APIServer) (*helmRunner, error) {
	h := &helmRunner{bin: bin, chart: chart, dir: dir, parallel: parallel, qps: qps, burst: burst,
		kubeconfigs: map[string]string{}, counter: &requestCounter{}}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("helm dir: %w", err)
	}
	for _, t := range targets {
		p, err := startCountingProxy(t, h.counter)
		if err != nil {
			h.close()
			return nil, err
		}
		h.proxies = append(h.proxies, p)
		path := filepath.Join(dir, t.Name+".kubeconfig")
		if err := writeProxyKubeconfig(path, t.Name, p.url); err != nil {
			h.close()
			return nil, err
		}
		h.kubeconfigs[t.Name] = path
	}
	return h, nil
}

// close stops the proxies.
func (h *helmRunner) close() {
	for _, p := range h.proxies {
		p.close()
	}
}

// helmRelease is one `helm upgrade --install`.
type helmRelease struct {
	name, target, namespace string
	// set are --set values.
	set []string
}

// run installs or upgrades every release and returns the cost: wall time, the requests the
// proxies counted, the largest peak RSS of one helm process and the CPU of all of them.
func (h *helmRunner) run(ctx context.Context, releases []helmRelease) (usage, error) {
	reads0, writes0 := h.counter.reads.Load(), h.counter.writes.Load()
	var (
		mu      sync.Mutex
		maxRSS  int64
		cpu     time.Duration
		errs    []error
		next    atomic.Int64
		wg      sync.WaitGroup
		workers = max(1, min(h.parallel, len(releases)))
	)
	start := time.Now()
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(releases) || ctx.Err() != nil {
					return
				}
				rss, used, err := h.runOne(ctx, releases[i])
				mu.Lock()
				maxRSS, cpu = max(maxRSS, rss), cpu+used
				if err != nil {
					errs = append(errs, err)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if len(errs) == len(releases) {
		return usage{}, fmt.Errorf("helm: every release failed; first: %w", errs[0])
	}
	// A few failures on a saturated machine (the API server resetting a stream) do not void the
	// baseline: they are reported under the table.
	h.failed = len(errs)
	if len(errs) > 0 {
		say("  helm: %d of %d releases failed; first: %v", len(errs), len(releases), errs[0])
	}
	return usage{
		seconds:      elapsed.Seconds(),
		targetReads:  float64(h.counter.reads.Load() - reads0),
		targetWrites: float64(h.counter.writes.Load() - writes0),
		peakRSS:      maxRSS,
		cpu:          cpu.Seconds(),
	}, nil
}

// runOne runs one helm process and returns its peak RSS (bytes) and CPU time.
func (h *helmRunner) runOne(ctx context.Context, r helmRelease) (int64, time.Duration, error) {
	args := []string{"upgrade", "--install", r.name, h.chart, "--namespace", r.namespace,
		"--kubeconfig", h.kubeconfigs[r.target],
		"--qps", fmt.Sprint(h.qps), "--burst-limit", fmt.Sprint(h.burst)}
	for _, s := range r.set {
		args = append(args, "--set", s)
	}
	cmd := exec.CommandContext(ctx, h.bin, args...)
	cmd.Env = append(os.Environ(), "HOME="+h.dir,
		"HELM_CACHE_HOME="+filepath.Join(h.dir, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(h.dir, "config"),
		"HELM_DATA_HOME="+filepath.Join(h.dir, "data"))
	out, err := cmd.CombinedOutput()
	var rss int64
	var used time.Duration
	if cmd.ProcessState != nil {
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			rss = ru.Maxrss * 1024 // kB on Linux
			used = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		}
	}
	if err != nil {
		return rss, used, fmt.Errorf("helm upgrade --install %s on %s: %w: %s", r.name, r.target, err, strings.TrimSpace(string(out)))
	}
	return rss, used, nil
}
