package framework

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kumodo/convoy/generated/clientset/versioned"
)

// Env is everything one `go test` run of the e2e suite shares: the clusters and the
// controller. Tests get their isolation from NewNamespace.
type Env struct {
	// Mgmt is the management cluster the controller watches; it has the convoy CRDs.
	Mgmt *APIServer
	// Live is a target with controllers, a scheduler and a kwok Node: workloads become healthy.
	Live *APIServer
	// Bare is a target with an API server only.
	Bare *APIServer
	// Fault is a target with an API server only, which tests may Stop and Start.
	Fault *APIServer
	// BareTargets are the targets of Options.BareTargets and Options.OwnEtcdTargets, by name.
	BareTargets map[string]*APIServer
	// TargetEtcds are the own etcds of the targets of Options.OwnEtcdTargets, by target name.
	TargetEtcds map[string]*EtcdServer
	// Controller is the convoy controller-manager under test: the first of Controllers.
	Controller *Controller
	// Controllers are the controller-manager processes of Options.Controllers, in order.
	Controllers []*Controller
	// WorkDir holds logs, kubeconfigs and etcd data; kept when a test failed.
	WorkDir string
	// S3 is the S3-compatible server (versitygw) for the render store.
	S3 *S3Server
	// RenderStoreURL is the controller's --render-store for the run ($CONVOY_E2E_RENDER_STORE:
	// file, the default, s3 or none); FileStoreURL is the file backend's URL in the work dir.
	RenderStoreURL, FileStoreURL string

	convoy versioned.Interface
	etcd   *EtcdServer
	live   *liveComponents
	failed atomic.Bool
}

// Start brings up etcd, the four API servers, the live cluster's components and the
// controller, and installs the CRDs on mgmt. On error everything started is stopped and the
// work directory kept for its logs.
func Start(ctx context.Context) (*Env, error) {
	return StartWith(ctx, Options{})
}

// StartWith is Start for only the parts opts selects: etcd, mgmt with the CRDs and the
// controller always, and the targets opts.Targets names. On error everything started is
// stopped and the work directory kept for its logs.
func StartWith(ctx context.Context, opts Options) (*Env, error) {
	want, err := opts.targetSet()
	if err != nil {
		return nil, err
	}
	if _, err := opts.bareTargets(); err != nil {
		return nil, err
	}
	if _, err := opts.ownEtcdTargets(); err != nil {
		return nil, err
	}
	if _, err := opts.controllers(); err != nil {
		return nil, err
	}
	root := opts.Root
	if root == "" {
		if root, err = repoRoot(); err != nil {
			return nil, err
		}
	}
	bins := binDir(root)
	required := []string{binEtcd, binKubeAPIServer, binController}
	if want[TargetLive] {
		required = append(required, binKubeControllerMgr, binKubeScheduler, binKwok, fileKwokStages)
	}
	if err := requireFiles(bins, required...); err != nil {
		return nil, err
	}
	e := &Env{}
	if e.WorkDir, err = makeWorkDir(opts.WorkDir); err != nil {
		return nil, err
	}
	if err := e.start(ctx, root, bins, want, opts); err != nil {
		e.failed.Store(true)
		e.Stop()
		return nil, fmt.Errorf("start e2e environment (work dir %s kept): %w", e.WorkDir, err)
	}
	return e, nil
}

// makeWorkDir returns dir or else $CONVOY_E2E_WORKDIR (created), or a fresh temporary
// directory.
func makeWorkDir(dir string) (string, error) {
	if dir == "" {
		dir = os.Getenv("CONVOY_E2E_WORKDIR")
	}
	if dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", fmt.Errorf("create work dir: %w", err)
		}
		return dir, nil
	}
	d, err := os.MkdirTemp("", "convoy-e2e-")
	if err != nil {
		return "", fmt.Errorf("create work dir: %w", err)
	}
	return d, nil
}

func (e *Env) start(ctx context.Context, root, bins string, targets map[string]bool, opts Options) error {
	logDir := filepath.Join(e.WorkDir, "logs")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return fmt.Errorf("create log dir: %w", err)
	}
	var err error
	if e.etcd, err = startSharedEtcd(ctx, filepath.Join(bins, binEtcd), filepath.Join(e.WorkDir, "etcd"), logDir); err != nil {
		return err
	}
	servers := map[string]**APIServer{"mgmt": &e.Mgmt, TargetLive: &e.Live, TargetBare: &e.Bare, TargetFault: &e.Fault}
	var starts []func() error
	for name, field := range servers {
		if name != "mgmt" && !targets[name] {
			continue
		}
		a, err := e.newTarget(name, bins, logDir, opts.Audit)
		if err != nil {
			return err
		}
		a.addOptions(opts)
		*field = a
		starts = append(starts, func() error { return a.start(ctx) })
	}
	for _, name := range opts.BareTargets {
		a, err := e.newTarget(name, bins, logDir, opts.Audit)
		if err != nil {
			return err
		}
		a.addOptions(opts)
		if e.BareTargets == nil {
			e.BareTargets = map[string]*APIServer{}
		}
		e.BareTargets[name] = a
		starts = append(starts, func() error { return a.start(ctx) })
	}
	ownEtcdStarts, err := e.prepareOwnEtcdTargets(ctx, bins, logDir, opts)
	if err != nil {
		return err
	}
	starts = append(starts, ownEtcdStarts...)
	// The API servers start in parallel: each spends seconds on start-up hooks, mostly waiting.
	if err := parallel(starts...); err != nil {
		return err
	}
	if e.convoy, err = versioned.NewForConfig(e.Mgmt.Config); err != nil {
		return fmt.Errorf("convoy clientset: %w", err)
	}
	setup := []func() error{func() error { return e.installCRDs(ctx, root) }}
	if e.Live != nil {
		setup = append(setup, func() (err error) { e.live, err = startLiveComponents(ctx, e.Live, bins, logDir); return err })
	}
	if err := parallel(setup...); err != nil {
		return err
	}
	if err := e.startRenderStore(ctx, bins, logDir); err != nil {
		return err
	}
	ctrls, err := opts.controllers()
	if err != nil {
		return err
	}
	for _, o := range ctrls {
		c, err := e.newController(bins, logDir, o)
		if err != nil {
			return err
		}
		e.Controllers = append(e.Controllers, c)
		if err := c.start(ctx); err != nil {
			return err
		}
	}
	e.Controller = e.Controllers[0]
	return nil
}

