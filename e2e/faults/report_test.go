package faults

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
)

// reportEnv names the file the report table is written to, when set.
const reportEnv = "CONVOY_FAULTS_REPORT"

// tally is one scenario's row of the report: what its rounds measured.
type tally struct {
	fault string
	// rounds counts the faults injected; applied, lost and orphans sum over every render the
	// scenario converged, the first one before any fault included.
	rounds  int
	applied int
	lost    int
	orphans int
	outcome string
}

// addRound adds the measure of one converged (or timed out) render.
func (tl *tally) addRound(m measure) {
	report.mu.Lock()
	defer report.mu.Unlock()
	tl.applied += m.applied
	tl.lost += m.lost
	tl.orphans += m.orphans
}

// injected counts one round of the fault.
func (tl *tally) injected() {
	report.mu.Lock()
	defer report.mu.Unlock()
	tl.rounds++
}

// addOrphans adds owned objects found outside the inventory at the moment of a fault.
func (tl *tally) addOrphans(n int) {
	report.mu.Lock()
	defer report.mu.Unlock()
	tl.orphans += n
}

// setOutcome records how the scenario ended when it passes.
func (tl *tally) setOutcome(format string, args ...any) {
	report.mu.Lock()
	defer report.mu.Unlock()
	tl.outcome = fmt.Sprintf(format, args...)
}

// reportTable is the rows of the run's scenarios, in the order they ran.
type reportTable struct {
	mu   sync.Mutex
	rows []*tally
}

// report collects the rows of the run.
var report reportTable

// newTally adds a row for fault to the report. When the test ends, its outcome is marked FAILED
// if it failed, the table so far is logged and, with $CONVOY_FAULTS_REPORT set, written there.
func newTally(t *testing.T, fault string) *tally {
	tl := &tally{fault: fault, outcome: "did not finish"}
	report.mu.Lock()
	report.rows = append(report.rows, tl)
	report.mu.Unlock()
	t.Cleanup(func() {
		if t.Failed() {
			report.mu.Lock()
			tl.outcome = "FAILED (" + tl.outcome + ")"
			report.mu.Unlock()
		}
		table := report.table()
		t.Logf("fault report:\n%s", table)
		if path := os.Getenv(reportEnv); path != "" {
			if err := os.WriteFile(path, []byte(table), 0o644); err != nil {
				t.Errorf("write the fault report to %s: %v", path, err)
			}
		}
	})
	return tl
}

// table renders the report as a Markdown table.
func (rt *reportTable) table() string {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	var b strings.Builder
	b.WriteString("| fault | rounds | objects applied | objects lost | orphans | outcome |\n")
	b.WriteString("|---|---|---|---|---|---|\n")
	for _, r := range rt.rows {
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %s |\n", r.fault, r.rounds, r.applied, r.lost, r.orphans, strings.ReplaceAll(r.outcome, "|", "/"))
	}
	return b.String()
}
