package observer

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
	applyv1alpha1 "github.com/kumodo/convoy/generated/applyconfiguration/core/v1alpha1"
	"github.com/kumodo/convoy/pkg/deployer"
	"github.com/kumodo/convoy/pkg/health"
	"github.com/kumodo/convoy/pkg/releasestatus"
)

// deletePhases are the hook phases the health loop still polls for a Release being deleted.
var deletePhases = map[string]bool{"preDelete": true, "postDelete": true}

// healthSyncHandler is the health loop for one Release key: it assesses the ReleaseInventory,
// writes the inventory status and the verdict, and polls again after Config.HealthInterval.
func (c *Controller) healthSyncHandler(ctx context.Context, key cache.ObjectName) error {
	rel, ctx, cancel, err := c.release(ctx, key)
	defer cancel()
	if err != nil || rel == nil {
		return err
	}
	logger := klog.FromContext(ctx).WithValues("release", klog.KObj(rel), "loop", "health")
	ctx = klog.NewContext(ctx, logger)

	inv, err := c.inventories.ReleaseInventories(rel.Namespace).Get(rel.Name)
	if apierrors.IsNotFound(err) {
		inv = nil
	} else if err != nil {
		return fmt.Errorf("reading inventory %s: %w", key, err)
	}

	if rel.DeletionTimestamp != nil {
		return c.pollDeleteHooks(ctx, key, rel, inv)
	}

	verdict := c.assess(ctx, rel, inv)
	HealthVerdicts.WithLabelValues(verdict.Verdict).Inc()
	logger.V(3).Info("Health assessed", "verdict", verdict.Verdict, "renderRef", verdict.RenderRef, "message", verdict.Message)
	if inv != nil && verdict.inventory != nil {
		if err := c.writeInventoryStatus(ctx, inv, *verdict.inventory); err != nil {
			return err
		}
	}
	if err := c.writeHealth(ctx, rel, verdict.HealthStatus); err != nil {
		return err
	}
	c.healthQueue.AddAfter(key, c.config.HealthInterval)
	return nil
}

// assessment is the health loop's result for one Release.
type assessment struct {
	v1alpha1.HealthStatus
	// inventory is the new ReleaseInventory status, nil when the objects could not be read.
	inventory *v1alpha1.ReleaseInventoryStatus
}

// assess reads every inventory entry and hook on the target and folds their health.
func (c *Controller) assess(ctx context.Context, rel *v1alpha1.Release, inv *v1alpha1.ReleaseInventory) assessment {
	now := metav1.NewTime(c.clock.Now())
	if inv == nil {
		return assessment{HealthStatus: v1alpha1.HealthStatus{Verdict: health.Unknown, AssessedAt: &now,
			Message: "no ReleaseInventory yet: nothing was applied"}}
	}
	out := assessment{HealthStatus: v1alpha1.HealthStatus{RenderRef: inv.Spec.RenderRef, AssessedAt: &now}}
	_, client, err := c.renderer.Cluster(rel)
	if err != nil {
		out.Verdict, out.Message = health.Unknown, "cannot assess: "+err.Error()
		return out
	}
	r := deployer.NewReader(client)
	st := &v1alpha1.ReleaseInventoryStatus{AssessedAt: &now}
	byWave := map[int32][]string{}
	var healths []string
	var problems []string
	for _, e := range inv.Spec.Entries {
		obj, err := r.Read(ctx, e)
		res := health.Assess(obj)
		if err != nil {
			res = health.Result{Health: health.Unknown, Message: err.Error()}
		}
		st.Objects = append(st.Objects, v1alpha1.ObjectHealth{Group: e.Group, Kind: e.Kind, Namespace: e.Namespace, Name: e.Name,
			Health: res.Health, Message: truncate(res.Message, 512)})
		byWave[e.Wave] = append(byWave[e.Wave], res.Health)
		healths = append(healths, res.Health)
		if res.Health != health.Healthy {
			problems = append(problems, fmt.Sprintf("%s %s: %s", e.Kind, entryName(e.Namespace, e.Name), res.Message))
		}
	}
	st.Waves = waveHealth(byWave)
	st.Hooks = c.assessHooks(ctx, r, inv, nil)
	out.inventory = st
	out.Verdict = health.Verdict(healths...)
	healthy := 0
	for _, h := range healths {
		if h == health.Healthy {
			healthy++
		}
	}
	msg := fmt.Sprintf("%d of %d objects healthy", healthy, len(healths))
	if len(problems) > 0 {
		if len(problems) > 3 {
			problems = append(problems[:3], fmt.Sprintf("and %d more", len(problems)-3))
		}
		msg += "; " + strings.Join(problems, "; ")
	}
	out.Message = truncate(msg, 2048)
	return out
}

// waveHealth folds object healths per wave, in wave order.
func waveHealth(byWave map[int32][]string) []v1alpha1.WaveHealth {
	waves := make([]int32, 0, len(byWave))
	for w := range byWave {
		waves = append(waves, w)
	}
	sort.Slice(waves, func(i, j int) bool { return waves[i] < waves[j] })
	out := make([]v1alpha1.WaveHealth, 0, len(waves))
	for _, w := range waves {
		out = append(out, v1alpha1.WaveHealth{Wave: w, Health: health.Verdict(byWave[w]...)})
	}
	return out
}

