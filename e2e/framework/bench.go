package framework

import (
	"fmt"
	"net"
	"net/http"
	"path/filepath"

	"helm.sh/helm/v3/pkg/repo"
)

// This file holds what the benchmark (hack/bench), a program rather than a test, needs beyond
// what the tests use.

// PID returns the process ID of the running controller, or 0 when it is not running: the
// benchmark reads its CPU time and peak RSS from /proc.
func (c *Controller) PID() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.proc == nil || c.proc.exited() {
		return 0
	}
	return c.proc.pid()
}

// StartHelmRepo is NewHelmRepo for a program: it serves dir (which must exist and should be
// empty) as a repository until Close.
func StartHelmRepo(dir string) (*HelmRepo, error) {
	r := &HelmRepo{dir: dir}
	if err := repo.NewIndexFile().WriteFile(filepath.Join(r.dir, "index.yaml"), 0o644); err != nil {
		return nil, fmt.Errorf("helm repo: write index: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("helm repo: listen: %w", err)
	}
	r.URL = "http://" + ln.Addr().String()
	r.srv = &http.Server{Handler: http.HandlerFunc(r.serve)}
	go func() { _ = r.srv.Serve(ln) }()
	return r, nil
}

// Close stops serving the repository.
func (r *HelmRepo) Close() error { return r.srv.Close() }