// newTarget is newTargetOn the shared etcd.
func (e *Env) newTarget(name, bins, logDir string, audit bool) (*APIServer, error) {
	return e.newTargetOn(name, bins, logDir, audit, e.etcd.URL)
}

// newTargetOn prepares the API server of a target or mgmt that stores its cluster in the etcd at
// etcdURL, with its audit log when audit is set.
func (e *Env) newTargetOn(name, bins, logDir string, audit bool, etcdURL string) (*APIServer, error) {
	a, err := newAPIServer(name, filepath.Join(bins, binKubeAPIServer), filepath.Join(e.WorkDir, name), logDir, etcdURL)
	if err != nil {
		return nil, err
	}
	if audit {
		if err := a.enableAudit(logDir); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// newController prepares one controller-manager process of Options.Controllers; a named one runs
// through a link of its name in the work directory, and logs to logs/<name>.log.
func (e *Env) newController(bins, logDir string, o ControllerOptions) (*Controller, error) {
	bin, logName := filepath.Join(bins, binController), "controller.log"
	if o.Name != "" {
		linkDir := filepath.Join(e.WorkDir, "bin")
		if err := os.MkdirAll(linkDir, 0o755); err != nil {
			return nil, fmt.Errorf("create link dir of controller %s: %w", o.Name, err)
		}
		link := filepath.Join(linkDir, o.Name)
		if err := os.Symlink(bin, link); err != nil && !errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("link controller %s: %w", o.Name, err)
		}
		bin, logName = link, o.Name+".log"
	}
	c, err := newController(bin, filepath.Join(logDir, logName), e.Mgmt.kubeconfigPath)
	if err != nil {
		return nil, err
	}
	c.configureRenderStore(e.RenderStoreURL, e.S3)
	c.args = append(c.args, o.Args...)
	return c, nil
}

// installCRDs installs the convoy CRDs on mgmt and checks the generated clientset serves them.
func (e *Env) installCRDs(ctx context.Context, root string) error {
	if err := installCRDs(ctx, e.Mgmt, filepath.Join(root, "manifests", "crds")); err != nil {
		return err
	}
	for {
		_, err := e.convoy.CoreV1alpha1().Releases(metav1.NamespaceAll).List(ctx, metav1.ListOptions{Limit: 1})
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("list Releases after installing the CRDs (last error %v): %w", err, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// parallel runs fns concurrently and joins their errors.
func parallel(fns ...func() error) error {
	errs := make([]error, len(fns))
	var wg sync.WaitGroup
	for i, fn := range fns {
		wg.Go(func() { errs[i] = fn() })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Convoy returns the generated clientset for the management cluster.
func (e *Env) Convoy() versioned.Interface { return e.convoy }

// MarkFailed makes Stop keep the work directory; TestMain calls it when the run failed, and
// NewNamespace's cleanup when its test failed.
func (e *Env) MarkFailed() { e.failed.Store(true) }

// Stop stops the controller, the live components, the API servers and etcd, each by its PID.
// The work directory is removed, unless a test failed or CONVOY_E2E_KEEP=1: then its path and
// the controller log's are printed.
func (e *Env) Stop() {
	var errs []error
	for _, c := range e.allControllers() {
		errs = append(errs, c.stop())
	}
	if e.S3 != nil {
		errs = append(errs, e.S3.Stop())
	}
	if e.live != nil {
		errs = append(errs, e.live.stop()...)
	}
	for _, a := range append([]*APIServer{e.Mgmt}, e.targets()...) {
		if a != nil && a.proc != nil {
			errs = append(errs, a.Stop())
		}
	}
	errs = append(errs, e.stopTargetEtcds()...)
	if e.etcd != nil {
		errs = append(errs, e.etcd.Stop())
	}
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: stopping the environment: %v\n", err)
		e.failed.Store(true)
	}
	if e.failed.Load() || os.Getenv("CONVOY_E2E_KEEP") == "1" {
		fmt.Fprintf(os.Stderr, "e2e: work dir kept: %s\n", e.WorkDir)
		for _, c := range e.allControllers() {
			fmt.Fprintf(os.Stderr, "e2e: controller log: %s\n", c.LogPath())
		}
		return
	}
	if err := os.RemoveAll(e.WorkDir); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: remove work dir: %v\n", err)
	}
}

// allControllers are the controllers started, also when StartWith failed half-way.
func (e *Env) allControllers() []*Controller {
	if len(e.Controllers) > 0 {
		return e.Controllers
	}
	if e.Controller != nil {
		return []*Controller{e.Controller}
	}
	return nil
}
