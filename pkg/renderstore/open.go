package renderstore

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
)

// DefaultFileURL is the documented location of the embedded file store of a single replica.
const DefaultFileURL = "file:///var/lib/convoy/renders"

// Open returns the store a URL names: "" is no store (nil, nil); file:///DIR a directory;
// s3://bucket/prefix?endpoint=host:port&region=R&tls=false an S3-compatible bucket. Opening does
// not contact the store, so a controller starts while its store is down.
func Open(rawURL string) (Store, error) {
	if rawURL == "" {
		return nil, nil
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("render store URL %q: %w", rawURL, err)
	}
	switch u.Scheme {
	case "file":
		if u.Host != "" && u.Host != "localhost" {
			return nil, fmt.Errorf("render store URL %q: a file URL names a local directory (file:///DIR)", rawURL)
		}
		if !filepath.IsAbs(u.Path) {
			return nil, fmt.Errorf("render store URL %q: the directory must be absolute (file:///DIR)", rawURL)
		}
		return &store{b: &fileBlobs{root: filepath.Clean(u.Path)}}, nil
	case "s3":
		b, err := newS3Blobs(u)
		if err != nil {
			return nil, fmt.Errorf("render store URL %q: %w", redact(u), err)
		}
		return &store{b: b}, nil
	default:
		return nil, fmt.Errorf("render store URL %q: unsupported scheme %q (file or s3)", redact(u), u.Scheme)
	}
}

// redact drops user information from a URL for messages.
func redact(u *url.URL) string {
	c := *u
	c.User = nil
	return strings.TrimSuffix(c.String(), "?")
}
