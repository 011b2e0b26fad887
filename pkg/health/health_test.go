package health

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func obj(apiVersion, kind string, generation int64, spec, status map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": apiVersion, "kind": kind,
		"metadata": map[string]any{"name": "x", "namespace": "ns", "generation": generation},
	}}
	if spec != nil {
		u.Object["spec"] = spec
	}
	if status != nil {
		u.Object["status"] = status
	}
	return u
}

func cond(t, status, reason string) map[string]any {
	return map[string]any{"type": t, "status": status, "reason": reason, "message": "m"}
}

func TestAssess(t *testing.T) {
	tests := []struct {
		name string
		obj  *unstructured.Unstructured
		want string
	}{
		{"missing", nil, Missing},
		{"deployment available", obj("apps/v1", "Deployment", 2, map[string]any{"replicas": int64(3)},
			map[string]any{"observedGeneration": int64(2), "replicas": int64(3), "updatedReplicas": int64(3), "availableReplicas": int64(3)}), Healthy},
		{"deployment generation not observed", obj("apps/v1", "Deployment", 3, map[string]any{"replicas": int64(3)},
			map[string]any{"observedGeneration": int64(2), "replicas": int64(3), "updatedReplicas": int64(3), "availableReplicas": int64(3)}), Progressing},
		{"deployment unavailable", obj("apps/v1", "Deployment", 1, map[string]any{"replicas": int64(2)},
			map[string]any{"observedGeneration": int64(1), "replicas": int64(2), "updatedReplicas": int64(2), "availableReplicas": int64(1)}), Progressing},
		{"deployment old replicas", obj("apps/v1", "Deployment", 1, map[string]any{"replicas": int64(2)},
			map[string]any{"observedGeneration": int64(1), "replicas": int64(3), "updatedReplicas": int64(2), "availableReplicas": int64(2)}), Progressing},
		{"deployment deadline", obj("apps/v1", "Deployment", 1, map[string]any{"replicas": int64(2)},
			map[string]any{"observedGeneration": int64(1), "conditions": []any{cond("Progressing", "False", "ProgressDeadlineExceeded")}}), Degraded},
		{"deployment default replicas", obj("apps/v1", "Deployment", 1, map[string]any{},
			map[string]any{"observedGeneration": int64(1), "replicas": int64(1), "updatedReplicas": int64(1), "availableReplicas": int64(1)}), Healthy},
		{"job complete", obj("batch/v1", "Job", 1, nil, map[string]any{"conditions": []any{cond("Complete", "True", "")}}), Healthy},
		{"job failed", obj("batch/v1", "Job", 1, nil, map[string]any{"conditions": []any{cond("Failed", "True", "BackoffLimitExceeded")}}), Degraded},
		{"job running", obj("batch/v1", "Job", 1, nil, map[string]any{"active": int64(1), "startTime": "2026-01-01T00:00:00Z"}), Progressing},
		{"service clusterip", obj("v1", "Service", 1, map[string]any{"type": "ClusterIP"}, nil), Healthy},
		{"service lb pending", obj("v1", "Service", 1, map[string]any{"type": "LoadBalancer", "clusterIP": "10.0.0.1"}, nil), Progressing},
		{"service lb ready", obj("v1", "Service", 1, map[string]any{"type": "LoadBalancer"},
			map[string]any{"loadBalancer": map[string]any{"ingress": []any{map[string]any{"ip": "1.2.3.4"}}}}), Healthy},
		{"apiservice available", obj("apiregistration.k8s.io/v1", "APIService", 1, nil, map[string]any{"conditions": []any{cond("Available", "True", "")}}), Healthy},
		{"apiservice unavailable", obj("apiregistration.k8s.io/v1", "APIService", 1, nil, map[string]any{"conditions": []any{cond("Available", "False", "FailedDiscoveryCheck")}}), Degraded},
		{"pvc bound", obj("v1", "PersistentVolumeClaim", 1, nil, map[string]any{"phase": "Bound"}), Healthy},
		{"pvc pending", obj("v1", "PersistentVolumeClaim", 1, nil, map[string]any{"phase": "Pending"}), Progressing},
		{"crd established", obj("apiextensions.k8s.io/v1", "CustomResourceDefinition", 1, nil, map[string]any{"conditions": []any{cond("Established", "True", "")}}), Healthy},
		{"crd installing", obj("apiextensions.k8s.io/v1", "CustomResourceDefinition", 1, nil, nil), Progressing},
		{"statefulset ready", obj("apps/v1", "StatefulSet", 1, map[string]any{"replicas": int64(1)},
			map[string]any{"observedGeneration": int64(1), "replicas": int64(1), "readyReplicas": int64(1), "currentReplicas": int64(1), "updatedReplicas": int64(1), "availableReplicas": int64(1)}), Healthy},
		{"statefulset not ready", obj("apps/v1", "StatefulSet", 1, map[string]any{"replicas": int64(2)},
			map[string]any{"observedGeneration": int64(1), "replicas": int64(2), "readyReplicas": int64(1)}), Progressing},
		{"configmap", obj("v1", "ConfigMap", 0, nil, nil), Healthy},
		{"custom ready", obj("example.com/v1", "Widget", 1, nil, map[string]any{"conditions": []any{cond("Ready", "True", "")}}), Healthy},
		{"custom ready false", obj("example.com/v1", "Widget", 1, nil, map[string]any{"conditions": []any{cond("Ready", "False", "Broken")}}), Degraded},
		{"custom ready unknown", obj("example.com/v1", "Widget", 1, nil, map[string]any{"conditions": []any{cond("Ready", "Unknown", "")}}), Progressing},
		{"custom stalled", obj("example.com/v1", "Widget", 1, nil, map[string]any{"conditions": []any{cond("Stalled", "True", "x")}}), Degraded},
		{"custom reconciling", obj("example.com/v1", "Widget", 1, nil, map[string]any{"conditions": []any{cond("Reconciling", "True", "x")}}), Progressing},
		{"custom ready false, old generation", obj("example.com/v1", "Widget", 2, nil,
			map[string]any{"observedGeneration": int64(1), "conditions": []any{cond("Ready", "False", "")}}), Progressing},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Assess(tt.obj); got.Health != tt.want {
				t.Errorf("Assess = %+v, want %s", got, tt.want)
			}
		})
	}
}

