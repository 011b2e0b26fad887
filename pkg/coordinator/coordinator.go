// Package coordinator resolves and fetches the source of a Release, shared by every Release of the
// replica. A fetch that cannot be done by this build (a source or content type it does not support)
// is a not-ready Result, never an error and never a fake success; a fetch that fails is an error the
// caller reports as FetchFailed and retries with backoff.
//
// # Sources
//
// Helm charts come from HTTP repositories (index.yaml, semver constraints, the index digest
// checked) or OCI registries through Helm's registry client (tags, semver constraints, digests).
// Git repositories are read over HTTP(S) with go-git at a branch, tag or commit; the resolved
// commit is the revision. Credentials come from spec.source.secretRef, a Secret of the Release's
// own namespace (keys username, password, token, ca.crt); they are never logged.
//
// # Cache
//
// Fetched content is unpacked under Options.CacheDir in a directory named by its content digest
// (the chart archive's SHA-256, the git commit), so two Releases of the same chart share one copy
// and a chart is downloaded once. Concurrent fetches of one source are merged (singleflight).
// Downloads and unpacked trees are bounded in size; symbolic links and ".." paths that would
// leave a chart or a repository are refused with an error wrapping ErrRefused.
//
// # Addresses
//
// Sources on link-local and cloud metadata addresses (169.254.0.0/16, fe80::/10, ...) are refused
// with ErrRefused unless Options.AllowLinkLocal: by the URL's host, and again for every connection
// after DNS resolution, so names and redirects leading there are refused too (netpolicy.go).
package coordinator

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	corev1listers "k8s.io/client-go/listers/core/v1"

	"golang.org/x/sync/singleflight"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
	"github.com/kumodo/convoy/pkg/render"
)

// ErrRefused is wrapped by fetch errors caused by the content itself (too large, a path or link
// escaping the tree): retrying does not help until the source changes.
var ErrRefused = errors.New("source content refused")

// Defaults of Options.
const (
	DefaultMaxDownloadBytes = 50 << 20
	DefaultMaxUnpackedBytes = 200 << 20
	DefaultFetchTimeout     = 2 * time.Minute
	DefaultIndexTTL         = 30 * time.Second
)

// Options configure a Coordinator. Zero fields take the defaults.
type Options struct {
	// ConfigMaps reads configMapRef sources.
	ConfigMaps corev1listers.ConfigMapLister
	// Secrets reads secretRef credentials; nil refuses sources with a secretRef.
	Secrets corev1listers.SecretLister
	// CacheDir holds fetched content; default $TMPDIR/convoy-sources.
	CacheDir string
	// MaxDownloadBytes bounds one download (a chart archive, an index, a git pack).
	MaxDownloadBytes int64
	// MaxUnpackedBytes bounds the files of one unpacked chart or repository tree.
	MaxUnpackedBytes int64
	// FetchTimeout bounds one fetch.
	FetchTimeout time.Duration
	// IndexTTL is how long a Helm repository index is reused.
	IndexTTL time.Duration
	// AllowLinkLocal allows sources on link-local and cloud metadata addresses (169.254.0.0/16,
	// fe80::/10, ...), which are refused by default, by URL and again at connect time (netpolicy.go).
	AllowLinkLocal bool
}

func (o Options) withDefaults() Options {
	if o.CacheDir == "" {
		o.CacheDir = filepath.Join(os.TempDir(), "convoy-sources")
	}
	if o.MaxDownloadBytes <= 0 {
		o.MaxDownloadBytes = DefaultMaxDownloadBytes
	}
	if o.MaxUnpackedBytes <= 0 {
		o.MaxUnpackedBytes = DefaultMaxUnpackedBytes
	}
	if o.FetchTimeout <= 0 {
		o.FetchTimeout = DefaultFetchTimeout
	}
	if o.IndexTTL <= 0 {
		o.IndexTTL = DefaultIndexTTL
	}
	return o
}

// Result is the outcome of Ensure.
type Result struct {
	// Ready is false when this build cannot fetch the source; Message says why.
	Ready   bool
	Message string
	// Content is the fetched content, set when Ready.
	Content render.Content
}

// Stats count the network work a Coordinator did.
type Stats struct {
	// Downloads counts chart archives pulled and git repositories cloned.
	Downloads int64
	// IndexFetches counts Helm repository indexes downloaded and git references listed.
	IndexFetches int64
	// CacheHits counts fetches served from the on-disk cache.
	CacheHits int64
}

// Coordinator fetches Release sources.
type Coordinator struct {
	opts    Options
	group   singleflight.Group
	clients httpClients

	mu      sync.Mutex
	indexes map[string]cachedIndex
	oci     map[string]render.Content // by manifest digest

	downloads, indexFetches, cacheHits atomic.Int64
}

