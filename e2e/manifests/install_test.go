package manifests

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The install's names.
const (
	installNamespace = "kube-system"
	deploymentID     = "Deployment/kube-system/convoy-controller-manager"
	serviceAccount   = "convoy"
	renderStoreCM    = "convoy-render-store"
)

// TestInstallManifests builds manifests/ and dry-runs every object against the API server; then
// it checks, on the server's answers, that the install has what running convoy in kube-system
// needs.
func TestInstallManifests(t *testing.T) {
	objs := build(t, repoDir(t, "manifests"))
	got := dryRunAll(t, objs)
	if t.Failed() {
		t.FailNow()
	}

	t.Run("expected objects", func(t *testing.T) {
		want := []string{
			"CustomResourceDefinition/releases.core.convoy.kumodo.io",
			"CustomResourceDefinition/clusters.core.convoy.kumodo.io",
			"CustomResourceDefinition/releaseinventories.core.convoy.kumodo.io",
			"ServiceAccount/kube-system/convoy",
			"ClusterRole/convoy-controller-manager",
			"ClusterRoleBinding/convoy-controller-manager",
			"Role/kube-system/convoy-controller-manager",
			"RoleBinding/kube-system/convoy-controller-manager",
			"ClusterRole/convoy-sync",
			"ClusterRole/convoy-sync-only",
			"ClusterRole/convoy-history",
			deploymentID,
			"Service/kube-system/convoy",
			"PodDisruptionBudget/kube-system/convoy-controller-manager",
		}
		for _, w := range want {
			if _, ok := got[w]; !ok {
				t.Errorf("missing %s; have %v", w, slices.Sorted(maps.Keys(got)))
			}
		}
		// Every generated CRD is installed (make generate may add one).
		crds, err := filepath.Glob(repoDir(t, "manifests", "crds", "*.yaml"))
		if err != nil || len(crds) == 0 {
			t.Fatalf("no CRDs in manifests/crds (%v)", err)
		}
		for _, f := range crds {
			for _, crd := range decodeFile(t, f) {
				if _, ok := got[id(crd)]; !ok {
					t.Errorf("%s of %s is not in manifests/kustomization.yaml", id(crd), filepath.Base(f))
				}
			}
		}
		if _, ok := renderStoreConfigMap(t, objs); !ok {
			t.Errorf("no ConfigMap %s-<hash> in kube-system", renderStoreCM)
		}
		for _, o := range objs {
			if ns := o.GetNamespace(); ns != "" && ns != installNamespace {
				t.Errorf("%s is in namespace %s, want %s", id(o), ns, installNamespace)
			}
			if o.GetKind() == "ClusterRole" && o.GetName() == "convoy-target" {
				t.Errorf("the target ClusterRole is part of the management install; it belongs on target clusters only")
			}
		}
	})

	dep := typed[appsv1.Deployment](t, got, deploymentID)
	pod := dep.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("Deployment has %d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]

	t.Run("deployment", func(t *testing.T) {
		if dep.Spec.Replicas == nil || *dep.Spec.Replicas != 2 {
			t.Errorf("replicas = %s, want 2", show(dep.Spec.Replicas))
		}
		if pod.ServiceAccountName != serviceAccount {
			t.Errorf("serviceAccountName = %q, want %q", pod.ServiceAccountName, serviceAccount)
		}
		if c.Image != "convoy-controller-manager:dev" {
			t.Errorf("image = %q, want convoy-controller-manager:dev (the name an images: entry overrides)", c.Image)
		}
		sel, err := labelsSelector(dep.Spec.Selector.MatchLabels)
		if err != nil || !sel.Matches(labels.Set(dep.Spec.Template.Labels)) {
			t.Errorf("selector %v does not match the pod labels %v", dep.Spec.Selector.MatchLabels, dep.Spec.Template.Labels)
		}
		spread := pod.Affinity != nil && pod.Affinity.PodAntiAffinity != nil
		for _, tsc := range pod.TopologySpreadConstraints {
			if tsc.TopologyKey == "kubernetes.io/hostname" && tsc.LabelSelector != nil &&
				labels.SelectorFromSet(tsc.LabelSelector.MatchLabels).Matches(labels.Set(dep.Spec.Template.Labels)) {
				spread = true
			}
		}
		if !spread {
			t.Errorf("the replicas are not spread across nodes (no hostname topology spread or pod anti-affinity)")
		}
	})

	t.Run("security context", func(t *testing.T) {
		psc, sc := pod.SecurityContext, c.SecurityContext
		if sc == nil {
			t.Fatalf("container has no securityContext")
		}
		nonRoot := sc.RunAsNonRoot
		if nonRoot == nil && psc != nil {
			nonRoot = psc.RunAsNonRoot
		}
		if nonRoot == nil || !*nonRoot {
			t.Errorf("runAsNonRoot = %s, want true", show(nonRoot))
		}
		if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
			t.Errorf("readOnlyRootFilesystem = %s, want true", show(sc.ReadOnlyRootFilesystem))
		}
		if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			t.Errorf("allowPrivilegeEscalation = %s, want false", show(sc.AllowPrivilegeEscalation))
		}
		if sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0 {
			t.Errorf("capabilities = %+v, want drop [ALL] and no add", sc.Capabilities)
		}
		seccomp := sc.SeccompProfile
		if seccomp == nil && psc != nil {
			seccomp = psc.SeccompProfile
		}
		if seccomp == nil || seccomp.Type != corev1.SeccompProfileTypeRuntimeDefault {
			t.Errorf("seccompProfile = %+v, want RuntimeDefault", seccomp)
		}
	})

	t.Run("args and environment", func(t *testing.T) {
		args := argMap(c.Args)
		for flag, want := range map[string]string{"--sharding": "dynamic", "--shards": "4", "--render-store": "$(CONVOY_RENDER_STORE)"} {
			if got, ok := args[flag]; !ok || got != want {
				t.Errorf("arg %s = %q (set: %v), want %q", flag, got, ok, want)
			}
		}
		env := map[string]corev1.EnvVar{}
		for _, e := range c.Env {
			env[e.Name] = e
		}
		for name, path := range map[string]string{"POD_NAME": "metadata.name", "POD_NAMESPACE": "metadata.namespace"} {
			e := env[name]
			if e.ValueFrom == nil || e.ValueFrom.FieldRef == nil || e.ValueFrom.FieldRef.FieldPath != path {
				t.Errorf("env %s = %+v, want the downward API field %s", name, e, path)
			}
		}
		// --render-store comes from the generated ConfigMap, and holds an S3 URL: a file store
		// is one pod's directory, wrong for two replicas.
		cm, ok := renderStoreConfigMap(t, objs)
		if !ok {
			t.Fatalf("no render store ConfigMap")
		}
		ref := env["CONVOY_RENDER_STORE"].ValueFrom
		if ref == nil || ref.ConfigMapKeyRef == nil || ref.ConfigMapKeyRef.Name != cm.GetName() || ref.ConfigMapKeyRef.Key != "url" {
			t.Errorf("env CONVOY_RENDER_STORE = %+v, want key url of ConfigMap %s", ref, cm.GetName())
		}
		url, _, _ := unstructured.NestedString(cm.Object, "data", "url")
		if !strings.HasPrefix(url, "s3://") {
			t.Errorf("render store url = %q, want an s3:// URL (two replicas share one store)", url)
		}
	})

	t.Run("volumes", func(t *testing.T) {
		emptyDirs := map[string]bool{}
		for _, v := range pod.Volumes {
			if v.EmptyDir != nil {
				emptyDirs[v.Name] = true
			}
		}
		mounts := map[string]string{}
		for _, m := range c.VolumeMounts {
			if m.ReadOnly || !emptyDirs[m.Name] {
				continue
			}
			mounts[m.MountPath] = m.Name
		}
		cacheDir := argMap(c.Args)["--source-cache-dir"]
		for _, dir := range []string{cacheDir, "/tmp"} {
			if _, ok := mounts[dir]; dir == "" || !ok {
				t.Errorf("%q is not a writable emptyDir mount (mounts %v): the root file system is read-only", dir, mounts)
			}
		}
	})

	healthPort := portOf(t, argMap(c.Args)["--health-addr"], ":8081")
	syncPort := portOf(t, argMap(c.Args)["--sync-api-addr"], ":8443")

	t.Run("probes and resources", func(t *testing.T) {
		for name, tc := range map[string]struct {
			probe *corev1.Probe
			path  string
		}{"liveness": {c.LivenessProbe, "/healthz"}, "readiness": {c.ReadinessProbe, "/readyz"}} {
			p := tc.probe
			if p == nil || p.HTTPGet == nil {
				t.Errorf("%s probe = %+v, want GET %s", name, p, tc.path)
				continue
			}
			if p.HTTPGet.Path != tc.path || containerPort(c, p.HTTPGet.Port) != healthPort {
				t.Errorf("%s probe = GET %s on %s, want %s on the health port %d", name, p.HTTPGet.Path, p.HTTPGet.Port.String(), tc.path, healthPort)
			}
		}
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if _, ok := c.Resources.Requests[r]; !ok {
				t.Errorf("no %s request", r)
			}
		}
		if _, ok := c.Resources.Limits[corev1.ResourceMemory]; !ok {
			t.Errorf("no memory limit")
		}
	})

	t.Run("service", func(t *testing.T) {
		svc := typed[corev1.Service](t, got, "Service/kube-system/convoy")
		if !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(dep.Spec.Template.Labels)) || len(svc.Spec.Selector) == 0 {
			t.Errorf("Service selector %v does not select the pods %v", svc.Spec.Selector, dep.Spec.Template.Labels)
		}
		targets := map[int32]bool{}
		for _, p := range svc.Spec.Ports {
			targets[containerPort(c, p.TargetPort)] = true
		}
		for name, port := range map[string]int32{"sync API": syncPort, "metrics": healthPort} {
			if !targets[port] {
				t.Errorf("Service exposes no port for the %s (container port %d); targets %v", name, port, targets)
			}
		}
	})

	t.Run("pod disruption budget", func(t *testing.T) {
		pdb := typed[policyv1.PodDisruptionBudget](t, got, "PodDisruptionBudget/kube-system/convoy-controller-manager")
		if pdb.Spec.MinAvailable == nil || *pdb.Spec.MinAvailable != intstr.FromInt32(1) {
			t.Errorf("minAvailable = %s, want 1", show(pdb.Spec.MinAvailable))
		}
		sel, err := labelsSelector(pdb.Spec.Selector.MatchLabels)
		if err != nil || len(pdb.Spec.Selector.MatchLabels) == 0 || !sel.Matches(labels.Set(dep.Spec.Template.Labels)) {
			t.Errorf("PDB selector %v does not select the pods %v", pdb.Spec.Selector, dep.Spec.Template.Labels)
		}
	})

	t.Run("rbac bindings", func(t *testing.T) {
		crb := typed[rbacv1.ClusterRoleBinding](t, got, "ClusterRoleBinding/convoy-controller-manager")
		rb := typed[rbacv1.RoleBinding](t, got, "RoleBinding/kube-system/convoy-controller-manager")
		wantSubject := rbacv1.Subject{Kind: "ServiceAccount", Name: pod.ServiceAccountName, Namespace: dep.Namespace}
		for name, b := range map[string]struct {
			subjects []rbacv1.Subject
			ref      rbacv1.RoleRef
		}{"ClusterRoleBinding": {crb.Subjects, crb.RoleRef}, "RoleBinding": {rb.Subjects, rb.RoleRef}} {
			if !slices.Equal(b.subjects, []rbacv1.Subject{wantSubject}) {
				t.Errorf("%s subjects = %+v, want the Deployment's service account %+v", name, b.subjects, wantSubject)
			}
			if _, ok := got[b.ref.Kind+"/"+nsIfRole(b.ref.Kind)+b.ref.Name]; !ok {
				t.Errorf("%s refers to %s %s, which the install does not have", name, b.ref.Kind, b.ref.Name)
			}
		}
	})
}

