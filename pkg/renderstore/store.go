package renderstore

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/kumodo/convoy/pkg/render"
)

// ErrNotFound is returned (wrapped) for a render that is not in the store.
var ErrNotFound = errors.New("not found in the render store")

// maxBlobSize bounds what a read decompresses, so a corrupt or hostile blob cannot exhaust memory.
const maxBlobSize = 256 << 20

// Render is one stored render: exactly the objects convoy applies for its reference.
type Render struct {
	// RenderRef is "sha256:<hex>" of Objects (render.RenderRef).
	RenderRef string
	// Revision is the chart version, git commit or ConfigMap version the render came from.
	Revision string
	// Objects are the mutated objects in render order, hooks included.
	Objects []*unstructured.Unstructured
}

// Entry is one line of a Release's history log: a render that was applied.
type Entry struct {
	// Number increases by one per entry and never changes; rollback names an entry by it.
	Number int64 `json:"number"`
	// RenderRef is the applied render.
	RenderRef string `json:"renderRef"`
	// Revision is the chart version, git commit or ConfigMap version of the render.
	Revision string `json:"revision,omitempty"`
	// Generation is the Release's metadata.generation when the render was applied.
	Generation int64 `json:"generation"`
	// Time is when the render was applied.
	Time time.Time `json:"time"`
}

// Store keeps the renders and the history log of every Release. Implementations are safe for
// concurrent use; the shard gate makes one replica at a time write a given Release's keys.
type Store interface {
	// PutRender stores r under its reference. Storing a reference that is already there is a no-op:
	// blobs are content addressed.
	PutRender(ctx context.Context, rel types.NamespacedName, r *Render) error
	// GetRender reads a render; a missing one is an error wrapping ErrNotFound. The objects are
	// checked against the reference, so a corrupt blob is an error, never a different render.
	GetRender(ctx context.Context, rel types.NamespacedName, renderRef string) (*Render, error)
	// ListRenders returns the references of the stored renders, sorted.
	ListRenders(ctx context.Context, rel types.NamespacedName) ([]string, error)
	// DeleteRender deletes a render; a missing one is not an error.
	DeleteRender(ctx context.Context, rel types.NamespacedName, renderRef string) error
	// History returns the history log, oldest first; no log is an empty history.
	History(ctx context.Context, rel types.NamespacedName) ([]Entry, error)
	// AppendHistory appends e with the next Number and returns it as appended.
	AppendHistory(ctx context.Context, rel types.NamespacedName, e Entry) (Entry, error)
	// ReplaceHistory replaces the log with entries (garbage collection); their Numbers are kept.
	ReplaceHistory(ctx context.Context, rel types.NamespacedName, entries []Entry) error
	// DeleteRelease deletes everything under the Release prefix.
	DeleteRelease(ctx context.Context, rel types.NamespacedName) error
	// Location describes the store for messages and logs, without credentials.
	Location() string
}

// blobs is what a backend provides: bytes under keys relative to the store root. Keys reaching a
// backend are already validated; backends check containment again.
type blobs interface {
	// get returns a blob, or an error wrapping ErrNotFound.
	get(ctx context.Context, key string) ([]byte, error)
	// put writes a blob atomically: a reader sees the old or the new content, never a part.
	put(ctx context.Context, key string, data []byte, contentType string) error
	// exists reports whether a blob is there.
	exists(ctx context.Context, key string) (bool, error)
	// remove deletes a blob; a missing one is not an error.
	remove(ctx context.Context, key string) error
	// list returns the keys under a prefix ending in "/", recursively.
	list(ctx context.Context, prefix string) ([]string, error)
	// location describes the backend.
	location() string
}

// store implements Store on top of a blobs backend.
type store struct{ b blobs }

var _ Store = (*store)(nil)

// blobDocument is the JSON inside a render blob.
type blobDocument struct {
	RenderRef string           `json:"renderRef"`
	Revision  string           `json:"revision,omitempty"`
	Objects   []map[string]any `json:"objects"`
}

func (s *store) Location() string { return s.b.location() }

func (s *store) PutRender(ctx context.Context, rel types.NamespacedName, r *Render) error {
	key, err := renderKey(rel, r.RenderRef)
	if err != nil {
		return err
	}
	if ok, err := s.b.exists(ctx, key); err != nil {
		return fmt.Errorf("checking render %s in %s: %w", r.RenderRef, s.Location(), err)
	} else if ok {
		return nil
	}
	doc := blobDocument{RenderRef: r.RenderRef, Revision: r.Revision, Objects: make([]map[string]any, 0, len(r.Objects))}
	for _, obj := range r.Objects {
		doc.Objects = append(doc.Objects, obj.Object)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if err := json.NewEncoder(zw).Encode(doc); err != nil {
		return fmt.Errorf("encoding render %s: %w", r.RenderRef, err)
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("compressing render %s: %w", r.RenderRef, err)
	}
	if err := s.b.put(ctx, key, buf.Bytes(), "application/gzip"); err != nil {
		return fmt.Errorf("writing render %s to %s: %w", r.RenderRef, s.Location(), err)
	}
	return nil
}

func (s *store) GetRender(ctx context.Context, rel types.NamespacedName, renderRef string) (*Render, error) {
	key, err := renderKey(rel, renderRef)
	if err != nil {
		return nil, err
	}
	data, err := s.b.get(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("reading render %s from %s: %w", renderRef, s.Location(), err)
	}
	r, err := decodeRender(data)
	if err != nil {
		return nil, fmt.Errorf("render %s in %s: %w", renderRef, s.Location(), err)
	}
	if r.RenderRef != renderRef {
		return nil, fmt.Errorf("render %s in %s holds render %s", renderRef, s.Location(), r.RenderRef)
	}
	return r, nil
}

// decodeRender decompresses and decodes a blob and checks its objects against its reference.
func decodeRender(data []byte) (*Render, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("decompressing: %w", err)
	}
	raw, err := io.ReadAll(io.LimitReader(zr, maxBlobSize+1))
	if err != nil {
		return nil, fmt.Errorf("decompressing: %w", err)
	}
	if len(raw) > maxBlobSize {
		return nil, fmt.Errorf("larger than %d bytes", maxBlobSize)
	}
	var doc blobDocument
	// The apimachinery decoder turns JSON numbers into int64 or float64, as unstructured objects need.
	if err := utiljson.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("decoding: %w", err)
	}
	r := &Render{RenderRef: doc.RenderRef, Revision: doc.Revision, Objects: make([]*unstructured.Unstructured, 0, len(doc.Objects))}
	for _, obj := range doc.Objects {
		r.Objects = append(r.Objects, &unstructured.Unstructured{Object: obj})
	}
	ref, err := render.RenderRef(r.Objects)
	if err != nil {
		return nil, fmt.Errorf("computing the reference of the stored objects: %w", err)
	}
	if ref != doc.RenderRef {
		return nil, fmt.Errorf("corrupt: the stored objects hash to %s, not %s", ref, doc.RenderRef)
	}
	return r, nil
}

