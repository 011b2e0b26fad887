package coordinator

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"

	"github.com/Masterminds/semver/v3"
	"helm.sh/helm/v3/pkg/registry"
	"oras.land/oras-go/v2/registry/remote/auth"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
	"github.com/kumodo/convoy/pkg/render"
)

// ensureOCI resolves the chart's tag (an exact version, a semver constraint over the registry's
// tags, or a sha256: digest) to a manifest digest and pulls it with Helm's registry client unless
// that manifest is cached. Registries on a loopback address are spoken to over plain HTTP.
func (c *Coordinator) ensureOCI(ctx context.Context, src *v1alpha1.HelmSource, creds *credentials) (render.Content, error) {
	base := strings.TrimSuffix(strings.TrimPrefix(src.RepoURL, "oci://"), "/") + "/" + src.Chart
	client, err := c.registryClient(base, creds)
	if err != nil {
		return render.Content{}, err
	}
	ref, err := ociReference(client, base, src.Version)
	if err != nil {
		return render.Content{}, err
	}
	if err := ctx.Err(); err != nil {
		return render.Content{}, fmt.Errorf("pulling %s: %w", ref, err)
	}
	desc, err := client.Resolve(ref)
	if err != nil {
		return render.Content{}, fmt.Errorf("resolving %s: %w", ref, err)
	}
	c.indexFetches.Add(1)
	manifest := desc.Digest.String()
	c.mu.Lock()
	content, ok := c.oci[manifest]
	c.mu.Unlock()
	if ok {
		c.cacheHits.Add(1)
		return content, nil
	}
	v, err, _ := c.group.Do("oci\x00"+base+"@"+manifest+"\x00"+creds.key(), func() (any, error) {
		c.mu.Lock()
		content, ok := c.oci[manifest]
		c.mu.Unlock()
		if ok {
			return content, nil
		}
		res, err := client.Pull(base+"@"+manifest, registry.PullOptWithChart(true))
		if err != nil {
			return nil, fmt.Errorf("pulling %s: %w", ref, err)
		}
		c.downloads.Add(1)
		sum := sha256.Sum256(res.Chart.Data)
		dir, err := c.unpackChart(res.Chart.Data, hex.EncodeToString(sum[:]))
		if err != nil {
			return nil, fmt.Errorf("chart %s: %w", ref, err)
		}
		content = render.Content{Type: v1alpha1.ContentTypeHelm, Dir: dir, Revision: res.Chart.Meta.Version}
		c.mu.Lock()
		c.oci[manifest] = content
		c.mu.Unlock()
		return content, nil
	})
	if err != nil {
		return render.Content{}, err
	}
	return v.(render.Content), nil
}

// ociReference turns the version into a reference: a digest as is, an exact version as its tag,
// a constraint (or nothing, for the latest) as the highest matching semver tag.
func ociReference(client *registry.Client, base, version string) (string, error) {
	if strings.HasPrefix(version, "sha256:") {
		return base + "@" + version, nil
	}
	if v, err := semver.StrictNewVersion(version); err == nil {
		return base + ":" + strings.ReplaceAll(v.Original(), "+", "_"), nil
	}
	constraint := version
	if constraint == "" {
		constraint = "*"
	}
	cons, err := semver.NewConstraint(constraint)
	if err != nil {
		return "", fmt.Errorf("version %q is neither a version, a constraint nor a sha256: digest: %w", version, err)
	}
	tags, err := client.Tags(base)
	if err != nil {
		return "", fmt.Errorf("listing tags of %s: %w", base, err)
	}
	for _, tag := range tags { // highest first
		if v, err := semver.NewVersion(tag); err == nil && cons.Check(v) {
			return base + ":" + strings.ReplaceAll(tag, "+", "_"), nil
		}
	}
	return "", fmt.Errorf("no tag of %s matches version %q", base, constraint)
}

// registryClient builds a Helm registry client that uses only creds (never the host's Docker or
// Helm credential files) and bounds every response by MaxDownloadBytes and FetchTimeout.
func (c *Coordinator) registryClient(base string, creds *credentials) (*registry.Client, error) {
	tr, err := c.clients.transport(creds)
	if err != nil {
		return nil, err
	}
	hc := &http.Client{Transport: limitingTransport{next: tr, fallback: c.opts.MaxDownloadBytes}, Timeout: c.opts.FetchTimeout}
	authorizer := &auth.Client{Client: hc, Cache: auth.NewCache(), Credential: func(context.Context, string) (auth.Credential, error) {
		switch {
		case creds == nil:
			return auth.EmptyCredential, nil
		case creds.username != "":
			password := creds.password
			if password == "" {
				password = creds.token
			}
			return auth.Credential{Username: creds.username, Password: password}, nil
		default:
			return auth.Credential{AccessToken: creds.token}, nil
		}
	}}
	opts := []registry.ClientOption{registry.ClientOptHTTPClient(hc), registry.ClientOptAuthorizer(*authorizer),
		// A file of our own, so the host's Helm registry logins are never read.
		registry.ClientOptCredentialsFile(filepath.Join(c.opts.CacheDir, "registry-config.json"))}
	host, _, _ := strings.Cut(base, "/")
	if isLoopback(host) {
		opts = append(opts, registry.ClientOptPlainHTTP())
	}
	client, err := registry.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("building registry client: %w", err)
	}
	return client, nil
}
