package desired

import (
	"fmt"
	"path"
	"slices"
	"sync"
	"time"

	"k8s.io/client-go/discovery"

	"github.com/kumodo/convoy/pkg/clusters"
)

// capabilitiesTTL is how long a cluster's version and API versions are reused for Helm renders.
const capabilitiesTTL = 5 * time.Minute

// capabilitiesCache keeps each target client's Helm capabilities, so a render does not call
// discovery.
type capabilitiesCache struct {
	mu      sync.Mutex
	entries map[*clusters.Client]capabilities
}

type capabilities struct {
	kubeVersion string
	apiVersions []string
	at          time.Time
}

// get returns the kube version and the served group/versions (and group/version/Kind entries) of
// the client's cluster.
func (c *capabilitiesCache) get(client *clusters.Client) (string, []string, error) {
	c.mu.Lock()
	e, ok := c.entries[client]
	c.mu.Unlock()
	if ok && time.Since(e.at) < capabilitiesTTL {
		return e.kubeVersion, e.apiVersions, nil
	}
	info, err := client.Discovery.ServerVersion()
	if err != nil {
		return "", nil, fmt.Errorf("reading the server version: %w", err)
	}
	groups, resources, err := client.Discovery.ServerGroupsAndResources()
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return "", nil, fmt.Errorf("reading the served APIs: %w", err)
	}
	set := map[string]struct{}{}
	for _, g := range groups {
		for _, gv := range g.Versions {
			set[gv.GroupVersion] = struct{}{}
		}
	}
	for _, r := range resources {
		for _, res := range r.APIResources {
			set[path.Join(r.GroupVersion, res.Kind)] = struct{}{}
		}
	}
	versions := make([]string, 0, len(set))
	for v := range set {
		versions = append(versions, v)
	}
	slices.Sort(versions)
	e = capabilities{kubeVersion: info.GitVersion, apiVersions: versions, at: time.Now()}
	c.mu.Lock()
	if c.entries == nil {
		c.entries = map[*clusters.Client]capabilities{}
	}
	// Clients are rebuilt when a Cluster's credentials change; forget the old ones' entries.
	for k, old := range c.entries {
		if time.Since(old.at) >= capabilitiesTTL {
			delete(c.entries, k)
		}
	}
	c.entries[client] = e
	c.mu.Unlock()
	return e.kubeVersion, e.apiVersions, nil
}
