package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
	"github.com/kumodo/convoy/generated/clientset/versioned"
	"github.com/kumodo/convoy/pkg/historyapi"
	"github.com/kumodo/convoy/pkg/renderstore"
)

// clients are the plugin's connections: the management cluster and the namespace in use.
type clients struct {
	convoy    versioned.Interface
	config    *rest.Config
	namespace string
}

// newClients loads the kubeconfig as kubectl does (--kubeconfig, $KUBECONFIG, ~/.kube/config).
func newClients(o options) (*clients, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = o.kubeconfig
	overrides := &clientcmd.ConfigOverrides{CurrentContext: o.context}
	if o.namespace != "" {
		overrides.Context.Namespace = o.namespace
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig: %w", err)
	}
	ns, _, err := cc.Namespace()
	if err != nil {
		return nil, fmt.Errorf("reading the namespace: %w", err)
	}
	cfg.UserAgent = "kubectl-convoy"
	convoy, err := versioned.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("building the convoy client: %w", err)
	}
	return &clients{convoy: convoy, config: cfg, namespace: ns}, nil
}

// release reads a Release.
func (c *clients) release(ctx context.Context, name string) (*v1alpha1.Release, error) {
	rel, err := c.convoy.CoreV1alpha1().Releases(c.namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading Release %s/%s: %w", c.namespace, name, err)
	}
	return rel, nil
}

// patch sends a JSON merge patch to a Release.
func (c *clients) patch(ctx context.Context, name string, body []byte) (*v1alpha1.Release, error) {
	rel, err := c.convoy.CoreV1alpha1().Releases(c.namespace).Patch(ctx, name, types.MergePatchType, body,
		metav1.PatchOptions{FieldManager: "kubectl-convoy"})
	if err != nil {
		return nil, fmt.Errorf("patching Release %s/%s: %w", c.namespace, name, err)
	}
	return rel, nil
}

// history reads a Release's history from --store, else from --history-url.
func (c *clients) history(ctx context.Context, o options, name string) ([]renderstore.Entry, string, error) {
	switch {
	case o.store != "":
		store, err := renderstore.Open(o.store)
		if err != nil {
			return nil, "", err
		}
		entries, err := store.History(ctx, types.NamespacedName{Namespace: c.namespace, Name: name})
		return entries, store.Location(), err
	case o.historyURL != "":
		client, err := c.historyClient(o)
		if err != nil {
			return nil, "", err
		}
		token := o.token
		if token == "" {
			token = c.config.BearerToken
			if token == "" && c.config.BearerTokenFile != "" {
				data, err := os.ReadFile(c.config.BearerTokenFile)
				if err != nil {
					return nil, "", fmt.Errorf("reading the kubeconfig's token file: %w", err)
				}
				token = string(data)
			}
		}
		resp, err := historyapi.Fetch(ctx, client, o.historyURL, token, c.namespace, name)
		if err != nil {
			return nil, "", err
		}
		return resp.Entries, resp.Store + " via " + o.historyURL, nil
	default:
		return nil, "", historyapi.ErrNoSource
	}
}

// historyClient is the HTTPS client of --history-url.
func (c *clients) historyClient(o options) (*http.Client, error) {
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: o.insecure} //nolint:gosec // explicit flag
	if o.caFile != "" {
		pem, err := os.ReadFile(o.caFile)
		if err != nil {
			return nil, fmt.Errorf("reading --ca-file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--ca-file %s holds no PEM certificate", o.caFile)
		}
		tlsConfig.RootCAs = pool
	}
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsConfig, Proxy: http.ProxyFromEnvironment}}, nil
}
