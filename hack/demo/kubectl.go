package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// kubectl runs bin/kubectl as a user would, echoing each command before its output.
type kubectl struct {
	// bin is the kubectl binary; display is how the echo names it (relative to the root).
	bin, display string
	// env keeps kubectl's discovery cache in the work dir and ignores the user's kuberc, so
	// the demo neither depends on nor changes the user's ~/.kube.
	env []string
}

// newKubectl finds kubectl in $CONVOY_BIN_DIR, else <root>/bin, as the framework does.
func newKubectl(root, workDir string) (*kubectl, error) {
	bins := os.Getenv("CONVOY_BIN_DIR")
	if bins == "" {
		bins = filepath.Join(root, "bin")
	}
	bin := filepath.Join(bins, "kubectl")
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("kubectl not built (run `make test-bins`): %w", err)
	}
	display := bin
	if rel, err := filepath.Rel(root, bin); err == nil && !strings.HasPrefix(rel, "..") {
		display = rel
	}
	// bin/ first on PATH, so `kubectl convoy` finds the plugin built next to kubectl.
	env := append(os.Environ(), "KUBECACHEDIR="+filepath.Join(workDir, "kubectl-cache"), "KUBERC=off",
		"PATH="+bins+string(os.PathListSeparator)+os.Getenv("PATH"))
	return &kubectl{bin: bin, display: display, env: env}, nil
}

// on returns kubectl bound to one cluster's kubeconfig.
func (k *kubectl) on(kubeconfig string) kubectlOn { return kubectlOn{k: k, kubeconfig: kubeconfig} }

// kubectlOn is kubectl with --kubeconfig set.
type kubectlOn struct {
	k          *kubectl
	kubeconfig string
}

// run echoes and runs one kubectl command with its output on ours; a non-zero exit is an error.
func (o kubectlOn) run(ctx context.Context, timeout time.Duration, args ...string) error {
	full := append([]string{"--kubeconfig", o.kubeconfig}, args...)
	if len(args) > 0 && args[0] == "convoy" {
		// kubectl passes a plugin everything after its name and refuses flags before it.
		full = append(append([]string{}, args...), "--kubeconfig", o.kubeconfig)
	}
	fmt.Printf("\n$ %s\n", shellJoin(append([]string{o.k.display}, full...)))
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, o.k.bin, full...)
	cmd.Env = o.k.env
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("kubectl %s: %w", strings.Join(args, " "), ctx.Err())
		}
		return fmt.Errorf("kubectl %s: %w", strings.Join(args, " "), err)
	}
	return nil
}

// shellJoin quotes words for a POSIX shell where needed, so echoed commands can be pasted.
func shellJoin(words []string) string {
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = shellQuote(w)
	}
	return strings.Join(out, " ")
}

// shellQuote single-quotes w unless it consists of characters a shell leaves alone.
func shellQuote(w string) string {
	if w != "" && strings.Trim(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=,:@%+") == "" {
		return w
	}
	var b bytes.Buffer
	b.WriteByte('\'')
	b.WriteString(strings.ReplaceAll(w, "'", `'\''`))
	b.WriteByte('\'')
	return b.String()
}
