package framework

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	convoyv1alpha1 "github.com/kumodo/convoy/apis/core/v1alpha1"
)

// ReleaseOption adjusts a Release before it is created.
type ReleaseOption func(*convoyv1alpha1.Release)

// WithInterval makes the controller reconcile every d, so it sees changes that send no event.
func WithInterval(d time.Duration) ReleaseOption {
	return func(r *convoyv1alpha1.Release) { r.Spec.SyncPolicy.Interval = &metav1.Duration{Duration: d} }
}

// WithPrune sets syncPolicy.prune.
func WithPrune(prune bool) ReleaseOption {
	return func(r *convoyv1alpha1.Release) { r.Spec.SyncPolicy.Prune = &prune }
}

// WithManualSync sets syncPolicy.mode Manual.
func WithManualSync() ReleaseOption {
	return func(r *convoyv1alpha1.Release) { r.Spec.SyncPolicy.Mode = convoyv1alpha1.SyncModeManual }
}

// WithKeepWorkloads sets deletionPolicy.keepWorkloads.
func WithKeepWorkloads() ReleaseOption {
	return func(r *convoyv1alpha1.Release) { r.Spec.DeletionPolicy.KeepWorkloads = true }
}

// WithBackoff sets a short retry backoff, so recovery after an outage does not wait minutes.
func WithBackoff(initial, max time.Duration) ReleaseOption {
	return func(r *convoyv1alpha1.Release) {
		factor := int32(2)
		r.Spec.SyncPolicy.Backoff = &convoyv1alpha1.Backoff{
			Initial: &metav1.Duration{Duration: initial},
			Factor:  &factor,
			Max:     &metav1.Duration{Duration: max},
		}
	}
}

// WithValues sets spec.values (the strongest values layer).
func WithValues(values map[string]any) ReleaseOption {
	return func(r *convoyv1alpha1.Release) { r.Spec.Values = RawJSON(values) }
}

// WithValuesFrom sets spec.valuesFrom.
func WithValuesFrom(refs ...convoyv1alpha1.ValuesReference) ReleaseOption {
	return func(r *convoyv1alpha1.Release) { r.Spec.ValuesFrom = refs }
}

// RawJSON is v as an apiextensions JSON value; it panics on what cannot be marshalled (the
// tests' own literals).
func RawJSON(v any) *apiextensionsv1.JSON {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("marshal %v: %v", v, err))
	}
	return &apiextensionsv1.JSON{Raw: raw}
}

// NewRelease is a Release of ns applied to cluster with targetNamespace ns, without a source.
func NewRelease(ns, name, cluster string) *convoyv1alpha1.Release {
	return &convoyv1alpha1.Release{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: convoyv1alpha1.ReleaseSpec{
			ClusterRef:      convoyv1alpha1.LocalObjectReference{Name: cluster},
			TargetNamespace: ns,
		},
	}
}

// CreateRelease applies opts to r and creates it on the management cluster.
func (e *Env) CreateRelease(t *testing.T, r *convoyv1alpha1.Release, opts ...ReleaseOption) {
	t.Helper()
	for _, o := range opts {
		o(r)
	}
	if _, err := e.Convoy().CoreV1alpha1().Releases(r.Namespace).Create(context.Background(), r, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create Release %s/%s: %v", r.Namespace, r.Name, err)
	}
}

// CreateConfigMapRelease creates a Release of the manifests in ConfigMap source of ns.
func (e *Env) CreateConfigMapRelease(t *testing.T, ns, name, cluster, source string, opts ...ReleaseOption) {
	t.Helper()
	r := NewRelease(ns, name, cluster)
	r.Spec.Source.ConfigMapRef = &convoyv1alpha1.LocalObjectReference{Name: source}
	r.Spec.ContentType = convoyv1alpha1.ContentTypeManifests
	e.CreateRelease(t, r, opts...)
}

// CreateHelmRelease creates a Release of chart from the repository at repoURL (http or oci).
func (e *Env) CreateHelmRelease(t *testing.T, ns, name, cluster, repoURL, chartName, version string, opts ...ReleaseOption) {
	t.Helper()
	r := NewRelease(ns, name, cluster)
	r.Spec.Source.Helm = &convoyv1alpha1.HelmSource{RepoURL: repoURL, Chart: chartName, Version: version}
	r.Spec.ContentType = convoyv1alpha1.ContentTypeHelm
	e.CreateRelease(t, r, opts...)
}

