package framework

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Names of the target clusters, as Options.Targets takes them and as their Clusters are named
// by NewNamespace.
const (
	TargetLive  = "live"
	TargetBare  = "bare"
	TargetFault = "fault"
)

// allTargets are the targets Start brings up.
var allTargets = []string{TargetLive, TargetBare, TargetFault}

// Options selects what StartWith brings up. The zero value is everything, as Start does.
type Options struct {
	// Targets names the target clusters to start, among TargetLive, TargetBare and
	// TargetFault; empty means all three. The Env field of a target not started stays nil.
	Targets []string
	// Root is the repository root (manifests/crds, bin/); empty means the checkout this
	// package's source lies in.
	Root string
	// WorkDir is the directory for logs, kubeconfigs and etcd data; empty means
	// $CONVOY_E2E_WORKDIR, else a fresh temporary directory.
	WorkDir string
	// BareTargets names more targets with an API server only (Env.BareTargets), started besides
	// Targets; NewNamespace registers them as Clusters of those names too. When it is set and
	// Targets is empty, none of the three standard targets is started.
	BareTargets []string
	// Audit turns on the audit log of every API server, mgmt and the targets
	// (APIServer.AuditEvents).
	Audit bool
	// Controllers are the controller-manager processes to run (Env.Controllers); empty means
	// one with the harness's flags, as Start runs it.
	Controllers []ControllerOptions
	// APIServerArgs are flags given to every kube-apiserver after the harness's own; a flag given
	// again overrides the harness's value (the benchmark widens --service-cluster-ip-range).
	APIServerArgs []string
	// APIServerEnv is environment given to every kube-apiserver after the harness's own
	// (apiServerEnv); the benchmark lifts the soft heap cap with GOMEMLIMIT=off.
	APIServerEnv []string
	// OwnEtcdTargets names more targets with an API server only, each storing its cluster in an
	// etcd of its own (Env.TargetEtcds) that tests may Stop and Start. They are in
	// Env.BareTargets, and NewNamespace registers them as Clusters of those names too. They do
	// not count as BareTargets for the choice of the standard targets.
	OwnEtcdTargets []string
}

// ControllerOptions is one controller-manager process of StartWith.
type ControllerOptions struct {
	// Name names the process: its log is logs/<Name>.log, and it runs through a link named Name,
	// so its clients that send client-go's default user agent send "<Name>/...".
	// Empty means logs/controller.log and the binary's own name; only one controller may have it.
	Name string
	// Args are flags after the harness's own; a flag given again overrides the harness's value.
	Args []string
}

// targetSet validates Targets and returns them as a set.
func (o Options) targetSet() (map[string]bool, error) {
	names := o.Targets
	if len(names) == 0 && len(o.BareTargets) == 0 {
		names = allTargets
	}
	set := map[string]bool{}
	for _, n := range names {
		if !slices.Contains(allTargets, n) {
			return nil, fmt.Errorf("unknown target %q: want one of %v", n, allTargets)
		}
		set[n] = true
	}
	return set, nil
}

// bareTargets validates BareTargets: DNS labels, unique, none a standard target or mgmt.
func (o Options) bareTargets() ([]string, error) {
	seen := map[string]bool{}
	for _, n := range o.BareTargets {
		if errs := validation.IsDNS1123Label(n); len(errs) > 0 {
			return nil, fmt.Errorf("bare target %q: %v", n, errs)
		}
		if n == "mgmt" || slices.Contains(allTargets, n) || seen[n] {
			return nil, fmt.Errorf("bare target %q is taken", n)
		}
		seen[n] = true
	}
	return o.BareTargets, nil
}

// controllers validates Controllers and returns them, one unnamed controller when empty.
func (o Options) controllers() ([]ControllerOptions, error) {
	if len(o.Controllers) == 0 {
		return []ControllerOptions{{}}, nil
	}
	seen := map[string]bool{}
	for _, c := range o.Controllers {
		if c.Name != "" {
			if errs := validation.IsDNS1123Label(c.Name); len(errs) > 0 {
				return nil, fmt.Errorf("controller name %q: %v", c.Name, errs)
			}
		}
		if seen[c.Name] {
			return nil, fmt.Errorf("controller name %q given twice", c.Name)
		}
		seen[c.Name] = true
	}
	return o.Controllers, nil
}