func TestVerdict(t *testing.T) {
	tests := []struct {
		in   []string
		want string
	}{
		{nil, Healthy},
		{[]string{Healthy, Healthy}, Healthy},
		{[]string{Healthy, Unknown}, Unknown},
		{[]string{Unknown, Progressing}, Progressing},
		{[]string{Progressing, Missing}, Degraded},
		{[]string{Degraded, Healthy}, Degraded},
		{[]string{"bogus"}, Unknown},
	}
	for _, tt := range tests {
		if got := Verdict(tt.in...); got != tt.want {
			t.Errorf("Verdict(%v) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestHookState(t *testing.T) {
	tests := []struct {
		name string
		obj  *unstructured.Unstructured
		want string
	}{
		{"missing", nil, HookRunning},
		{"job complete", obj("batch/v1", "Job", 1, nil, map[string]any{"conditions": []any{cond("Complete", "True", "")}}), HookSucceeded},
		{"job failed", obj("batch/v1", "Job", 1, nil, map[string]any{"conditions": []any{cond("Failed", "True", "")}}), HookFailed},
		{"job running", obj("batch/v1", "Job", 1, nil, nil), HookRunning},
		{"pod succeeded", obj("v1", "Pod", 1, nil, map[string]any{"phase": "Succeeded"}), HookSucceeded},
		{"pod failed", obj("v1", "Pod", 1, nil, map[string]any{"phase": "Failed"}), HookFailed},
		{"pod running", obj("v1", "Pod", 1, nil, map[string]any{"phase": "Running"}), HookRunning},
		{"configmap", obj("v1", "ConfigMap", 1, nil, nil), HookSucceeded},
	}
	for _, tt := range tests {
		if got, _ := HookState(tt.obj); got != tt.want {
			t.Errorf("%s: HookState = %s, want %s", tt.name, got, tt.want)
		}
	}
}
