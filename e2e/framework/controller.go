package framework

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// controllerReadyTimeout bounds a controller start until /readyz answers 200.
const controllerReadyTimeout = 60 * time.Second

// Controller is the convoy controller-manager under test, run from the built binary as a real
// process against the management cluster. Every start appends to the same log file.
type Controller struct {
	bin        string
	logPath    string
	healthAddr string
	args       []string
	env        []string

	// SyncAPIURL is the controller's sync API (self-signed HTTPS on 127.0.0.1).
	SyncAPIURL string

	mu   sync.Mutex
	proc *process
}

// newController prepares the controller's flags; start runs it.
func newController(bin, logPath, mgmtKubeconfig string) (*Controller, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	c := &Controller{bin: bin, logPath: logPath, healthAddr: "127.0.0.1:" + strconv.Itoa(port)}
	c.args = []string{
		"--kubeconfig=" + mgmtKubeconfig,
		"--controllers=release,cluster",
		"--workers=4",
		"--health-addr=" + c.healthAddr,
		"--cluster-probe-interval=2s",
		"-v=2",
	}
	c.args = append(c.args, sourceFlags(logPath)...)
	syncArgs, err := c.syncAPIFlags(filepath.Dir(mgmtKubeconfig))
	if err != nil {
		return nil, err
	}
	c.args = append(withObserver(c.args), syncArgs...)
	return c, nil
}

// start runs the controller and waits until GET /readyz answers 200.
func (c *Controller) start(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.proc != nil && !c.proc.exited() {
		return fmt.Errorf("controller already running (pid %d)", c.proc.pid())
	}
	proc, err := startProcess("convoy-controller-manager", c.logPath, c.env, c.bin, c.args...)
	if err != nil {
		return err
	}
	c.proc = proc
	client := &http.Client{Timeout: 2 * time.Second}
	if err := waitHTTP(ctx, proc, client, "http://"+c.healthAddr+"/readyz"); err != nil {
		_ = proc.kill()
		return fmt.Errorf("controller not ready (log %s): %w", c.logPath, err)
	}
	return nil
}

// Kill ends the controller with SIGKILL, as a crash would: no graceful shutdown.
func (c *Controller) Kill() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.proc == nil {
		return errors.New("controller was never started")
	}
	if err := c.proc.kill(); err != nil {
		return fmt.Errorf("kill controller: %w", err)
	}
	return nil
}

// Restart stops the controller gracefully if it still runs (SIGTERM), starts it again with
// the same flags and waits until it is ready.
func (c *Controller) Restart() error { return c.RestartWith() }

// RestartWith is Restart with args added after the controller's flags, for this start and the
// later ones: a flag given again overrides its earlier value.
func (c *Controller) RestartWith(args ...string) error {
	return c.restart(func() { c.args = append(c.args, args...) })
}

// restart stops the controller, edits its flags under its lock and starts it again.
func (c *Controller) restart(edit func()) error {
	if err := c.stop(); err != nil {
		return err
	}
	c.mu.Lock()
	edit()
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), controllerReadyTimeout)
	defer cancel()
	return c.start(ctx)
}

// stop ends the controller with SIGTERM, then SIGKILL after 30 s.
func (c *Controller) stop() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.proc == nil {
		return nil
	}
	if err := c.proc.stop(30 * time.Second); err != nil {
		return fmt.Errorf("stop controller: %w", err)
	}
	return nil
}

// HealthURL returns the base URL of the controller's /healthz, /readyz and /metrics.
func (c *Controller) HealthURL() string { return "http://" + c.healthAddr }

// LogPath returns the controller's log file, kept when a test fails.
func (c *Controller) LogPath() string { return c.logPath }

// LogTail returns the last n lines of the controller's log.
func (c *Controller) LogTail(n int) string { return logTail(c.logPath, n) }
