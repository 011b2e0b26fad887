package main

import (
	"context"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"k8s.io/apiserver/pkg/authorization/authorizer"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/kumodo/convoy/generated/clientset/versioned"
	convoyinformers "github.com/kumodo/convoy/generated/informers/externalversions"
	listers "github.com/kumodo/convoy/generated/listers/core/v1alpha1"
	"github.com/kumodo/convoy/pkg/desired"
	"github.com/kumodo/convoy/pkg/historyapi"
	"github.com/kumodo/convoy/pkg/observer"
	"github.com/kumodo/convoy/pkg/renderstore"
	"github.com/kumodo/convoy/pkg/sharding"
	"github.com/kumodo/convoy/pkg/syncapi"
)

// serviceAccountTokenFile is where a pod finds its service account token.
const serviceAccountTokenFile = "/var/run/secrets/kubernetes.io/serviceaccount/token"

// observerOptions are the flags of the observer and the sync API.
type observerOptions struct {
	healthInterval    time.Duration
	syncAPIAddr       string
	tlsCertFile       string
	tlsPrivateKeyFile string
	syncAPIURL        string
	syncAPICAFile     string
	syncAPITokenFile  string
	syncAPIRateLimit  float64
	syncAPIRateBurst  int
}

// addObserverFlags registers the observer's and the sync API's flags.
func addObserverFlags(fs *flag.FlagSet, o *observerOptions) {
	fs.DurationVar(&o.healthInterval, "health-interval", 30*time.Second, "how often the health loop polls each Release")
	fs.StringVar(&o.syncAPIAddr, "sync-api-addr", ":8443", "address of the HTTPS sync API (POST /sync, GET /history); empty disables it")
	fs.StringVar(&o.tlsCertFile, "tls-cert-file", "", "serving certificate of the sync API; empty with --tls-private-key-file: self-signed")
	fs.StringVar(&o.tlsPrivateKeyFile, "tls-private-key-file", "", "private key of --tls-cert-file")
	fs.StringVar(&o.syncAPIURL, "sync-api-url", "", "sync API the drift loop requests syncs from; empty: this process's own (--sync-api-addr)")
	fs.StringVar(&o.syncAPICAFile, "sync-api-ca-file", "", "CA bundle to verify --sync-api-url; empty: this process's serving certificate, else the system roots")
	fs.StringVar(&o.syncAPITokenFile, "sync-api-token-file", serviceAccountTokenFile, "bearer token the drift loop sends to the sync API (re-read on every request)")
	fs.Float64Var(&o.syncAPIRateLimit, "sync-api-rate-limit", 5, "sync API requests per second allowed per user; 0: no limit")
	fs.IntVar(&o.syncAPIRateBurst, "sync-api-rate-burst", 50, "burst of --sync-api-rate-limit")
}

// syncAPIServer is a started sync API listener and how in-process clients reach it.
type syncAPIServer struct {
	run func(context.Context) error
	// url and roots reach and verify this server from the same host.
	url   string
	roots *x509.CertPool
}

// setupSyncAPI builds the sync API (delegating authn/authz on the management cluster) with its
// endpoints, POST /sync and GET /history (the render history from store, for kubectl convoy
// history), and listens on --sync-api-addr; nil when the address is empty.
func setupSyncAPI(logger klog.Logger, o observerOptions, kube kubernetes.Interface, convoy versioned.Interface,
	store renderstore.Store, releases listers.ReleaseLister) (*syncAPIServer, error) {
	if o.syncAPIAddr == "" {
		return nil, nil
	}
	authn, authz, err := syncapi.NewDelegatingAuth(kube)
	if err != nil {
		return nil, err
	}
	srv, err := syncapi.New(syncapi.Config{Authenticator: authn, Authorizer: authz, RateLimit: o.syncAPIRateLimit, Burst: o.syncAPIRateBurst})
	if err != nil {
		return nil, err
	}
	srv.Handle(syncapi.SyncPath, syncapi.NewSyncHandler(convoy, nil), syncapi.SyncAttributes)
	srv.Handle(historyapi.Path, historyapi.NewHandler(store, releases), historyAttributes)
	host, _, err := net.SplitHostPort(o.syncAPIAddr)
	if err != nil {
		return nil, fmt.Errorf("--sync-api-addr %q: %w", o.syncAPIAddr, err)
	}
	cert, roots, err := syncapi.ServingCert(o.tlsCertFile, o.tlsPrivateKeyFile, host)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", o.syncAPIAddr)
	if err != nil {
		return nil, fmt.Errorf("listening on --sync-api-addr %s: %w", o.syncAPIAddr, err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	logger.Info("Serving the sync API", "addr", ln.Addr().String(), "selfSigned", o.tlsCertFile == "")
	return &syncAPIServer{
		run:   func(ctx context.Context) error { return srv.Serve(ctx, ln, cert) },
		url:   "https://" + net.JoinHostPort(host, port),
		roots: roots,
	}, nil
}

// setupObserver builds the observer with the process's render path and render store (the release
// controller's) and the sync API client of its drift loop.
func setupObserver(ctx context.Context, o observerOptions, convoy versioned.Interface, convoyFactory convoyinformers.SharedInformerFactory,
	kubeFactory kubeinformers.SharedInformerFactory, renderer *desired.Renderer, store renderstore.Store, gate sharding.Gate,
	api *syncAPIServer) (*observer.Controller, error) {
	requester, err := syncRequester(o, api)
	if err != nil {
		return nil, err
	}
	cfg := observer.Config{HealthInterval: o.healthInterval, Store: store}
	if requester != nil {
		cfg.SyncRequester = requester
	} else {
		klog.FromContext(ctx).Info("No sync API for the drift loop: drift in Automatic mode is repaired at the next interval only")
	}
	v1 := convoyFactory.Core().V1alpha1()
	return observer.NewController(ctx, convoy, v1.Releases(), v1.ReleaseInventories(), v1.Clusters(),
		kubeFactory.Core().V1().ConfigMaps(), renderer, gate, cfg)
}

// historyAttributes are the authorization attributes of GET /history (get on releases/history);
// a malformed request is answered by the sync API server before authorization.
func historyAttributes(r *http.Request) (authorizer.AttributesRecord, error) {
	a, err := historyapi.Attributes(r)
	var se *historyapi.StatusError
	if errors.As(err, &se) {
		return a, syncapi.Errorf(se.Code, "%s", se.Message)
	}
	return a, err
}

// syncRequester returns the drift loop's sync API client: --sync-api-url, else this process's
// own sync API; nil when there is neither.
func syncRequester(o observerOptions, api *syncAPIServer) (*syncapi.Client, error) {
	url, roots := o.syncAPIURL, (*x509.CertPool)(nil)
	if url == "" && api != nil {
		url, roots = api.url, api.roots
		if roots == nil && o.tlsCertFile != "" {
			pem, err := os.ReadFile(o.tlsCertFile)
			if err != nil {
				return nil, fmt.Errorf("--tls-cert-file: %w", err)
			}
			roots = x509.NewCertPool()
			roots.AppendCertsFromPEM(pem)
		}
	}
	if url == "" {
		return nil, nil
	}
	if o.syncAPICAFile != "" {
		pem, err := os.ReadFile(o.syncAPICAFile)
		if err != nil {
			return nil, fmt.Errorf("--sync-api-ca-file: %w", err)
		}
		roots = x509.NewCertPool()
		if !roots.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--sync-api-ca-file %s holds no PEM certificate", o.syncAPICAFile)
		}
	}
	return syncapi.NewClient(url, o.syncAPITokenFile, roots), nil
}
