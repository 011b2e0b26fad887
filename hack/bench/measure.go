package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/PID/stat: 100 on every Linux
// architecture Go supports.
const clockTicks = 100

// sample is one reading of the controller: its client-go request counters, reconcile counters
// (from /metrics) and its process counters (from /proc).
type sample struct {
	at time.Time
	// requests are convoy_rest_client_requests_total by verb and host; dryRuns the dry runs among them.
	requests map[verbHost]float64
	dryRuns  map[verbHost]float64
	// throttled is the time requests waited for the client-side rate limiter, by host, summed.
	throttled map[string]float64
	// reconciles is the count of release reconciles that wrote their outcome; byReason splits it
	// by the outcome's Applied reason.
	reconciles float64
	byReason   map[string]float64
	// applied are convoy_objects_applied_total by action (created, configured, unchanged).
	applied map[string]float64
	// queueDepth is the release workqueue's depth.
	queueDepth float64
	// cpu is utime+stime; hwm is VmHWM, the peak resident set since the start, in bytes.
	cpu time.Duration
	hwm int64
}

// verbHost labels a request counter.
type verbHost struct{ verb, host string }

// metricLine is one sample line of the Prometheus text format.
type metricLine struct {
	name   string
	labels map[string]string
	value  float64
}

// parseMetrics reads the Prometheus text exposition format: comments are skipped, and label
// values are unquoted (the few escapes it defines are undone).
func parseMetrics(r io.Reader) ([]metricLine, error) {
	var out []metricLine
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		m, err := parseMetricLine(line)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read metrics: %w", err)
	}
	return out, nil
}

// parseMetricLine parses `name{a="x",b="y"} value [timestamp]`.
func parseMetricLine(line string) (metricLine, error) {
	m := metricLine{labels: map[string]string{}}
	rest := line
	if i := strings.IndexAny(line, "{ "); i >= 0 && line[i] == '{' {
		m.name = line[:i]
		rest = line[i+1:]
		for {
			rest = strings.TrimLeft(rest, ", ")
			if strings.HasPrefix(rest, "}") {
				rest = rest[1:]
				break
			}
			eq := strings.Index(rest, `="`)
			if eq < 0 {
				return metricLine{}, fmt.Errorf("metrics line %q: bad label", line)
			}
			key := rest[:eq]
			rest = rest[eq+2:]
			var val strings.Builder
			closed := false
			for i := 0; i < len(rest); i++ {
				c := rest[i]
				if c == '\\' && i+1 < len(rest) {
					i++
					switch rest[i] {
					case 'n':
						val.WriteByte('\n')
					default:
						val.WriteByte(rest[i])
					}
					continue
				}
				if c == '"' {
					rest = rest[i+1:]
					closed = true
					break
				}
				val.WriteByte(c)
			}
			if !closed {
				return metricLine{}, fmt.Errorf("metrics line %q: unterminated label value", line)
			}
			m.labels[key] = val.String()
		}
	} else {
		name, after, ok := strings.Cut(line, " ")
		if !ok {
			return metricLine{}, fmt.Errorf("metrics line %q: no value", line)
		}
		m.name, rest = name, after
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return metricLine{}, fmt.Errorf("metrics line %q: no value", line)
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return metricLine{}, fmt.Errorf("metrics line %q: %w", line, err)
	}
	m.value = v
	return m, nil
}

// fromMetrics fills the /metrics part of a sample.
func (s *sample) fromMetrics(lines []metricLine) {
	s.requests, s.dryRuns, s.applied = map[verbHost]float64{}, map[verbHost]float64{}, map[string]float64{}
	s.byReason, s.throttled = map[string]float64{}, map[string]float64{}
	for _, l := range lines {
		switch l.name {
		case "convoy_rest_client_requests_total":
			s.requests[verbHost{l.labels["verb"], l.labels["host"]}] += l.value
		case "convoy_rest_client_dry_run_requests_total":
			s.dryRuns[verbHost{l.labels["verb"], l.labels["host"]}] += l.value
		case "convoy_rest_client_rate_limiter_wait_seconds_total":
			s.throttled[l.labels["host"]] += l.value
		case "convoy_reconcile_duration_seconds_count":
			if l.labels["controller"] == "release" {
				s.reconciles += l.value
				s.byReason[l.labels["reason"]] += l.value
			}
		case "convoy_objects_applied_total":
			s.applied[l.labels["action"]] += l.value
		case "workqueue_depth":
			if l.labels["name"] == "release" {
				s.queueDepth = l.value
			}
		}
	}
}

