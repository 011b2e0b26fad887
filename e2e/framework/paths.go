package framework

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
)

// Binary names the harness runs from the bin directory.
const (
	binEtcd              = "etcd"
	binKubeAPIServer     = "kube-apiserver"
	binKubeControllerMgr = "kube-controller-manager"
	binKubeScheduler     = "kube-scheduler"
	binKwok              = "kwok"
	binController        = "convoy-controller-manager"
	fileKwokStages       = "kwok-stages.yaml"
)

// repoRoot returns the repository root: two directories up from this source file.
func repoRoot() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok || !filepath.IsAbs(file) {
		return "", fmt.Errorf("cannot locate the repository from the framework source path %q", file)
	}
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..")), nil
}

// binDir returns $CONVOY_BIN_DIR, else <repo>/bin.
func binDir(root string) string {
	if d := os.Getenv("CONVOY_BIN_DIR"); d != "" {
		return d
	}
	return filepath.Join(root, "bin")
}

// requireFiles fails fast, naming every missing file, so a forgotten build step reads as one.
func requireFiles(dir string, names ...string) error {
	var missing []string
	for _, n := range names {
		if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing %v in %s: run `make test-bins`", missing, dir)
	}
	return nil
}
