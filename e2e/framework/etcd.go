package framework

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"time"
)

// etcd is the one etcd every API server of the run stores its cluster in, under its own prefix.
type etcd struct {
	url  string
	proc *process
}

// startEtcd starts etcd with its data in dir and waits until it answers /health.
func startEtcd(ctx context.Context, bin, dir, logDir string) (*etcd, error) {
	clientPort, err := freePort()
	if err != nil {
		return nil, err
	}
	peerPort, err := freePort()
	if err != nil {
		return nil, err
	}
	clientURL := fmt.Sprintf("http://127.0.0.1:%d", clientPort)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	proc, err := startProcess("etcd", filepath.Join(logDir, "etcd.log"), nil, bin,
		"--data-dir="+dir,
		"--listen-client-urls="+clientURL, "--advertise-client-urls="+clientURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=default="+peerURL,
		// Test data need not survive a power cut; fsync on a shared 2-core machine is slow.
		"--unsafe-no-fsync",
		"--log-level=warn",
	)
	if err != nil {
		return nil, err
	}
	e := &etcd{url: clientURL, proc: proc}
	if err := waitHTTP(ctx, proc, http.DefaultClient, clientURL+"/health"); err != nil {
		_ = proc.kill()
		return nil, fmt.Errorf("etcd not ready: %w", err)
	}
	return e, nil
}

// waitHTTP polls url until it answers 200, the process exits, or ctx ends.
func waitHTTP(ctx context.Context, proc *process, client *http.Client, url string) error {
	var last error
	for {
		if proc.exited() {
			return proc.exitError()
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return fmt.Errorf("build request for %s: %w", url, err)
		}
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Errorf("GET %s: %s", url, resp.Status)
		} else {
			last = err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s (last: %v): %w", url, last, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}
