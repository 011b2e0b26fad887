package syncapi

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/klog/v2"

	"github.com/kumodo/convoy/pkg/metrics"
)

// Requests counts the sync API's answers by path and status code.
var Requests = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "convoy_sync_api_requests_total",
	Help: "Requests to the sync API, by path and HTTP status code.",
}, []string{"path", "code"})

var registerOnce sync.Once

// RegisterMetrics registers the sync API's metrics with metrics.Registry (once).
func RegisterMetrics() {
	registerOnce.Do(func() { metrics.Registry.MustRegister(Requests) })
}

// AttributesFunc returns the authorization attributes of a request (the user is filled in by the
// Server), or an *Error that rejects it before authorization.
type AttributesFunc func(*http.Request) (authorizer.AttributesRecord, error)

// Config configures a Server.
type Config struct {
	// Authenticator authenticates requests (bearer tokens by TokenReview, see NewDelegatingAuth).
	Authenticator authenticator.Request
	// Authorizer authorizes requests (SubjectAccessReview, see NewDelegatingAuth).
	Authorizer authorizer.Authorizer
	// RateLimit is the sustained requests per second one user may make; Burst its burst.
	// Zero RateLimit disables the limit.
	RateLimit float64
	Burst     int
}

// Server serves authenticated, authorized and rate-limited endpoints over HTTPS.
type Server struct {
	cfg     Config
	mux     *http.ServeMux
	limiter *userLimiter
}

// New returns a Server without endpoints; mount them with Handle (NewSyncHandler for /sync).
func New(cfg Config) (*Server, error) {
	if cfg.Authenticator == nil || cfg.Authorizer == nil {
		return nil, errors.New("sync API: an authenticator and an authorizer are required")
	}
	RegisterMetrics()
	s := &Server{cfg: cfg, mux: http.NewServeMux()}
	if cfg.RateLimit > 0 {
		burst := max(cfg.Burst, 1)
		s.limiter = newUserLimiter(rate.Limit(cfg.RateLimit), burst)
	}
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.answer(w, "other", Errorf(http.StatusNotFound, "no endpoint %s", r.URL.Path))
	})
	return s, nil
}

// Handle mounts h at path. Each request is authenticated (401), given its attributes by attrs
// (whose *Error answers at once), rate-limited per user (429) and authorized (403) before h
// runs; h finds the user with k8s.io/apiserver/pkg/endpoints/request.UserFrom.
func (s *Server) Handle(path string, h http.Handler, attrs AttributesFunc) {
	s.mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
		defer func() { Requests.WithLabelValues(path, strconv.Itoa(rec.code)).Inc() }()
		if err := s.admit(r, attrs, &r); err != nil {
			WriteError(rec, err)
			return
		}
		h.ServeHTTP(rec, r)
	})
}

// admit authenticates, rate-limits and authorizes r; on success *out is r with the user in its
// context.
func (s *Server) admit(r *http.Request, attrs AttributesFunc, out **http.Request) error {
	logger := klog.FromContext(r.Context())
	if !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
		return Errorf(http.StatusUnauthorized, "a bearer token is required")
	}
	resp, ok, err := s.cfg.Authenticator.AuthenticateRequest(r)
	if err != nil {
		logger.V(2).Info("Sync API authentication failed", "err", err)
		return Errorf(http.StatusUnauthorized, "the bearer token could not be authenticated")
	}
	if !ok || resp == nil || resp.User == nil {
		return Errorf(http.StatusUnauthorized, "the bearer token is not valid")
	}
	user := resp.User
	a, err := attrs(r)
	if err != nil {
		return err
	}
	if s.limiter != nil && !s.limiter.allow(user.GetName()) {
		return Errorf(http.StatusTooManyRequests, "rate limit of user %s exceeded", user.GetName())
	}
	a.User = user
	decision, reason, err := s.cfg.Authorizer.Authorize(r.Context(), a)
	if err != nil {
		logger.Error(err, "Sync API authorization failed", "user", user.GetName())
		return Errorf(http.StatusInternalServerError, "authorization failed: %v", err)
	}
	if decision != authorizer.DecisionAllow {
		msg := fmt.Sprintf("user %q cannot %s resource %q in API group %q in the namespace %q",
			user.GetName(), a.Verb, a.Resource+"/"+a.Subresource, a.APIGroup, a.Namespace)
		if reason != "" {
			msg += ": " + reason
		}
		return Errorf(http.StatusForbidden, "%s", msg)
	}
	*out = r.WithContext(request.WithUser(r.Context(), user))
	return nil
}

// answer writes err and counts it under path.
func (s *Server) answer(w http.ResponseWriter, path string, err error) {
	rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
	WriteError(rec, err)
	Requests.WithLabelValues(path, strconv.Itoa(rec.code)).Inc()
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Serve serves HTTPS on ln with cert until ctx is done, then shuts down gracefully.
func (s *Server) Serve(ctx context.Context, ln net.Listener, cert tls.Certificate) error {
	srv := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.ServeTLS(ln, "", "") }()
	select {
	case err := <-errc:
		return fmt.Errorf("sync API: %w", err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("sync API shutdown: %w", err)
	}
	return nil
}

// statusRecorder remembers the status code written, for the metrics.
type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.code = code
	r.ResponseWriter.WriteHeader(code)
}

// userLimiter keeps one token bucket per user name. Buckets idle for limiterIdle are dropped.
type userLimiter struct {
	limit rate.Limit
	burst int

	mu       sync.Mutex
	limiters map[string]*userBucket
	lastGC   time.Time
}

type userBucket struct {
	limiter  *rate.Limiter
	lastSeen time.Time
}

const limiterIdle = 10 * time.Minute

func newUserLimiter(limit rate.Limit, burst int) *userLimiter {
	return &userLimiter{limit: limit, burst: burst, limiters: map[string]*userBucket{}, lastGC: time.Now()}
}

// allow reports whether user may make a request now.
func (l *userLimiter) allow(user string) bool {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.lastGC) > limiterIdle {
		for u, b := range l.limiters {
			if now.Sub(b.lastSeen) > limiterIdle {
				delete(l.limiters, u)
			}
		}
		l.lastGC = now
	}
	b, ok := l.limiters[user]
	if !ok {
		b = &userBucket{limiter: rate.NewLimiter(l.limit, l.burst)}
		l.limiters[user] = b
	}
	b.lastSeen = now
	return b.limiter.AllowN(now, 1)
}
