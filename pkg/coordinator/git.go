package coordinator

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
	"github.com/kumodo/convoy/pkg/render"
)

var fullCommit = regexp.MustCompile(`^[0-9a-f]{40}$`)

// ensureGit resolves the ref to a commit (listing the remote's references unless a full commit is
// given), materialises that commit's tree into the cache unless it is there, and returns the
// content at the source path.
func (c *Coordinator) ensureGit(ctx context.Context, src *v1alpha1.GitSource, creds *credentials, ct v1alpha1.ContentType) (render.Content, error) {
	installGitTransport()
	tr, err := c.clients.transport(creds)
	if err != nil {
		return render.Content{}, err
	}
	ctx = context.WithValue(withLimit(ctx, c.opts.MaxDownloadBytes), gitTransportKey{}, tr)
	auth := gitAuth(creds)
	commit, refName, err := c.resolveGitRef(ctx, src, auth)
	if err != nil {
		return render.Content{}, err
	}
	sum := sha256.Sum256([]byte(src.URL))
	repoDir := filepath.Join(c.opts.CacheDir, "git", hex.EncodeToString(sum[:8]))
	root := filepath.Join(repoDir, commit)
	if _, err := os.Stat(root); err == nil {
		c.cacheHits.Add(1)
	} else {
		_, err, _ := c.group.Do("git\x00"+src.URL+"\x00"+commit+"\x00"+creds.key(), func() (any, error) {
			if _, err := os.Stat(root); err == nil {
				c.cacheHits.Add(1)
				return nil, nil
			}
			tree, err := c.cloneTree(ctx, src.URL, refName, commit, auth)
			if err != nil {
				return nil, err
			}
			c.downloads.Add(1)
			_, err = publish(root, func(dir string) error { return c.writeTree(tree, dir) },
				func(dir string) (string, error) { return dir, nil })
			return nil, err
		})
		if err != nil {
			return render.Content{}, err
		}
	}
	return gitContent(root, src.Path, commit, ct)
}

// resolveGitRef returns the commit the source's ref names and the reference to clone for it.
func (c *Coordinator) resolveGitRef(ctx context.Context, src *v1alpha1.GitSource, auth transport.AuthMethod) (string, plumbing.ReferenceName, error) {
	ref := src.Ref
	if ref.Commit != "" {
		commit := strings.ToLower(ref.Commit)
		if !fullCommit.MatchString(commit) {
			return "", "", fmt.Errorf("%w: git ref.commit %q must be a full 40-digit commit id", ErrRefused, ref.Commit)
		}
		return commit, "", nil
	}
	remote := git.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: "origin", URLs: []string{src.URL}})
	refs, err := remote.ListContext(ctx, &git.ListOptions{Auth: auth, PeelingOption: git.AppendPeeled})
	if err != nil {
		return "", "", fmt.Errorf("listing references of %s: %w", redactGitURL(src.URL), err)
	}
	c.indexFetches.Add(1)
	byName := map[plumbing.ReferenceName]*plumbing.Reference{}
	for _, r := range refs {
		byName[r.Name()] = r
	}
	var name plumbing.ReferenceName
	switch {
	case ref.Tag != "":
		name = plumbing.NewTagReferenceName(ref.Tag)
		// An annotated tag is listed with its peeled commit as "<tag>^{}".
		if peeled, ok := byName[plumbing.ReferenceName(name.String()+"^{}")]; ok {
			return peeled.Hash().String(), name, nil
		}
	case ref.Branch != "":
		name = plumbing.NewBranchReferenceName(ref.Branch)
	default:
		head, ok := byName[plumbing.HEAD]
		if !ok {
			return "", "", fmt.Errorf("%s has no HEAD: name a branch, tag or commit", redactGitURL(src.URL))
		}
		if head.Type() == plumbing.SymbolicReference {
			name = head.Target()
		} else {
			return head.Hash().String(), plumbing.HEAD, nil
		}
	}
	r, ok := byName[name]
	if !ok {
		return "", "", fmt.Errorf("%s has no %s", redactGitURL(src.URL), name)
	}
	return r.Hash().String(), name, nil
}

// cloneTree clones the one commit into memory and returns its tree. A branch or tag is cloned
// shallow; a bare commit needs the history.
func (c *Coordinator) cloneTree(ctx context.Context, url string, refName plumbing.ReferenceName, commit string, auth transport.AuthMethod) (*object.Tree, error) {
	opts := &git.CloneOptions{URL: url, Auth: auth, NoCheckout: true, Tags: git.NoTags}
	if refName != "" && refName != plumbing.HEAD {
		opts.ReferenceName, opts.SingleBranch, opts.Depth = refName, true, 1
	}
	if refName == "" {
		opts.Tags = git.AllTags
	}
	repo, err := git.CloneContext(ctx, memory.NewStorage(), nil, opts)
	if err != nil {
		return nil, fmt.Errorf("cloning %s: %w", redactGitURL(url), err)
	}
	obj, err := repo.CommitObject(plumbing.NewHash(commit))
	if err != nil {
		return nil, fmt.Errorf("%s: commit %s: %w", redactGitURL(url), commit, err)
	}
	tree, err := obj.Tree()
	if err != nil {
		return nil, fmt.Errorf("%s: tree of commit %s: %w", redactGitURL(url), commit, err)
	}
	return tree, nil
}