func (s *store) ListRenders(ctx context.Context, rel types.NamespacedName) ([]string, error) {
	prefix, err := releasePrefix(rel)
	if err != nil {
		return nil, err
	}
	keys, err := s.b.list(ctx, prefix+rendersDir)
	if err != nil {
		return nil, fmt.Errorf("listing renders in %s: %w", s.Location(), err)
	}
	var refs []string
	for _, k := range keys {
		if ref, ok := refFromKey(strings.TrimPrefix(k, prefix+rendersDir)); ok {
			refs = append(refs, ref)
		}
	}
	return sortedUnique(refs), nil
}

func (s *store) DeleteRender(ctx context.Context, rel types.NamespacedName, renderRef string) error {
	key, err := renderKey(rel, renderRef)
	if err != nil {
		return err
	}
	if err := s.b.remove(ctx, key); err != nil {
		return fmt.Errorf("deleting render %s from %s: %w", renderRef, s.Location(), err)
	}
	return nil
}

func (s *store) History(ctx context.Context, rel types.NamespacedName) ([]Entry, error) {
	key, err := historyKey(rel)
	if err != nil {
		return nil, err
	}
	data, err := s.b.get(ctx, key)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading history from %s: %w", s.Location(), err)
	}
	return parseHistory(data)
}

// parseHistory decodes a history log. A torn last line (no final newline: a crash of a writer
// without atomic writes) is dropped; any other bad line is an error.
func parseHistory(data []byte) ([]Entry, error) {
	lines := bytes.Split(data, []byte("\n"))
	var out []Entry
	for i, raw := range lines {
		text := bytes.TrimSpace(raw)
		if len(text) == 0 {
			continue
		}
		var e Entry
		if err := json.Unmarshal(text, &e); err != nil {
			if i == len(lines)-1 {
				break
			}
			return nil, fmt.Errorf("history line %d: %w", i+1, err)
		}
		// ReplaceHistory writes times in UTC; a time it cannot write (a year beyond 0-9999 once in
		// UTC) would make every later AppendHistory fail, so such a log is refused when read.
		if _, err := e.Time.UTC().MarshalJSON(); err != nil {
			return nil, fmt.Errorf("history line %d: time: %w", i+1, err)
		}
		out = append(out, e)
	}
	return out, nil
}

func (s *store) AppendHistory(ctx context.Context, rel types.NamespacedName, e Entry) (Entry, error) {
	if _, err := refHex(e.RenderRef); err != nil {
		return Entry{}, err
	}
	entries, err := s.History(ctx, rel)
	if err != nil {
		return Entry{}, err
	}
	e.Number = 1
	if n := len(entries); n > 0 {
		e.Number = entries[n-1].Number + 1
	}
	if err := s.ReplaceHistory(ctx, rel, append(entries, e)); err != nil {
		return Entry{}, err
	}
	return e, nil
}

func (s *store) ReplaceHistory(ctx context.Context, rel types.NamespacedName, entries []Entry) error {
	key, err := historyKey(rel)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, e := range entries {
		e.Time = e.Time.UTC()
		if err := enc.Encode(e); err != nil {
			return fmt.Errorf("encoding history entry %d: %w", e.Number, err)
		}
	}
	// The whole log is rewritten atomically: S3 has no append, and a rename never leaves a torn line.
	if err := s.b.put(ctx, key, buf.Bytes(), "application/x-ndjson"); err != nil {
		return fmt.Errorf("writing history to %s: %w", s.Location(), err)
	}
	return nil
}

func (s *store) DeleteRelease(ctx context.Context, rel types.NamespacedName) error {
	prefix, err := releasePrefix(rel)
	if err != nil {
		return err
	}
	keys, err := s.b.list(ctx, prefix)
	if err != nil {
		return fmt.Errorf("listing %s in %s: %w", prefix, s.Location(), err)
	}
	// The history goes last, so an interrupted deletion still lists what is left.
	history := prefix + historyFile
	var errs []error
	for _, k := range keys {
		if k != history {
			if err := s.b.remove(ctx, k); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if len(errs) == 0 {
		if err := s.b.remove(ctx, history); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("deleting %s from %s: %w", prefix, s.Location(), err)
	}
	if c, ok := s.b.(interface{ cleanup(string) }); ok {
		c.cleanup(prefix)
	}
	return nil
}
