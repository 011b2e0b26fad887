package health

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

// Object health values, as written to ReleaseInventory status.objects[].health and
// Release status.health.verdict (Missing only for objects).
const (
	Healthy     = "Healthy"
	Progressing = "Progressing"
	Degraded    = "Degraded"
	Missing     = "Missing"
	Unknown     = "Unknown"
)

// Result is the health of one object and why.
type Result struct {
	Health  string
	Message string
}

// Assess returns the health of a live object; see the package documentation for the rules per kind.
// A nil object is Missing.
func Assess(obj *unstructured.Unstructured) Result {
	if obj == nil {
		return Result{Health: Missing, Message: "the object does not exist"}
	}
	if obj.GetDeletionTimestamp() != nil {
		return Result{Health: Progressing, Message: "the object is being deleted"}
	}
	gvk := obj.GroupVersionKind()
	switch {
	case gvk.Group == "apps" && gvk.Kind == "Deployment":
		return deployment(obj)
	case gvk.Group == "batch" && gvk.Kind == "Job":
		return job(obj)
	case gvk.Group == "" && gvk.Kind == "Service":
		return service(obj)
	case gvk.Group == "apiregistration.k8s.io" && gvk.Kind == "APIService":
		return apiService(obj)
	}
	return kstatusHealth(obj)
}

// deployment reads a Deployment's rollout status.
func deployment(obj *unstructured.Unstructured) Result {
	if r, waiting := generationNotObserved(obj); waiting {
		return r
	}
	if c := findCondition(obj, "Progressing"); c != nil && c.Status == metav1.ConditionFalse && c.Reason == "ProgressDeadlineExceeded" {
		return Result{Health: Degraded, Message: fmt.Sprintf("rollout exceeded its progress deadline: %s", c.Message)}
	}
	want := int64(1)
	if v, found, _ := unstructured.NestedInt64(obj.Object, "spec", "replicas"); found {
		want = v
	}
	replicas := statusInt(obj, "replicas")
	updated := statusInt(obj, "updatedReplicas")
	available := statusInt(obj, "availableReplicas")
	switch {
	case updated < want:
		return Result{Health: Progressing, Message: fmt.Sprintf("%d of %d replicas updated", updated, want)}
	case replicas > updated:
		return Result{Health: Progressing, Message: fmt.Sprintf("%d old replicas pending termination", replicas-updated)}
	case available < updated:
		return Result{Health: Progressing, Message: fmt.Sprintf("%d of %d updated replicas available", available, updated)}
	}
	return Result{Health: Healthy, Message: fmt.Sprintf("%d of %d replicas available", available, want)}
}

// job reads a Job's terminal conditions.
func job(obj *unstructured.Unstructured) Result {
	if c := findCondition(obj, "Failed"); c != nil && c.Status == metav1.ConditionTrue {
		return Result{Health: Degraded, Message: joinReason("job failed", c)}
	}
	if c := findCondition(obj, "Complete"); c != nil && c.Status == metav1.ConditionTrue {
		return Result{Health: Healthy, Message: "job completed"}
	}
	return Result{Health: Progressing, Message: fmt.Sprintf("job running: %d active, %d succeeded, %d failed",
		statusInt(obj, "active"), statusInt(obj, "succeeded"), statusInt(obj, "failed"))}
}

// service is Healthy unless it is a LoadBalancer without an ingress yet.
func service(obj *unstructured.Unstructured) Result {
	if t, _, _ := unstructured.NestedString(obj.Object, "spec", "type"); t != "LoadBalancer" {
		return Result{Health: Healthy, Message: "service is ready"}
	}
	ingress, _, _ := unstructured.NestedSlice(obj.Object, "status", "loadBalancer", "ingress")
	if len(ingress) == 0 {
		return Result{Health: Progressing, Message: "waiting for the load balancer's ingress"}
	}
	return Result{Health: Healthy, Message: "load balancer has an ingress"}
}

// apiService reads an APIService's Available condition.
func apiService(obj *unstructured.Unstructured) Result {
	c := findCondition(obj, "Available")
	switch {
	case c == nil:
		return Result{Health: Progressing, Message: "waiting for the Available condition"}
	case c.Status == metav1.ConditionTrue:
		return Result{Health: Healthy, Message: "APIService is available"}
	case c.Status == metav1.ConditionFalse:
		return Result{Health: Degraded, Message: joinReason("APIService is not available", c)}
	}
	return Result{Health: Progressing, Message: joinReason("APIService availability unknown", c)}
}