// writeTree writes the tree's files into dir. A symbolic link to a file inside the repository is
// written as a copy of that file; a link leaving the repository, or to a directory, is refused.
// Submodules are skipped. The files may add up to MaxUnpackedBytes.
func (c *Coordinator) writeTree(tree *object.Tree, dir string) error {
	var total int64
	return tree.Files().ForEach(func(f *object.File) error {
		name, err := safeRelPath(f.Name)
		if err != nil {
			return err
		}
		src := f
		if f.Mode == filemode.Symlink {
			target, err := f.Contents()
			if err != nil {
				return fmt.Errorf("reading link %s: %w", name, err)
			}
			resolved := path.Join(path.Dir(name), target)
			if path.IsAbs(target) || resolved == ".." || strings.HasPrefix(resolved, "../") {
				return fmt.Errorf("%w: symbolic link %s -> %s points outside the repository", ErrRefused, name, target)
			}
			if src, err = tree.File(resolved); err != nil {
				return fmt.Errorf("%w: symbolic link %s -> %s does not point to a file of the repository", ErrRefused, name, target)
			}
			if src.Mode == filemode.Symlink {
				return fmt.Errorf("%w: symbolic link %s -> %s points to another link", ErrRefused, name, target)
			}
		}
		total += src.Size
		if total > c.opts.MaxUnpackedBytes {
			return fmt.Errorf("%w: the repository's files are over the limit of %d bytes", ErrRefused, c.opts.MaxUnpackedBytes)
		}
		r, err := src.Reader()
		if err != nil {
			return fmt.Errorf("reading %s: %w", name, err)
		}
		defer r.Close()
		if err := writeFile(filepath.Join(dir, filepath.FromSlash(name)), io.LimitReader(r, src.Size)); err != nil {
			return fmt.Errorf("writing %s: %w", name, err)
		}
		return nil
	})
}

// gitContent returns the content at p inside the materialised tree root.
func gitContent(root, p, commit string, ct v1alpha1.ContentType) (render.Content, error) {
	rel := "."
	if p != "" {
		var err error
		if rel, err = safeRelPath(strings.Trim(p, "/")); err != nil {
			return render.Content{}, err
		}
	}
	dir := filepath.Join(root, filepath.FromSlash(rel))
	if info, err := os.Stat(dir); err != nil || !info.IsDir() {
		return render.Content{}, fmt.Errorf("path %q is not a directory at commit %s", p, commit)
	}
	content := render.Content{Type: ct, Revision: commit}
	switch ct {
	case v1alpha1.ContentTypeManifests:
		files, err := manifestFiles(dir)
		if err != nil {
			return render.Content{}, err
		}
		content.Files = files
	case v1alpha1.ContentTypeKustomize:
		content.Dir, content.Root = dir, root
	case v1alpha1.ContentTypeHelm:
		content.Dir, content.Root = dir, root
	}
	return content, nil
}

// manifestFiles reads every .yaml, .yml and .json file under dir, keyed by its slash path
// relative to dir.
func manifestFiles(dir string) (map[string]string, error) {
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		switch strings.ToLower(filepath.Ext(p)) {
		case ".yaml", ".yml", ".json":
		default:
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		files[filepath.ToSlash(rel)] = string(data)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading manifests: %w", err)
	}
	return files, nil
}

// gitAuth is basic auth with a username (the token as password when there is no password), else a
// bearer token, else none.
func gitAuth(creds *credentials) transport.AuthMethod {
	switch {
	case creds == nil:
		return nil
	case creds.username != "":
		password := creds.password
		if password == "" {
			password = creds.token
		}
		return &githttp.BasicAuth{Username: creds.username, Password: password}
	case creds.token != "":
		return &githttp.TokenAuth{Token: creds.token}
	}
	return nil
}

func redactGitURL(u string) string {
	if i := strings.Index(u, "@"); i >= 0 {
		if j := strings.Index(u, "://"); j >= 0 && j < i {
			return u[:j+3] + u[i+1:]
		}
	}
	return u
}

type gitTransportKey struct{}

var installGitOnce sync.Once

// installGitTransport makes go-git's http and https protocols use gitRoundTripper, which takes
// the CA transport and the download limit from each request's context. go-git's transports are
// process-wide, and the coordinator is go-git's only user in the controller.
func installGitTransport() {
	installGitOnce.Do(func() {
		hc := &http.Client{Transport: gitRoundTripper{}}
		client.InstallProtocol("http", githttp.NewClient(hc))
		client.InstallProtocol("https", githttp.NewClient(hc))
	})
}

type gitRoundTripper struct{}

func (gitRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	tr, ok := req.Context().Value(gitTransportKey{}).(*http.Transport)
	if !ok {
		return nil, errors.New("git request outside the coordinator")
	}
	return limitingTransport{next: tr}.RoundTrip(req)
}
