package framework

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/kumodo/convoy/apis/core/v1alpha1"
)

// etcdStartTimeout bounds one start of a target's own etcd until it answers /health.
const etcdStartTimeout = 60 * time.Second

// EtcdServer is an etcd: the run's shared one (Name empty), or one of a target's own
// (Options.OwnEtcdTargets), which tests may Stop and Start to take that target's storage away
// while its API server keeps running. Its data and ports survive a restart.
type EtcdServer struct {
	// Name is the target the etcd stores; empty for the shared etcd.
	Name string
	// URL is the client URL (plain HTTP on 127.0.0.1).
	URL string

	bin, dir, logPath, peerURL string
	mu                         sync.Mutex
	proc                       *process
}

// newEtcdServer prepares the etcd of target name ("" for the shared one), with its data in dir;
// Start runs it.
func newEtcdServer(name, bin, dir, logDir string) (*EtcdServer, error) {
	clientPort, err := freePort()
	if err != nil {
		return nil, err
	}
	peerPort, err := freePort()
	if err != nil {
		return nil, err
	}
	logName := "etcd.log"
	if name != "" {
		logName = "etcd-" + name + ".log"
	}
	return &EtcdServer{
		Name:    name,
		URL:     "http://127.0.0.1:" + strconv.Itoa(clientPort),
		bin:     bin,
		dir:     dir,
		logPath: filepath.Join(logDir, logName),
		peerURL: "http://127.0.0.1:" + strconv.Itoa(peerPort),
	}, nil
}

// Start runs etcd (again, after Stop) with the same data and ports, and waits until it answers
// /health.
func (s *EtcdServer) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc != nil && !s.proc.exited() {
		return fmt.Errorf("%s is already running (pid %d)", s, s.proc.pid())
	}
	// The data directory makes a restart the same member with the same data.
	proc, err := startProcess(strings.TrimSpace("etcd "+s.Name), s.logPath, nil, s.bin,
		"--data-dir="+s.dir,
		"--listen-client-urls="+s.URL, "--advertise-client-urls="+s.URL,
		"--listen-peer-urls="+s.peerURL, "--initial-advertise-peer-urls="+s.peerURL,
		"--initial-cluster=default="+s.peerURL,
		// Test data need not survive a power cut; fsync on a shared 2-core machine is slow.
		"--unsafe-no-fsync",
		"--log-level=warn",
	)
	if err != nil {
		return err
	}
	s.proc = proc
	ctx, cancel := context.WithTimeout(ctx, etcdStartTimeout)
	defer cancel()
	if err := waitHTTP(ctx, proc, http.DefaultClient, s.URL+"/health"); err != nil {
		_ = proc.kill()
		return fmt.Errorf("%s not ready: %w", s, err)
	}
	return nil
}

// Stop ends etcd (SIGTERM, then SIGKILL after 10 s); Start brings it back with its data.
func (s *EtcdServer) Stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return nil
	}
	if err := s.proc.stop(10 * time.Second); err != nil {
		return fmt.Errorf("stop %s: %w", s, err)
	}
	return nil
}

// String names the etcd in errors: "the shared etcd" or "etcd of <target>".
func (s *EtcdServer) String() string {
	if s.Name == "" {
		return "the shared etcd"
	}
	return "etcd of " + s.Name
}

// ownEtcdTargets validates OwnEtcdTargets: DNS labels, unique, none a standard target, mgmt or
// a name of BareTargets.
func (o Options) ownEtcdTargets() ([]string, error) {
	seen := map[string]bool{}
	for _, n := range o.OwnEtcdTargets {
		if _, err := (Options{BareTargets: []string{n}}).bareTargets(); err != nil {
			return nil, fmt.Errorf("own-etcd target: %w", err)
		}
		if seen[n] || slices.Contains(o.BareTargets, n) {
			return nil, fmt.Errorf("own-etcd target %q is taken", n)
		}
		seen[n] = true
	}
	return o.OwnEtcdTargets, nil
}

// prepareOwnEtcdTargets starts the etcd of every target of opts.OwnEtcdTargets and prepares its
// API server, registered in BareTargets (so NewNamespace makes it a Cluster); it returns the
// starts of those API servers.
func (e *Env) prepareOwnEtcdTargets(ctx context.Context, bins, logDir string, opts Options) ([]func() error, error) {
	names, err := opts.ownEtcdTargets()
	if err != nil {
		return nil, err
	}
	var starts []func() error
	for _, name := range names {
		s, err := newEtcdServer(name, filepath.Join(bins, binEtcd), filepath.Join(e.WorkDir, "etcd-"+name), logDir)
		if err != nil {
			return nil, err
		}
		if e.TargetEtcds == nil {
			e.TargetEtcds = map[string]*EtcdServer{}
		}
		e.TargetEtcds[name] = s
		if err := s.Start(ctx); err != nil {
			return nil, err
		}
		a, err := e.newTargetOn(name, bins, logDir, opts.Audit, s.URL)
		if err != nil {
			return nil, err
		}
		a.addOptions(opts)
		if e.BareTargets == nil {
			e.BareTargets = map[string]*APIServer{}
		}
		e.BareTargets[name] = a
		starts = append(starts, func() error { return a.start(ctx) })
	}
	return starts, nil
}