// assessHooks reads the hook objects of the inventory (only the phases in phases, when not nil).
// A hook object that is gone keeps its last terminal state: delete policies remove finished hooks.
func (c *Controller) assessHooks(ctx context.Context, r *deployer.Reader, inv *v1alpha1.ReleaseInventory, phases map[string]bool) []v1alpha1.HookState {
	prev := map[string]v1alpha1.HookState{}
	for _, h := range inv.Status.Hooks {
		prev[h.Phase+"/"+h.RenderRef+"/"+h.Name] = h
	}
	var out []v1alpha1.HookState
	for _, h := range inv.Spec.Hooks {
		key := h.Phase + "/" + h.RenderRef + "/" + h.Name
		if phases != nil && !phases[h.Phase] {
			if p, ok := prev[key]; ok {
				out = append(out, p)
			}
			continue
		}
		if h.State != "" {
			// The release controller recorded how it ended; delete policies may have removed the object.
			out = append(out, v1alpha1.HookState{Phase: h.Phase, Name: h.Name, RenderRef: h.RenderRef, State: h.State, Message: truncate(h.Message, 512)})
			continue
		}
		obj, err := r.Read(ctx, v1alpha1.InventoryEntry{Group: h.Group, Version: h.Version, Kind: h.Kind, Namespace: h.Namespace, Name: h.Name})
		state, msg := health.HookState(obj)
		if err != nil {
			state, msg = health.HookRunning, "cannot read the hook object: "+err.Error()
		}
		if p, ok := prev[key]; ok && obj == nil && p.State != health.HookRunning {
			state, msg = p.State, p.Message
		}
		out = append(out, v1alpha1.HookState{Phase: h.Phase, Name: h.Name, RenderRef: h.RenderRef, State: state, Message: truncate(msg, 512)})
	}
	return out
}

// pollDeleteHooks is the health loop of a Release being deleted: only its delete-phase hooks.
func (c *Controller) pollDeleteHooks(ctx context.Context, key cache.ObjectName, rel *v1alpha1.Release, inv *v1alpha1.ReleaseInventory) error {
	if inv == nil || len(inv.Spec.Hooks) == 0 {
		return nil
	}
	_, client, err := c.renderer.Cluster(rel)
	if err != nil {
		klog.FromContext(ctx).V(2).Info("Cannot poll delete hooks", "err", err)
		c.healthQueue.AddAfter(key, c.config.HealthInterval)
		return nil
	}
	st := inv.Status.DeepCopy()
	st.Hooks = c.assessHooks(ctx, deployer.NewReader(client), inv, deletePhases)
	now := metav1.NewTime(c.clock.Now())
	st.AssessedAt = &now
	if err := c.writeInventoryStatus(ctx, inv, *st); err != nil {
		return err
	}
	for _, h := range st.Hooks {
		if deletePhases[h.Phase] && h.State == health.HookRunning {
			c.healthQueue.AddAfter(key, c.config.HealthInterval)
			break
		}
	}
	return nil
}

// writeInventoryStatus writes the ReleaseInventory status with server-side apply under
// convoy-health, unless only the assessment time changed.
func (c *Controller) writeInventoryStatus(ctx context.Context, inv *v1alpha1.ReleaseInventory, st v1alpha1.ReleaseInventoryStatus) error {
	prev := inv.Status.DeepCopy()
	next := st.DeepCopy()
	prev.AssessedAt, next.AssessedAt = nil, nil
	if equality.Semantic.DeepEqual(prev, next) {
		return nil
	}
	raw, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("encoding inventory status: %w", err)
	}
	status := applyv1alpha1.ReleaseInventoryStatus()
	if err := json.Unmarshal(raw, status); err != nil {
		return fmt.Errorf("building inventory status apply configuration: %w", err)
	}
	ac := applyv1alpha1.ReleaseInventory(inv.Name, inv.Namespace).WithStatus(status)
	if _, err := c.convoy.CoreV1alpha1().ReleaseInventories(inv.Namespace).ApplyStatus(ctx, ac,
		metav1.ApplyOptions{FieldManager: HealthFieldManager, Force: true}); err != nil {
		if apierrors.IsNotFound(err) {
			return nil // deleted meanwhile: its delete event requeues the Release
		}
		return fmt.Errorf("writing status of inventory %s/%s: %w", inv.Namespace, inv.Name, err)
	}
	return nil
}

// writeHealth writes the Healthy condition and status.health under convoy-health, unless only the
// assessment time changed.
func (c *Controller) writeHealth(ctx context.Context, rel *v1alpha1.Release, h v1alpha1.HealthStatus) error {
	cond := metav1.Condition{Type: v1alpha1.ConditionHealthy, Status: metav1.ConditionFalse, Reason: h.Verdict,
		Message: h.Message, ObservedGeneration: rel.Generation, LastTransitionTime: *h.AssessedAt}
	switch h.Verdict {
	case health.Healthy:
		cond.Status = metav1.ConditionTrue
	case health.Unknown:
		cond.Status = metav1.ConditionUnknown
	}
	prevCond := meta.FindStatusCondition(rel.Status.Conditions, v1alpha1.ConditionHealthy)
	if prev := rel.Status.Health; prev != nil && conditionEqual(prevCond, &cond) &&
		prev.RenderRef == h.RenderRef && prev.Verdict == h.Verdict && prev.Message == h.Message {
		return nil
	}
	var conds []metav1.Condition
	if prevCond != nil {
		conds = append(conds, *prevCond.DeepCopy())
	}
	meta.SetStatusCondition(&conds, cond)
	if prev := rel.Status.Health; prev != nil && prev.RenderRef == h.RenderRef && prev.Verdict == h.Verdict {
		h.AssessedAt = prev.AssessedAt // the same verdict: assessedAt stays when it was first reached
	}
	return releasestatus.Apply(ctx, c.convoy, rel, v1alpha1.ReleaseStatus{Conditions: conds, Health: &h}, HealthFieldManager)
}

func entryName(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}
