package framework

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// apiServerStartTimeout bounds one API server start, including its first /readyz.
const apiServerStartTimeout = 90 * time.Second

// apiServerEnv caps each API server's Go heap softly: four of them idle at ~285 MB RSS each
// without it and ~230 MB with it, which keeps the whole run near its 1.5 GB budget.
var apiServerEnv = []string{"GOMEMLIMIT=150MiB"}

// APIServer is one kube-apiserver of the run: a cluster of its own in the shared etcd.
type APIServer struct {
	// Name is the cluster's name: mgmt, live, bare or fault (also its etcd prefix).
	Name string
	// URL is the https address the API server serves on 127.0.0.1.
	URL string
	// Kubeconfig authenticates as an admin (token auth) and carries the CA inline.
	Kubeconfig []byte
	// Config is the client configuration Kubeconfig describes.
	Config *rest.Config
	// Kube is a typed clientset for the cluster.
	Kube kubernetes.Interface
	// Dynamic is a dynamic client for the cluster.
	Dynamic dynamic.Interface
	// AuditLogPath is the API server's audit log (Options.Audit); empty without one.
	AuditLogPath string

	bin            string
	dir            string
	logPath        string
	kubeconfigPath string
	saKeyPath      string
	caPath         string
	args           []string
	env            []string

	mu   sync.Mutex
	proc *process
}

// newAPIServer prepares the directory, keys, token file and flags of an API server; start
// runs it. The port, certificates and etcd prefix stay the same across restarts.
func newAPIServer(name, bin, dir, logDir, etcdURL string) (*APIServer, error) {
	if err := os.MkdirAll(filepath.Join(dir, "certs"), 0o755); err != nil {
		return nil, fmt.Errorf("create dir of %s: %w", name, err)
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	a := &APIServer{
		Name:           name,
		URL:            "https://127.0.0.1:" + strconv.Itoa(port),
		bin:            bin,
		dir:            dir,
		logPath:        filepath.Join(logDir, "apiserver-"+name+".log"),
		kubeconfigPath: filepath.Join(dir, "kubeconfig"),
		saKeyPath:      filepath.Join(dir, "sa.key"),
		caPath:         filepath.Join(dir, "ca.crt"),
		env:            slices.Clone(apiServerEnv),
	}
	saPub := filepath.Join(dir, "sa.pub")
	if err := writeServiceAccountKeys(a.saKeyPath, saPub); err != nil {
		return nil, err
	}
	tokens := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte(adminToken+",admin,admin,system:masters\n"+extraTokenLines), 0o600); err != nil {
		return nil, fmt.Errorf("write token file of %s: %w", name, err)
	}
	a.args = []string{
		"--etcd-servers=" + etcdURL,
		"--etcd-prefix=/" + name,
		"--secure-port=" + strconv.Itoa(port),
		"--bind-address=127.0.0.1",
		"--cert-dir=" + filepath.Join(dir, "certs"),
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + saPub,
		"--service-account-signing-key-file=" + a.saKeyPath,
		"--token-auth-file=" + tokens,
		"--authorization-mode=RBAC",
		"--service-cluster-ip-range=10.0.0.0/24",
		"--disable-admission-plugins=ServiceAccount",
		"--profiling=false",
	}
	return a, nil
}

// Start starts the API server (again, after Stop) on the same port, certificates and etcd
// prefix, and waits until /readyz answers ok.
func (a *APIServer) Start() error {
	ctx, cancel := context.WithTimeout(context.Background(), apiServerStartTimeout)
	defer cancel()
	return a.start(ctx)
}

// addOptions adds the flags and environment Options give every API server.
func (a *APIServer) addOptions(opts Options) {
	a.args = append(a.args, opts.APIServerArgs...)
	a.env = append(a.env, opts.APIServerEnv...)
}

func (a *APIServer) start(ctx context.Context) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.proc != nil && !a.proc.exited() {
		return fmt.Errorf("API server %s is already running (pid %d)", a.Name, a.proc.pid())
	}
	proc, err := startProcess("kube-apiserver "+a.Name, a.logPath, a.env, a.bin, a.args...)
	if err != nil {
		return err
	}
	a.proc = proc
	if err := a.waitReady(ctx); err != nil {
		_ = proc.kill()
		return fmt.Errorf("API server %s not ready: %w", a.Name, err)
	}
	return nil
}

// waitReady waits for the self-signed certificate, builds the clients from its CA on the
// first start, and polls /readyz with them.
func (a *APIServer) waitReady(ctx context.Context) error {
	servingCert := filepath.Join(a.dir, "certs", "apiserver.crt")
	var last error
	for {
		if a.proc.exited() {
			return a.proc.exitError()
		}
		if a.Config == nil {
			last = a.initClients(servingCert)
		}
		if a.Config != nil {
			last = a.readyz(ctx)
			if last == nil {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("last error: %v: %w", last, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// initClients reads the CA once the API server wrote it and builds kubeconfig and clients.
func (a *APIServer) initClients(servingCert string) error {
	ca, err := caFromServingCert(servingCert)
	if err != nil {
		return err
	}
	kubeconfig, err := adminKubeconfig(a.Name, a.URL, ca)
	if err != nil {
		return err
	}
	if err := os.WriteFile(a.caPath, ca, 0o644); err != nil {
		return fmt.Errorf("write CA of %s: %w", a.Name, err)
	}
	if err := os.WriteFile(a.kubeconfigPath, kubeconfig, 0o600); err != nil {
		return fmt.Errorf("write kubeconfig of %s: %w", a.Name, err)
	}
	cfg := &rest.Config{
		Host:            a.URL,
		BearerToken:     adminToken,
		TLSClientConfig: rest.TLSClientConfig{CAData: ca},
		// Tests poll a lot; the default 5 QPS would make the harness the bottleneck.
		QPS:   200,
		Burst: 400,
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("clientset for %s: %w", a.Name, err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("dynamic client for %s: %w", a.Name, err)
	}
	a.Kubeconfig, a.Config, a.Kube, a.Dynamic = kubeconfig, cfg, kube, dyn
	return nil
}

// readyz asks the API server whether it is ready.
func (a *APIServer) readyz(ctx context.Context) error {
	reqCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var status int
	body, err := a.Kube.Discovery().RESTClient().Get().AbsPath("/readyz").Do(reqCtx).StatusCode(&status).Raw()
	if err != nil {
		return fmt.Errorf("GET /readyz: %w", err)
	}
	if status != http.StatusOK {
		return fmt.Errorf("GET /readyz: %d %s", status, body)
	}
	return nil
}

// Stop stops the API server (SIGTERM, then SIGKILL after 15 s). The cluster's data stays in
// etcd, so Start brings the same cluster back.
func (a *APIServer) Stop() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.proc == nil {
		return errors.New("API server " + a.Name + " was never started")
	}
	if err := a.proc.stop(15 * time.Second); err != nil {
		return fmt.Errorf("stop API server %s: %w", a.Name, err)
	}
	return nil
}

// WriteKubeconfig writes an admin kubeconfig for the cluster to path (mode 0600), naming its
// cluster and context contextName, for tools such as kubectl run outside the harness.
func (a *APIServer) WriteKubeconfig(path, contextName string) error {
	if a.Config == nil {
		return fmt.Errorf("API server %s was never ready: no kubeconfig yet", a.Name)
	}
	kubeconfig, err := adminKubeconfig(contextName, a.URL, a.Config.CAData)
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, kubeconfig, 0o600); err != nil {
		return fmt.Errorf("write kubeconfig of %s: %w", a.Name, err)
	}
	return nil
}