// procStat reads utime+stime of a process from /proc/PID/stat.
func procStat(procDir string, pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("%s/%d/stat", procDir, pid))
	if err != nil {
		return 0, fmt.Errorf("read stat of pid %d: %w", pid, err)
	}
	return parseStatCPU(string(data))
}

// parseStatCPU returns utime+stime from the content of /proc/PID/stat. The command name, in
// parentheses, may hold spaces: fields are counted after its closing parenthesis.
func parseStatCPU(stat string) (time.Duration, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("stat %q: no command name", stat)
	}
	// After ")": state is field 3, utime field 14 and stime field 15 of the whole line.
	fields := strings.Fields(stat[i+1:])
	if len(fields) < 13 {
		return 0, fmt.Errorf("stat %q: too few fields", stat)
	}
	var ticks int64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("stat %q: %w", stat, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// procHWM reads VmHWM, the peak resident set size, from /proc/PID/status, in bytes.
func procHWM(procDir string, pid int) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("%s/%d/status", procDir, pid))
	if err != nil {
		return 0, fmt.Errorf("read status of pid %d: %w", pid, err)
	}
	return parseStatusKB(string(data), "VmHWM")
}

// parseStatusKB returns the field of /proc/PID/status given in kB, in bytes.
func parseStatusKB(status, field string) (int64, error) {
	for line := range strings.Lines(status) {
		name, value, ok := strings.Cut(line, ":")
		if !ok || name != field {
			continue
		}
		f := strings.Fields(value)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("status field %s: %q", field, value)
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("status field %s: %w", field, err)
		}
		return kb * 1024, nil
	}
	return 0, fmt.Errorf("status has no %s", field)
}

// sampler reads samples of one controller process.
type sampler struct {
	metricsURL string
	pid        int
	client     *http.Client
}

// take reads one sample.
func (s *sampler) take(ctx context.Context) (sample, error) {
	out := sample{at: time.Now()}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.metricsURL, nil)
	if err != nil {
		return out, err
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return out, fmt.Errorf("scrape %s: %w", s.metricsURL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return out, fmt.Errorf("scrape %s: %s", s.metricsURL, resp.Status)
	}
	lines, err := parseMetrics(resp.Body)
	if err != nil {
		return out, err
	}
	out.fromMetrics(lines)
	if out.cpu, err = procStat("/proc", s.pid); err != nil {
		return out, err
	}
	if out.hwm, err = procHWM("/proc", s.pid); err != nil {
		return out, err
	}
	return out, nil
}

// usage is what one run cost, between two samples or measured around a baseline.
type usage struct {
	seconds float64
	// Requests by cluster kind: management cluster, targets; writes exclude dry runs.
	mgmtReads, mgmtWrites, targetReads, targetWrites, targetDryRuns float64
	// mgmtThrottled and targetThrottled are the seconds requests waited for the client-side
	// rate limiter, summed over requests (concurrent waits add up).
	mgmtThrottled, targetThrottled float64
	// peakRSS in bytes, cpu in seconds; negative when not measured.
	peakRSS int64
	cpu     float64
}

// isRead reports whether a request verb only reads: client-go reports gets, lists and watches
// all as GET.
func isRead(verb string) bool { return verb == http.MethodGet || verb == http.MethodHead }

// between returns what the controller did from a to b; mgmtHost is the management API server's
// host:port, every other host is a target.
func between(a, b sample, mgmtHost string) usage {
	u := usage{seconds: b.at.Sub(a.at).Seconds(), peakRSS: b.hwm, cpu: (b.cpu - a.cpu).Seconds()}
	for host, v := range b.throttled {
		if host == mgmtHost {
			u.mgmtThrottled += v - a.throttled[host]
		} else {
			u.targetThrottled += v - a.throttled[host]
		}
	}
	for k, v := range b.requests {
		d := v - a.requests[k]
		dry := b.dryRuns[k] - a.dryRuns[k]
		switch {
		case k.host == mgmtHost && isRead(k.verb):
			u.mgmtReads += d
		case k.host == mgmtHost:
			u.mgmtWrites += d - dry
		case isRead(k.verb):
			u.targetReads += d
		default:
			u.targetWrites += d - dry
			u.targetDryRuns += dry
		}
	}
	return u
}
