package framework

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestOptionsOwnEtcdTargets(t *testing.T) {
	tests := []struct {
		name    string
		opts    Options
		wantErr bool
	}{
		{"none", Options{}, false},
		{"one", Options{OwnEtcdTargets: []string{"solo"}}, false},
		{"besides bare targets", Options{BareTargets: []string{"a"}, OwnEtcdTargets: []string{"b"}}, false},
		{"not a DNS label", Options{OwnEtcdTargets: []string{"Solo_1"}}, true},
		{"a standard target", Options{OwnEtcdTargets: []string{TargetFault}}, true},
		{"mgmt", Options{OwnEtcdTargets: []string{"mgmt"}}, true},
		{"twice", Options{OwnEtcdTargets: []string{"solo", "solo"}}, true},
		{"also a bare target", Options{BareTargets: []string{"solo"}, OwnEtcdTargets: []string{"solo"}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.opts.ownEtcdTargets()
			if (err != nil) != tt.wantErr {
				t.Fatalf("ownEtcdTargets() error = %v, wantErr %v", err, tt.wantErr)
			}
		})
	}
}

// TestLatencyProxy: requests through the proxy take at least its latency, TLS passes through,
// and parallel requests on one HTTP/2 connection are delayed together, not one after another.
func TestLatencyProxy(t *testing.T) {
	const latency = 150 * time.Millisecond
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok "+r.Proto)
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	p, err := StartLatencyProxy(strings.TrimPrefix(srv.URL, "https://"), latency)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	client := srv.Client()
	get := func() (string, error) {
		resp, err := client.Get(p.URL + "/")
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return string(b), err
	}
	// The first request opens the connection (TLS handshake included).
	if body, err := get(); err != nil || body != "ok HTTP/2.0" {
		t.Fatalf("GET through the proxy = %q, %v; want ok over HTTP/2", body, err)
	}
	start := time.Now()
	if _, err := get(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < latency {
		t.Errorf("a request through the proxy took %s, want at least %s", d, latency)
	}
	const parallel = 8
	start = time.Now()
	var wg sync.WaitGroup
	errs := make([]error, parallel)
	for i := range parallel {
		wg.Go(func() { _, errs[i] = get() })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	// Serialised, 8 requests would take 8 latencies; allow a generous 4 on a busy machine.
	if d := time.Since(start); d < latency || d > 4*latency {
		t.Errorf("%d parallel requests took %s, want between %s and %s", parallel, d, latency, 4*latency)
	}
	if p.Chunks() == 0 || p.Connections() != 1 {
		t.Errorf("proxy saw %d chunks over %d connections, want some over 1", p.Chunks(), p.Connections())
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := get(); err == nil {
		t.Error("a request after Close succeeded")
	}
}
