// Command demo is what `make demo` runs: it starts a management cluster and one target cluster
// with the e2e framework (etcd, two kube-apiservers, kube-controller-manager, kube-scheduler and
// kwok on the target), runs convoy against them, and applies the sample Release with the real
// kubectl, echoing each command as a user would type it.
//
// On a terminal it keeps everything running until Ctrl-C and prints the KUBECONFIG lines to
// explore with; otherwise (CI) it stops everything after showing the result. It runs from the
// repository root (hack/demo.sh changes there).
package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kumodo/convoy/e2e/framework"
)

// What the demo creates, matching manifests/samples/release-configmap.yaml.
const (
	demoNamespace = "demo"
	clusterName   = "target"
	releaseName   = "hello"
	sampleFile    = "manifests/samples/release-configmap.yaml"
)

// Timeouts: generous, since the machine may be busy; the kubectl waits carry their own.
const (
	startTimeout   = 5 * time.Minute
	setupTimeout   = time.Minute
	commandTimeout = 3 * time.Minute
)

// logTailLines is how much of the controller's log a failure shows.
const logTailLines = 60

// exitInterrupted is the shell's exit code for a command ended by SIGINT.
const exitInterrupted = 130

func main() {
	// Ctrl-C or SIGTERM ends the demo gracefully; after the first one the default handling
	// is back, so a second Ctrl-C kills it (the children die with it: see the framework).
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	context.AfterFunc(ctx, stop)
	code := run(ctx)
	stop()
	os.Exit(code)
}

// run is the whole demo; it returns the exit code.
func run(ctx context.Context) int {
	root, err := os.Getwd()
	if err != nil {
		return failed(fmt.Errorf("working directory: %w", err), "")
	}
	if _, err := os.Stat(filepath.Join(root, sampleFile)); err != nil {
		return failed(fmt.Errorf("run the demo from the repository root (make demo): %w", err), "")
	}
	workDir, err := os.MkdirTemp("", "convoy-demo-")
	if err != nil {
		return failed(fmt.Errorf("create work dir: %w", err), "")
	}
	interactive := isTerminal(os.Stdin)

	say("starting etcd, the management kube-apiserver with convoy's CRDs, the target cluster " +
		"(kube-apiserver, kube-controller-manager, kube-scheduler, kwok) and convoy-controller-manager")
	say("logs: %s", filepath.Join(workDir, "logs"))
	startCtx, cancel := context.WithTimeout(ctx, startTimeout)
	env, err := framework.StartWith(startCtx, framework.Options{
		Targets: []string{framework.TargetLive},
		Root:    root,
		WorkDir: workDir,
	})
	cancel()
	if err != nil {
		// StartWith stopped what it started and kept the work directory.
		return failed(err, logTail(filepath.Join(workDir, "logs", "controller.log"), logTailLines))
	}

	if err := demo(ctx, env, root, interactive); err != nil {
		if ctx.Err() != nil {
			// Ctrl-C before the end is the user's choice, not a failure worth keeping logs of.
			fmt.Fprintf(os.Stderr, "\ndemo interrupted: %v\n", err)
			env.Stop()
			return exitInterrupted
		}
		code := failed(err, env.Controller.LogTail(logTailLines))
		env.MarkFailed()
		env.Stop()
		return code
	}
	say("stopping everything")
	env.Stop()
	say("stopped")
	return 0
}

