package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestIsTerminal checks the non-terminals CI gives the demo as stdin; /dev/null is the one a
// file-mode check gets wrong (it is a character device).
func TestIsTerminal(t *testing.T) {
	tests := []struct {
		name string
		open func(t *testing.T) *os.File
	}{
		{"dev null", func(t *testing.T) *os.File {
			f, err := os.Open(os.DevNull)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}},
		{"pipe", func(t *testing.T) *os.File {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { w.Close() })
			return r
		}},
		{"regular file", func(t *testing.T) *os.File {
			f, err := os.Create(filepath.Join(t.TempDir(), "stdin"))
			if err != nil {
				t.Fatal(err)
			}
			return f
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := tt.open(t)
			defer f.Close()
			if isTerminal(f) {
				t.Errorf("isTerminal(%s) = true, want false", tt.name)
			}
		})
	}
}