// kstatusHealth maps kstatus's computed status, adding convoy's rule for Ready=False on kinds
// kstatus has no rules of its own for.
func kstatusHealth(obj *unstructured.Unstructured) Result {
	res, err := status.Compute(obj)
	if err != nil {
		return Result{Health: Unknown, Message: fmt.Sprintf("computing status: %v", err)}
	}
	switch res.Status {
	case status.CurrentStatus:
		return Result{Health: Healthy, Message: res.Message}
	case status.FailedStatus:
		return Result{Health: Degraded, Message: res.Message}
	case status.InProgressStatus:
		if status.GetLegacyConditionsFn(obj) == nil {
			if c := findCondition(obj, "Ready"); c != nil && c.Status == metav1.ConditionFalse {
				if _, waiting := generationNotObserved(obj); !waiting {
					return Result{Health: Degraded, Message: joinReason("Ready is False", c)}
				}
			}
		}
		return Result{Health: Progressing, Message: res.Message}
	case status.TerminatingStatus:
		return Result{Health: Progressing, Message: res.Message}
	}
	return Result{Health: Unknown, Message: res.Message}
}

// generationNotObserved reports an object whose controller has not observed its latest generation.
func generationNotObserved(obj *unstructured.Unstructured) (Result, bool) {
	observed, found, _ := unstructured.NestedInt64(obj.Object, "status", "observedGeneration")
	if found && observed < obj.GetGeneration() {
		return Result{Health: Progressing, Message: fmt.Sprintf("waiting for the controller to observe generation %d (observed %d)",
			obj.GetGeneration(), observed)}, true
	}
	return Result{}, false
}

// findCondition returns the status condition of type t, or nil.
func findCondition(obj *unstructured.Unstructured, t string) *metav1.Condition {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok || m["type"] != t {
			continue
		}
		out := &metav1.Condition{Type: t}
		out.Status = metav1.ConditionStatus(str(m["status"]))
		out.Reason, out.Message = str(m["reason"]), str(m["message"])
		return out
	}
	return nil
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// statusInt reads an integer field of .status (0 when absent).
func statusInt(obj *unstructured.Unstructured, field string) int64 {
	v, _, _ := unstructured.NestedInt64(obj.Object, "status", field)
	return v
}

// joinReason formats "prefix: Reason: message" from a condition.
func joinReason(prefix string, c *metav1.Condition) string {
	out := prefix
	if c.Reason != "" {
		out += ": " + c.Reason
	}
	if c.Message != "" {
		out += ": " + c.Message
	}
	return out
}

// Verdict folds object healths: Degraded when any is Degraded or Missing, else Progressing when
// any is Progressing, else Unknown when any is Unknown, else Healthy (also for none).
func Verdict(healths ...string) string {
	rank := map[string]int{Healthy: 0, Unknown: 1, Progressing: 2, Degraded: 3, Missing: 3}
	worst := Healthy
	for _, h := range healths {
		r, ok := rank[h]
		if !ok {
			r, h = rank[Unknown], Unknown
		}
		if r > rank[worst] {
			worst = h
		}
	}
	if worst == Missing {
		return Degraded
	}
	return worst
}

// Hook states, as written to ReleaseInventory status.hooks[].state.
const (
	HookRunning   = "Running"
	HookSucceeded = "Succeeded"
	HookFailed    = "Failed"
)

// HookState reads a hook object: a Job by its Complete and Failed conditions, a Pod by its phase,
// any other kind succeeds once it exists. A nil object is Running: it is not created yet, or it
// was deleted by its delete policy (the caller keeps a known terminal state).
func HookState(obj *unstructured.Unstructured) (state, message string) {
	if obj == nil {
		return HookRunning, "the hook object does not exist"
	}
	gvk := obj.GroupVersionKind()
	switch {
	case gvk.Group == "batch" && gvk.Kind == "Job":
		r := job(obj)
		switch r.Health {
		case Healthy:
			return HookSucceeded, r.Message
		case Degraded:
			return HookFailed, r.Message
		}
		return HookRunning, r.Message
	case gvk.Group == "" && gvk.Kind == "Pod":
		phase, _, _ := unstructured.NestedString(obj.Object, "status", "phase")
		switch phase {
		case "Succeeded":
			return HookSucceeded, "pod succeeded"
		case "Failed":
			msg, _, _ := unstructured.NestedString(obj.Object, "status", "message")
			return HookFailed, strings.TrimSpace("pod failed " + msg)
		}
		return HookRunning, "pod phase " + phase
	}
	return HookSucceeded, "created"
}
