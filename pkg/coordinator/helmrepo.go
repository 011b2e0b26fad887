package coordinator

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"helm.sh/helm/v3/pkg/repo"
	"sigs.k8s.io/yaml"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
	"github.com/kumodo/convoy/pkg/render"
)

type cachedIndex struct {
	index *repo.IndexFile
	at    time.Time
}

// ensureHelmHTTP resolves the chart version in the repository's index.yaml and returns the chart
// unpacked from the cache, downloading (and checking the digest of) an archive not cached yet.
func (c *Coordinator) ensureHelmHTTP(ctx context.Context, src *v1alpha1.HelmSource, creds *credentials) (render.Content, error) {
	repoURL, err := url.Parse(strings.TrimSuffix(src.RepoURL, "/") + "/")
	if err != nil {
		return render.Content{}, fmt.Errorf("helm repoURL: %w", err)
	}
	index, err := c.index(ctx, repoURL, creds)
	if err != nil {
		return render.Content{}, err
	}
	cv, err := index.Get(src.Chart, src.Version)
	if err != nil {
		want := src.Version
		if want == "" {
			want = "latest"
		}
		return render.Content{}, fmt.Errorf("chart %s version %s in %s: %w", src.Chart, want, redact(repoURL), err)
	}
	if len(cv.URLs) == 0 {
		return render.Content{}, fmt.Errorf("chart %s %s in %s has no download URL", src.Chart, cv.Version, redact(repoURL))
	}
	digest := strings.ToLower(strings.TrimPrefix(cv.Digest, "sha256:"))
	content := render.Content{Type: v1alpha1.ContentTypeHelm, Revision: cv.Version}
	if dir, ok := c.cachedChart(digest); ok {
		c.cacheHits.Add(1)
		content.Dir = dir
		return content, nil
	}
	chartURL, err := repoURL.Parse(cv.URLs[0])
	if err != nil {
		return render.Content{}, fmt.Errorf("chart %s %s: download URL: %w", src.Chart, cv.Version, err)
	}
	key := "chart\x00" + chartURL.String() + "\x00" + digest + "\x00" + creds.key()
	v, err, _ := c.group.Do(key, func() (any, error) {
		if dir, ok := c.cachedChart(digest); ok {
			c.cacheHits.Add(1)
			return dir, nil
		}
		// Credentials go only to the repository's own host, as Helm does by default.
		sendCreds := creds
		if chartURL.Host != repoURL.Host {
			sendCreds = nil
		}
		data, err := c.download(ctx, chartURL, sendCreds)
		if err != nil {
			return nil, fmt.Errorf("downloading chart %s %s: %w", src.Chart, cv.Version, err)
		}
		c.downloads.Add(1)
		sum := sha256.Sum256(data)
		got := hex.EncodeToString(sum[:])
		if digest != "" && got != digest {
			return nil, fmt.Errorf("chart %s %s from %s: digest sha256:%s does not match the index's sha256:%s", src.Chart, cv.Version, redact(chartURL), got, digest)
		}
		dir, err := c.unpackChart(data, got)
		if err != nil {
			return nil, fmt.Errorf("chart %s %s: %w", src.Chart, cv.Version, err)
		}
		return dir, nil
	})
	if err != nil {
		return render.Content{}, err
	}
	content.Dir = v.(string)
	return content, nil
}

// index returns the repository's index, downloaded at most once per IndexTTL for one repository
// and set of credentials.
func (c *Coordinator) index(ctx context.Context, repoURL *url.URL, creds *credentials) (*repo.IndexFile, error) {
	key := "index\x00" + repoURL.String() + "\x00" + creds.key()
	c.mu.Lock()
	cached, ok := c.indexes[key]
	c.mu.Unlock()
	if ok && time.Since(cached.at) < c.opts.IndexTTL {
		return cached.index, nil
	}
	v, err, _ := c.group.Do(key, func() (any, error) {
		indexURL, err := repoURL.Parse("index.yaml")
		if err != nil {
			return nil, fmt.Errorf("index URL: %w", err)
		}
		data, err := c.download(ctx, indexURL, creds)
		if err != nil {
			return nil, fmt.Errorf("fetching the helm repository index: %w", err)
		}
		c.indexFetches.Add(1)
		index := &repo.IndexFile{}
		if err := yaml.Unmarshal(data, index); err != nil {
			return nil, fmt.Errorf("%s: invalid index: %w", redact(indexURL), err)
		}
		if index.APIVersion == "" {
			return nil, fmt.Errorf("%s: invalid index: no apiVersion", redact(indexURL))
		}
		index.SortEntries()
		c.mu.Lock()
		c.indexes[key] = cachedIndex{index: index, at: time.Now()}
		c.mu.Unlock()
		return index, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*repo.IndexFile), nil
}

// download GETs u with creds, bounded by MaxDownloadBytes.
func (c *Coordinator) download(ctx context.Context, u *url.URL, creds *credentials) ([]byte, error) {
	client, err := c.clients.client(creds)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(withLimit(ctx, c.opts.MaxDownloadBytes), http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("building request: %w", err)
	}
	creds.authorize(req)
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", redact(u), unwrapURLError(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", redact(u), resp.Status)
	}
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", redact(u), err)
	}
	return data, nil
}

// unwrapURLError drops the *url.Error wrapper, whose message repeats the URL with its query.
func unwrapURLError(err error) error {
	if ue, ok := err.(*url.Error); ok {
		return ue.Err
	}
	return err
}
