package clusters

import (
	"errors"
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// ConfigFromKubeconfig parses a kubeconfig and returns the REST config of its current context (or of
// its only context when current-context is empty).
//
// The kubeconfig comes from a Secret that tenants write, while convoy runs with its own privileges,
// so anything that would make convoy run a program or read its own files is refused: exec and
// auth-provider plugins, tokenFile, client-certificate/client-key and certificate-authority paths.
// Inline data (token, *-data fields, username/password) is fine, and so is a cluster proxy-url.
// Errors never include credentials.
func ConfigFromKubeconfig(data []byte) (*rest.Config, error) {
	if len(data) == 0 {
		return nil, errors.New("kubeconfig is empty")
	}
	raw, err := clientcmd.Load(data)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig cannot be parsed: %w", err)
	}
	contextName, err := pickContext(raw)
	if err != nil {
		return nil, err
	}
	if err := validateContext(raw, contextName); err != nil {
		return nil, err
	}
	// DirectClientConfig reads only the given kubeconfig: no environment, no in-cluster fallback.
	cc := clientcmd.NewDefaultClientConfig(*raw, &clientcmd.ConfigOverrides{CurrentContext: contextName})
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig context %q: %w", contextName, err)
	}
	return cfg, nil
}

// pickContext returns current-context, or the only context when current-context is not set.
func pickContext(raw *clientcmdapi.Config) (string, error) {
	if raw.CurrentContext != "" {
		if _, ok := raw.Contexts[raw.CurrentContext]; !ok {
			return "", fmt.Errorf("kubeconfig current-context %q is not defined", raw.CurrentContext)
		}
		return raw.CurrentContext, nil
	}
	if len(raw.Contexts) == 1 {
		for name := range raw.Contexts {
			return name, nil
		}
	}
	return "", fmt.Errorf("kubeconfig has no current-context and %d contexts", len(raw.Contexts))
}

// validateContext refuses the settings of the context's cluster and user that would execute a
// program or read a local file.
func validateContext(raw *clientcmdapi.Config, contextName string) error {
	kctx := raw.Contexts[contextName]
	cluster, ok := raw.Clusters[kctx.Cluster]
	if !ok {
		return fmt.Errorf("kubeconfig context %q names cluster %q, which is not defined", contextName, kctx.Cluster)
	}
	if cluster.Server == "" {
		return fmt.Errorf("kubeconfig cluster %q has no server", kctx.Cluster)
	}
	if cluster.CertificateAuthority != "" {
		return fmt.Errorf("kubeconfig cluster %q: certificate-authority file paths are not allowed, use certificate-authority-data", kctx.Cluster)
	}
	if kctx.AuthInfo == "" {
		return nil // anonymous
	}
	user, ok := raw.AuthInfos[kctx.AuthInfo]
	if !ok {
		return fmt.Errorf("kubeconfig context %q names user %q, which is not defined", contextName, kctx.AuthInfo)
	}
	switch {
	case user.Exec != nil:
		return fmt.Errorf("kubeconfig user %q: exec plugins are not allowed", kctx.AuthInfo)
	case user.AuthProvider != nil:
		return fmt.Errorf("kubeconfig user %q: auth-provider plugins are not allowed", kctx.AuthInfo)
	case user.TokenFile != "":
		return fmt.Errorf("kubeconfig user %q: tokenFile paths are not allowed, use token", kctx.AuthInfo)
	case user.ClientCertificate != "":
		return fmt.Errorf("kubeconfig user %q: client-certificate file paths are not allowed, use client-certificate-data", kctx.AuthInfo)
	case user.ClientKey != "":
		return fmt.Errorf("kubeconfig user %q: client-key file paths are not allowed, use client-key-data", kctx.AuthInfo)
	}
	return nil
}
