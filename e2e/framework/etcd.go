package framework

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

// startSharedEtcd starts the one etcd every API server of the run stores its cluster in, under
// its own prefix, with its data in dir.
func startSharedEtcd(ctx context.Context, bin, dir, logDir string) (*EtcdServer, error) {
	s, err := newEtcdServer("", bin, dir, logDir)
	if err != nil {
		return nil, err
	}
	if err := s.Start(ctx); err != nil {
		return nil, err
	}
	return s, nil
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
