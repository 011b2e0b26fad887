package framework

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// StartManagementOnly brings up etcd and the management API server only: no CRDs, no target,
// no render store and no controller (Env.Mgmt is set, every other component stays nil). It is
// for tests of what the API server itself accepts, such as the install manifests of
// manifests/. opts.Targets must be empty; Root and WorkDir are used as by StartWith. Env.Stop
// stops it. On error everything started is stopped and the work directory kept for its logs.
func StartManagementOnly(ctx context.Context, opts Options) (*Env, error) {
	if len(opts.Targets) > 0 {
		return nil, fmt.Errorf("StartManagementOnly starts no target, but Targets is %v", opts.Targets)
	}
	root := opts.Root
	if root == "" {
		var err error
		if root, err = repoRoot(); err != nil {
			return nil, err
		}
	}
	bins := binDir(root)
	if err := requireFiles(bins, binEtcd, binKubeAPIServer); err != nil {
		return nil, err
	}
	e := &Env{}
	var err error
	if e.WorkDir, err = makeWorkDir(opts.WorkDir); err != nil {
		return nil, err
	}
	if err := e.startManagementOnly(ctx, bins); err != nil {
		e.failed.Store(true)
		e.Stop()
		return nil, fmt.Errorf("start management API server (work dir %s kept): %w", e.WorkDir, err)
	}
	return e, nil
}

func (e *Env) startManagementOnly(ctx context.Context, bins string) error {
	logDir := filepath.Join(e.WorkDir, "logs")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return fmt.Errorf("create log dir: %w", err)
	}
	var err error
	if e.etcd, err = startSharedEtcd(ctx, filepath.Join(bins, binEtcd), filepath.Join(e.WorkDir, "etcd"), logDir); err != nil {
		return err
	}
	a, err := newAPIServer("mgmt", filepath.Join(bins, binKubeAPIServer), filepath.Join(e.WorkDir, "mgmt"), logDir, e.etcd.URL)
	if err != nil {
		return err
	}
	e.Mgmt = a
	return a.start(ctx)
}

// ControllerBinary returns the path of the convoy-controller-manager binary the harness runs:
// <repo>/bin, or $CONVOY_BIN_DIR, as built by `make build`.
func ControllerBinary() (string, error) {
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(binDir(root), binController), nil
}
