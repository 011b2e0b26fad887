package clusters

import (
	"errors"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
)

// DefaultSecretKey is the data key of the kubeconfig Secret when kubeConfigSecretRef.key is empty.
const DefaultSecretKey = "value"

// Options for building clients.
type Options struct {
	// QPS and Burst of each target client; zero keeps client-go's defaults.
	QPS   float32
	Burst int
	// Timeout of each request; zero means none.
	Timeout time.Duration
	// InCluster is convoy's own config, used for Clusters with spec.inCluster; nil refuses them.
	InCluster *rest.Config
}

// apply sets the options' limits on a copy of cfg.
func (o Options) apply(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	if o.QPS > 0 {
		cfg.QPS = o.QPS
	}
	if o.Burst > 0 {
		cfg.Burst = o.Burst
	}
	if o.Timeout > 0 {
		cfg.Timeout = o.Timeout
	}
	return cfg
}

// Cache keeps one Client per Cluster (namespace/name), rebuilt when the kubeconfig Secret's
// resourceVersion or the Cluster's spec (inCluster / secret ref) changes. Safe for concurrent use.
type Cache struct {
	secrets corev1listers.SecretLister
	opts    Options

	mu      sync.Mutex
	entries map[string]cacheEntry // by namespace/name of the Cluster
}

// cacheEntry is a built Client and the fingerprint of what it was built from.
type cacheEntry struct {
	fingerprint string
	client      *Client
}

// NewCache returns an empty Cache that reads kubeconfig Secrets from the lister.
func NewCache(secrets corev1listers.SecretLister, opts Options) *Cache {
	return &Cache{secrets: secrets, opts: opts, entries: map[string]cacheEntry{}}
}

// Get returns the Client for a Cluster, building it when the Cluster has none yet or its source
// changed. The Secret is read from the Cluster's own namespace only, and parsed only when its
// resourceVersion changed. A failure drops the cached Client, so stale credentials are never used
// after the Secret or the spec became invalid.
func (c *Cache) Get(cl *v1alpha1.Cluster) (*Client, error) {
	key := cl.Namespace + "/" + cl.Name
	c.mu.Lock()
	defer c.mu.Unlock()

	src, err := c.source(cl)
	if err != nil {
		delete(c.entries, key)
		return nil, fmt.Errorf("cluster %s: %w", key, err)
	}
	if e, ok := c.entries[key]; ok && e.fingerprint == src.fingerprint {
		return e.client, nil
	}
	cfg, err := src.config()
	if err == nil {
		var client *Client
		client, err = NewClient(c.opts.apply(cfg))
		if err == nil {
			c.entries[key] = cacheEntry{fingerprint: src.fingerprint, client: client}
			return client, nil
		}
	}
	delete(c.entries, key)
	return nil, fmt.Errorf("cluster %s: %w", key, err)
}

// clusterSource is where a Cluster's REST config comes from.
type clusterSource struct {
	// fingerprint changes whenever the config may have changed. Only the Secret's identity and
	// version go into it, never its data.
	fingerprint string
	// config builds the REST config (parses the kubeconfig).
	config func() (*rest.Config, error)
}

// source resolves where the REST config of a Cluster comes from, without parsing it.
func (c *Cache) source(cl *v1alpha1.Cluster) (clusterSource, error) {
	ref := cl.Spec.KubeConfigSecretRef
	switch {
	case cl.Spec.InCluster && ref != nil:
		return clusterSource{}, errors.New("spec sets both inCluster and kubeConfigSecretRef")
	case cl.Spec.InCluster:
		if c.opts.InCluster == nil {
			return clusterSource{}, errors.New("inCluster targets are not enabled in this controller")
		}
		inCluster := c.opts.InCluster
		return clusterSource{
			fingerprint: "inCluster",
			config:      func() (*rest.Config, error) { return inCluster, nil },
		}, nil
	case ref == nil:
		return clusterSource{}, errors.New("spec sets neither inCluster nor kubeConfigSecretRef")
	}
	dataKey := ref.Key
	if dataKey == "" {
		dataKey = DefaultSecretKey
	}
	secret, err := c.secrets.Secrets(cl.Namespace).Get(ref.Name)
	if apierrors.IsNotFound(err) {
		return clusterSource{}, fmt.Errorf("secret %s/%s not found", cl.Namespace, ref.Name)
	}
	if err != nil {
		return clusterSource{}, fmt.Errorf("read secret %s/%s: %w", cl.Namespace, ref.Name, err)
	}
	data, ok := secret.Data[dataKey]
	if !ok || len(data) == 0 {
		return clusterSource{}, fmt.Errorf("key %s missing in secret %s/%s", dataKey, cl.Namespace, ref.Name)
	}
	return clusterSource{
		fingerprint: fmt.Sprintf("secret:%s:%s:%s:%s", ref.Name, dataKey, secret.UID, secret.ResourceVersion),
		config: func() (*rest.Config, error) {
			cfg, err := ConfigFromKubeconfig(data)
			if err != nil {
				return nil, fmt.Errorf("secret %s/%s key %s: %w", cl.Namespace, ref.Name, dataKey, err)
			}
			return cfg, nil
		},
	}, nil
}

// Forget drops the cached Client of a Cluster.
func (c *Cache) Forget(namespace, name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.entries, namespace+"/"+name)
}

// Ready reports whether the Cluster's Ready condition is True.
func Ready(cl *v1alpha1.Cluster) bool {
	return meta.IsStatusConditionTrue(cl.Status.Conditions, v1alpha1.ConditionReady)
}
