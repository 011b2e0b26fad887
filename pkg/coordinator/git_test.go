package coordinator

import (
	"context"
	"errors"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
)

// gitRepo creates a repository under a served root with the given commits (each a file map,
// symlinks written as "-> target") and serves it with git http-backend.
type gitRepo struct {
	url, dir string
}

func runGit(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func newGitRepo(t testing.TB) *gitRepo {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	root := t.TempDir()
	dir := filepath.Join(root, "app.git")
	runGit(t, root, "init", "-q", "-b", "main", dir)
	runGit(t, dir, "config", "http.receivepack", "false")
	backend, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(&cgi.Handler{Path: backend, Args: []string{"http-backend"},
		Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"}})
	t.Cleanup(srv.Close)
	return &gitRepo{url: srv.URL + "/app.git", dir: dir}
}

// commit replaces the work tree's files and commits; it returns the commit id.
func (g *gitRepo) commit(t testing.TB, files map[string]string) string {
	for name, content := range files {
		p := filepath.Join(g.dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		os.Remove(p)
		if target, ok := strings.CutPrefix(content, "-> "); ok {
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	runGit(t, g.dir, "add", "-A")
	runGit(t, g.dir, "commit", "-q", "-m", "change")
	runGit(t, g.dir, "update-server-info")
	return runGit(t, g.dir, "rev-parse", "HEAD")
}

func gitRelease(url string, ref v1alpha1.GitRef, path string, ct v1alpha1.ContentType) *v1alpha1.Release {
	return &v1alpha1.Release{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"},
		Spec: v1alpha1.ReleaseSpec{ContentType: ct, Source: v1alpha1.ReleaseSource{
			Git: &v1alpha1.GitSource{URL: url, Ref: ref, Path: path}}},
	}
}

func TestEnsureGit(t *testing.T) {
	g := newGitRepo(t)
	first := g.commit(t, map[string]string{"deploy/a.yaml": "a: 1\n", "deploy/sub/b.json": "{}", "deploy/README.md": "x", "deploy/link.yaml": "-> a.yaml"})
	runGit(t, g.dir, "tag", "-a", "v1", "-m", "v1")
	second := g.commit(t, map[string]string{"deploy/a.yaml": "a: 2\n"})
	c := newTestCoordinator(t, Options{})
	tests := []struct {
		name      string
		ref       v1alpha1.GitRef
		want      string
		wantFiles map[string]string
	}{
		{"branch", v1alpha1.GitRef{Branch: "main"}, second, map[string]string{"a.yaml": "a: 2\n", "sub/b.json": "{}", "link.yaml": "a: 2\n"}},
		{"default branch", v1alpha1.GitRef{}, second, nil},
		{"annotated tag", v1alpha1.GitRef{Tag: "v1"}, first, map[string]string{"a.yaml": "a: 1\n", "sub/b.json": "{}", "link.yaml": "a: 1\n"}},
		{"commit", v1alpha1.GitRef{Commit: first}, first, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := c.Ensure(context.Background(), gitRelease(g.url, tt.ref, "deploy", ""))
			if err != nil {
				t.Fatalf("Ensure: %v", err)
			}
			if !res.Ready || res.Content.Revision != tt.want {
				t.Fatalf("revision %q, want %q (%+v)", res.Content.Revision, tt.want, res)
			}
			if tt.wantFiles != nil && !equalMaps(res.Content.Files, tt.wantFiles) {
				t.Errorf("files %v, want %v", res.Content.Files, tt.wantFiles)
			}
		})
	}
	res, err := c.Ensure(context.Background(), gitRelease(g.url, v1alpha1.GitRef{Branch: "main"}, "deploy", v1alpha1.ContentTypeKustomize))
	if err != nil || res.Content.Dir == "" || res.Content.Root == "" || !strings.HasPrefix(res.Content.Dir, res.Content.Root) {
		t.Errorf("kustomize content %+v, %v", res.Content, err)
	}
	if st := c.Stats(); st.Downloads != 2 {
		t.Errorf("downloads = %d, want 2 (one per commit)", st.Downloads)
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestEnsureGitErrors(t *testing.T) {
	g := newGitRepo(t)
	g.commit(t, map[string]string{"deploy/a.yaml": "a: 1\n", "deploy/passwd.yaml": "-> ../../etc/passwd"})
	tests := []struct {
		name    string
		rel     *v1alpha1.Release
		opts    Options
		want    string
		refused bool
	}{
		{"symlink escape", gitRelease(g.url, v1alpha1.GitRef{Branch: "main"}, "deploy", ""), Options{}, "points outside the repository", true},
		{"no such branch", gitRelease(g.url, v1alpha1.GitRef{Branch: "nope"}, "", ""), Options{}, "has no refs/heads/nope", false},
		{"short commit", gitRelease(g.url, v1alpha1.GitRef{Commit: "abc123"}, "", ""), Options{}, "full 40-digit", true},
		{"unreachable", gitRelease("http://127.0.0.1:1/app.git", v1alpha1.GitRef{Branch: "main"}, "", ""), Options{}, "listing references", false},
		{"download limit", gitRelease(g.url, v1alpha1.GitRef{Branch: "main"}, "", ""), Options{MaxDownloadBytes: 100}, "over the download limit", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := newTestCoordinator(t, tt.opts).Ensure(context.Background(), tt.rel)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
			if errors.Is(err, ErrRefused) != tt.refused {
				t.Errorf("errors.Is(ErrRefused) = %v, want %v (%v)", !tt.refused, tt.refused, err)
			}
		})
	}
	res, err := newTestCoordinator(t, Options{}).Ensure(context.Background(), gitRelease("ssh://git@example.com/app.git", v1alpha1.GitRef{}, "", ""))
	if err != nil || res.Ready {
		t.Errorf("ssh URL: %+v, %v; want not ready", res, err)
	}
}
