package sharding

import (
	"fmt"
	"slices"
	"strings"
	"time"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/kumodo/convoy/e2e/framework"
)

// request is one request of a replica to a target, from the target's audit log.
type request struct {
	replica       string
	received, end time.Time
	verb, uri     string
	// object is the namespace/name of a ConfigMap written (not dry-run); "" otherwise.
	object string
}

// run is a maximal sequence of consecutive requests of one replica to a target.
type run struct {
	replica string
	// first is the first request to arrive; end is when the last one to finish finished.
	first    request
	end      time.Time
	requests int
}

// replicaRequests reads the requests the replicas sent to server since since that keep returns
// true for, by arrival.
func replicaRequests(server *framework.APIServer, since time.Time, keep func(auditv1.Event) bool) ([]request, error) {
	events, err := server.AuditEvents()
	if err != nil {
		return nil, err
	}
	// One request may be logged at several stages; its first event has the arrival time.
	byID := map[string]*request{}
	var order []string
	for _, ev := range events {
		id := replicaOf(ev.UserAgent)
		if id == "" || ev.RequestReceivedTimestamp.Time.Before(since) || !keep(ev) {
			continue
		}
		if r, ok := byID[string(ev.AuditID)]; ok {
			r.end = later(r.end, ev.StageTimestamp.Time)
			continue
		}
		r := &request{replica: id, received: ev.RequestReceivedTimestamp.Time, end: ev.StageTimestamp.Time, verb: ev.Verb, uri: ev.RequestURI}
		if isWrite(ev) {
			r.object = ev.ObjectRef.Namespace + "/" + ev.ObjectRef.Name
		}
		byID[string(ev.AuditID)] = r
		order = append(order, string(ev.AuditID))
	}
	out := make([]request, 0, len(order))
	for _, id := range order {
		out = append(out, *byID[id])
	}
	slices.SortStableFunc(out, func(a, b request) int { return a.received.Compare(b.received) })
	return out, nil
}

// anyRequest keeps every request.
func anyRequest(auditv1.Event) bool { return true }

// aboutShard keeps the management requests about shard i's objects in namespace ns: its
// Release (status included), the ReleaseInventory and the Cluster.
func aboutShard(ns string, i int) func(auditv1.Event) bool {
	return func(ev auditv1.Event) bool {
		o := ev.ObjectRef
		if o == nil || o.Namespace != ns {
			return false
		}
		switch o.Resource {
		case "releases", "releaseinventories":
			return o.Name == fmt.Sprintf("rel-%d", i)
		case "clusters":
			return o.Name == targetName(i)
		}
		return false
	}
}

// writesPerObject counts the real (not dry-run) ConfigMap writes in a target's audit log since
// since, by namespace/name, whoever sent them.
func writesPerObject(target *framework.APIServer, since time.Time) (map[string]int, error) {
	events, err := target.AuditEvents()
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	out := map[string]int{}
	for _, ev := range events {
		if seen[string(ev.AuditID)] || ev.RequestReceivedTimestamp.Time.Before(since) || !isWrite(ev) {
			continue
		}
		seen[string(ev.AuditID)] = true
		out[ev.ObjectRef.Namespace+"/"+ev.ObjectRef.Name]++
	}
	return out, nil
}

// isWrite reports whether an event is a real (not dry-run) write of a ConfigMap.
func isWrite(ev auditv1.Event) bool {
	switch ev.Verb {
	case "create", "update", "patch", "delete":
	default:
		return false
	}
	return ev.ObjectRef != nil && ev.ObjectRef.Resource == "configmaps" && !strings.Contains(ev.RequestURI, "dryRun")
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// runsOf groups requests, in arrival order, into runs of one replica.
func runsOf(reqs []request) []run {
	var out []run
	for _, r := range reqs {
		if n := len(out); n > 0 && out[n-1].replica == r.replica {
			out[n-1].end = later(out[n-1].end, r.end)
			out[n-1].requests++
			continue
		}
		out = append(out, run{replica: r.replica, first: r, end: r.end, requests: 1})
	}
	return out
}

// checkExclusive checks one target's requests against the holders its shard Lease had, in order:
// the replicas' runs of requests must follow the holders (a replica works on the target only while
// it holds the shard, and never again before the shard came back to it), and a run must have
// ended before the next began. It returns the problems found, none when the target was worked on
// by one replica at a time.
func checkExclusive(holders []string, runs []run) []string {
	var problems []string
	j := 0
	for k, r := range runs {
		for j < len(holders) && holders[j] != r.replica {
			j++
		}
		if j == len(holders) {
			problems = append(problems, fmt.Sprintf("run %d (%s, %d requests from %s) does not follow the Lease holders %v: "+
				"a replica worked on the cluster while it did not hold its shard", k, r.replica, r.requests,
				r.first.received.Format(time.StampMicro), holders))
			break
		}
		if k > 0 && runs[k-1].end.After(r.first.received) {
			prev := runs[k-1]
			problems = append(problems, fmt.Sprintf("%s's requests were still running (until %s) when %s's %s %s arrived (%s)",
				prev.replica, prev.end.Format(time.StampMicro), r.replica, r.first.verb, r.first.uri, r.first.received.Format(time.StampMicro)))
		}
	}
	return problems
}

// describeRuns summarises runs and the writes per replica, for the log.
func describeRuns(runs []run, reqs []request) string {
	var parts []string
	for _, r := range runs {
		parts = append(parts, fmt.Sprintf("%s×%d [%s–%s]", r.replica, r.requests,
			r.first.received.Format("15:04:05.000"), r.end.Format("15:04:05.000")))
	}
	writes := map[string]map[string]int{}
	for _, r := range reqs {
		if r.object == "" {
			continue
		}
		if writes[r.replica] == nil {
			writes[r.replica] = map[string]int{}
		}
		writes[r.replica][r.object]++
	}
	if len(writes) == 0 {
		return "runs " + strings.Join(parts, " ")
	}
	return fmt.Sprintf("runs %s; ConfigMap writes by replica %v", strings.Join(parts, " "), writes)
}
