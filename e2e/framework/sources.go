package framework

import (
	"path/filepath"
	"strconv"
	"strings"
)

// ControllerMaxDownloadBytes is the controller's --source-max-download-bytes in the e2e run: small,
// so a test can publish a chart over the limit.
const ControllerMaxDownloadBytes = 2 << 20

// sourceFlags are the controller's source-fetching flags: the download limit above, and a source
// cache inside the run's work directory (next to the log directory), removed with it. Each
// controller process has a cache of its own: sources for logs/controller.log, sources-<name> for
// logs/<name>.log.
func sourceFlags(logPath string) []string {
	dir := "sources"
	if name := strings.TrimSuffix(filepath.Base(logPath), ".log"); name != "controller" {
		dir += "-" + name
	}
	return []string{
		"--source-max-download-bytes=" + strconv.Itoa(ControllerMaxDownloadBytes),
		"--source-cache-dir=" + filepath.Join(filepath.Dir(filepath.Dir(logPath)), dir),
	}
}
