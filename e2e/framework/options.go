package framework

import (
	"fmt"
	"slices"
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
}

// targetSet validates Targets and returns them as a set.
func (o Options) targetSet() (map[string]bool, error) {
	names := o.Targets
	if len(names) == 0 {
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
