package sharding

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	convoyv1alpha1 "github.com/kumodo/convoy/apis/core/v1alpha1"
	"github.com/kumodo/convoy/e2e/framework"
	"github.com/kumodo/convoy/pkg/sharding"
)

// ctx is the context of the tests' API calls.
var ctx = context.Background()

// objectsPerRelease is how many ConfigMaps each Release renders.
const objectsPerRelease = 3

// renderOf is the source of shard i's Release at version v: objectsPerRelease ConfigMaps.
func renderOf(i int, v string) map[string]string {
	var docs []string
	for k := range objectsPerRelease {
		out, err := yaml.Marshal(map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": fmt.Sprintf("cm-%d", k)},
			"data":     map[string]any{"shard": strconv.Itoa(i), "version": v},
		})
		if err != nil {
			panic(err) // the test's own literal
		}
		docs = append(docs, string(out))
	}
	return map[string]string{"objects.yaml": strings.Join(docs, "---\n")}
}

// setSource creates or replaces the source ConfigMap of shard i's Release.
func setSource(t *testing.T, ns string, i int, v string) {
	t.Helper()
	cms := env.Mgmt.Kube.CoreV1().ConfigMaps(ns)
	name := fmt.Sprintf("src-%d", i)
	cm, err := cms.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Data: renderOf(i, v)}
		if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create source %s: %v", name, err)
		}
		return
	}
	cm.Data = renderOf(i, v)
	if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update source %s: %v", name, err)
	}
}

// createRelease creates shard i's Release, reconciled every interval so that its owner keeps
// working on the target the whole test.
func createRelease(t *testing.T, ns string, i int, interval time.Duration) {
	t.Helper()
	env.CreateConfigMapRelease(t, ns, fmt.Sprintf("rel-%d", i), targetName(i), fmt.Sprintf("src-%d", i), framework.WithInterval(interval))
}

// converged reports whether shard i's objects on its target are at version v and its Release
// is Applied for its generation.
func converged(ns string, i int, v string) (bool, string) {
	target := env.BareTargets[targetName(i)]
	for k := range objectsPerRelease {
		name := fmt.Sprintf("cm-%d", k)
		cm, err := target.Kube.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, fmt.Sprintf("%s: ConfigMap %s: %v", target.Name, name, err)
		}
		if cm.Data["version"] != v {
			return false, fmt.Sprintf("%s: ConfigMap %s at version %q, want %q", target.Name, name, cm.Data["version"], v)
		}
	}
	r, err := env.Convoy().CoreV1alpha1().Releases(ns).Get(ctx, fmt.Sprintf("rel-%d", i), metav1.GetOptions{})
	if err != nil {
		return false, err.Error()
	}
	c := meta.FindStatusCondition(r.Status.Conditions, convoyv1alpha1.ConditionApplied)
	if c == nil || c.Reason != convoyv1alpha1.ReasonApplied || c.ObservedGeneration != r.Generation {
		return false, fmt.Sprintf("Release %s not Applied: %+v", r.Name, c)
	}
	return true, ""
}

