package clusters

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

// probeTimeout bounds one Probe, whatever the caller's context allows.
const probeTimeout = 10 * time.Second

// Client is what convoy needs to talk to one target cluster.
type Client struct {
	// Config is the REST config the clients below were built from; do not mutate it.
	Config *rest.Config
	// Dynamic reads and writes objects of any kind.
	Dynamic dynamic.Interface
	// Discovery is memory-cached; Mapper.Reset invalidates it.
	Discovery discovery.CachedDiscoveryInterface
	// Mapper maps kinds to resources from Discovery. It does not refresh itself once filled:
	// reset it after a no-match when the kind may have just been created (a CRD applied).
	Mapper meta.ResettableRESTMapper

	mu           sync.Mutex
	impersonated map[string]*Client // by user name, sharing Discovery and Mapper
}

// NewClient builds a Client from a REST config. It does not contact the cluster.
func NewClient(cfg *rest.Config) (*Client, error) {
	cfg = rest.CopyConfig(cfg)
	if cfg.UserAgent == "" {
		// The binary's name (each replica runs it under its own link in the e2e) and version, so a
		// target's audit log tells convoy's requests apart.
		cfg.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("build HTTP client for %s: %w", cfg.Host, err)
	}
	dyn, err := dynamic.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("build dynamic client for %s: %w", cfg.Host, err)
	}
	disco, err := discovery.NewDiscoveryClientForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("build discovery client for %s: %w", cfg.Host, err)
	}
	cached := memory.NewMemCacheClient(disco)
	return &Client{
		Config:    cfg,
		Dynamic:   dyn,
		Discovery: cached,
		Mapper:    restmapper.NewDeferredDiscoveryRESTMapper(cached),
	}, nil
}

// ForServiceAccount returns a Client that impersonates the service account namespace/name of the
// target cluster (spec.serviceAccountName of a Release). It shares this Client's Discovery and
// Mapper, which describe the cluster and not the user, and is kept for later calls.
func (c *Client) ForServiceAccount(namespace, name string) (*Client, error) {
	user := "system:serviceaccount:" + namespace + ":" + name
	c.mu.Lock()
	defer c.mu.Unlock()
	if ic, ok := c.impersonated[user]; ok {
		return ic, nil
	}
	cfg := rest.CopyConfig(c.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("build dynamic client impersonating %s: %w", user, err)
	}
	ic := &Client{Config: cfg, Dynamic: dyn, Discovery: c.Discovery, Mapper: c.Mapper}
	if c.impersonated == nil {
		c.impersonated = map[string]*Client{}
	}
	c.impersonated[user] = ic
	return ic, nil
}

// Probe asks the target API server for its version (GET /version) and its readiness (GET /readyz,
// which covers its storage: an API server whose etcd is down still answers /version), both within
// probeTimeout, and returns its gitVersion, e.g. "v1.37.2". A /readyz the credentials may not
// read, or that the server does not have, does not fail the probe.
func (c *Client) Probe(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	body, err := c.Discovery.RESTClient().Get().AbsPath("/version").Do(ctx).Raw()
	if err != nil {
		return "", fmt.Errorf("probe %s: %w", c.Config.Host, err)
	}
	var info version.Info
	if err := json.Unmarshal(body, &info); err != nil {
		return "", fmt.Errorf("probe %s: decode /version: %w", c.Config.Host, err)
	}
	if info.GitVersion == "" {
		return "", fmt.Errorf("probe %s: /version has no gitVersion", c.Config.Host)
	}
	var code int
	body, err = c.Discovery.RESTClient().Get().AbsPath("/readyz").Do(ctx).StatusCode(&code).Raw()
	if err != nil && code != http.StatusForbidden && code != http.StatusUnauthorized && code != http.StatusNotFound {
		if failed := failedChecks(body); failed != "" {
			return "", fmt.Errorf("probe %s: not ready: %s", c.Config.Host, failed)
		}
		return "", fmt.Errorf("probe %s: readyz: %w", c.Config.Host, err)
	}
	return info.GitVersion, nil
}

// failedChecks returns the failed checks of a verbose-style /readyz body ("[-]etcd failed: reason
// withheld" lines), joined, or "" when it names none.
func failedChecks(body []byte) string {
	var failed []string
	for line := range strings.Lines(string(body)) {
		if name, ok := strings.CutPrefix(strings.TrimSpace(line), "[-]"); ok {
			failed = append(failed, name)
		}
	}
	return strings.Join(failed, "; ")
}

// Scope reports whether a kind is namespaced; known is false when the cluster does not serve the
// kind (or discovery failed). It uses the cached mapping and never resets it, so an unknown kind
// costs no extra discovery round trip.
func (c *Client) Scope(gvk schema.GroupVersionKind) (namespaced bool, known bool) {
	m, err := c.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return false, false
	}
	return m.Scope.Name() == meta.RESTScopeNameNamespace, true
}
