package renderstore

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

// ref returns a render reference made of one repeated hex digit.
func ref(c byte) string { return "sha256:" + strings.Repeat(string(c), 64) }

func TestPlanGC(t *testing.T) {
	now := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	entry := func(n int64, c byte, age time.Duration) Entry {
		return Entry{Number: n, RenderRef: ref(c), Time: now.Add(-age)}
	}
	five := []Entry{entry(1, '1', 50*time.Hour), entry(2, '2', 40*time.Hour), entry(3, '3', 30*time.Hour),
		entry(4, '4', 20*time.Hour), entry(5, '5', 10*time.Hour)}
	stored := []string{ref('1'), ref('2'), ref('3'), ref('4'), ref('5'), ref('9')}
	tests := []struct {
		name        string
		history     []Entry
		stored      []string
		policy      Retention
		protected   []string
		wantNumbers []int64
		wantDelete  []string
	}{
		{"no bound keeps history, drops unreferenced blob", five, stored, Retention{}, nil,
			[]int64{1, 2, 3, 4, 5}, []string{ref('9')}},
		{"maxHistory", five, stored, Retention{MaxHistory: 2}, nil,
			[]int64{4, 5}, []string{ref('1'), ref('2'), ref('3'), ref('9')}},
		{"maxHistory keeps protected renders", five, stored, Retention{MaxHistory: 2},
			[]string{ref('1'), ref('9'), "", ref('5')},
			[]int64{4, 5}, []string{ref('2'), ref('3')}},
		{"maxAge", five, stored, Retention{MaxAge: 25 * time.Hour}, nil,
			[]int64{4, 5}, []string{ref('1'), ref('2'), ref('3'), ref('9')}},
		{"maxAge keeps the newest entry", five, stored, Retention{MaxAge: time.Hour}, nil,
			[]int64{5}, []string{ref('1'), ref('2'), ref('3'), ref('4'), ref('9')}},
		{"both bounds", five, stored, Retention{MaxHistory: 3, MaxAge: 35 * time.Hour}, nil,
			[]int64{3, 4, 5}, []string{ref('1'), ref('2'), ref('9')}},
		{"re-applied render stays while any entry refers to it",
			[]Entry{entry(1, '1', 3*time.Hour), entry(2, '2', 2*time.Hour), entry(3, '1', time.Hour)},
			[]string{ref('1'), ref('2')}, Retention{MaxHistory: 1}, nil,
			[]int64{3}, []string{ref('2')}},
		{"empty", nil, nil, Retention{MaxHistory: 1}, nil, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan := PlanGC(tt.history, tt.stored, tt.policy, tt.protected, now)
			var numbers []int64
			for _, e := range plan.History {
				numbers = append(numbers, e.Number)
			}
			if !reflect.DeepEqual(numbers, tt.wantNumbers) {
				t.Errorf("kept entries %v, want %v", numbers, tt.wantNumbers)
			}
			if plan.TrimHistory != (len(tt.wantNumbers) != len(tt.history)) {
				t.Errorf("TrimHistory = %v", plan.TrimHistory)
			}
			if !reflect.DeepEqual(plan.DeleteRenders, tt.wantDelete) {
				t.Errorf("DeleteRenders %v, want %v", short(plan.DeleteRenders), short(tt.wantDelete))
			}
		})
	}
}

func short(refs []string) string {
	var out []string
	for _, r := range refs {
		out = append(out, r[7:8])
	}
	return fmt.Sprint(out)
}
