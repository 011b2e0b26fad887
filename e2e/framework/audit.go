package framework

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// auditPolicy logs every request at Metadata level once it completed, except the API server's own
// loopback requests and health probes.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: None
  users: ["system:apiserver"]
- level: None
  nonResourceURLs: ["/readyz*", "/livez*", "/healthz*"]
- level: Metadata
`

// enableAudit makes the API server write an audit log (logs/audit-<name>.log, JSON lines),
// synchronously, so an event is in the file once its request completed.
func (a *APIServer) enableAudit(logDir string) error {
	policy := filepath.Join(a.dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o644); err != nil {
		return fmt.Errorf("write audit policy of %s: %w", a.Name, err)
	}
	a.AuditLogPath = filepath.Join(logDir, "audit-"+a.Name+".log")
	a.args = append(a.args,
		"--audit-policy-file="+policy,
		"--audit-log-path="+a.AuditLogPath,
		"--audit-log-format=json",
		"--audit-log-mode=blocking",
	)
	return nil
}

// AuditEvents reads the audit log of an API server started with Options.Audit, in file order.
func (a *APIServer) AuditEvents() ([]auditv1.Event, error) {
	if a.AuditLogPath == "" {
		return nil, fmt.Errorf("API server %s runs without an audit log (Options.Audit)", a.Name)
	}
	f, err := os.Open(a.AuditLogPath)
	if err != nil {
		return nil, fmt.Errorf("open audit log of %s: %w", a.Name, err)
	}
	defer f.Close()
	var out []auditv1.Event
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	for sc.Scan() {
		var ev auditv1.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			// The last line may be half written while the server runs.
			continue
		}
		out = append(out, ev)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read audit log of %s: %w", a.Name, err)
	}
	return out, nil
}
