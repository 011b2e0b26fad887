package clusters

import (
	"strings"
	"testing"
)

// kubeconfig builds a one-context kubeconfig with the given cluster and user fields (YAML lines,
// indented by the caller's template).
func kubeconfig(clusterFields, userFields string) []byte {
	return []byte(`apiVersion: v1
kind: Config
current-context: target
contexts:
- name: target
  context: {cluster: c, user: u}
clusters:
- name: c
  cluster:
    server: https://127.0.0.1:6443
` + clusterFields + `
users:
- name: u
  user:
` + userFields + `
`)
}

func TestConfigFromKubeconfig(t *testing.T) {
	tests := []struct {
		name      string
		data      []byte
		wantErr   string // substring; empty: success
		wantToken string
	}{
		{name: "token", data: kubeconfig("", "    token: s3cr3t"), wantToken: "s3cr3t"},
		{name: "client cert data", data: kubeconfig("    certificate-authority-data: Y2E=",
			"    client-certificate-data: Y2VydA==\n    client-key-data: a2V5")},
		{name: "proxy url", data: kubeconfig("    proxy-url: http://127.0.0.1:3128", "    token: t"), wantToken: "t"},
		{name: "exec refused", data: kubeconfig("", "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: /bin/sh"),
			wantErr: "exec plugins are not allowed"},
		{name: "auth provider refused", data: kubeconfig("", "    auth-provider:\n      name: oidc"),
			wantErr: "auth-provider plugins are not allowed"},
		{name: "token file refused", data: kubeconfig("", "    tokenFile: /var/run/secrets/token"),
			wantErr: "tokenFile paths are not allowed"},
		{name: "client cert file refused", data: kubeconfig("", "    client-certificate: /etc/cert.pem\n    client-key-data: a2V5"),
			wantErr: "client-certificate file paths are not allowed"},
		{name: "client key file refused", data: kubeconfig("", "    client-certificate-data: Y2VydA==\n    client-key: /etc/key.pem"),
			wantErr: "client-key file paths are not allowed"},
		{name: "ca file refused", data: kubeconfig("    certificate-authority: /etc/ca.pem", "    token: t"),
			wantErr: "certificate-authority file paths are not allowed"},
		{name: "empty", data: nil, wantErr: "kubeconfig is empty"},
		{name: "garbage", data: []byte("{not yaml"), wantErr: "cannot be parsed"},
		{name: "undefined current context", data: []byte("apiVersion: v1\nkind: Config\ncurrent-context: x\n"),
			wantErr: `current-context "x" is not defined`},
		{name: "no server", data: []byte(`apiVersion: v1
kind: Config
contexts: [{name: a, context: {cluster: c, user: u}}]
clusters: [{name: c, cluster: {}}]
users: [{name: u, user: {token: t}}]
`), wantErr: "has no server"},
		{name: "only context without current-context", data: []byte(`apiVersion: v1
kind: Config
contexts: [{name: a, context: {cluster: c, user: u}}]
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: only}}]
`), wantToken: "only"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := ConfigFromKubeconfig(tt.data)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if cfg.Host == "" {
				t.Errorf("Host is empty")
			}
			if cfg.BearerToken != tt.wantToken {
				t.Errorf("BearerToken = %q, want %q", cfg.BearerToken, tt.wantToken)
			}
			if cfg.ExecProvider != nil || cfg.AuthProvider != nil || cfg.BearerTokenFile != "" ||
				cfg.CertFile != "" || cfg.KeyFile != "" || cfg.CAFile != "" {
				t.Errorf("config refers to a plugin or file: %+v", cfg)
			}
		})
	}
}

func TestConfigFromKubeconfigErrorsHideSecrets(t *testing.T) {
	_, err := ConfigFromKubeconfig(kubeconfig("", "    token: topsecret\n    exec: {command: x}"))
	if err == nil || strings.Contains(err.Error(), "topsecret") {
		t.Fatalf("error = %v, want a refusal that does not echo the token", err)
	}
}
