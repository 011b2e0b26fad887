package e2e

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	convoyv1alpha1 "github.com/kumodo/convoy/apis/core/v1alpha1"
	"github.com/kumodo/convoy/e2e/framework"
	convoyinformers "github.com/kumodo/convoy/generated/informers/externalversions"
	"github.com/kumodo/convoy/pkg/clusters"
	"github.com/kumodo/convoy/pkg/coordinator"
	"github.com/kumodo/convoy/pkg/desired"
)

// TestRenderHelmValuesLayers: valuesFrom a ConfigMap and a Secret, then inline values, change the
// rendered objects in that order of strength; a change of a layer gives a new renderRef; and a
// second replica (a desired.Renderer in the test process, with a cache of its own) computes the
// same renderRef from the same inputs as the controller.
func TestRenderHelmValuesLayers(t *testing.T) {
	t.Parallel()
	ns := env.NewNamespace(t)
	repo := framework.NewHelmRepo(t)
	framework.Publish(t, repo, loadTestChart(t, "webapp"))
	createValuesConfigMap(t, ns, "web-values", "values.yaml", "color: green\nmessage: from-configmap\nservice:\n  enabled: true\n")
	createValuesSecret(t, ns, "web-secret-values", "secret.yaml",
		"message: from-secret\nextraConfigMaps:\n- name: extra\n  value: from-secret\n")

	env.CreateHelmRelease(t, ns, "web", "live", repo.URL, "webapp", "1.0.0",
		framework.WithValuesFrom(
			convoyv1alpha1.ValuesReference{Kind: "ConfigMap", Name: "web-values"},
			convoyv1alpha1.ValuesReference{Kind: "Secret", Name: "web-secret-values", Key: "secret.yaml"},
			convoyv1alpha1.ValuesReference{Kind: "ConfigMap", Name: "not-there", Optional: true},
		),
		framework.WithValues(map[string]any{"replicaCount": 2, "message": "from-inline"}),
	)
	first := env.WaitApplied(t, ns, "web", convoyv1alpha1.ReasonApplied, applyTimeout, revisionIs("1.0.0"))
	configMapData(t, env.Live, ns, "web-config", dataIs(map[string]string{"color": "green", "message": "from-inline"}))
	configMapData(t, env.Live, ns, "web-extra", dataIs(map[string]string{"value": "from-secret"}))
	if _, err := env.Live.Kube.CoreV1().Services(ns).Get(ctx, "web", metav1.GetOptions{}); err != nil {
		t.Errorf("Service web (service.enabled from the ConfigMap layer): %v", err)
	}
	dep, err := env.Live.Kube.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("Deployment web: %v", err)
	}
	if dep.Spec.Replicas == nil || *dep.Spec.Replicas != 2 {
		t.Errorf("Deployment replicas = %v, want 2 (inline values)", dep.Spec.Replicas)
	}

	// A second replica renders the same Release from the same inputs to the same reference.
	if got, want := renderInProcess(t, ns, "web"), framework.LastSuccessfulRef(first); got != want {
		t.Errorf("renderRef from a second replica = %s, controller's = %s", got, want)
	}

	// A change of the ConfigMap layer alone gives a new render.
	cms := env.Mgmt.Kube.CoreV1().ConfigMaps(ns)
	cm, err := cms.Get(ctx, "web-values", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["values.yaml"] = "color: red\nservice:\n  enabled: true\n"
	if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update values ConfigMap: %v", err)
	}
	second := env.WaitApplied(t, ns, "web", convoyv1alpha1.ReasonApplied, applyTimeout, renderChanged(framework.LastSuccessfulRef(first)))
	configMapData(t, env.Live, ns, "web-config", dataIs(map[string]string{"color": "red", "message": "from-inline"}))
	if got, want := renderInProcess(t, ns, "web"), framework.LastSuccessfulRef(second); got != want {
		t.Errorf("renderRef from a second replica after the change = %s, controller's = %s", got, want)
	}
}

// renderInProcess renders Release ns/name the way another controller replica would: its own
// informers on mgmt, its own client cache and its own empty source cache.
func renderInProcess(t *testing.T, ns, name string) string {
	t.Helper()
	stop := make(chan struct{})
	defer close(stop)
	kubeFactory := kubeinformers.NewSharedInformerFactoryWithOptions(env.Mgmt.Kube, 0, kubeinformers.WithNamespace(ns))
	convoyFactory := convoyinformers.NewSharedInformerFactoryWithOptions(env.Convoy(), 0, convoyinformers.WithNamespace(ns))
	configMaps := kubeFactory.Core().V1().ConfigMaps()
	secrets := kubeFactory.Core().V1().Secrets()
	clusterInformer := convoyFactory.Core().V1alpha1().Clusters()
	synced := []cache.InformerSynced{configMaps.Informer().HasSynced, secrets.Informer().HasSynced, clusterInformer.Informer().HasSynced}
	kubeFactory.Start(stop)
	convoyFactory.Start(stop)
	syncCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), synced...) {
		t.Fatalf("in-process renderer: informers did not sync")
	}
	coord, err := coordinator.NewWithOptions(coordinator.Options{
		ConfigMaps: configMaps.Lister(), Secrets: secrets.Lister(), CacheDir: t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	r := &desired.Renderer{
		Coordinator: coord,
		Clients:     clusters.NewCache(secrets.Lister(), clusters.Options{}),
		Clusters:    clusterInformer.Lister(),
		ConfigMaps:  configMaps.Lister(),
		Secrets:     secrets.Lister(),
	}
	rel, err := env.GetRelease(ns, name)
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Render(ctx, rel)
	if err != nil {
		t.Fatalf("in-process render of %s/%s: %v", ns, name, err)
	}
	if s := coord.Stats(); s.Downloads != 1 {
		t.Errorf("in-process renderer downloads = %d, want 1 (a cache of its own)", s.Downloads)
	}
	return res.RenderRef
}
