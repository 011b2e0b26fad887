package badinput

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
)

// hostileRepo is a Helm repository of bad behaviour, served by the test process on 127.0.0.1:
//
//   - /endless/index.yaml never ends, as fast as the client reads;
//   - /slow/index.yaml never ends either, but sends a line every 200 ms;
//   - /big/index.yaml lists chart big 0.1.0, whose archive is 50 MiB announced by Content-Length;
//   - /chunked/index.yaml lists chart big 0.1.0, whose archive is 50 MiB without a length;
//   - /<dir>/index.yaml lists a chart archive added with addArchive.
type hostileRepo struct {
	URL string
	mux *http.ServeMux
}

// bigArchiveBytes is the size of the big chart archives: the 50 MiB of the issue.
const bigArchiveBytes = 50 << 20

func newHostileRepo(t *testing.T) *hostileRepo {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	r := &hostileRepo{URL: "http://" + ln.Addr().String(), mux: mux}
	mux.HandleFunc("/endless/index.yaml", func(w http.ResponseWriter, req *http.Request) {
		streamIndex(w, req, 0)
	})
	mux.HandleFunc("/slow/index.yaml", func(w http.ResponseWriter, req *http.Request) {
		streamIndex(w, req, 200*time.Millisecond)
	})
	for _, dir := range []string{"big", "chunked"} {
		mux.HandleFunc("/"+dir+"/index.yaml", func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprintf(w, "apiVersion: v1\nentries:\n  big:\n  - apiVersion: v2\n    name: big\n    version: 0.1.0\n"+
				"    urls: [big-0.1.0.tgz]\n    digest: %s\ngenerated: \"2026-01-01T00:00:00Z\"\n", strings.Repeat("0", 64))
		})
	}
	mux.HandleFunc("/big/big-0.1.0.tgz", func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(bigArchiveBytes))
		writeZeros(w, req, bigArchiveBytes)
	})
	mux.HandleFunc("/chunked/big-0.1.0.tgz", func(w http.ResponseWriter, req *http.Request) {
		w.(http.Flusher).Flush() // headers without a length: the body is chunked
		writeZeros(w, req, bigArchiveBytes)
	})
	srv := &http.Server{Handler: mux}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return r
}

// streamIndex writes a valid start of an index, then comment lines until the client goes away,
// pausing pause between lines.
func streamIndex(w http.ResponseWriter, req *http.Request, pause time.Duration) {
	w.Header().Set("Content-Type", "text/yaml")
	if _, err := fmt.Fprint(w, "apiVersion: v1\nentries: {}\n"); err != nil {
		return
	}
	line := []byte("# " + strings.Repeat("padding ", 1000) + "\n")
	for {
		if _, err := w.Write(line); err != nil {
			return
		}
		if pause > 0 {
			w.(http.Flusher).Flush()
			select {
			case <-req.Context().Done():
				return
			case <-time.After(pause):
			}
		}
	}
}

// writeZeros writes n zero bytes, stopping when the client goes away.
func writeZeros(w http.ResponseWriter, req *http.Request, n int) {
	buf := make([]byte, 64<<10)
	for n > 0 && req.Context().Err() == nil {
		k := min(n, len(buf))
		if _, err := w.Write(buf[:k]); err != nil {
			return
		}
		n -= k
	}
}

// addArchive packages ch and serves it under /dir/ with an index of its own, with its digest.
// Unlike framework.HelmRepo, whose indexing loads each chart with Helm's loader and so drops one
// Helm would not load, it serves any chart.
func (r *hostileRepo) addArchive(t *testing.T, dir string, ch *chart.Chart) {
	t.Helper()
	path, err := chartutil.Save(ch, t.TempDir())
	if err != nil {
		t.Fatalf("package chart %s: %v", ch.Name(), err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Base(path)
	sum := sha256.Sum256(data)
	index := fmt.Sprintf("apiVersion: v1\nentries:\n  %s:\n  - apiVersion: v2\n    name: %s\n    version: %s\n"+
		"    urls: [%s]\n    digest: %s\ngenerated: \"2026-01-01T00:00:00Z\"\n", ch.Name(), ch.Name(), ch.Metadata.Version, file, hex.EncodeToString(sum[:]))
	r.mux.HandleFunc("/"+dir+"/index.yaml", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(index)) })
	r.mux.HandleFunc("/"+dir+"/"+file, func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(data) })
}

// tarBombChart is a chart named bomb whose archive is small (the file is zeros, which gzip
// shrinks a thousandfold) but unpacks to twice the controller's unpack limit.
func tarBombChart() *chart.Chart {
	ch := keepChart("bomb", "0.1.0")
	ch.Files = []*chart.File{{Name: "files/zeros.bin", Data: make([]byte, 2*maxUnpackedBytes)}}
	return ch
}