// GetRelease reads a Release from the management cluster.
func (e *Env) GetRelease(ns, name string) (*convoyv1alpha1.Release, error) {
	return e.Convoy().CoreV1alpha1().Releases(ns).Get(context.Background(), name, metav1.GetOptions{})
}

// CreateSource creates the manifests ConfigMap a Release renders, on the management cluster.
func (e *Env) CreateSource(t *testing.T, ns, name string, data map[string]string) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Data: data}
	if _, err := e.Mgmt.Kube.CoreV1().ConfigMaps(ns).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create source ConfigMap %s/%s: %v", ns, name, err)
	}
}

// UpdateSource replaces the data of a source ConfigMap.
func (e *Env) UpdateSource(t *testing.T, ns, name string, data map[string]string) {
	t.Helper()
	cms := e.Mgmt.Kube.CoreV1().ConfigMaps(ns)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cm, err := cms.Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cm.Data = data
		_, err = cms.Update(context.Background(), cm, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("update source ConfigMap %s/%s: %v", ns, name, err)
	}
}

// ReleaseCheck accepts a Release, or says what it lacks.
type ReleaseCheck func(*convoyv1alpha1.Release) (bool, string)

// WaitApplied waits until the Release's Applied condition has reason (for the current
// generation) and accept, if given, agrees; it returns the Release then.
func (e *Env) WaitApplied(t *testing.T, ns, name, reason string, timeout time.Duration, accept ReleaseCheck) *convoyv1alpha1.Release {
	t.Helper()
	var out *convoyv1alpha1.Release
	Eventually(t, timeout, func() (bool, string) {
		r, err := e.GetRelease(ns, name)
		if err != nil {
			return false, fmt.Sprintf("get Release %s/%s: %v", ns, name, err)
		}
		c := AppliedCondition(r)
		if c == nil || c.Reason != reason || c.ObservedGeneration != r.Generation {
			return false, fmt.Sprintf("want reason %s; %s", reason, DescribeApplied(r))
		}
		if accept != nil {
			if ok, msg := accept(r); !ok {
				return false, fmt.Sprintf("reason %s but %s; %s", reason, msg, DescribeApplied(r))
			}
		}
		out = r
		return true, ""
	})
	return out
}

// MessageContains accepts a Release whose Applied message holds every part.
func MessageContains(parts ...string) ReleaseCheck {
	return func(r *convoyv1alpha1.Release) (bool, string) {
		msg := ""
		if c := AppliedCondition(r); c != nil {
			msg = c.Message
		}
		for _, p := range parts {
			if !strings.Contains(msg, p) {
				return false, fmt.Sprintf("message lacks %q", p)
			}
		}
		return true, ""
	}
}

// AppliedCondition returns the Applied condition, or nil.
func AppliedCondition(r *convoyv1alpha1.Release) *metav1.Condition {
	return meta.FindStatusCondition(r.Status.Conditions, convoyv1alpha1.ConditionApplied)
}

// DescribeApplied summarises the Applied condition for failure messages.
func DescribeApplied(r *convoyv1alpha1.Release) string {
	c := AppliedCondition(r)
	if c == nil {
		return fmt.Sprintf("Release %s/%s has no Applied condition (generation %d, status %+v)", r.Namespace, r.Name, r.Generation, r.Status)
	}
	return fmt.Sprintf("Release %s/%s Applied=%s reason=%s message=%q (observedGeneration %d, generation %d)",
		r.Namespace, r.Name, c.Status, c.Reason, c.Message, c.ObservedGeneration, r.Generation)
}

// LastSuccessfulRef returns status.lastSuccessful.renderRef, or "".
func LastSuccessfulRef(r *convoyv1alpha1.Release) string {
	if r.Status.LastSuccessful == nil {
		return ""
	}
	return r.Status.LastSuccessful.RenderRef
}

// LifecycleState returns the state of a hook phase in status.lifecycle, "" without one.
func LifecycleState(r *convoyv1alpha1.Release, phase string) string {
	for _, l := range r.Status.Lifecycle {
		if l.Phase == phase {
			return l.State
		}
	}
	return ""
}
