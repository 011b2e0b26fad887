package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kumodo/convoy/apis/core/v1alpha1"
	"github.com/kumodo/convoy/pkg/render"
)

// statusCmd prints one screen about a Release.
func statusCmd(ctx context.Context, cl *clients, name string, color bool, w io.Writer) error {
	rel, err := cl.release(ctx, name)
	if err != nil {
		return err
	}
	writeStatus(w, rel, time.Now(), palette{on: color})
	return nil
}

// palette colours words on a terminal.
type palette struct{ on bool }

const (
	green  = "32"
	yellow = "33"
	red    = "31"
	bold   = "1"
)

func (p palette) paint(code, s string) string {
	if !p.on || s == "" {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

// state colours a status, reason, phase or verdict by what it means.
func (p palette) state(s string) string {
	switch s {
	case "True", "Applied", "Healthy", "Succeeded", "InSync":
		return p.paint(green, s)
	case "False", "Failed", "Degraded", "Missing", "Unappliable", "HookFailed", "WaveUnhealthy", "ClusterWaveFailed",
		"ClusterNotReady", "FetchFailed", "RenderFailed", "ApplyFailed", "PruneFailed", "Conflict", "StoreUnavailable", "RolledBack":
		return p.paint(red, s)
	case "":
		return "-"
	default:
		return p.paint(yellow, s)
	}
}

// writeStatus prints the Release: header, conditions, renders, pin, waves, rollout, lifecycle,
// health and drift.
func writeStatus(w io.Writer, rel *v1alpha1.Release, now time.Time, p palette) {
	s := rel.Status
	fmt.Fprintf(w, "%s %s/%s  cluster %s  target namespace %s  generation %d (observed %d)\n",
		p.paint(bold, "Release"), rel.Namespace, rel.Name, rel.Spec.ClusterRef.Name, rel.Spec.TargetNamespace, rel.Generation, s.ObservedGeneration)
	mode := string(rel.Spec.SyncPolicy.Mode)
	if mode == "" {
		mode = string(v1alpha1.SyncModeAutomatic)
	}
	fmt.Fprintf(w, "Source   %s  sync %s\n", source(rel), mode)

	section(w, p, "Conditions")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  TYPE\tSTATUS\tREASON\tSINCE\tMESSAGE")
	for _, c := range s.Conditions {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", c.Type, p.state(string(c.Status)), p.state(c.Reason), since(&c.LastTransitionTime, now), oneLine(c.Message))
	}
	_ = tw.Flush()

	section(w, p, "Renders")
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if a := s.LastAttempted; a != nil {
		fmt.Fprintf(tw, "  attempted\t%s\t%s\t%s\t%s\n", short(a.RenderRef), dash(a.Revision), since(a.At, now),
			p.state(a.Reason)+failures(a.Failures))
	}
	if r := s.LastSuccessful; r != nil {
		fmt.Fprintf(tw, "  successful\t%s\t%s\t%s\t\n", short(r.RenderRef), dash(r.Revision), since(r.At, now))
	}
	if h := s.LastHealthy; h != nil {
		fmt.Fprintf(tw, "  healthy\t%s\t\t%s\t\n", short(h.RenderRef), since(h.At, now))
	}
	if pin := rel.Spec.Pin; pin != nil {
		state, msg := p.paint(yellow, "not applied"), ""
		if s.Pin != nil && s.Pin.RenderRef == pin.RenderRef {
			if s.Pin.Applied {
				state = p.paint(green, "applied")
			}
			msg = oneLine(s.Pin.Message)
		}
		fmt.Fprintf(tw, "  pinned\t%s\t\t%s\t%s\n", short(pin.RenderRef), state, msg)
	}
	if r := s.ResolvedRetentionPolicy; r != nil {
		fmt.Fprintf(tw, "  retention\t%s\t\t\t\n", retention(r))
	}
	_ = tw.Flush()

	if len(s.Waves) > 0 {
		section(w, p, "Waves")
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  WAVE\tOBJECTS\tPHASE\tMESSAGE")
		for _, wv := range s.Waves {
			fmt.Fprintf(tw, "  %d\t%d\t%s\t%s\n", wv.Wave, wv.Objects, p.state(wv.Phase), oneLine(wv.Message))
		}
		_ = tw.Flush()
	}
	if r := s.Rollout; r != nil {
		section(w, p, "Rollout")
		fmt.Fprintf(w, "  %s  render %s  started %s  transitioned %s  %s\n", p.state(r.Phase), short(r.RenderRef),
			since(r.StartedAt, now), since(r.TransitionedAt, now), oneLine(r.Message))
	}
	if len(s.Lifecycle) > 0 {
		section(w, p, "Lifecycle")
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  PHASE\tRENDER\tSTATE\tMESSAGE")
		for _, l := range s.Lifecycle {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", l.Phase, short(l.RenderRef), p.state(l.State), oneLine(l.Message))
		}
		_ = tw.Flush()
	}
	if h := s.Health; h != nil {
		section(w, p, "Health")
		fmt.Fprintf(w, "  %s  render %s  assessed %s  %s\n", p.state(h.Verdict), short(h.RenderRef), since(h.AssessedAt, now), oneLine(h.Message))
	}
	if d := s.Drift; d != nil {
		section(w, p, "Drift")
		verdict := p.paint(green, "none")
		if d.Drifted > 0 {
			verdict = p.paint(red, fmt.Sprintf("%d drifted", d.Drifted))
		}
		fmt.Fprintf(w, "  %s  render %s  checked %s\n", verdict, short(d.RenderRef), since(d.CheckedAt, now))
		for _, o := range d.Objects {
			fmt.Fprintf(w, "    %s %s\n", strings.TrimPrefix(o.Group+"/", "/")+o.Kind, strings.TrimPrefix(o.Namespace+"/", "/")+o.Name)
		}
	}
}

func section(w io.Writer, p palette, title string) { fmt.Fprintln(w, "\n"+p.paint(bold, title)) }

// source describes where a Release's content comes from.
func source(rel *v1alpha1.Release) string {
	src := rel.Spec.Source
	switch {
	case src.Helm != nil:
		return fmt.Sprintf("helm %s %s %s", src.Helm.RepoURL, src.Helm.Chart, dash(src.Helm.Version))
	case src.Git != nil:
		ref := src.Git.Ref.Commit + src.Git.Ref.Tag + src.Git.Ref.Branch
		return fmt.Sprintf("git %s %s %s", src.Git.URL, dash(ref), src.Git.Path)
	case src.ConfigMapRef != nil:
		return "configMap " + src.ConfigMapRef.Name
	default:
		return "-"
	}
}

func short(ref string) string { return dash(render.ShortRef(ref)) }

func since(t *metav1.Time, now time.Time) string {
	if t == nil {
		return "-"
	}
	return ago(t.Time, now)
}

func failures(n int32) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d failed attempts)", n)
}

func retention(r *v1alpha1.RetentionPolicy) string {
	var parts []string
	if r.MaxHistory != nil {
		parts = append(parts, fmt.Sprintf("maxHistory %d", *r.MaxHistory))
	}
	if r.MaxAge != nil {
		parts = append(parts, "maxAge "+r.MaxAge.Duration.String())
	}
	return strings.Join(parts, ", ")
}

// oneLine keeps a message on one line of the screen.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 120 {
		s = s[:117] + "..."
	}
	return s
}