// demo registers the target, applies the sample with kubectl and shows the result; on a
// terminal it then waits for Ctrl-C.
func demo(ctx context.Context, env *framework.Env, root string, interactive bool) error {
	say("creating namespace %q on both clusters and registering the target as Cluster %q (Secret %s-kubeconfig)",
		demoNamespace, clusterName, clusterName)
	setupCtx, cancel := context.WithTimeout(ctx, setupTimeout)
	err := setup(setupCtx, env)
	cancel()
	if err != nil {
		return err
	}
	mgmtConfig := filepath.Join(env.WorkDir, "mgmt.kubeconfig")
	targetConfig := filepath.Join(env.WorkDir, "target.kubeconfig")
	if err := env.Mgmt.WriteKubeconfig(mgmtConfig, "mgmt"); err != nil {
		return err
	}
	if err := env.Live.WriteKubeconfig(targetConfig, clusterName); err != nil {
		return err
	}

	k, err := newKubectl(root, env.WorkDir)
	if err != nil {
		return err
	}
	mgmt, target := k.on(mgmtConfig), k.on(targetConfig)
	steps := []struct {
		k    kubectlOn
		args []string
	}{
		{mgmt, []string{"version"}},
		{mgmt, []string{"wait", "--for=condition=Ready", "cluster/" + clusterName, "-n", demoNamespace, "--timeout=60s"}},
		{mgmt, []string{"apply", "-f", sampleFile}},
		{mgmt, []string{"wait", "--for=condition=Applied", "release/" + releaseName, "-n", demoNamespace, "--timeout=120s"}},
		{mgmt, []string{"get", "clusters,releases", "-n", demoNamespace}},
		{mgmt, []string{"get", "releaseinventory", releaseName, "-n", demoNamespace, "-o", "yaml"}},
		{target, []string{"wait", "--for=condition=Available", "deploy/" + releaseName, "-n", demoNamespace, "--timeout=120s"}},
		{target, []string{"get", "deploy,svc,cm", "-n", demoNamespace}},
		{mgmt, []string{"describe", "release", releaseName, "-n", demoNamespace}},
		{mgmt, []string{"convoy", "status", releaseName, "-n", demoNamespace}},
	}
	if env.RenderStoreURL != "" {
		steps = append(steps, struct {
			k    kubectlOn
			args []string
		}{mgmt, []string{"convoy", "history", releaseName, "-n", demoNamespace, "--store", env.RenderStoreURL}})
	}
	for _, s := range steps {
		if err := s.k.run(ctx, commandTimeout, s.args...); err != nil {
			return err
		}
	}

	fmt.Println()
	if !interactive {
		say("done: Release %s/%s is Applied and its objects are on the target (no terminal, so not staying up)",
			demoNamespace, releaseName)
		return nil
	}
	say("convoy is running. In another shell, with %s:", k.display)
	fmt.Printf("  export KUBECONFIG=%s    # management cluster: Clusters, Releases, ReleaseInventories\n", mgmtConfig)
	fmt.Printf("  export KUBECONFIG=%s  # target cluster: what convoy applied\n", targetConfig)
	say("Ctrl-C stops everything.")
	<-ctx.Done()
	fmt.Println()
	return nil
}

// setup creates the demo namespace on both clusters and registers the target as a Cluster.
func setup(ctx context.Context, env *framework.Env) error {
	for _, a := range []*framework.APIServer{env.Mgmt, env.Live} {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: demoNamespace}}
		if _, err := a.Kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create namespace %s on %s: %w", demoNamespace, a.Name, err)
		}
	}
	if err := env.RegisterCluster(ctx, demoNamespace, clusterName, env.Live); err != nil {
		return fmt.Errorf("register the target cluster: %w", err)
	}
	return nil
}

// say prints a line of narration, set apart from kubectl's output.
func say(format string, args ...any) {
	fmt.Printf("==> "+format+"\n", args...)
}

// failed reports err and the controller log's tail on stderr and returns the exit code.
func failed(err error, controllerLog string) int {
	fmt.Fprintf(os.Stderr, "\ndemo failed: %v\n", err)
	if controllerLog != "" {
		fmt.Fprintf(os.Stderr, "\ncontroller log, last %d lines:\n%s\n", logTailLines, controllerLog)
	}
	return 1
}

// logTail returns the last n lines of the file at path, or "" when it cannot be read.
func logTail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}
