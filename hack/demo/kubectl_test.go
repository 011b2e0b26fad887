package main

import "testing"

func TestShellQuote(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"plain word", "get", "get"},
		{"flag with value", "--for=condition=Applied", "--for=condition=Applied"},
		{"path", "/tmp/convoy-demo-1/mgmt.kubeconfig", "/tmp/convoy-demo-1/mgmt.kubeconfig"},
		{"resource list", "deploy,svc,cm", "deploy,svc,cm"},
		{"empty", "", "''"},
		{"space", "a b", "'a b'"},
		{"jsonpath", `{.spec.entries[*].name}`, `'{.spec.entries[*].name}'`},
		{"single quote", "it's", `'it'\''s'`},
		{"dollar", "$HOME", "'$HOME'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := shellQuote(tt.in); got != tt.want {
				t.Errorf("shellQuote(%q) = %s, want %s", tt.in, got, tt.want)
			}
		})
	}
}

func TestShellJoin(t *testing.T) {
	tests := []struct {
		name string
		in   []string
		want string
	}{
		{"none", nil, ""},
		{"command", []string{"bin/kubectl", "get", "releases", "-n", "demo"}, "bin/kubectl get releases -n demo"},
		{"quoted word", []string{"echo", "a b", "c"}, "echo 'a b' c"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := shellJoin(tt.in); got != tt.want {
				t.Errorf("shellJoin(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}