// stopTargetEtcds stops the targets' own etcds; their API servers must be stopped first.
func (e *Env) stopTargetEtcds() []error {
	var errs []error
	for _, s := range e.TargetEtcds {
		errs = append(errs, s.Stop())
	}
	return errs
}

// KubeconfigVia returns an admin kubeconfig of the cluster whose server is url instead of the API
// server's own address, e.g. a proxy in front of it; the CA is the API server's, so url must be
// on 127.0.0.1 as the serving certificate names it.
func (a *APIServer) KubeconfigVia(url string) ([]byte, error) {
	if a.Config == nil {
		return nil, fmt.Errorf("API server %s was never ready: no CA yet", a.Name)
	}
	return adminKubeconfig(a.Name, url, a.Config.CAData)
}

// RegisterClusterKubeconfig registers a Cluster clusterName in namespace whose kubeconfig Secret
// "<clusterName>-kubeconfig" holds kubeconfig, as RegisterCluster does with a target's own.
func (e *Env) RegisterClusterKubeconfig(ctx context.Context, namespace, clusterName string, kubeconfig []byte) error {
	secretName := clusterName + "-kubeconfig"
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: secretName, Namespace: namespace},
		Data:       map[string][]byte{KubeconfigSecretKey: kubeconfig},
	}
	if _, err := e.Mgmt.Kube.CoreV1().Secrets(namespace).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create Secret %s: %w", secretName, err)
	}
	cluster := &convoyv1alpha1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: clusterName, Namespace: namespace},
		Spec: convoyv1alpha1.ClusterSpec{
			KubeConfigSecretRef: &convoyv1alpha1.SecretKeyReference{Name: secretName, Key: KubeconfigSecretKey},
		},
	}
	if _, err := e.convoy.CoreV1alpha1().Clusters(namespace).Create(ctx, cluster, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create Cluster %s: %w", clusterName, err)
	}
	return nil
}

// LatencyProxy is a TCP proxy on 127.0.0.1 that delays every chunk a client sends by a fixed
// latency before passing it on to the backend, in order; the replies pass at once. TLS passes
// through untouched, so a client of an API server keeps verifying the server's certificate. The
// delay is latency, not a throughput limit: chunks read within one latency leave together.
type LatencyProxy struct {
	// URL is the proxy's https URL, to use in place of the backend's.
	URL string

	backend  string
	latency  time.Duration
	listener net.Listener
	chunks   atomic.Int64
	conns    atomic.Int64
	wg       sync.WaitGroup
	mu       sync.Mutex
	open     map[net.Conn]bool
	closed   bool
}

// StartLatencyProxy starts a proxy to backend (host:port) adding latency to every chunk sent to it.
func StartLatencyProxy(backend string, latency time.Duration) (*LatencyProxy, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen for the latency proxy: %w", err)
	}
	p := &LatencyProxy{URL: "https://" + l.Addr().String(), backend: backend, latency: latency, listener: l, open: map[net.Conn]bool{}}
	p.wg.Go(p.serve)
	return p, nil
}

// serve accepts connections until Close.
func (p *LatencyProxy) serve() {
	for {
		c, err := p.listener.Accept()
		if err != nil {
			return
		}
		b, err := net.Dial("tcp", p.backend)
		if err != nil {
			c.Close()
			continue
		}
		if !p.track(c, b) {
			return
		}
		p.conns.Add(1)
		p.wg.Go(func() { p.forwardDelayed(c, b) })
		p.wg.Go(func() { p.forward(b, c) })
	}
}

// track records an open pair of connections, or closes them when the proxy is closed.
func (p *LatencyProxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		for _, c := range conns {
			c.Close()
		}
		return false
	}
	for _, c := range conns {
		p.open[c] = true
	}
	return true
}

// stamped is a chunk read from the client and the time it may leave.
type stamped struct {
	data []byte
	due  time.Time
}

// forwardDelayed copies from src to dst, each chunk held until latency after it was read.
func (p *LatencyProxy) forwardDelayed(src, dst net.Conn) {
	defer src.Close()
	defer dst.Close()
	queue := make(chan stamped, 1024)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ch := range queue {
			time.Sleep(time.Until(ch.due))
			if _, err := dst.Write(ch.data); err != nil {
				// Drain, so the reader never blocks on a full queue.
				for range queue {
				}
				return
			}
		}
	}()
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.chunks.Add(1)
			queue <- stamped{data: slices.Clone(buf[:n]), due: time.Now().Add(p.latency)}
		}
		if err != nil {
			break
		}
	}
	close(queue)
	<-done
}

// forward copies from src to dst at once.
func (p *LatencyProxy) forward(src, dst net.Conn) {
	defer src.Close()
	defer dst.Close()
	_, _ = io.Copy(dst, src)
}

// Chunks returns how many chunks clients sent through the proxy, each delayed.
func (p *LatencyProxy) Chunks() int64 { return p.chunks.Load() }

// Connections returns how many client connections the proxy accepted.
func (p *LatencyProxy) Connections() int64 { return p.conns.Load() }

// Close stops accepting, closes every open connection and waits for the copies to end.
func (p *LatencyProxy) Close() error {
	p.mu.Lock()
	p.closed = true
	err := p.listener.Close()
	for c := range p.open {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
	if err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("close the latency proxy: %w", err)
	}
	return nil
}
