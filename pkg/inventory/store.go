package inventory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
	acv1alpha1 "github.com/kumodo/convoy/generated/applyconfiguration/core/v1alpha1"
	"github.com/kumodo/convoy/generated/clientset/versioned"
)

// FieldManager is the server-side apply field manager of the inventory spec (the release controller).
const FieldManager = "convoy-release"

// MaxSpecBytes bounds the JSON size of a spec: about 1.4 MiB, leaving room for metadata and status
// under the API server's 1.5 MiB object limit.
const MaxSpecBytes = 1468006

// ErrTooLarge is wrapped by the error of a spec above MaxSpecBytes; the release controller reports
// it as Unappliable.
var ErrTooLarge = errors.New("inventory too large")

// CheckSize returns an error wrapping ErrTooLarge when the spec's JSON exceeds MaxSpecBytes.
func CheckSize(spec v1alpha1.ReleaseInventorySpec) error {
	data, err := json.Marshal(spec)
	if err != nil {
		return fmt.Errorf("encode inventory spec: %w", err)
	}
	if len(data) > MaxSpecBytes {
		return fmt.Errorf("%w: %d entries and %d hooks take %d bytes, above the limit of %d bytes of a ReleaseInventory",
			ErrTooLarge, len(spec.Entries), len(spec.Hooks), len(data), MaxSpecBytes)
	}
	return nil
}

// Put writes the ReleaseInventory of rel (same name and namespace, controller ownerReference to
// rel) with server-side apply: field manager convoy-release, force, spec = renderRef, entries and
// hooks. It refuses a spec above MaxSpecBytes (ErrTooLarge) without writing anything.
func Put(ctx context.Context, cs versioned.Interface, rel *v1alpha1.Release, spec v1alpha1.ReleaseInventorySpec) error {
	if rel.UID == "" {
		return fmt.Errorf("put inventory of release %s/%s: the release has no UID", rel.Namespace, rel.Name)
	}
	if err := CheckSize(spec); err != nil {
		return fmt.Errorf("put inventory of release %s/%s: %w", rel.Namespace, rel.Name, err)
	}
	// No blockOwnerDeletion: convoy deletes the inventory itself when finalizing the Release, and
	// it would require the update permission on releases/finalizers.
	owner := metav1ac.OwnerReference().
		WithAPIVersion(v1alpha1.SchemeGroupVersion.String()).
		WithKind("Release").
		WithName(rel.Name).
		WithUID(rel.UID).
		WithController(true)
	ac := acv1alpha1.ReleaseInventory(rel.Name, rel.Namespace).
		WithOwnerReferences(owner).
		WithSpec(specApplyConfiguration(spec))
	_, err := cs.CoreV1alpha1().ReleaseInventories(rel.Namespace).Apply(ctx, ac,
		metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
	if err != nil {
		return fmt.Errorf("put inventory of release %s/%s: %w", rel.Namespace, rel.Name, err)
	}
	return nil
}

// specApplyConfiguration converts a spec to its apply configuration. Empty lists are omitted, which
// under server-side apply removes the entries this manager wrote before: the spec is exactly spec.
func specApplyConfiguration(spec v1alpha1.ReleaseInventorySpec) *acv1alpha1.ReleaseInventorySpecApplyConfiguration {
	ac := acv1alpha1.ReleaseInventorySpec()
	if spec.RenderRef != "" {
		ac.WithRenderRef(spec.RenderRef)
	}
	entries := make([]acv1alpha1.InventoryEntryApplyConfiguration, 0, len(spec.Entries))
	for _, e := range spec.Entries {
		ec := acv1alpha1.InventoryEntry().WithVersion(e.Version).WithKind(e.Kind).WithName(e.Name)
		if e.Group != "" {
			ec.WithGroup(e.Group)
		}
		if e.Namespace != "" {
			ec.WithNamespace(e.Namespace)
		}
		if e.Wave != 0 {
			ec.WithWave(e.Wave)
		}
		entries = append(entries, *ec)
	}
	ac.Entries = entries
	hooks := make([]acv1alpha1.HookEntryApplyConfiguration, 0, len(spec.Hooks))
	for _, h := range spec.Hooks {
		hc := acv1alpha1.HookEntry().WithPhase(h.Phase).WithVersion(h.Version).WithKind(h.Kind).WithName(h.Name)
		if h.RenderRef != "" {
			hc.WithRenderRef(h.RenderRef)
		}
		if h.Group != "" {
			hc.WithGroup(h.Group)
		}
		if h.Namespace != "" {
			hc.WithNamespace(h.Namespace)
		}
		if h.CreatedAt != nil {
			hc.WithCreatedAt(*h.CreatedAt)
		}
		if h.Hook != "" {
			hc.WithHook(h.Hook)
		}
		if h.State != "" {
			hc.WithState(h.State)
		}
		if h.Message != "" {
			hc.WithMessage(h.Message)
		}
		hooks = append(hooks, *hc)
	}
	ac.Hooks = hooks
	return ac
}

// Delete deletes the ReleaseInventory namespace/name; NotFound is success.
func Delete(ctx context.Context, cs versioned.Interface, namespace, name string) error {
	err := cs.CoreV1alpha1().ReleaseInventories(namespace).Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete inventory %s/%s: %w", namespace, name, err)
	}
	return nil
}