// renderStoreConfigMap returns the generated ConfigMap convoy-render-store-<hash>.
func renderStoreConfigMap(t *testing.T, objs []*unstructured.Unstructured) (*unstructured.Unstructured, bool) {
	t.Helper()
	for _, o := range byKind(objs, "ConfigMap") {
		if strings.HasPrefix(o.GetName(), renderStoreCM+"-") && o.GetNamespace() == installNamespace {
			return o, true
		}
	}
	return nil, false
}

// argMap parses --flag=value arguments; a bare --flag maps to "".
func argMap(args []string) map[string]string {
	m := map[string]string{}
	for _, a := range args {
		name, value, _ := strings.Cut(a, "=")
		m[name] = value
	}
	return m
}

// portOf returns the port of a listen address such as ":8081", or of def when addr is empty.
func portOf(t *testing.T, addr, def string) int32 {
	t.Helper()
	if addr == "" {
		addr = def
	}
	_, port, ok := strings.Cut(addr, ":")
	p := intstr.Parse(port)
	if !ok || p.Type != intstr.Int || p.IntVal <= 0 {
		t.Fatalf("listen address %q has no port", addr)
	}
	return p.IntVal
}

// containerPort resolves a port number or name of the container; 0 when it names no port.
func containerPort(c corev1.Container, p intstr.IntOrString) int32 {
	if p.Type == intstr.Int {
		return p.IntVal
	}
	for _, cp := range c.Ports {
		if cp.Name == p.StrVal {
			return cp.ContainerPort
		}
	}
	return 0
}

// show prints what a pointer field holds, or <unset>.
func show[T any](p *T) string {
	if p == nil {
		return "<unset>"
	}
	if s, ok := any(p).(fmt.Stringer); ok {
		return s.String()
	}
	return fmt.Sprint(*p)
}

// errEmptySelector is labelsSelector's error for empty matchLabels.
var errEmptySelector = errors.New("empty matchLabels selects every pod")

// labelsSelector turns matchLabels into a selector; empty matchLabels is an error (it would
// select everything).
func labelsSelector(m map[string]string) (labels.Selector, error) {
	if len(m) == 0 {
		return nil, errEmptySelector
	}
	return labels.SelectorFromSet(m), nil
}

// nsIfRole is the namespace part of a Role's id ("kube-system/"); "" for a ClusterRole.
func nsIfRole(kind string) string {
	if kind == "Role" {
		return installNamespace + "/"
	}
	return ""
}
