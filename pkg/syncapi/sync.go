package syncapi

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
	"github.com/kumodo/convoy/generated/clientset/versioned"
)

// SyncPath is the path of the sync endpoint.
const SyncPath = "/sync"

// Subresources authorized for /sync and /sync?force=true.
const (
	SyncSubresource      = "sync"
	ForceSyncSubresource = "forcesync"
)

// SyncResponse is the body of a 202 answer of /sync.
type SyncResponse struct {
	Namespace   string `json:"namespace"`
	Name        string `json:"name"`
	Force       bool   `json:"force"`
	RequestedAt string `json:"requestedAt"`
}

// syncRequest is a parsed /sync request.
type syncRequest struct {
	namespace, name string
	force           bool
}

// parseSync checks the method and query of a /sync request.
func parseSync(r *http.Request) (syncRequest, error) {
	if r.Method != http.MethodPost {
		return syncRequest{}, Errorf(http.StatusMethodNotAllowed, "%s is not allowed: use POST", r.Method)
	}
	q := r.URL.Query()
	req := syncRequest{namespace: q.Get("namespace"), name: q.Get("name")}
	if errs := validation.IsDNS1123Label(req.namespace); len(errs) > 0 {
		return syncRequest{}, Errorf(http.StatusBadRequest, "query parameter namespace %q: %v", req.namespace, errs)
	}
	if errs := validation.IsDNS1123Subdomain(req.name); len(errs) > 0 {
		return syncRequest{}, Errorf(http.StatusBadRequest, "query parameter name %q: %v", req.name, errs)
	}
	if f := q.Get("force"); f != "" {
		force, err := strconv.ParseBool(f)
		if err != nil {
			return syncRequest{}, Errorf(http.StatusBadRequest, "query parameter force %q is not a boolean", f)
		}
		req.force = force
	}
	return req, nil
}

// SyncAttributes are the authorization attributes of a /sync request: create on
// releases/sync (releases/forcesync for force) of the named Release.
func SyncAttributes(r *http.Request) (authorizer.AttributesRecord, error) {
	req, err := parseSync(r)
	if err != nil {
		return authorizer.AttributesRecord{}, err
	}
	sub := SyncSubresource
	if req.force {
		sub = ForceSyncSubresource
	}
	return authorizer.AttributesRecord{
		Verb:            "create",
		APIGroup:        v1alpha1.SchemeGroupVersion.Group,
		APIVersion:      v1alpha1.SchemeGroupVersion.Version,
		Resource:        "releases",
		Subresource:     sub,
		Namespace:       req.namespace,
		Name:            req.name,
		ResourceRequest: true,
		Path:            r.URL.Path,
	}, nil
}

// NewSyncHandler returns the /sync handler: it sets the Release's sync annotation to the request
// time. Mount it with Handle(SyncPath, NewSyncHandler(...), SyncAttributes).
func NewSyncHandler(convoy versioned.Interface, clk clock.PassiveClock) http.Handler {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &syncHandler{convoy: convoy, clock: clk}
}

type syncHandler struct {
	convoy versioned.Interface
	clock  clock.PassiveClock
}

func (h *syncHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	req, err := parseSync(r)
	if err != nil {
		WriteError(w, err)
		return
	}
	ctx := r.Context()
	releases := h.convoy.CoreV1alpha1().Releases(req.namespace)
	rel, err := releases.Get(ctx, req.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		WriteError(w, Errorf(http.StatusNotFound, "release %s/%s not found", req.namespace, req.name))
		return
	}
	if err != nil {
		WriteError(w, fmt.Errorf("reading release %s/%s: %w", req.namespace, req.name, err))
		return
	}
	annotation, handled := v1alpha1.SyncRequestedAtAnnotation, rel.Status.LastHandledSyncAt
	if req.force {
		annotation, handled = v1alpha1.ForceSyncRequestedAtAnnotation, rel.Status.LastHandledForceSyncAt
	}
	at := requestTime(h.clock.Now(), handled)
	value := at.Format(time.RFC3339)
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, annotation, value)
	// The resourceVersion of the Get is not sent: a newer request simply replaces an older one.
	if _, err := releases.Patch(ctx, req.name, types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "convoy-sync-api"}); err != nil {
		if apierrors.IsNotFound(err) {
			WriteError(w, Errorf(http.StatusNotFound, "release %s/%s not found", req.namespace, req.name))
			return
		}
		WriteError(w, fmt.Errorf("patching release %s/%s: %w", req.namespace, req.name, err))
		return
	}
	user := "unknown"
	if u, ok := request.UserFrom(ctx); ok {
		user = u.GetName()
	}
	klog.FromContext(ctx).Info("Sync requested", "release", klog.KRef(req.namespace, req.name), "force", req.force, "user", user, "at", value)
	WriteJSON(w, http.StatusAccepted, SyncResponse{Namespace: req.namespace, Name: req.name, Force: req.force, RequestedAt: value})
}

// requestTime is the time written to the annotation: now at second precision (status times are
// stored at second precision, so a finer time would never compare as handled), and always after
// the last handled request, so a request made within the second a previous one was handled in
// is still pending.
func requestTime(now time.Time, handled *metav1.Time) time.Time {
	at := now.UTC().Truncate(time.Second)
	if handled != nil && !at.After(handled.Time) {
		at = handled.Time.UTC().Truncate(time.Second).Add(time.Second)
	}
	return at
}
