package main

import (
	"fmt"
	"io"
	"strings"
)

// row is one line of a scenario's table: convoy or a baseline.
type row struct {
	run      string
	releases int
	objects  int
	usage
}

// table is the result of one scenario.
type table struct {
	title string
	rows  []row
	// ratioTo is the index of the row the "× baseline" column divides by; -1 for none.
	ratioTo int
	notes   []string
}

// note adds a line under the table.
func (t *table) note(format string, args ...any) {
	t.notes = append(t.notes, fmt.Sprintf(format, args...))
}

// write prints the table in Markdown.
func (t *table) write(w io.Writer) {
	fmt.Fprintf(w, "### %s\n\n", t.title)
	fmt.Fprintln(w, "| Run | Releases | Objects | Seconds | × plain SSA | Mgmt reads | Mgmt writes | Target reads | Target writes | Target dry runs | Peak RSS (MiB) | CPU (s) |")
	fmt.Fprintln(w, "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
	for _, r := range t.rows {
		ratio := "–"
		if t.ratioTo >= 0 && t.ratioTo < len(t.rows) && t.rows[t.ratioTo].seconds > 0 {
			ratio = fmt.Sprintf("%.2f", r.seconds/t.rows[t.ratioTo].seconds)
		}
		fmt.Fprintf(w, "| %s | %d | %d | %.1f | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			r.run, r.releases, r.objects, r.seconds, ratio,
			count(r.mgmtReads), count(r.mgmtWrites), count(r.targetReads), count(r.targetWrites), count(r.targetDryRuns),
			mib(r.peakRSS), cpuSeconds(r.cpu))
	}
	fmt.Fprintln(w)
	for _, n := range t.notes {
		fmt.Fprintf(w, "- %s\n", n)
	}
	if len(t.notes) > 0 {
		fmt.Fprintln(w)
	}
}

// count formats a request count; negative means not measured.
func count(v float64) string {
	if v < 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f", v)
}

// mib formats bytes as MiB; negative means not measured.
func mib(b int64) string {
	if b < 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f", float64(b)/(1<<20))
}

// cpuSeconds formats CPU seconds; negative means not measured.
func cpuSeconds(s float64) string {
	if s < 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f", s)
}

// perReconcile formats a count per reconcile.
func perReconcile(v, reconciles float64) string {
	if reconciles <= 0 {
		return "–"
	}
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.2f", v/reconciles), "0"), ".")
}

// verdict formats a goal check.
func verdict(met bool) string {
	if met {
		return "met"
	}
	return "NOT met"
}
