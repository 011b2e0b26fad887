package render

import (
	"bufio"
	"errors"
	"io"
	"strings"
	"testing"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// TestScanDocLinesMatchesYAMLReader checks that the line index agrees with the documents the
// apimachinery YAML reader actually yields: same count, and each document's text is the file's
// lines from the computed start.
func TestScanDocLinesMatchesYAMLReader(t *testing.T) {
	inputs := map[string]string{
		"empty":                     "",
		"one line no newline":       "a: 1",
		"plain":                     "a: 1\nb: 2\n",
		"separated":                 "a: 1\n---\nb: 2\n",
		"leading separator":         "---\na: 1\n",
		"leading separators":        "---\n---\n---\na: 1\n",
		"consecutive separators":    "a: 1\n---\n---\n---\nb: 2\n",
		"trailing separator":        "a: 1\n---\n",
		"trailing separators":       "a: 1\n---\n---\n",
		"only separators":           "---\n---\n",
		"separator with comment":    "a: 1\n--- # next\nb: 2\n",
		"blank documents":           "\n\n---\n\n---\na: 1\n",
		"crlf":                      "a: 1\r\n---\r\nb: 2\r\n",
		"long line":                 "a: " + strings.Repeat("x", 10000) + "\n---\nb: 2",
		"no trailing newline after": "a: 1\n---",
	}
	for name, in := range inputs {
		t.Run(name, func(t *testing.T) {
			idx := scanDocLines([]byte(in))
			fileLines := strings.Split(strings.ReplaceAll(in, "\r\n", "\n"), "\n")
			reader := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(in)))
			n := 0
			for ; ; n++ {
				chunk, err := reader.Read()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatalf("Read: %v", err)
				}
				if n >= len(idx.starts) {
					t.Fatalf("reader yields more documents than the %d indexed", len(idx.starts))
				}
				chunkLines := strings.Split(strings.TrimSuffix(string(chunk), "\n"), "\n")
				start := idx.starts[n] - 1
				if start+len(chunkLines) > len(fileLines) {
					t.Fatalf("document %d (%q) indexed at line %d runs past the file", n+1, chunk, idx.starts[n])
				}
				if got := fileLines[start : start+len(chunkLines)]; strings.Join(got, "\n") != strings.Join(chunkLines, "\n") {
					t.Errorf("document %d = %q, indexed lines from %d = %q", n+1, chunkLines, idx.starts[n], got)
				}
			}
			if n != len(idx.starts) {
				t.Errorf("reader yields %d documents, index has %d (%v)", n, len(idx.starts), idx.starts)
			}
		})
	}
}

func TestScanDocLinesBadSeparator(t *testing.T) {
	tests := []struct {
		in   string
		want int
	}{
		{"a: 1\n---\nb: 2\n", 0},
		{"a: 1\n--- # ok\nb: 2\n--- bad\n", 4},
		{"---x\na: 1\n", 1},
	}
	for _, tt := range tests {
		if got := scanDocLines([]byte(tt.in)).badSeparator; got != tt.want {
			t.Errorf("badSeparator(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

func TestLineAt(t *testing.T) {
	data := []byte("a\nb\nc")
	tests := []struct {
		offset int64
		want   int
	}{{-1, 1}, {0, 1}, {1, 1}, {2, 2}, {4, 3}, {99, 3}}
	for _, tt := range tests {
		if got := lineAt(data, tt.offset); got != tt.want {
			t.Errorf("lineAt(%d) = %d, want %d", tt.offset, got, tt.want)
		}
	}
}
