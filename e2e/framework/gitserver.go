package framework

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gitBinary is the git that serves repositories (git http-backend) and makes their commits.
const gitBinary = "/usr/bin/git"

// GitServer serves git repositories over smart HTTP on 127.0.0.1 with `git http-backend`, run
// through net/http/cgi by the test process.
type GitServer struct {
	// URL is the server's base URL; a repository is at URL + "/" + name.
	URL string

	root string
	home string
}

// NewGitServer starts a server with no repositories; it stops when the test ends. The test
// is skipped when git is not installed.
func NewGitServer(t testing.TB) *GitServer {
	t.Helper()
	if _, err := os.Stat(gitBinary); err != nil {
		t.Skipf("git server: %s not found: %v", gitBinary, err)
	}
	g := &GitServer{root: t.TempDir(), home: t.TempDir()}
	handler := &cgi.Handler{
		Path: gitBinary,
		Args: []string{"http-backend"},
		Dir:  g.root,
		Env: append(g.gitEnv(),
			"GIT_PROJECT_ROOT="+g.root,
			"GIT_HTTP_EXPORT_ALL=1",
		),
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("git server: listen: %v", err)
	}
	g.URL = "http://" + ln.Addr().String()
	srv := &http.Server{Handler: handler}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return g
}

// gitEnv isolates git from the host's configuration.
func (g *GitServer) gitEnv() []string {
	return []string{
		"HOME=" + g.home,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=" + filepath.Join(g.home, "gitconfig"),
		"GIT_AUTHOR_NAME=convoy e2e", "GIT_AUTHOR_EMAIL=e2e@convoy.invalid",
		"GIT_COMMITTER_NAME=convoy e2e", "GIT_COMMITTER_EMAIL=e2e@convoy.invalid",
		"PATH=" + os.Getenv("PATH"),
	}
}

// GitRepo is a repository of a GitServer with a work tree; commits are served as soon as they
// are made.
type GitRepo struct {
	// URL is the repository's clone URL.
	URL string

	dir string
	srv *GitServer
}

// NewRepo creates the repository name with an empty branch main.
func (g *GitServer) NewRepo(name string) (*GitRepo, error) {
	r := &GitRepo{URL: g.URL + "/" + name, dir: filepath.Join(g.root, name), srv: g}
	if err := os.MkdirAll(r.dir, 0o755); err != nil {
		return nil, fmt.Errorf("create repo %s: %w", name, err)
	}
	if _, err := r.Git("init", "--quiet", "--initial-branch=main"); err != nil {
		return nil, err
	}
	return r, nil
}

// Git runs git in the repository's work tree and returns its trimmed standard output.
func (r *GitRepo) Git(args ...string) (string, error) {
	cmd := exec.Command(gitBinary, args...)
	cmd.Dir = r.dir
	cmd.Env = r.srv.gitEnv()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s in %s: %w: %s", strings.Join(args, " "), r.dir, err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(stdout.String()), nil
}

// WriteFiles writes files (slash paths relative to the repository root) into the work tree.
func (r *GitRepo) WriteFiles(files map[string]string) error {
	for name, content := range files {
		p := filepath.Join(r.dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
	}
	return nil
}

// CopyDir copies the directory src of the local disk into the work tree at dst.
func (r *GitRepo) CopyDir(src, dst string) error {
	target := filepath.Join(r.dir, filepath.FromSlash(dst))
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	if err := os.CopyFS(target, os.DirFS(src)); err != nil {
		return fmt.Errorf("copy %s to %s: %w", src, dst, err)
	}
	return nil
}

// Symlink adds a symbolic link name -> target to the work tree.
func (r *GitRepo) Symlink(name, target string) error {
	p := filepath.Join(r.dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("symlink %s: %w", name, err)
	}
	if err := os.Symlink(target, p); err != nil {
		return fmt.Errorf("symlink %s: %w", name, err)
	}
	return nil
}

// Remove deletes a file or directory (slash path) from the work tree.
func (r *GitRepo) Remove(name string) error {
	if err := os.RemoveAll(filepath.Join(r.dir, filepath.FromSlash(name))); err != nil {
		return fmt.Errorf("remove %s: %w", name, err)
	}
	return nil
}

// Commit commits everything in the work tree on the current branch and returns the commit id.
func (r *GitRepo) Commit(message string) (string, error) {
	if _, err := r.Git("add", "--all"); err != nil {
		return "", err
	}
	if _, err := r.Git("commit", "--quiet", "--allow-empty", "-m", message); err != nil {
		return "", err
	}
	return r.Git("rev-parse", "HEAD")
}

// Tag creates the annotated tag name at the current commit.
func (r *GitRepo) Tag(name string) error {
	_, err := r.Git("tag", "-a", "-m", name, name)
	return err
}

// Branch creates branch name at the current commit and switches to it.
func (r *GitRepo) Branch(name string) error {
	_, err := r.Git("switch", "--quiet", "-c", name)
	return err
}

// Switch switches the work tree to an existing branch.
func (r *GitRepo) Switch(name string) error {
	_, err := r.Git("switch", "--quiet", name)
	return err
}
