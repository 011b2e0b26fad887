package framework

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// installCRDs creates every CRD of manifests/crds on the API server and waits until each is
// Established.
func installCRDs(ctx context.Context, a *APIServer, dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return fmt.Errorf("list CRDs in %s: %w", dir, err)
	}
	if len(files) == 0 {
		return fmt.Errorf("no CRDs in %s", dir)
	}
	client, err := apiextensionsclient.NewForConfig(a.Config)
	if err != nil {
		return fmt.Errorf("apiextensions client: %w", err)
	}
	var names []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("read CRD: %w", err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(data, crd); err != nil {
			return fmt.Errorf("decode CRD %s: %w", f, err)
		}
		if _, err := client.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create CRD %s: %w", crd.Name, err)
		}
		names = append(names, crd.Name)
	}
	for _, name := range names {
		if err := waitCRDEstablished(ctx, client, name); err != nil {
			return err
		}
	}
	return nil
}

// waitCRDEstablished polls a CRD until its Established condition is True.
func waitCRDEstablished(ctx context.Context, client apiextensionsclient.Interface, name string) error {
	for {
		crd, err := client.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			for _, c := range crd.Status.Conditions {
				if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("CRD %s not Established (last error %v): %w", name, err, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}
