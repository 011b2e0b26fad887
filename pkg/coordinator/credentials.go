package coordinator

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
)

// Keys of a secretRef Secret.
const (
	secretKeyUsername = "username"
	secretKeyPassword = "password"
	secretKeyToken    = "token"
	secretKeyCA       = "ca.crt"
	secretKeyCAFile   = "caFile"
)

// credentials are read from a Release's secretRef. They have no String method on purpose and are
// never formatted into errors or logs.
type credentials struct {
	username, password, token string
	ca                        []byte
}

// key identifies the credentials in cache keys without revealing them.
func (c *credentials) key() string {
	if c == nil {
		return "anonymous"
	}
	h := sha256.New()
	for _, s := range []string{c.username, c.password, c.token, string(c.ca)} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// credentials reads the Release's secretRef, nil when it has none.
func (c *Coordinator) credentials(rel *v1alpha1.Release) (*credentials, error) {
	ref := rel.Spec.Source.SecretRef
	if ref == nil {
		return nil, nil
	}
	if c.opts.Secrets == nil {
		return nil, fmt.Errorf("source secretRef %s/%s: this controller reads no Secrets", rel.Namespace, ref.Name)
	}
	s, err := c.opts.Secrets.Secrets(rel.Namespace).Get(ref.Name)
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("source secretRef %s/%s not found", rel.Namespace, ref.Name)
	}
	if err != nil {
		return nil, fmt.Errorf("reading source secretRef %s/%s: %w", rel.Namespace, ref.Name, err)
	}
	creds := &credentials{
		username: string(s.Data[secretKeyUsername]),
		password: string(s.Data[secretKeyPassword]),
		token:    string(s.Data[secretKeyToken]),
		ca:       s.Data[secretKeyCA],
	}
	if len(creds.ca) == 0 {
		creds.ca = s.Data[secretKeyCAFile]
	}
	if len(creds.ca) > 0 && !x509.NewCertPool().AppendCertsFromPEM(creds.ca) {
		return nil, fmt.Errorf("source secretRef %s/%s: %s holds no PEM certificate", rel.Namespace, ref.Name, secretKeyCA)
	}
	return creds, nil
}

// authorize sets the credentials on a request: basic auth with a username, else a bearer token.
func (c *credentials) authorize(req *http.Request) {
	switch {
	case c == nil:
	case c.username != "":
		password := c.password
		if password == "" {
			password = c.token
		}
		req.SetBasicAuth(c.username, password)
	case c.token != "":
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
}

// httpClients caches one HTTP transport per CA bundle; every response body is bounded by the
// limit found in the request's context, and every connection passes the address check of
// netpolicy.go unless allowLinkLocal.
type httpClients struct {
	allowLinkLocal bool
	// resolver resolves host names for the dialer; nil is the default resolver (tests set one).
	resolver *net.Resolver

	mu         sync.Mutex
	transports map[string]*http.Transport
}

// client returns an http.Client trusting creds' CA (and the system roots without one).
func (h *httpClients) client(creds *credentials) (*http.Client, error) {
	tr, err := h.transport(creds)
	if err != nil {
		return nil, err
	}
	return &http.Client{Transport: limitingTransport{next: tr}}, nil
}

func (h *httpClients) transport(creds *credentials) (*http.Transport, error) {
	var ca []byte
	if creds != nil {
		ca = creds.ca
	}
	sum := sha256.Sum256(ca)
	key := hex.EncodeToString(sum[:])
	h.mu.Lock()
	defer h.mu.Unlock()
	if tr, ok := h.transports[key]; ok {
		return tr, nil
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = newDialer(h.allowLinkLocal, h.resolver).DialContext
	if len(ca) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(ca) {
			return nil, errors.New("the CA bundle holds no PEM certificate")
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	if h.transports == nil {
		h.transports = map[string]*http.Transport{}
	}
	h.transports[key] = tr
	return tr, nil
}

type limitKey struct{}

// withLimit puts the download limit into ctx for limitingTransport.
func withLimit(ctx context.Context, limit int64) context.Context {
	return context.WithValue(ctx, limitKey{}, limit)
}

// limitingTransport fails a response body that grows past the context's download limit, or past
// fallback for requests without one (clients that do not pass a context through).
type limitingTransport struct {
	next     http.RoundTripper
	fallback int64
}

func (t limitingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	limit, ok := req.Context().Value(limitKey{}).(int64)
	if !ok {
		limit = t.fallback
	}
	if limit > 0 {
		if resp.ContentLength > limit {
			resp.Body.Close()
			return nil, fmt.Errorf("%w: %s is %d bytes, over the download limit of %d bytes", ErrRefused, redact(req.URL), resp.ContentLength, limit)
		}
		resp.Body = &limitedBody{rc: resp.Body, left: limit, limit: limit, url: redact(req.URL)}
	}
	return resp, nil
}

type limitedBody struct {
	rc          io.ReadCloser
	left, limit int64
	url         string
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// Probe one byte: a body of exactly the limit is fine.
		var one [1]byte
		if n, _ := b.rc.Read(one[:]); n > 0 {
			return 0, fmt.Errorf("%w: %s is over the download limit of %d bytes", ErrRefused, b.url, b.limit)
		}
		return 0, io.EOF
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *limitedBody) Close() error { return b.rc.Close() }

// redact drops the user info and query of a URL for messages.
func redact(u *url.URL) string {
	c := *u
	c.User = nil
	c.RawQuery = ""
	return c.String()
}

// isLoopback reports whether host (with or without a port) is a loopback address or localhost.
func isLoopback(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func isOCI(u string) bool { return strings.HasPrefix(u, "oci://") }

func isHTTPURL(u string) bool {
	return strings.HasPrefix(u, "http://") || strings.HasPrefix(u, "https://")
}
