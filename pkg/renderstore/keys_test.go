package renderstore

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

const refA = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

func TestRenderKey(t *testing.T) {
	tests := []struct {
		name    string
		rel     types.NamespacedName
		ref     string
		want    string
		wantErr string
	}{
		{"valid", types.NamespacedName{Namespace: "team-a", Name: "shop"}, refA,
			"team-a/shop/renders/" + strings.Repeat("a", 64) + ".json.gz", ""},
		{"dotted name", types.NamespacedName{Namespace: "team-a", Name: "shop.v2"}, refA,
			"team-a/shop.v2/renders/" + strings.Repeat("a", 64) + ".json.gz", ""},
		{"namespace escapes", types.NamespacedName{Namespace: "..", Name: "shop"}, refA, "", "invalid namespace"},
		{"name escapes", types.NamespacedName{Namespace: "a", Name: "../b"}, refA, "", "invalid release name"},
		{"name with slash", types.NamespacedName{Namespace: "a", Name: "b/c"}, refA, "", "invalid release name"},
		{"empty namespace", types.NamespacedName{Name: "b"}, refA, "", "invalid namespace"},
		{"ref with path", types.NamespacedName{Namespace: "a", Name: "b"}, "sha256:../../x", "", "invalid render reference"},
		{"ref uppercase", types.NamespacedName{Namespace: "a", Name: "b"}, "sha256:" + strings.Repeat("A", 64), "", "invalid render reference"},
		{"ref without prefix", types.NamespacedName{Namespace: "a", Name: "b"}, strings.Repeat("a", 64), "", "invalid render reference"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := renderKey(tt.rel, tt.ref)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("renderKey = %q, %v; want error containing %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("renderKey = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestCheckContained(t *testing.T) {
	tests := []struct {
		prefix, key string
		ok          bool
	}{
		{"a/b/", "a/b/history.jsonl", true},
		{"a/b/", "a/b/renders/x.json.gz", true},
		{"a/b/", "a/b/../c/history.jsonl", false},
		{"a/b/", "a/c/history.jsonl", false},
		{"a/b/", "/a/b/history.jsonl", false},
		{"a/b/", "a/b//history.jsonl", false},
		{"a/b/", `a/b/..\x`, false},
		{"p/", "p/../q", false},
	}
	for _, tt := range tests {
		if err := checkContained(tt.prefix, tt.key); (err == nil) != tt.ok {
			t.Errorf("checkContained(%q, %q) = %v, want ok=%v", tt.prefix, tt.key, err, tt.ok)
		}
	}
}

func TestFilePathRefusesEscape(t *testing.T) {
	f := &fileBlobs{root: "/var/lib/convoy/renders"}
	for _, key := range []string{"../x", "a/../../x", ".", ""} {
		if p, err := f.path(key); err == nil {
			t.Errorf("path(%q) = %q, want an error", key, p)
		}
	}
	if p, err := f.path("a/b/history.jsonl"); err != nil || p != "/var/lib/convoy/renders/a/b/history.jsonl" {
		t.Errorf("path = %q, %v", p, err)
	}
}

func TestOpen(t *testing.T) {
	tests := []struct {
		url      string
		location string
		wantErr  bool
	}{
		{"", "", false},
		{"file:///var/lib/convoy/renders", "file:///var/lib/convoy/renders", false},
		{"file://localhost/tmp/x/", "file:///tmp/x", false},
		{"file://host/tmp/x", "", true},
		{"file:relative", "", true},
		{"s3://bucket/convoy/renders?endpoint=127.0.0.1:9000&region=us-east-1&tls=false", "s3://bucket/convoy/renders/ at 127.0.0.1:9000", false},
		{"s3://bucket", "s3://bucket/ at s3.amazonaws.com", false},
		{"s3:///prefix", "", true},
		{"s3://bucket/a/../b", "", true},
		{"s3://bucket/p?tls=maybe", "", true},
		{"gs://bucket/p", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			s, err := Open(tt.url)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("Open(%q) = %v, want an error", tt.url, s.Location())
				}
				return
			}
			if err != nil {
				t.Fatalf("Open(%q): %v", tt.url, err)
			}
			if tt.url == "" {
				if s != nil {
					t.Fatalf("Open(\"\") = %v, want no store", s)
				}
				return
			}
			if got := s.Location(); got != tt.location {
				t.Fatalf("Location = %q, want %q", got, tt.location)
			}
		})
	}
}
