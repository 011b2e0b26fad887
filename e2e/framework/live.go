package framework

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FakeNodeName is the one kwok Node of the live cluster.
const FakeNodeName = "kwok-node-0"

// liveComponents are the processes that make the live cluster behave like a real one:
// controllers, a scheduler, and kwok playing kubelet.
type liveComponents struct {
	procs []*process
}

// startLiveComponents starts kube-controller-manager, kube-scheduler and kwok against the
// live API server and creates the fake Node; it returns once the Node is Ready.
func startLiveComponents(ctx context.Context, live *APIServer, bins, logDir string) (*liveComponents, error) {
	lc := &liveComponents{}
	specs := []struct {
		name string
		args []string
	}{
		{binKubeControllerMgr, []string{
			"--kubeconfig=" + live.kubeconfigPath, "--leader-elect=false", "--secure-port=0",
			"--service-account-private-key-file=" + live.saKeyPath, "--root-ca-file=" + live.caPath,
			"--controllers=*",
		}},
		{binKubeScheduler, []string{"--kubeconfig=" + live.kubeconfigPath, "--leader-elect=false", "--secure-port=0"}},
		{binKwok, []string{
			"--kubeconfig=" + live.kubeconfigPath, "--config=" + filepath.Join(bins, fileKwokStages),
			"--manage-all-nodes=true", "--node-lease-duration-seconds=40",
			"--cidr=10.244.0.0/16", "--node-ip=10.243.0.1",
		}},
	}
	for _, s := range specs {
		p, err := startProcess(s.name, filepath.Join(logDir, s.name+".log"), nil, filepath.Join(bins, s.name), s.args...)
		if err != nil {
			lc.stop()
			return nil, err
		}
		lc.procs = append(lc.procs, p)
	}
	if err := createFakeNode(ctx, live); err != nil {
		lc.stop()
		return nil, err
	}
	if err := lc.waitNodeReady(ctx, live); err != nil {
		lc.stop()
		return nil, err
	}
	return lc, nil
}

// createFakeNode registers the Node kwok manages (Nodes may carry status on create).
func createFakeNode(ctx context.Context, live *APIServer) error {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("32"),
		corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        FakeNodeName,
			Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"},
			Labels: map[string]string{
				"type":                   "kwok",
				"kubernetes.io/hostname": FakeNodeName,
				"kubernetes.io/os":       "linux",
				"kubernetes.io/arch":     "amd64",
			},
		},
		Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
	}
	if _, err := live.Kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create fake node: %w", err)
	}
	return nil
}

// waitNodeReady waits until kwok marks the fake Node Ready, failing early if a component dies.
func (lc *liveComponents) waitNodeReady(ctx context.Context, live *APIServer) error {
	for {
		for _, p := range lc.procs {
			if p.exited() {
				return p.exitError()
			}
		}
		node, err := live.Kube.CoreV1().Nodes().Get(ctx, FakeNodeName, metav1.GetOptions{})
		if err == nil && nodeReady(node) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("fake node %s not Ready (last error %v): %w", FakeNodeName, err, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// nodeReady reports whether the Node's Ready condition is True.
func nodeReady(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// stop stops the components in reverse start order.
func (lc *liveComponents) stop() []error {
	var errs []error
	for i := len(lc.procs) - 1; i >= 0; i-- {
		if err := lc.procs[i].stop(10 * time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}
