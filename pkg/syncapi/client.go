package syncapi

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// Client calls POST /sync of a sync API with a bearer token read from a file on every call
// (projected service account tokens are rotated on disk).
type Client struct {
	// URL is the sync API's base URL, e.g. https://127.0.0.1:8443.
	URL string
	// TokenFile holds the bearer token.
	TokenFile string
	// HTTP is the client used; nil builds one with RootCAs.
	HTTP *http.Client
}

// NewClient returns a Client trusting roots (nil: the system roots).
func NewClient(baseURL, tokenFile string, roots *x509.CertPool) *Client {
	return &Client{URL: baseURL, TokenFile: tokenFile, HTTP: &http.Client{
		Timeout: 30 * time.Second,
		Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
			Proxy:           http.ProxyFromEnvironment,
		},
	}}
}

// RequestSync asks for a sync of the Release namespace/name and returns the request time the API
// recorded. Any answer but 202 is an error naming the status and the API's message.
func (c *Client) RequestSync(ctx context.Context, namespace, name string, force bool) (string, error) {
	token, err := os.ReadFile(c.TokenFile)
	if err != nil {
		return "", fmt.Errorf("reading the sync API token: %w", err)
	}
	q := url.Values{"namespace": {namespace}, "name": {name}}
	if force {
		q.Set("force", "true")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(c.URL, "/")+SyncPath+"?"+q.Encode(), nil)
	if err != nil {
		return "", fmt.Errorf("building the sync request: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
	httpClient := c.HTTP
	if httpClient == nil {
		httpClient = http.DefaultClient
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("POST %s: %w", SyncPath, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return "", fmt.Errorf("reading the sync API answer: %w", err)
	}
	if resp.StatusCode != http.StatusAccepted {
		var e errorBody
		if json.Unmarshal(body, &e) == nil && e.Message != "" {
			return "", fmt.Errorf("POST %s: %s: %s", SyncPath, resp.Status, e.Message)
		}
		return "", fmt.Errorf("POST %s: %s", SyncPath, resp.Status)
	}
	var out SyncResponse
	if err := json.Unmarshal(body, &out); err != nil {
		return "", fmt.Errorf("decoding the sync API answer: %w", err)
	}
	return out.RequestedAt, nil
}
