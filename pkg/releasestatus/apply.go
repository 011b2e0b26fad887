// Package releasestatus writes a Release's status with server-side apply. Three field managers share
// the status (convoy-release, convoy-observe, convoy-health), each applying only its own fields, so
// the release controller and the observer both write through Apply.
package releasestatus

import (
	"context"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
	applyv1alpha1 "github.com/kumodo/convoy/generated/applyconfiguration/core/v1alpha1"
	"github.com/kumodo/convoy/generated/clientset/versioned"
)

// Apply writes st to rel's status subresource with server-side apply under manager, forcing
// conflicts. st must hold only the fields manager owns: a field it leaves out is released by manager.
func Apply(ctx context.Context, cs versioned.Interface, rel *v1alpha1.Release, st v1alpha1.ReleaseStatus, manager string) error {
	// The apply configuration has the status's JSON shape, so a JSON round trip builds it.
	raw, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("encoding status: %w", err)
	}
	status := applyv1alpha1.ReleaseStatus()
	if err := json.Unmarshal(raw, status); err != nil {
		return fmt.Errorf("building status apply configuration: %w", err)
	}
	ac := applyv1alpha1.Release(rel.Name, rel.Namespace).WithStatus(status)
	if _, err := cs.CoreV1alpha1().Releases(rel.Namespace).ApplyStatus(ctx, ac,
		metav1.ApplyOptions{FieldManager: manager, Force: true}); err != nil {
		return fmt.Errorf("writing status of release %s/%s as %s: %w", rel.Namespace, rel.Name, manager, err)
	}
	return nil
}
