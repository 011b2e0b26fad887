package renderstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// memBlobs is an in-memory blobs backend, so fuzzing runs the store's own read and write paths
// without touching the disk.
type memBlobs struct {
	mu   sync.Mutex
	data map[string][]byte
}

func newMemBlobs() *memBlobs { return &memBlobs{data: map[string][]byte{}} }

func (m *memBlobs) get(_ context.Context, key string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, ok := m.data[key]
	if !ok {
		return nil, fmt.Errorf("%s: %w", key, ErrNotFound)
	}
	return bytes.Clone(d), nil
}

func (m *memBlobs) put(_ context.Context, key string, data []byte, _ string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.data[key] = bytes.Clone(data)
	return nil
}

func (m *memBlobs) exists(_ context.Context, key string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.data[key]
	return ok, nil
}

func (m *memBlobs) remove(_ context.Context, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.data, key)
	return nil
}

func (m *memBlobs) list(_ context.Context, prefix string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var keys []string
	for k := range m.data {
		if strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys, nil
}

func (m *memBlobs) location() string { return "mem://" }

var historyLineError = regexp.MustCompile(`^history line [1-9][0-9]*: `)

// FuzzHistory reads arbitrary bytes as a Release's history log. A bad log must be an error naming
// the line; a log that reads must be writable back by ReplaceHistory and read back as the same
// entries in a stable form, a torn line appended to it must be dropped, and AppendHistory must
// continue its numbering.
func FuzzHistory(f *testing.F) {
	line := func(n int, ref, rev string, gen int, at string) string {
		return fmt.Sprintf(`{"number":%d,"renderRef":%q,"revision":%q,"generation":%d,"time":%q}`+"\n", n, ref, rev, gen, at)
	}
	f.Add([]byte(""))
	f.Add([]byte(line(1, refA, "1.0.0", 1, "2026-07-01T12:00:00Z") + line(2, refA, "", 2, "2026-07-01T12:01:00.123456789Z")))
	f.Add([]byte(line(7, refA, "abc", 3, "2026-07-01T14:00:00+02:00") + `{"number":8,"rend`))
	f.Add([]byte("\n\n  " + line(3, "sha256:x", "v", -1, "0001-01-01T00:00:00Z") + "\r\n"))
	f.Add([]byte(`{"number":1,"time":null,"extra":[1,2]}` + "\n" + `{"number":9223372036854775807}` + "\n"))
	f.Add([]byte("garbage\n" + line(1, refA, "", 1, "2026-07-01T12:00:00Z")))
	f.Add([]byte(line(1, refA, "", 1, "9999-12-31T23:59:59-01:00")))
	f.Add([]byte(`{"number":1e3}` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 64<<10 {
			t.Skip("input too large")
		}
		entries, err := parseHistory(data)
		if err != nil {
			if !historyLineError.MatchString(err.Error()) {
				t.Fatalf("error does not name the line: %v", err)
			}
			return
		}

		ctx := context.Background()
		rel := types.NamespacedName{Namespace: "team-a", Name: "shop"}
		key, err := historyKey(rel)
		if err != nil {
			t.Fatal(err)
		}
		b := newMemBlobs()
		s := &store{b: b}
		if err := b.put(ctx, key, data, ""); err != nil {
			t.Fatal(err)
		}
		if read, err := s.History(ctx, rel); err != nil || !sameEntries(read, entries) {
			t.Fatalf("History = %+v, %v; parseHistory gave %+v", read, err, entries)
		}

		// What reads must write back: garbage collection and AppendHistory rewrite the whole log.
		if err := s.ReplaceHistory(ctx, rel, entries); err != nil {
			t.Fatalf("ReplaceHistory of a log that reads: %v", err)
		}
		written := b.data[key]
		back, err := s.History(ctx, rel)
		if err != nil || !sameEntries(back, entries) {
			t.Fatalf("the rewritten log reads as %+v, %v; want %+v\n%s", back, err, entries, written)
		}
		if err := s.ReplaceHistory(ctx, rel, back); err != nil || !bytes.Equal(b.data[key], written) {
			t.Fatalf("rewriting the log twice differs (err %v):\n%s\n%s", err, written, b.data[key])
		}
		torn := append(bytes.Clone(written), `{"number":1,"renderRef":"sha`...)
		if h, err := parseHistory(torn); err != nil || !sameEntries(h, entries) {
			t.Fatalf("a torn last line was not dropped: %+v, %v", h, err)
		}

		at := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
		e, err := s.AppendHistory(ctx, rel, Entry{RenderRef: refA, Generation: 1, Time: at})
		if err != nil {
			t.Fatalf("AppendHistory: %v", err)
		}
		want := int64(1)
		if n := len(entries); n > 0 {
			want = entries[n-1].Number + 1
		}
		if e.Number != want {
			t.Fatalf("appended entry number %d, want %d", e.Number, want)
		}
		h, err := s.History(ctx, rel)
		if err != nil || !sameEntries(h, append(slices.Clone(entries), e)) {
			t.Fatalf("History after AppendHistory = %+v, %v", h, err)
		}
	})
}

// sameEntries compares entries field by field, times as instants.
func sameEntries(a, b []Entry) bool {
	return slices.EqualFunc(a, b, func(x, y Entry) bool {
		return x.Number == y.Number && x.RenderRef == y.RenderRef && x.Revision == y.Revision &&
			x.Generation == y.Generation && x.Time.Equal(y.Time)
	})
}

// TestMemBlobsNotFound keeps the fuzz backend faithful to the contract History relies on.
func TestMemBlobsNotFound(t *testing.T) {
	if _, err := newMemBlobs().get(context.Background(), "x"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("get of a missing key: %v, want ErrNotFound", err)
	}
}

// TestParseHistoryRefusesUnwritableTime is the regression test of a FuzzHistory find: a line whose
// time lies outside years 0-9999 once in UTC read fine, but ReplaceHistory could not write it back,
// so every later AppendHistory failed. Such a log is now an error naming the line when read.
func TestParseHistoryRefusesUnwritableTime(t *testing.T) {
	first := `{"number":1,"renderRef":"` + refA + `","time":"2026-07-01T12:00:00Z"}` + "\n"
	tests := []struct {
		at      string
		wantErr bool
	}{
		{"9999-12-31T23:59:59-01:00", true},
		{"0000-01-01T00:00:00+01:00", true},
		{"9999-12-31T23:59:59+01:00", false},
		{"0000-01-01T00:00:00Z", false},
	}
	for _, tt := range tests {
		t.Run(tt.at, func(t *testing.T) {
			data := []byte(first + `{"number":2,"renderRef":"` + refA + `","time":"` + tt.at + `"}` + "\n")
			h, err := parseHistory(data)
			if tt.wantErr {
				if err == nil || !strings.HasPrefix(err.Error(), "history line 2: ") {
					t.Fatalf("parseHistory = %+v, %v; want an error naming line 2", h, err)
				}
				return
			}
			if err != nil || len(h) != 2 {
				t.Fatalf("parseHistory = %+v, %v; want 2 entries", h, err)
			}
			s := &store{b: newMemBlobs()}
			if err := s.ReplaceHistory(context.Background(), types.NamespacedName{Namespace: "a", Name: "b"}, h); err != nil {
				t.Fatalf("ReplaceHistory: %v", err)
			}
		})
	}
}