// New returns a Coordinator reading ConfigMap sources from the given lister, with default options
// and no Secrets (sources with a secretRef fail).
func New(configMaps corev1listers.ConfigMapLister) *Coordinator {
	c, err := NewWithOptions(Options{ConfigMaps: configMaps})
	if err != nil {
		// Only a cache directory that cannot be created fails; fetches will report it.
		c = &Coordinator{opts: Options{ConfigMaps: configMaps}.withDefaults()}
	}
	return c
}

// NewWithOptions returns a Coordinator with the given options; it creates the cache directory.
func NewWithOptions(opts Options) (*Coordinator, error) {
	opts = opts.withDefaults()
	if err := os.MkdirAll(opts.CacheDir, 0o700); err != nil {
		return nil, fmt.Errorf("creating source cache dir: %w", err)
	}
	return &Coordinator{opts: opts, indexes: map[string]cachedIndex{}, oci: map[string]render.Content{},
		clients: httpClients{allowLinkLocal: opts.AllowLinkLocal}}, nil
}

// Stats returns the counters of network work and cache hits so far.
func (c *Coordinator) Stats() Stats {
	return Stats{Downloads: c.downloads.Load(), IndexFetches: c.indexFetches.Load(), CacheHits: c.cacheHits.Load()}
}

// ContentType returns the Release's content type with its default applied: helm for a Helm source,
// else manifests.
func ContentType(rel *v1alpha1.Release) v1alpha1.ContentType {
	if rel.Spec.ContentType != "" {
		return rel.Spec.ContentType
	}
	if rel.Spec.Source.Helm != nil {
		return v1alpha1.ContentTypeHelm
	}
	return v1alpha1.ContentTypeManifests
}

// Ensure resolves and fetches the source of rel. Sources and credentials are read only from the
// Release's own namespace.
func (c *Coordinator) Ensure(ctx context.Context, rel *v1alpha1.Release) (Result, error) {
	src := rel.Spec.Source
	ct := ContentType(rel)
	switch {
	case src.ConfigMapRef != nil:
		if ct != v1alpha1.ContentTypeManifests {
			return notReady("contentType %s is not supported with source.configMapRef; use manifests", ct), nil
		}
		return c.ensureConfigMap(rel, ct)
	case src.Helm != nil:
		if ct != v1alpha1.ContentTypeHelm {
			return notReady("contentType %s is not supported with source.helm; use helm", ct), nil
		}
		if err := checkSourceURL(src.Helm.RepoURL, c.opts.AllowLinkLocal); err != nil {
			return Result{}, err
		}
		creds, err := c.credentials(rel)
		if err != nil {
			return Result{}, err
		}
		ctx, cancel := context.WithTimeout(ctx, c.opts.FetchTimeout)
		defer cancel()
		var content render.Content
		if isOCI(src.Helm.RepoURL) {
			content, err = c.ensureOCI(ctx, src.Helm, creds)
		} else {
			content, err = c.ensureHelmHTTP(ctx, src.Helm, creds)
		}
		if err != nil {
			return Result{}, err
		}
		return Result{Ready: true, Content: content}, nil
	case src.Git != nil:
		if !isHTTPURL(src.Git.URL) {
			return notReady("git URL %q is not supported: use an http(s):// URL", src.Git.URL), nil
		}
		if err := checkSourceURL(src.Git.URL, c.opts.AllowLinkLocal); err != nil {
			return Result{}, err
		}
		creds, err := c.credentials(rel)
		if err != nil {
			return Result{}, err
		}
		ctx, cancel := context.WithTimeout(ctx, c.opts.FetchTimeout)
		defer cancel()
		content, err := c.ensureGit(ctx, src.Git, creds, ct)
		if err != nil {
			return Result{}, err
		}
		return Result{Ready: true, Content: content}, nil
	default:
		return notReady("the source names none of helm, git or configMapRef"), nil
	}
}

func (c *Coordinator) ensureConfigMap(rel *v1alpha1.Release, ct v1alpha1.ContentType) (Result, error) {
	name := rel.Spec.Source.ConfigMapRef.Name
	if c.opts.ConfigMaps == nil {
		return Result{}, fmt.Errorf("source ConfigMap %s/%s: this controller reads no ConfigMaps", rel.Namespace, name)
	}
	cm, err := c.opts.ConfigMaps.ConfigMaps(rel.Namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return Result{}, fmt.Errorf("source ConfigMap %s/%s not found", rel.Namespace, name)
	}
	if err != nil {
		return Result{}, fmt.Errorf("reading source ConfigMap %s/%s: %w", rel.Namespace, name, err)
	}
	files := make(map[string]string, len(cm.Data))
	for k, v := range cm.Data {
		files[k] = v
	}
	return Result{Ready: true, Content: render.Content{
		Type:     ct,
		Files:    files,
		Revision: "configmap/" + cm.Name + "@" + cm.ResourceVersion,
	}}, nil
}

func notReady(format string, args ...any) Result {
	return Result{Message: fmt.Sprintf(format, args...)}
}
