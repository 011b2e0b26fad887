package manifests

import (
	"slices"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
)

// TestTargetClusterRole dry-runs manifests/target/clusterrole.yaml, which users apply to each
// target cluster, and checks it grants what convoy does there.
func TestTargetClusterRole(t *testing.T) {
	objs := decodeFile(t, repoDir(t, "manifests", "target", "clusterrole.yaml"))
	got := dryRunAll(t, objs)
	if t.Failed() {
		t.FailNow()
	}
	for _, w := range []string{"ClusterRole/convoy-target", "ClusterRoleBinding/convoy-target", "ServiceAccount/kube-system/convoy", "Secret/kube-system/convoy-token"} {
		if _, ok := got[w]; !ok {
			t.Errorf("missing %s", w)
		}
	}
	role := typed[rbacv1.ClusterRole](t, got, "ClusterRole/convoy-target")
	tests := []struct {
		name, group, resource string
		verbs                 []string
	}{
		{"read CRDs while waiting for a kind", "apiextensions.k8s.io", "customresourcedefinitions", []string{"get", "list"}},
		{"read namespaces for the dry run", "", "namespaces", []string{"get"}},
		{"impersonate spec.serviceAccountName", "", "serviceaccounts", []string{"impersonate"}},
		{"apply, read and prune a Deployment", "apps", "deployments", []string{"get", "list", "create", "patch", "delete"}},
		{"apply, read and prune a ConfigMap", "", "configmaps", []string{"get", "list", "create", "patch", "delete"}},
		{"run hook Jobs", "batch", "jobs", []string{"get", "list", "create", "patch", "delete"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, verb := range tc.verbs {
				if !grants(role.Rules, tc.group, tc.resource, verb) {
					t.Errorf("ClusterRole convoy-target does not grant %s on %s.%s", verb, tc.resource, tc.group)
				}
			}
		})
	}
	crb := typed[rbacv1.ClusterRoleBinding](t, got, "ClusterRoleBinding/convoy-target")
	want := []rbacv1.Subject{{Kind: "ServiceAccount", Name: "convoy", Namespace: "kube-system"}}
	if crb.RoleRef.Name != role.Name || !slices.Equal(crb.Subjects, want) {
		t.Errorf("ClusterRoleBinding = %+v -> %+v, want %+v -> %s", crb.Subjects, crb.RoleRef, want, role.Name)
	}
}

// grants reports whether a rule allows verb on group/resource (wildcards included).
func grants(rules []rbacv1.PolicyRule, group, resource, verb string) bool {
	for _, r := range rules {
		if (slices.Contains(r.APIGroups, group) || slices.Contains(r.APIGroups, "*")) &&
			(slices.Contains(r.Resources, resource) || slices.Contains(r.Resources, "*")) &&
			(slices.Contains(r.Verbs, verb) || slices.Contains(r.Verbs, "*")) {
			return true
		}
	}
	return false
}
