package badinput

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	convoyv1alpha1 "github.com/kumodo/convoy/apis/core/v1alpha1"
	"github.com/kumodo/convoy/e2e/framework"
)

// Tenant isolation (issue 9, item 3): a Release reaches only what its Cluster allows, never another
// Release's objects, and hooks of every phase pass the same checks as applied objects.

// updateCluster changes Cluster ns/name with mutate.
func updateCluster(t *testing.T, ns, name string, mutate func(*convoyv1alpha1.Cluster)) {
	t.Helper()
	clusters := env.Convoy().CoreV1alpha1().Clusters(ns)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cl, err := clusters.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		mutate(cl)
		_, err = clusters.Update(ctx, cl, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("update Cluster %s/%s: %v", ns, name, err)
	}
}

// clusterRoleDoc is a ClusterRole manifest (cluster-scoped) that reads ConfigMaps.
func clusterRoleDoc(name string) string {
	return framework.Doc(map[string]any{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
		"metadata": map[string]any{"name": name},
		"rules":    []any{map[string]any{"apiGroups": []any{""}, "resources": []any{"configmaps"}, "verbs": []any{"get"}}},
	})
}

// targetNamespace creates namespace name on target for the test, removed at its end.
func targetNamespace(t *testing.T, target *framework.APIServer, name string) {
	t.Helper()
	if _, err := target.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s on %s: %v", name, target.Name, err)
	}
	t.Cleanup(func() { _ = target.Kube.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{}) })
}

// clusterRoleAbsent is a condition that ClusterRole name is not on the bare target.
func clusterRoleAbsent(name string) (bool, string) {
	return framework.NotFound("ClusterRole "+name+" on bare", func() error {
		_, err := env.Bare.Kube.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{})
		return err
	})
}

// configMapAbsent is a condition that ConfigMap ns/name is not on the bare target.
func configMapAbsent(ns, name string) (bool, string) {
	return framework.NotFound("ConfigMap "+ns+"/"+name+" on bare", func() error {
		_, err := env.Bare.Kube.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
		return err
	})
}

// TestTenantClusterScoped: a cluster-scoped object is Unappliable, and not created, until the
// Cluster sets allowClusterScoped.
func TestTenantClusterScoped(t *testing.T) {
	t.Parallel()
	ns := env.NewNamespace(t)
	role := ns + "-reader"
	env.CreateSource(t, ns, "src", map[string]string{"app.yaml": framework.Docs(keepDoc, clusterRoleDoc(role))})
	env.CreateConfigMapRelease(t, ns, release, "bare", "src")
	r := env.WaitApplied(t, ns, release, convoyv1alpha1.ReasonUnappliable, applyTimeout,
		framework.MessageContains("ClusterRole "+role, "needs Cluster spec.allowClusterScoped"))
	recordResult("tenant-cluster-scoped", convoyv1alpha1.ReasonUnappliable, framework.AppliedCondition(r).Message)
	waitEvent(t, ns, release, convoyv1alpha1.ReasonUnappliable, "needs Cluster spec.allowClusterScoped")
	framework.Consistently(t, quietPeriod, func() (bool, string) { return clusterRoleAbsent(role) })
	env.CheckNothingApplied(t, env.Bare, ns, release)

	updateCluster(t, ns, "bare", func(cl *convoyv1alpha1.Cluster) { cl.Spec.AllowClusterScoped = true })
	env.WaitApplied(t, ns, release, convoyv1alpha1.ReasonApplied, applyTimeout, nil)
	if _, err := env.Bare.Kube.RbacV1().ClusterRoles().Get(ctx, role, metav1.GetOptions{}); err != nil {
		t.Errorf("ClusterRole %s after allowClusterScoped: %v", role, err)
	}
	checkController(t)
}

