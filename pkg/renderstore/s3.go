package renderstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// s3Timeout bounds one S3 call, so a store that does not answer makes the attempt fail with
// StoreUnavailable instead of blocking a worker.
const s3Timeout = 30 * time.Second

// s3Blobs keeps blobs as objects "<prefix>/<key>" in a bucket of an S3-compatible server. A PUT
// replaces an object atomically.
type s3Blobs struct {
	client   *minio.Client
	bucket   string
	prefix   string // "" or ending in "/"
	endpoint string
}

// newS3Blobs parses s3://bucket/prefix?endpoint=host:port&region=R&tls=false.
func newS3Blobs(u *url.URL) (*s3Blobs, error) {
	bucket := u.Host
	if bucket == "" {
		return nil, errors.New("no bucket (s3://bucket/prefix)")
	}
	prefix := strings.Trim(u.Path, "/")
	if prefix != "" {
		if path.Clean(prefix) != prefix || strings.HasPrefix(prefix, "..") || strings.Contains(prefix, "/../") {
			return nil, fmt.Errorf("invalid prefix %q", prefix)
		}
		prefix += "/"
	}
	q := u.Query()
	endpoint := q.Get("endpoint")
	if endpoint == "" {
		endpoint = "s3.amazonaws.com"
	}
	secure := true
	if v := q.Get("tls"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, fmt.Errorf("tls=%q: %w", v, err)
		}
		secure = b
	}
	transport, err := minio.DefaultTransport(secure)
	if err != nil {
		return nil, fmt.Errorf("building the HTTP transport: %w", err)
	}
	transport.ResponseHeaderTimeout = s3Timeout
	lookup := minio.BucketLookupAuto
	if q.Get("pathStyle") == "true" {
		lookup = minio.BucketLookupPath
	}
	client, err := minio.New(endpoint, &minio.Options{
		Creds: credentials.NewChainCredentials([]credentials.Provider{
			&credentials.EnvAWS{}, &credentials.EnvMinio{}, &credentials.IAM{Client: &http.Client{Transport: transport}},
		}),
		Secure:       secure,
		Region:       q.Get("region"),
		Transport:    transport,
		BucketLookup: lookup,
		// A few quick retries; the release controller's backoff handles longer outages.
		MaxRetries: 3,
	})
	if err != nil {
		return nil, fmt.Errorf("building the S3 client: %w", err)
	}
	return &s3Blobs{client: client, bucket: bucket, prefix: prefix, endpoint: endpoint}, nil
}

func (s *s3Blobs) location() string {
	return "s3://" + s.bucket + "/" + s.prefix + " at " + s.endpoint
}

// object maps a key to its object name, refusing any key that would leave the prefix.
func (s *s3Blobs) object(key string) (string, error) {
	name := s.prefix + key
	if err := checkContained(s.prefix, name); err != nil {
		return "", err
	}
	return name, nil
}

// notFound reports whether err is S3's "no such key".
func notFound(err error) bool {
	resp := minio.ToErrorResponse(err)
	return resp.Code == minio.NoSuchKey || resp.StatusCode == http.StatusNotFound && resp.Code != minio.NoSuchBucket
}

func (s *s3Blobs) get(ctx context.Context, key string) ([]byte, error) {
	name, err := s.object(key)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, s3Timeout)
	defer cancel()
	obj, err := s.client.GetObject(ctx, s.bucket, name, minio.GetObjectOptions{})
	if err != nil {
		return nil, s.wrap("reading", key, err)
	}
	defer obj.Close()
	data, err := io.ReadAll(io.LimitReader(obj, maxBlobSize+1))
	if err != nil {
		return nil, s.wrap("reading", key, err)
	}
	return data, nil
}

// wrap turns "no such key" into ErrNotFound and adds context to any other error.
func (s *s3Blobs) wrap(op, key string, err error) error {
	if notFound(err) {
		return fmt.Errorf("%s: %w", key, ErrNotFound)
	}
	return fmt.Errorf("%s %s: %w", op, key, err)
}

func (s *s3Blobs) exists(ctx context.Context, key string) (bool, error) {
	name, err := s.object(key)
	if err != nil {
		return false, err
	}
	ctx, cancel := context.WithTimeout(ctx, s3Timeout)
	defer cancel()
	_, err = s.client.StatObject(ctx, s.bucket, name, minio.StatObjectOptions{})
	if notFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("checking %s: %w", key, err)
	}
	return true, nil
}

func (s *s3Blobs) put(ctx context.Context, key string, data []byte, contentType string) error {
	name, err := s.object(key)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, s3Timeout)
	defer cancel()
	if _, err := s.client.PutObject(ctx, s.bucket, name, bytes.NewReader(data), int64(len(data)),
		minio.PutObjectOptions{ContentType: contentType}); err != nil {
		return fmt.Errorf("writing %s: %w", key, err)
	}
	return nil
}

func (s *s3Blobs) remove(ctx context.Context, key string) error {
	name, err := s.object(key)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, s3Timeout)
	defer cancel()
	if err := s.client.RemoveObject(ctx, s.bucket, name, minio.RemoveObjectOptions{}); err != nil && !notFound(err) {
		return fmt.Errorf("deleting %s: %w", key, err)
	}
	return nil
}

func (s *s3Blobs) list(ctx context.Context, prefix string) ([]string, error) {
	name, err := s.object(prefix)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, s3Timeout)
	defer cancel()
	var keys []string
	for obj := range s.client.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: name, Recursive: true}) {
		if obj.Err != nil {
			return nil, fmt.Errorf("listing %s: %w", prefix, obj.Err)
		}
		keys = append(keys, strings.TrimPrefix(obj.Key, s.prefix))
	}
	return keys, nil
}
