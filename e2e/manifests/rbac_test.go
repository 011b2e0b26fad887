package manifests

import (
	"context"
	"fmt"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kumodo/convoy/e2e/framework"
)

// controllerUser is the user the controller's service account authenticates as.
const controllerUser = "system:serviceaccount:kube-system:convoy"

// access is one request the controller's service account makes, or must not be able to make.
type access struct {
	group, resource, subresource, verb, namespace string
}

func (a access) String() string {
	r := a.resource
	if a.subresource != "" {
		r += "/" + a.subresource
	}
	if a.group != "" {
		r += "." + a.group
	}
	return fmt.Sprintf("%s %s in %q", a.verb, r, a.namespace)
}

// TestControllerRBAC applies the controller's RBAC of manifests/ for real and asks the API
// server's authorizer (SubjectAccessReview) about every call the controller makes, and about
// calls least privilege must refuse.
func TestControllerRBAC(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	a := newApplier()
	objs := build(t, repoDir(t, "manifests"))
	waitNamespaces(t, ctx, objs)
	applied := 0
	for _, kind := range []string{"ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"} {
		for _, obj := range byKind(objs, kind) {
			if _, err := a.apply(ctx, obj, false); err != nil {
				t.Fatalf("apply %s: %v", id(obj), err)
			}
			applied++
		}
	}
	if applied < 4 {
		t.Fatalf("applied %d RBAC objects, want at least a ClusterRole, a Role and their bindings", applied)
	}

	const convoy, coord, ns = "core.convoy.kumodo.io", "coordination.k8s.io", "team-a"
	allowed := []access{
		// Informers, the finalizer and the sync API's annotation.
		{convoy, "releases", "", "get", ns}, {convoy, "releases", "", "list", ""}, {convoy, "releases", "", "watch", ""},
		{convoy, "releases", "", "update", ns}, {convoy, "releases", "", "patch", ns},
		{convoy, "releases", "status", "patch", ns},
		{convoy, "clusters", "", "list", ""}, {convoy, "clusters", "", "watch", ""},
		{convoy, "clusters", "status", "patch", ns},
		// Server-side apply of a new ReleaseInventory is authorized as patch and create.
		{convoy, "releaseinventories", "", "list", ""}, {convoy, "releaseinventories", "", "watch", ""},
		{convoy, "releaseinventories", "", "create", ns}, {convoy, "releaseinventories", "", "patch", ns},
		{convoy, "releaseinventories", "", "delete", ns}, {convoy, "releaseinventories", "status", "patch", ns},
		{convoy, "releases", "sync", "create", ns},
		{"", "configmaps", "", "list", ""}, {"", "configmaps", "", "watch", ""},
		{"", "secrets", "", "list", ""}, {"", "secrets", "", "watch", ""},
		{"", "events", "", "create", ns}, {"", "events", "", "patch", ns},
		{"authentication.k8s.io", "tokenreviews", "", "create", ""},
		{"authorization.k8s.io", "subjectaccessreviews", "", "create", ""},
		{coord, "leases", "", "get", "kube-system"}, {coord, "leases", "", "list", "kube-system"},
		{coord, "leases", "", "watch", "kube-system"}, {coord, "leases", "", "create", "kube-system"},
		{coord, "leases", "", "update", "kube-system"}, {coord, "leases", "", "delete", "kube-system"},
	}
	denied := []access{
		{convoy, "releases", "", "create", ns}, {convoy, "releases", "", "delete", ns},
		{convoy, "releases", "status", "update", ns},
		{convoy, "clusters", "", "create", ns}, {convoy, "clusters", "", "update", ns}, {convoy, "clusters", "", "delete", ns},
		// The drift loop never forces a sync, and history is for users.
		{convoy, "releases", "forcesync", "create", ns}, {convoy, "releases", "history", "get", ns},
		{"", "secrets", "", "create", ns}, {"", "secrets", "", "update", ns}, {"", "secrets", "", "delete", ns},
		{"", "configmaps", "", "update", ns},
		{"", "events", "", "delete", ns},
		// Leases only in the controller's own namespace.
		{coord, "leases", "", "create", ns}, {coord, "leases", "", "list", ""},
		{"apps", "deployments", "", "create", ns},
		{"", "serviceaccounts", "", "impersonate", ns},
	}
	// The RBAC authorizer sees new bindings through its informers: wait for the first one.
	framework.Eventually(t, 30*time.Second, func() (bool, string) {
		ok, err := allowedFor(ctx, allowed[0])
		return ok, fmt.Sprintf("%v allowed=%v err=%v", allowed[0], ok, err)
	})
	for _, tc := range allowed {
		if ok, err := allowedFor(ctx, tc); err != nil || !ok {
			t.Errorf("%s may not %v (err %v): the controller makes this call", controllerUser, tc, err)
		}
	}
	for _, tc := range denied {
		if ok, err := allowedFor(ctx, tc); err != nil || ok {
			t.Errorf("%s may %v (err %v): more than the controller needs", controllerUser, tc, err)
		}
	}
}

// allowedFor asks the API server whether the controller's service account may make a request.
func allowedFor(ctx context.Context, a access) (bool, error) {
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:   controllerUser,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Group: a.group, Resource: a.resource, Subresource: a.subresource, Verb: a.verb, Namespace: a.namespace,
		},
	}}
	out, err := env.Mgmt.Kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
	if err != nil {
		return false, err
	}
	return out.Status.Allowed, nil
}