// TestTenantOtherNamespace: an object in a namespace other than the target namespace is
// Unappliable until the Cluster lists the namespace in allowedNamespaces; one not listed stays
// refused.
func TestTenantOtherNamespace(t *testing.T) {
	t.Parallel()
	ns := env.NewNamespace(t)
	extra := ns + "-extra"
	targetNamespace(t, env.Bare, extra)
	env.CreateSource(t, ns, "src", map[string]string{"app.yaml": framework.Docs(keepDoc, withNamespace(framework.ConfigMapDoc("elsewhere", nil, nil), extra))})
	env.CreateConfigMapRelease(t, ns, release, "bare", "src")
	r := env.WaitApplied(t, ns, release, convoyv1alpha1.ReasonUnappliable, applyTimeout,
		framework.MessageContains("ConfigMap "+extra+"/elsewhere", "neither the target namespace", "allowedNamespaces"))
	recordResult("tenant-other-namespace", convoyv1alpha1.ReasonUnappliable, framework.AppliedCondition(r).Message)
	waitEvent(t, ns, release, convoyv1alpha1.ReasonUnappliable, "allowedNamespaces")
	framework.Consistently(t, quietPeriod, func() (bool, string) { return configMapAbsent(extra, "elsewhere") })

	updateCluster(t, ns, "bare", func(cl *convoyv1alpha1.Cluster) { cl.Spec.AllowedNamespaces = []string{extra} })
	env.WaitApplied(t, ns, release, convoyv1alpha1.ReasonApplied, applyTimeout, nil)
	if _, err := env.Bare.Kube.CoreV1().ConfigMaps(extra).Get(ctx, "elsewhere", metav1.GetOptions{}); err != nil {
		t.Errorf("ConfigMap %s/elsewhere once allowed: %v", extra, err)
	}

	// kube-system is still not allowed: the render becomes Unappliable, and nothing applied
	// before is deleted.
	env.UpdateSource(t, ns, "src", map[string]string{"app.yaml": framework.Docs(keepDoc, withNamespace(framework.ConfigMapDoc("elsewhere", nil, nil), extra),
		withNamespace(framework.ConfigMapDoc(ns+"-intruder", nil, nil), "kube-system"))})
	env.WaitApplied(t, ns, release, convoyv1alpha1.ReasonUnappliable, applyTimeout, framework.MessageContains("kube-system/"+ns+"-intruder"))
	framework.Consistently(t, quietPeriod, func() (bool, string) { return configMapAbsent("kube-system", ns+"-intruder") })
	checkKept(t, env.Bare, ns, release, "keep")
	checkController(t)
}

