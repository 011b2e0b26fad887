package framework

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// Render store backends the controller can run with; CONVOY_E2E_RENDER_STORE picks one for the
// whole run (default file).
const (
	// StoreFile is a directory in the work dir: file://<workdir>/renders.
	StoreFile = "file"
	// StoreS3 is the bucket of the versitygw server the harness starts.
	StoreS3 = "s3"
	// StoreNone runs the controller without a render store.
	StoreNone = "none"
)

const (
	binVersitygw = "versitygw"
	s3Bucket     = "convoy"
	s3Region     = "us-east-1"
	s3AccessKey  = "convoy-e2e"
	s3SecretKey  = "convoy-e2e-secret"
	s3ReadyWait  = 30 * time.Second
	// renderStoreFlag is the controller's flag naming its render store.
	renderStoreFlag = "--render-store="
	s3StorePrefix   = "renders"
)

// S3Server is a real S3-compatible server for the render store: versitygw with its posix backend
// in the work directory, listening on 127.0.0.1. Tests may Stop and Start it to simulate an outage;
// its data survives.
type S3Server struct {
	// Endpoint is host:port of the S3 API (plain HTTP).
	Endpoint string
	// Bucket is the bucket the render store uses.
	Bucket string

	bin, dataDir, metaDir, logPath string
	mu                             sync.Mutex
	proc                           *process
}

// newS3Server prepares versitygw in dir; Start runs it.
func newS3Server(bin, dir, logDir string) (*S3Server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	s := &S3Server{
		Endpoint: "127.0.0.1:" + strconv.Itoa(port), Bucket: s3Bucket, bin: bin,
		dataDir: filepath.Join(dir, "data"), metaDir: filepath.Join(dir, "meta"), logPath: filepath.Join(logDir, "versitygw.log"),
	}
	for _, d := range []string{s.dataDir, s.metaDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("create versitygw directory: %w", err)
		}
	}
	return s, nil
}

// URL is the render store URL of the bucket under prefix.
func (s *S3Server) URL(prefix string) string {
	return fmt.Sprintf("s3://%s/%s?endpoint=%s&region=%s&tls=false&pathStyle=true", s.Bucket, prefix, s.Endpoint, s3Region)
}

// Env is the environment a client of the store needs: the credentials.
func (s *S3Server) Env() []string {
	return []string{"AWS_ACCESS_KEY_ID=" + s3AccessKey, "AWS_SECRET_ACCESS_KEY=" + s3SecretKey}
}

// Start runs versitygw, waits until it answers and creates the bucket if it does not exist.
func (s *S3Server) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc != nil && !s.proc.exited() {
		return fmt.Errorf("versitygw already running (pid %d)", s.proc.pid())
	}
	// The sidecar directory keeps object metadata out of extended attributes, which tmpfs lacks.
	proc, err := startProcess("versitygw", s.logPath, nil, s.bin,
		"--access", s3AccessKey, "--secret", s3SecretKey, "--region", s3Region, "--port", s.Endpoint,
		"posix", "--sidecar", s.metaDir, s.dataDir)
	if err != nil {
		return err
	}
	s.proc = proc
	client, err := minio.New(s.Endpoint, &minio.Options{
		Creds: credentials.NewStaticV4(s3AccessKey, s3SecretKey, ""), Region: s3Region, BucketLookup: minio.BucketLookupPath, MaxRetries: 1,
	})
	if err != nil {
		return fmt.Errorf("S3 client: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, s3ReadyWait)
	defer cancel()
	for {
		exists, err := client.BucketExists(ctx, s.Bucket)
		if err == nil && exists {
			return nil
		}
		if err == nil {
			if err = client.MakeBucket(ctx, s.Bucket, minio.MakeBucketOptions{Region: s3Region}); err == nil {
				return nil
			}
		}
		if proc.exited() {
			return proc.exitError()
		}
		select {
		case <-ctx.Done():
			_ = proc.kill()
			return fmt.Errorf("versitygw not ready (log %s, last error %v): %w", s.logPath, err, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Stop ends versitygw (SIGTERM, then SIGKILL); Start brings it back with the same data.
func (s *S3Server) Stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return nil
	}
	if err := s.proc.stop(10 * time.Second); err != nil {
		return fmt.Errorf("stop versitygw: %w", err)
	}
	return nil
}

// renderStoreKind returns the backend of the run: $CONVOY_E2E_RENDER_STORE, default file.
func renderStoreKind() (string, error) {
	switch k := os.Getenv("CONVOY_E2E_RENDER_STORE"); k {
	case "", StoreFile:
		return StoreFile, nil
	case StoreS3, StoreNone:
		return k, nil
	default:
		return "", fmt.Errorf("CONVOY_E2E_RENDER_STORE=%q: want %s, %s or %s", k, StoreFile, StoreS3, StoreNone)
	}
}

// startRenderStore starts versitygw and configures the controller's --render-store for the run's
// backend. versitygw runs whatever the backend, so tests can run the controller with either.
func (e *Env) startRenderStore(ctx context.Context, bins, logDir string) error {
	kind, err := renderStoreKind()
	if err != nil {
		return err
	}
	if err := requireFiles(bins, binVersitygw); err != nil {
		return err
	}
	if e.S3, err = newS3Server(filepath.Join(bins, binVersitygw), filepath.Join(e.WorkDir, "s3"), logDir); err != nil {
		return err
	}
	if err := e.S3.Start(ctx); err != nil {
		return err
	}
	e.FileStoreURL = "file://" + filepath.Join(e.WorkDir, "renders")
	switch kind {
	case StoreFile:
		e.RenderStoreURL = e.FileStoreURL
	case StoreS3:
		e.RenderStoreURL = e.S3.URL(s3StorePrefix)
	}
	return nil
}

// S3StoreURL is the render store URL of the run's S3 bucket.
func (e *Env) S3StoreURL() string { return e.S3.URL(s3StorePrefix) }

// configureRenderStore gives the controller its --render-store flag and the S3 credentials.
func (c *Controller) configureRenderStore(url string, s3 *S3Server) {
	c.setRenderStore(url)
	if s3 != nil {
		c.env = append(c.env, s3.Env()...)
	}
}

// setRenderStore replaces the --render-store flag ("" removes it).
func (c *Controller) setRenderStore(url string) {
	args := c.args[:0:0]
	for _, a := range c.args {
		if !strings.HasPrefix(a, renderStoreFlag) {
			args = append(args, a)
		}
	}
	if url != "" {
		args = append(args, renderStoreFlag+url)
	}
	c.args = args
}

// RestartWithRenderStore restarts the controller with --render-store=url ("" for none). Tests
// that run it with another backend than the run's restore it with RestartWithRenderStore of
// Env.RenderStoreURL; they must not be parallel.
func (c *Controller) RestartWithRenderStore(url string) error {
	return c.restart(func() { c.setRenderStore(url) })
}

// RenderStoreURL returns the controller's current --render-store ("" for none).
func (c *Controller) RenderStoreURL() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, a := range c.args {
		if v, ok := strings.CutPrefix(a, renderStoreFlag); ok {
			return v
		}
	}
	return ""
}

// BinPath returns the path of a binary of the bin directory (e.g. kubectl-convoy).
func BinPath(name string) (string, error) {
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	p := filepath.Join(binDir(root), name)
	if _, err := os.Stat(p); err != nil {
		return "", errors.New(name + " is not built: run make build")
	}
	return p, nil
}
