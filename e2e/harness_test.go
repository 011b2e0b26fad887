package e2e

import (
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kumodo/convoy/e2e/framework"
)

// harnessTimeout bounds each wait of the smoke test; the live cluster needs about a second.
const harnessTimeout = time.Minute

// TestHarness checks the environment itself, without the controller: every API server is
// ready, the CRDs are served, the live cluster runs workloads (and the harness's kwok stages
// keep bad pods unready and fail failing Jobs), and the fault API server survives a restart.
// Not parallel: it restarts the fault API server.
func TestHarness(t *testing.T) {
	for _, a := range []*framework.APIServer{env.Mgmt, env.Live, env.Bare, env.Fault} {
		body, err := a.Kube.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err != nil || string(body) != "ok" {
			t.Errorf("%s /readyz = %q, %v", a.Name, body, err)
		}
	}
	if _, err := env.Convoy().CoreV1alpha1().Releases("").List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("list Releases: %v", err)
	}
	if _, err := env.Convoy().CoreV1alpha1().Clusters("").List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("list Clusters: %v", err)
	}
	if _, err := env.Convoy().CoreV1alpha1().ReleaseInventories("").List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("list ReleaseInventories: %v", err)
	}
	node, err := env.Live.Kube.CoreV1().Nodes().Get(ctx, framework.FakeNodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get fake node: %v", err)
	}
	t.Logf("fake node %s conditions: %v", node.Name, node.Status.Conditions)

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-harness-"}}
	ns, err = env.Live.Kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace on live: %v", err)
	}
	t.Cleanup(func() { _ = env.Live.Kube.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{}) })
	t.Run("live", func(t *testing.T) { testLiveWorkloads(t, ns.Name) })
	t.Run("fault restart", testFaultRestart)
}

// testLiveWorkloads runs a good and a bad Deployment and a good and a failing Job on live.
func testLiveWorkloads(t *testing.T, ns string) {
	apps, batch := env.Live.Kube.AppsV1(), env.Live.Kube.BatchV1()
	for _, d := range []*appsv1.Deployment{harnessDeployment("good", nil), harnessDeployment("bad", map[string]string{"convoy-e2e/bad": "true"})} {
		if _, err := apps.Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create Deployment %s: %v", d.Name, err)
		}
	}
	for _, j := range []*batchv1.Job{harnessJob("ok", nil), harnessJob("fail", map[string]string{"convoy-e2e/fail": "true"})} {
		if _, err := batch.Jobs(ns).Create(ctx, j, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create Job %s: %v", j.Name, err)
		}
	}
	framework.Eventually(t, harnessTimeout, func() (bool, string) {
		d, err := apps.Deployments(ns).Get(ctx, "good", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return deploymentAvailable(d), fmt.Sprintf("Deployment good not Available: %+v", d.Status)
	})
	framework.Eventually(t, harnessTimeout, func() (bool, string) {
		return jobHasCondition(ns, "ok", batchv1.JobComplete)
	})
	framework.Eventually(t, harnessTimeout, func() (bool, string) {
		return jobHasCondition(ns, "fail", batchv1.JobFailed)
	})
	framework.Eventually(t, harnessTimeout, func() (bool, string) {
		pods, err := env.Live.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=bad"})
		if err != nil {
			return false, err.Error()
		}
		running := 0
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		return len(pods.Items) == 2 && running == 2, fmt.Sprintf("bad pods: %d, running %d", len(pods.Items), running)
	})
	framework.Consistently(t, quietPeriod, func() (bool, string) {
		d, err := apps.Deployments(ns).Get(ctx, "bad", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return d.Status.ReadyReplicas == 0, fmt.Sprintf("bad Deployment has %d ready replicas", d.Status.ReadyReplicas)
	})
}

// jobHasCondition reports whether the Job has condition type True.
func jobHasCondition(ns, name string, want batchv1.JobConditionType) (bool, string) {
	j, err := env.Live.Kube.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return false, err.Error()
	}
	for _, c := range j.Status.Conditions {
		if c.Type == want && c.Status == corev1.ConditionTrue {
			return true, ""
		}
	}
	return false, fmt.Sprintf("Job %s has no %s condition: %+v", name, want, j.Status)
}

// testFaultRestart stops and starts the fault API server and checks its data survived.
func testFaultRestart(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-harness-", Namespace: metav1.NamespaceDefault}}
	cm, err := env.Fault.Kube.CoreV1().ConfigMaps(cm.Namespace).Create(ctx, cm, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create ConfigMap on fault: %v", err)
	}
	if err := env.Fault.Stop(); err != nil {
		t.Fatalf("stop fault: %v", err)
	}
	if _, err := env.Fault.Kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); err == nil {
		t.Errorf("fault still answers after Stop")
	}
	if err := env.Fault.Start(); err != nil {
		t.Fatalf("start fault: %v", err)
	}
	if _, err := env.Fault.Kube.CoreV1().ConfigMaps(cm.Namespace).Get(ctx, cm.Name, metav1.GetOptions{}); err != nil {
		t.Errorf("ConfigMap created before the restart: %v", err)
	}
	_ = env.Fault.Kube.CoreV1().ConfigMaps(cm.Namespace).Delete(ctx, cm.Name, metav1.DeleteOptions{})
}

// harnessDeployment is a 2-replica Deployment whose pods carry extra labels.
func harnessDeployment(name string, podLabels map[string]string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	for k, v := range podLabels {
		labels[k] = v
	}
	replicas := int32(2)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/" + name + ":1"}}},
			},
		},
	}
}

// harnessJob is a one-pod Job without retries whose pod carries extra labels.
func harnessJob(name string, podLabels map[string]string) *batchv1.Job {
	backoffLimit := int32(0)
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: batchv1.JobSpec{
			BackoffLimit: &backoffLimit,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers:    []corev1.Container{{Name: "job", Image: "registry.example/" + name + ":1"}},
				},
			},
		},
	}
}

// deploymentAvailable reports whether a Deployment's Available condition is True.
func deploymentAvailable(d *appsv1.Deployment) bool {
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentAvailable {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
