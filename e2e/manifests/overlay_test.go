package manifests

import (
	"os"
	"path/filepath"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestOverlay builds the overlay the install instructions describe (manifests/deploy/
// kustomization.yaml): an images: entry and a merge of the render store URL. It checks both reach
// the Deployment, that the changed URL renames the ConfigMap (so the pods roll), and dry-runs it.
func TestOverlay(t *testing.T) {
	const (
		image = "registry.example.com/convoy/convoy-controller-manager:v9.9.9"
		url   = "s3://my-bucket/convoy?endpoint=s3.eu-west-1.amazonaws.com&region=eu-west-1"
	)
	dir := t.TempDir()
	base, err := filepath.Rel(dir, repoDir(t, "manifests"))
	if err != nil {
		t.Fatal(err)
	}
	overlay := `resources:
- ` + base + `
images:
- name: convoy-controller-manager
  newName: registry.example.com/convoy/convoy-controller-manager
  newTag: v9.9.9
configMapGenerator:
- name: convoy-render-store
  namespace: kube-system
  behavior: merge
  literals:
  - url=` + url + `
`
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(overlay), 0o644); err != nil {
		t.Fatal(err)
	}
	baseCM, ok := renderStoreConfigMap(t, build(t, repoDir(t, "manifests")))
	if !ok {
		t.Fatalf("base has no render store ConfigMap")
	}
	objs := build(t, dir)
	cm, ok := renderStoreConfigMap(t, objs)
	if !ok {
		t.Fatalf("overlay has no render store ConfigMap")
	}
	if got, _, _ := unstructured.NestedString(cm.Object, "data", "url"); got != url {
		t.Errorf("overlay render store url = %q, want %q", got, url)
	}
	if cm.GetName() == baseCM.GetName() {
		t.Errorf("ConfigMap name %s did not change with its content: the pods would not roll", cm.GetName())
	}

	got := dryRunAll(t, objs)
	if t.Failed() {
		t.FailNow()
	}
	dep := typed[appsv1.Deployment](t, got, deploymentID)
	c := dep.Spec.Template.Spec.Containers[0]
	if c.Image != image {
		t.Errorf("image = %q, want %q", c.Image, image)
	}
	var ref *corev1.ConfigMapKeySelector
	for _, e := range c.Env {
		if e.Name == "CONVOY_RENDER_STORE" && e.ValueFrom != nil {
			ref = e.ValueFrom.ConfigMapKeyRef
		}
	}
	if ref == nil || ref.Name != cm.GetName() {
		t.Errorf("CONVOY_RENDER_STORE refers to %+v, want ConfigMap %s", ref, cm.GetName())
	}
}