// pinShards sets spec.shard of each Cluster shard-i to i and waits until the owner of the shard
// reported it in status.
func pinShards(t *testing.T, ns string) {
	t.Helper()
	clusters := env.Convoy().CoreV1alpha1().Clusters(ns)
	for i := range shardCount {
		cl, err := clusters.Get(ctx, targetName(i), metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get Cluster %s: %v", targetName(i), err)
		}
		shard := int32(i)
		cl.Spec.Shard = &shard
		if _, err := clusters.Update(ctx, cl, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("pin Cluster %s to shard %d: %v", cl.Name, i, err)
		}
	}
	framework.Eventually(t, 60*time.Second, func() (bool, string) {
		for i := range shardCount {
			cl, err := clusters.Get(ctx, targetName(i), metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			if cl.Status.Shard == nil || *cl.Status.Shard != int32(i) || !meta.IsStatusConditionTrue(cl.Status.Conditions, convoyv1alpha1.ConditionReady) {
				return false, fmt.Sprintf("Cluster %s: status shard %v, conditions %+v", cl.Name, cl.Status.Shard, cl.Status.Conditions)
			}
		}
		return true, ""
	})
}

// holders reads the shard Leases: the holder identity of each shard ("" when free).
func holders() (map[int]string, error) {
	list, err := env.Mgmt.Kube.CoordinationV1().Leases(leaseNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list Leases: %w", err)
	}
	out := map[int]string{}
	for _, l := range list.Items {
		n, err := strconv.Atoi(strings.TrimPrefix(l.Name, sharding.ShardLeasePrefix))
		if !strings.HasPrefix(l.Name, sharding.ShardLeasePrefix) || err != nil {
			continue
		}
		h := ""
		if l.Spec.HolderIdentity != nil {
			h = *l.Spec.HolderIdentity
		}
		out[n] = h
	}
	return out, nil
}

var shardOwnedRE = regexp.MustCompile(`^convoy_shard_owned\{shard="(\d+)"\} (\S+)$`)

// ownedByMetrics reads convoy_shard_owned from a controller's /metrics: the shards it owns.
func ownedByMetrics(c *framework.Controller) ([]int, error) {
	client := &http.Client{Timeout: 2 * time.Second}
	resp, err := client.Get(c.HealthURL() + "/metrics")
	if err != nil {
		return nil, fmt.Errorf("GET /metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		return nil, fmt.Errorf("GET /metrics: %s: %s", resp.Status, body)
	}
	var owned []int
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		m := shardOwnedRE.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		if v, _ := strconv.ParseFloat(m[2], 64); v == 1 {
			n, _ := strconv.Atoi(m[1])
			owned = append(owned, n)
		}
	}
	slices.Sort(owned)
	return owned, sc.Err()
}

// balanced reports whether the running replicas (indexes into replicas) hold every shard Lease,
// want each, and whether each one's convoy_shard_owned agrees with the Leases.
func balanced(running []int, want int) (bool, string) {
	hs, err := holders()
	if err != nil {
		return false, err.Error()
	}
	for _, idx := range running {
		r := replicas[idx]
		var leased []int
		for shard, h := range hs {
			if h == r.id {
				leased = append(leased, shard)
			}
		}
		slices.Sort(leased)
		if len(leased) != want {
			return false, fmt.Sprintf("replica %s holds the Leases of shards %v, want %d shards; holders %v", r.id, leased, want, hs)
		}
		owned, err := ownedByMetrics(env.Controllers[idx])
		if err != nil {
			return false, fmt.Sprintf("replica %s: %v", r.id, err)
		}
		if !slices.Equal(owned, leased) {
			return false, fmt.Sprintf("replica %s: convoy_shard_owned says %v, Leases say %v", r.id, owned, leased)
		}
	}
	return true, ""
}

// leasePoller records, every 100 ms, the holder of each shard Lease whenever it changes.
type leasePoller struct {
	mu      sync.Mutex
	history map[int][]string
	stop    chan struct{}
	done    chan struct{}
}

// startLeasePoller starts polling; the first reading is taken before it returns.
func startLeasePoller(t *testing.T) *leasePoller {
	t.Helper()
	p := &leasePoller{history: map[int][]string{}, stop: make(chan struct{}), done: make(chan struct{})}
	if err := p.poll(); err != nil {
		t.Fatalf("read shard Leases: %v", err)
	}
	go func() {
		defer close(p.done)
		for {
			select {
			case <-p.stop:
				return
			case <-time.After(100 * time.Millisecond):
				_ = p.poll() // a failed read loses no change: the next one sees the holder
			}
		}
	}()
	return p
}

func (p *leasePoller) poll() error {
	hs, err := holders()
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for shard, h := range hs {
		seq := p.history[shard]
		if h != "" && (len(seq) == 0 || seq[len(seq)-1] != h) {
			p.history[shard] = append(seq, h)
		}
	}
	return nil
}

// finish stops polling and returns, per shard, the sequence of holders seen.
func (p *leasePoller) finish() map[int][]string {
	close(p.stop)
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.history)
}

// managementUserAgent matches the user agent of a replica's management client,
// "convoy-controller-manager (replica <identity>)".
var managementUserAgent = regexp.MustCompile(`\(replica ([^)]+)\)`)

// replicaOf returns the identity of the replica that sent a request, from its user agent: the
// management client names it, and a client sending client-go's default user agent starts with the
// process name ("convoy-replica-a/v0..."). "" when the request is not from a replica, or cannot be
// told apart.
func replicaOf(userAgent string) string {
	if m := managementUserAgent.FindStringSubmatch(userAgent); m != nil {
		return m[1]
	}
	process, _, _ := strings.Cut(userAgent, "/")
	for _, r := range replicas {
		if process == r.process {
			return r.id
		}
	}
	return ""
}

// waitFor polls cond every 100 ms until it holds and returns when it first did; it fails the
// test after timeout.
func waitFor(t *testing.T, timeout time.Duration, cond func() (bool, string)) time.Time {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, msg := cond()
		if ok {
			return time.Now()
		}
		if time.Now().After(deadline) {
			t.Fatalf("not true after %s: %s", timeout, msg)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
