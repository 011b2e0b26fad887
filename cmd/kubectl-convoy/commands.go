package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
	"github.com/kumodo/convoy/pkg/render"
	"github.com/kumodo/convoy/pkg/renderstore"
)

// historyCmd prints the history, marking the current, pinned and last healthy renders.
func historyCmd(ctx context.Context, cl *clients, o options, name string, w io.Writer) error {
	rel, err := cl.release(ctx, name)
	if err != nil {
		return err
	}
	entries, source, err := cl.history(ctx, o, name)
	if err != nil {
		return fmt.Errorf("reading the history of %s/%s: %w", cl.namespace, name, err)
	}
	writeHistory(w, rel, entries, source, time.Now())
	return nil
}

// writeHistory prints history entries, newest last, as kubectl prints tables.
func writeHistory(w io.Writer, rel *v1alpha1.Release, entries []renderstore.Entry, source string, now time.Time) {
	if len(entries) == 0 {
		fmt.Fprintf(w, "No history for Release %s/%s in %s.\n", rel.Namespace, rel.Name, source)
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NUMBER\tRENDER\tREVISION\tGENERATION\tAPPLIED\tNOTE")
	for _, e := range entries {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\t%s\n", e.Number, render.ShortRef(e.RenderRef), dash(e.Revision),
			e.Generation, ago(e.Time, now), strings.Join(marks(rel, e.RenderRef), ","))
	}
	_ = tw.Flush()
}

// marks names what a render is to the Release.
func marks(rel *v1alpha1.Release, ref string) []string {
	var out []string
	if s := rel.Status.LastSuccessful; s != nil && s.RenderRef == ref {
		out = append(out, "current")
	}
	if p := rel.Spec.Pin; p != nil && p.RenderRef == ref {
		out = append(out, "pinned")
	}
	if h := rel.Status.LastHealthy; h != nil && h.RenderRef == ref {
		out = append(out, "healthy")
	}
	return out
}

// rollbackCmd pins the Release to a history entry (by number) or to a render reference.
func rollbackCmd(ctx context.Context, cl *clients, o options, name, target string, w io.Writer) error {
	ref, what := target, target
	if !strings.HasPrefix(target, "sha256:") {
		n, err := strconv.ParseInt(target, 10, 64)
		if err != nil {
			return fmt.Errorf("rollback target %q is neither a history number nor a sha256: render reference", target)
		}
		entries, _, err := cl.history(ctx, o, name)
		if err != nil {
			return fmt.Errorf("reading the history of %s/%s: %w", cl.namespace, name, err)
		}
		ref = ""
		for _, e := range entries {
			if e.Number == n {
				ref = e.RenderRef
			}
		}
		if ref == "" {
			return fmt.Errorf("history of %s/%s has no entry %d (kubectl convoy history %s)", cl.namespace, name, n, name)
		}
		what = fmt.Sprintf("history entry %d (render %s)", n, render.ShortRef(ref))
	}
	body, err := json.Marshal(map[string]any{"spec": map[string]any{"pin": map[string]any{"renderRef": ref}}})
	if err != nil {
		return fmt.Errorf("encoding the patch: %w", err)
	}
	if _, err := cl.patch(ctx, name, body); err != nil {
		return err
	}
	fmt.Fprintf(w, "release %s/%s pinned to %s; \"kubectl convoy unpin %s\" returns it to its source\n", cl.namespace, name, what, name)
	return nil
}

// unpinCmd removes spec.pin.
func unpinCmd(ctx context.Context, cl *clients, name string, w io.Writer) error {
	if _, err := cl.patch(ctx, name, []byte(`{"spec":{"pin":null}}`)); err != nil {
		return err
	}
	fmt.Fprintf(w, "release %s/%s unpinned: it follows its source again\n", cl.namespace, name)
	return nil
}

// syncCmd patches the sync (or forced sync) annotation with an RFC 3339 time.
func syncCmd(ctx context.Context, cl *clients, name string, force bool, w io.Writer) error {
	rel, err := cl.release(ctx, name)
	if err != nil {
		return err
	}
	annotation, handled := v1alpha1.SyncRequestedAtAnnotation, rel.Status.LastHandledSyncAt
	if force {
		annotation, handled = v1alpha1.ForceSyncRequestedAtAnnotation, rel.Status.LastHandledForceSyncAt
	}
	var handledAt time.Time
	if handled != nil {
		handledAt = handled.Time
	}
	at := requestTime(time.Now(), rel.Annotations[annotation], handledAt)
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{annotation: at}}})
	if err != nil {
		return fmt.Errorf("encoding the patch: %w", err)
	}
	if _, err := cl.patch(ctx, name, body); err != nil {
		return err
	}
	kind := "sync"
	if force {
		kind = "forced sync"
	}
	fmt.Fprintf(w, "release %s/%s: %s requested at %s\n", cl.namespace, name, kind, at)
	return nil
}

// requestTime is the RFC 3339 time of a new request. Status times have second precision, so the
// time is whole seconds and later than both the pending request and the last handled one: else the
// controller would take it as handled already.
func requestTime(now time.Time, pending string, handled time.Time) string {
	at := now.UTC().Truncate(time.Second)
	floor := handled
	if t, err := time.Parse(time.RFC3339Nano, pending); err == nil && t.After(floor) {
		floor = t
	}
	if !at.After(floor) {
		at = floor.UTC().Truncate(time.Second).Add(time.Second)
	}
	return at.Format(time.RFC3339)
}

// dash prints "-" for an empty value.
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// ago prints a time as kubectl prints ages.
func ago(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t)
	switch {
	case d < 0:
		return t.UTC().Format(time.RFC3339)
	case d < 2*time.Minute:
		return fmt.Sprintf("%ds ago", int(d.Seconds()))
	case d < 2*time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d.Hours()))
	default:
		return fmt.Sprintf("%dd ago", int(d.Hours()/24))
	}
}
