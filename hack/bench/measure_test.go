package main

import (
	"maps"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestParseMetrics(t *testing.T) {
	text := `# HELP convoy_rest_client_requests_total REST requests.
# TYPE convoy_rest_client_requests_total counter
convoy_rest_client_requests_total{code="200",host="127.0.0.1:6443",verb="GET"} 12
convoy_rest_client_requests_total{code="<error>",host="127.0.0.1:7000",verb="PATCH"} 3
convoy_rest_client_dry_run_requests_total{host="127.0.0.1:7000",verb="PATCH"} 2
convoy_reconcile_duration_seconds_count{controller="release",reason="Applied"} 5
convoy_reconcile_duration_seconds_count{controller="cluster",reason="Ready"} 7
convoy_reconcile_duration_seconds_count{controller="release",reason="Conflict"} 1
convoy_objects_applied_total{action="unchanged"} 4
workqueue_depth{name="release"} 2
workqueue_depth{name="cluster"} 9
workqueue_adds_total{name="release"} 3
convoy_rest_client_rate_limiter_wait_seconds_total{host="127.0.0.1:7000"} 0.5
escaped{a="x\"y,z\\w"} 1.5e+3
process_cpu_seconds_total 1.25
`
	lines, err := parseMetrics(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 13 {
		t.Fatalf("got %d lines, want 13", len(lines))
	}
	if got := lines[11]; got.name != "escaped" || got.labels["a"] != `x"y,z\w` || got.value != 1500 {
		t.Errorf("escaped line = %+v", got)
	}
	if got := lines[12]; got.name != "process_cpu_seconds_total" || len(got.labels) != 0 || got.value != 1.25 {
		t.Errorf("unlabelled line = %+v", got)
	}
	var s sample
	s.fromMetrics(lines)
	wantReq := map[verbHost]float64{{"GET", "127.0.0.1:6443"}: 12, {"PATCH", "127.0.0.1:7000"}: 3}
	if !maps.Equal(s.requests, wantReq) {
		t.Errorf("requests = %v, want %v", s.requests, wantReq)
	}
	if s.dryRuns[verbHost{"PATCH", "127.0.0.1:7000"}] != 2 || s.reconciles != 6 || s.byReason["Conflict"] != 1 ||
		s.applied["unchanged"] != 4 || s.queueDepth != 2 || s.throttled["127.0.0.1:7000"] != 0.5 {
		t.Errorf("sample = %+v", s)
	}
}

func TestParseMetricLineErrors(t *testing.T) {
	for _, line := range []string{`a{b="c} 1`, `a{b=c} 1`, `a`, `a{b="c"}`, `a x`} {
		if _, err := parseMetricLine(line); err == nil {
			t.Errorf("parseMetricLine(%q) succeeded", line)
		}
	}
}

func TestParseStatCPU(t *testing.T) {
	// A command name with spaces and parentheses; utime 250 and stime 50 ticks.
	stat := "4242 (convoy (x) y) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 50 0 0 20 0 12 0 100 2000000 3000 18446744073709551615"
	got, err := parseStatCPU(stat)
	if err != nil {
		t.Fatal(err)
	}
	if want := 3 * time.Second; got != want {
		t.Errorf("parseStatCPU = %v, want %v", got, want)
	}
	if _, err := parseStatCPU("4242 (x) S 1 2"); err == nil {
		t.Error("short stat parsed")
	}
}

func TestParseStatusKB(t *testing.T) {
	status := "Name:\tconvoy\nVmPeak:\t  900 kB\nVmHWM:\t  204800 kB\nVmRSS:\t  100 kB\n"
	got, err := parseStatusKB(status, "VmHWM")
	if err != nil {
		t.Fatal(err)
	}
	if got != 200<<20 {
		t.Errorf("VmHWM = %d, want %d", got, 200<<20)
	}
	if _, err := parseStatusKB(status, "VmSwap"); err == nil {
		t.Error("missing field found")
	}
}

func TestBetween(t *testing.T) {
	const mgmt, target = "127.0.0.1:1", "127.0.0.1:2"
	t0 := time.Now()
	a := sample{at: t0, cpu: time.Second, hwm: 10,
		requests:  map[verbHost]float64{{"GET", mgmt}: 5, {"PATCH", target}: 10},
		dryRuns:   map[verbHost]float64{{"PATCH", target}: 4},
		throttled: map[string]float64{mgmt: 1, target: 2}}
	b := sample{at: t0.Add(3 * time.Second), cpu: 4 * time.Second, hwm: 20,
		requests:  map[verbHost]float64{{"GET", mgmt}: 7, {"PATCH", mgmt}: 3, {"PATCH", target}: 25, {"GET", target}: 6, {"DELETE", target}: 1},
		dryRuns:   map[verbHost]float64{{"PATCH", target}: 9},
		throttled: map[string]float64{mgmt: 1.5, target: 6}}
	got := between(a, b, mgmt)
	want := usage{seconds: 3, mgmtReads: 2, mgmtWrites: 3, targetReads: 6, targetWrites: 11, targetDryRuns: 5,
		mgmtThrottled: 0.5, targetThrottled: 4, peakRSS: 20, cpu: 3}
	if got != want {
		t.Errorf("between = %+v, want %+v", got, want)
	}
}

func TestParseScenarios(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
		err  bool
	}{
		{in: "a", want: []string{"a"}},
		{in: "c", want: []string{"b", "c"}},
		{in: "a, d", want: []string{"a", "b", "d"}},
		{in: "e", err: true},
		{in: ",", err: true},
	} {
		got, err := parseScenarios(tc.in)
		if (err != nil) != tc.err {
			t.Errorf("parseScenarios(%q) error %v, want error %v", tc.in, err, tc.err)
			continue
		}
		if !tc.err && strings.Join(sortedKeys(got), ",") != strings.Join(tc.want, ",") {
			t.Errorf("parseScenarios(%q) = %v, want %v", tc.in, sortedKeys(got), tc.want)
		}
	}
}

func TestRequestCounter(t *testing.T) {
	var c requestCounter
	for _, u := range []string{"GET /api/v1/pods", "GET /api/v1/pods?watch=true", "PATCH /x?dryRun=All", "PATCH /x", "POST /y", "DELETE /z"} {
		method, path, _ := strings.Cut(u, " ")
		c.count(httptest.NewRequest(method, path, nil))
	}
	if c.reads.Load() != 2 || c.writes.Load() != 3 || c.dryRuns.Load() != 1 {
		t.Errorf("reads %d writes %d dry runs %d, want 2, 3, 1", c.reads.Load(), c.writes.Load(), c.dryRuns.Load())
	}
	if !isRead(http.MethodHead) || isRead(http.MethodPut) {
		t.Error("isRead")
	}
}

func TestTableWrite(t *testing.T) {
	tb := &table{title: "(x) test", ratioTo: 1, rows: []row{
		{run: "convoy", releases: 2, objects: 4, usage: usage{seconds: 3, mgmtReads: 1, peakRSS: 100 << 20, cpu: 1.5}},
		{run: "plain SSA loop", releases: 2, objects: 4, usage: usage{seconds: 2, targetWrites: 4, peakRSS: -1, cpu: -1}},
	}}
	tb.note("a note")
	var sb strings.Builder
	tb.write(&sb)
	out := sb.String()
	for _, want := range []string{
		"### (x) test",
		"| convoy | 2 | 4 | 3.0 | 1.50 | 1 | 0 | 0 | 0 | 0 | 100 | 1.5 |",
		"| plain SSA loop | 2 | 4 | 2.0 | 1.00 | 0 | 0 | 0 | 4 | 0 | – | – |",
		"- a note",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if got := perReconcile(3, 2); got != "1.5" {
		t.Errorf("perReconcile(3, 2) = %q", got)
	}
	if got := perReconcile(0, 4); got != "0" {
		t.Errorf("perReconcile(0, 4) = %q", got)
	}
}

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		name    string
		seconds []float64
		want    float64
	}{
		{"one", []float64{2}, 2},
		{"odd, unsorted", []float64{3, 1, 2}, 2},
		{"even takes the lower middle", []float64{4, 1, 3, 2}, 2},
		{"ties", []float64{1, 1, 5}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			us := make([]usage, len(tc.seconds))
			for i, s := range tc.seconds {
				us[i] = usage{seconds: s, targetWrites: s * 10}
			}
			got := median(us)
			if got.seconds != tc.want || got.targetWrites != tc.want*10 {
				t.Errorf("median = %+v, want the usage of %v s", got, tc.want)
			}
		})
	}
}

func TestLimiterFloor(t *testing.T) {
	for _, tc := range []struct {
		name  string
		u     usage
		qps   float64
		burst int
		want  float64
	}{
		{"within the burst", usage{targetWrites: 80, targetReads: 20}, 50, 100, 0},
		{"dry runs count", usage{targetReads: 4, targetWrites: 200, targetDryRuns: 200}, 50, 100, 6.08},
		{"plain loop", usage{targetReads: 2, targetWrites: 200}, 50, 100, 2.04},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := limiterFloor(tc.u, tc.qps, tc.burst); math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("limiterFloor = %v, want %v", got, tc.want)
			}
		})
	}
}