// TestTenantTakeover: a Release whose render holds another Release's object gets Conflict; the
// object keeps its owner and data.
func TestTenantTakeover(t *testing.T) {
	t.Parallel()
	ns := env.NewNamespace(t)
	env.CreateSource(t, ns, "first-src", map[string]string{"a.yaml": framework.ConfigMapDoc("shared", map[string]string{"owner": "first"}, nil)})
	env.CreateConfigMapRelease(t, ns, "first", "bare", "first-src")
	env.WaitApplied(t, ns, "first", convoyv1alpha1.ReasonApplied, applyTimeout, nil)
	env.CreateSource(t, ns, "second-src", map[string]string{"a.yaml": framework.Docs(framework.ConfigMapDoc("mine", nil, nil),
		framework.ConfigMapDoc("shared", map[string]string{"owner": "second"}, nil))})
	env.CreateConfigMapRelease(t, ns, "second", "bare", "second-src")
	r := env.WaitApplied(t, ns, "second", convoyv1alpha1.ReasonConflict, applyTimeout,
		framework.MessageContains("ConfigMap "+ns+"/shared", "belongs to Release "+ns+"/first"))
	recordResult("tenant-takeover", convoyv1alpha1.ReasonConflict, framework.AppliedCondition(r).Message)
	waitEvent(t, ns, "second", convoyv1alpha1.ReasonConflict, "belongs to Release "+ns+"/first")
	stays(t, ns, "second", convoyv1alpha1.ReasonConflict)
	cm, err := env.Bare.Kube.CoreV1().ConfigMaps(ns).Get(ctx, "shared", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Annotations[convoyv1alpha1.OwnerAnnotation] != ns+"/first" || cm.Data["owner"] != "first" {
		t.Errorf("shared: owner %q, data %v; want it untouched by the second Release", cm.Annotations[convoyv1alpha1.OwnerAnnotation], cm.Data)
	}
	checkKept(t, env.Bare, ns, "first", "shared")
	checkController(t)
}

// hookConfigMapDoc is a ConfigMap hook of phase in namespace ns.
func hookConfigMapDoc(name, ns, phase string) string {
	return framework.Annotated(withNamespace(framework.ConfigMapDoc(name, nil, nil), ns), map[string]string{convoyv1alpha1.HookAnnotation: phase})
}

// TestTenantHooksSyncPhases: a hook of any of the five phases in a namespace the Cluster does not
// allow, or cluster-scoped, makes the render Unappliable in the dry run, and is never created:
// not by the sync, not by the syncFailed phase the failure runs, not by the deletion.
func TestTenantHooksSyncPhases(t *testing.T) {
	t.Parallel()
	for _, phase := range []string{"preSync", "postSync", "syncFailed", "preDelete", "postDelete"} {
		for _, placement := range []string{"other-namespace", "cluster-scoped"} {
			t.Run(phase+"-"+placement, func(t *testing.T) {
				t.Parallel()
				ns := env.NewNamespace(t)
				name := strings.ToLower(ns[len(ns)-5:] + "-" + phase)
				hook, ref, absent := hookConfigMapDoc(name, "kube-system", phase), "ConfigMap kube-system/"+name, func() (bool, string) {
					return configMapAbsent("kube-system", name)
				}
				if placement == "cluster-scoped" {
					hook = framework.Annotated(clusterRoleDoc(name), map[string]string{convoyv1alpha1.HookAnnotation: phase})
					ref, absent = "ClusterRole "+name, func() (bool, string) { return clusterRoleAbsent(name) }
				}
				env.CreateSource(t, ns, "src", map[string]string{"app.yaml": keepDoc})
				env.CreateConfigMapRelease(t, ns, release, "bare", "src")
				env.WaitApplied(t, ns, release, convoyv1alpha1.ReasonApplied, applyTimeout, nil)
				env.UpdateSource(t, ns, "src", map[string]string{"app.yaml": framework.Docs(keepDoc, framework.ConfigMapDoc("new", nil, nil), hook)})
				r := env.WaitApplied(t, ns, release, convoyv1alpha1.ReasonUnappliable, applyTimeout, framework.MessageContains(ref))
				if phase == "preSync" {
					recordResult("tenant-hook-"+phase+"-"+placement, convoyv1alpha1.ReasonUnappliable, framework.AppliedCondition(r).Message)
				}
				waitEvent(t, ns, release, convoyv1alpha1.ReasonUnappliable, ref)
				framework.Consistently(t, quietPeriod, absent)
				checkKept(t, env.Bare, ns, release, "keep")
				if ok, _ := configMapAbsent(ns, "new"); !ok {
					t.Error("ConfigMap new of the unappliable render was applied")
				}
				if err := env.Convoy().CoreV1alpha1().Releases(ns).Delete(ctx, release, metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
				framework.Eventually(t, applyTimeout, func() (bool, string) {
					return framework.NotFound("Release "+release, func() error { _, err := env.GetRelease(ns, release); return err })
				})
				if ok, msg := absent(); !ok {
					t.Errorf("after the deletion: %s", msg)
				}
				checkController(t)
			})
		}
	}
}

// TestTenantDeleteHooksPolicy: delete hooks are checked against the Cluster's policy when they run.
// A Release applied while its Cluster allowed its cluster-scoped preDelete hook and its postDelete
// hook in another namespace is deleted after the Cluster withdrew both: neither hook is created.
// The refused preDelete hook blocks the deletion (HookFailed) until the policy allows it again.
func TestTenantDeleteHooksPolicy(t *testing.T) {
	t.Parallel()
	ns := env.NewNamespace(t)
	extra := ns + "-extra"
	targetNamespace(t, env.Bare, extra)
	role := ns + "-predelete"
	updateCluster(t, ns, "bare", func(cl *convoyv1alpha1.Cluster) {
		cl.Spec.AllowClusterScoped, cl.Spec.AllowedNamespaces = true, []string{extra}
	})
	env.CreateSource(t, ns, "src", map[string]string{"app.yaml": framework.Docs(keepDoc,
		framework.Annotated(clusterRoleDoc(role), map[string]string{convoyv1alpha1.HookAnnotation: "preDelete"}),
		hookConfigMapDoc("post-delete", extra, "postDelete"))})
	env.CreateConfigMapRelease(t, ns, release, "bare", "src")
	env.WaitApplied(t, ns, release, convoyv1alpha1.ReasonApplied, applyTimeout, nil)
	// The hook objects are named with a render suffix: find them by their owner annotation.
	hookRoles := func() []string {
		list, err := env.Bare.Kube.RbacV1().ClusterRoles().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range list.Items {
			if strings.HasPrefix(r.Name, role) {
				out = append(out, r.Name)
			}
		}
		return out
	}
	hookConfigMaps := func() []string {
		list, err := env.Bare.Kube.CoreV1().ConfigMaps(extra).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, cm := range list.Items {
			if strings.HasPrefix(cm.Name, "post-delete") {
				out = append(out, cm.Name)
			}
		}
		return out
	}
	if got := append(hookRoles(), hookConfigMaps()...); len(got) > 0 {
		t.Fatalf("delete hooks created before the deletion: %v", got)
	}

	updateCluster(t, ns, "bare", func(cl *convoyv1alpha1.Cluster) { cl.Spec.AllowClusterScoped, cl.Spec.AllowedNamespaces = false, nil })
	// The dry run checks the hooks of every phase: the Release turns Unappliable once the
	// controller sees the withdrawn policy, and its objects stay.
	env.WaitApplied(t, ns, release, convoyv1alpha1.ReasonUnappliable, applyTimeout, framework.MessageContains(role))
	checkKept(t, env.Bare, ns, release, "keep")
	if err := env.Convoy().CoreV1alpha1().Releases(ns).Delete(ctx, release, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	ev := waitEvent(t, ns, release, convoyv1alpha1.ReasonHookFailed, "deletion blocked", role, "needs Cluster spec.allowClusterScoped")
	recordResult("tenant-predelete-hook-cluster-scoped", ev.Reason, ev.Message)
	framework.Consistently(t, quietPeriod, func() (bool, string) {
		if got := hookRoles(); len(got) > 0 {
			return false, fmt.Sprintf("the refused preDelete hook was created: %v", got)
		}
		if _, err := env.GetRelease(ns, release); err != nil {
			return false, fmt.Sprintf("the Release is gone although its preDelete hook failed: %v", err)
		}
		return true, ""
	})
	checkKept(t, env.Bare, ns, release, "keep")

	// Allowing cluster-scoped objects again lets the preDelete hook run and the deletion go on;
	// the postDelete hook, in a namespace still not allowed, is refused and only reported.
	updateCluster(t, ns, "bare", func(cl *convoyv1alpha1.Cluster) { cl.Spec.AllowClusterScoped = true })
	framework.Eventually(t, 2*applyTimeout, func() (bool, string) {
		return framework.NotFound("Release "+release, func() error { _, err := env.GetRelease(ns, release); return err })
	})
	waitEvent(t, ns, release, convoyv1alpha1.ReasonHookFailed, "post-delete", "allowedNamespaces")
	if got := hookConfigMaps(); len(got) > 0 {
		t.Errorf("the refused postDelete hook was created: %v", got)
	}
	for _, name := range hookRoles() {
		_ = env.Bare.Kube.RbacV1().ClusterRoles().Delete(ctx, name, metav1.DeleteOptions{})
	}
	checkController(t)
}

// TestServiceAccountImpersonation: with spec.serviceAccountName the controller acts on the target
// as that service account. On the bare target (RBAC), an account that may only manage ConfigMaps
// applies a render of ConfigMaps; a Secret in the render is Unappliable as forbidden for it, while
// a Release without the account applies the same Secret.
func TestServiceAccountImpersonation(t *testing.T) {
	t.Parallel()
	ns := env.NewNamespace(t)
	kube := env.Bare.Kube
	if _, err := kube.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "deployer"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "configmaps-only"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"*"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "deployer"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "configmaps-only"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "deployer", Namespace: ns}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	secretDoc := framework.Doc(map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "creds"},
		"stringData": map[string]any{"k": "v"}})
	asDeployer := func(r *convoyv1alpha1.Release) { r.Spec.ServiceAccountName = "deployer" }

	env.CreateSource(t, ns, "src", map[string]string{"app.yaml": keepDoc})
	env.CreateConfigMapRelease(t, ns, release, "bare", "src", asDeployer)
	env.WaitApplied(t, ns, release, convoyv1alpha1.ReasonApplied, applyTimeout, nil)
	checkKept(t, env.Bare, ns, release, "keep")

	env.UpdateSource(t, ns, "src", map[string]string{"app.yaml": framework.Docs(keepDoc, secretDoc)})
	user := "system:serviceaccount:" + ns + ":deployer"
	r := env.WaitApplied(t, ns, release, convoyv1alpha1.ReasonUnappliable, applyTimeout,
		framework.MessageContains("Secret "+ns+"/creds", "forbidden", user))
	recordResult("serviceaccount-forbidden-kind", convoyv1alpha1.ReasonUnappliable, framework.AppliedCondition(r).Message)
	waitEvent(t, ns, release, convoyv1alpha1.ReasonUnappliable, "forbidden", user)
	if _, err := kube.CoreV1().Secrets(ns).Get(ctx, "creds", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Secret creds on bare: err %v, want NotFound", err)
	}
	checkKept(t, env.Bare, ns, release, "keep")

	// The same render without the service account: convoy's own identity may create the Secret.
	env.CreateSource(t, ns, "src-admin", map[string]string{"app.yaml": secretDoc})
	env.CreateConfigMapRelease(t, ns, "admin", "bare", "src-admin")
	env.WaitApplied(t, ns, "admin", convoyv1alpha1.ReasonApplied, applyTimeout, nil)
	checkController(t)
}
