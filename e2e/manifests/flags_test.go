package manifests

import (
	"bytes"
	"context"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kumodo/convoy/e2e/framework"
)

// flagLine matches a flag in the usage of Go's flag package: "  -name type".
var flagLine = regexp.MustCompile(`(?m)^\s+-([A-Za-z0-9][\w.-]*)`)

// TestDeploymentArgsAreControllerFlags checks every argument of the Deployment is a flag of the
// built convoy-controller-manager (bin/, `make build`): a flag it does not know stops it at
// start.
func TestDeploymentArgsAreControllerFlags(t *testing.T) {
	bin, err := framework.ControllerBinary()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, "--help")
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s --help: %v\n%s", bin, err, out.String())
	}
	known := map[string]bool{}
	for _, m := range flagLine.FindAllStringSubmatch(out.String(), -1) {
		known[m[1]] = true
	}
	if !known["health-addr"] {
		t.Fatalf("could not read the flags of %s --help:\n%s", bin, out.String())
	}

	objs := build(t, repoDir(t, "manifests"))
	deps := byKind(objs, "Deployment")
	if len(deps) != 1 {
		t.Fatalf("%d Deployments, want 1", len(deps))
	}
	containers, _, _ := unstructured.NestedSlice(deps[0].Object, "spec", "template", "spec", "containers")
	for _, c := range containers {
		args, _ := c.(map[string]any)["args"].([]any)
		for _, a := range args {
			arg, _ := a.(string)
			name, _, _ := strings.Cut(strings.TrimLeft(arg, "-"), "=")
			if !strings.HasPrefix(arg, "-") || !known[name] {
				t.Errorf("argument %q is not a flag of %s", arg, bin)
			}
		}
	}
}
