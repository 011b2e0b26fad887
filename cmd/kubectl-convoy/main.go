// Command kubectl-convoy is the kubectl plugin of convoy ("kubectl convoy ..."):
//
//	kubectl convoy history REL              the render history of a Release
//	kubectl convoy rollback REL N           pin the Release to history entry N (or a sha256: render reference)
//	kubectl convoy unpin REL                remove the pin: the Release follows its source again
//	kubectl convoy sync REL [--force]       request a sync (patches the sync annotation)
//	kubectl convoy status REL               one screen: conditions, render, waves, rollout, lifecycle, drift
//
// The history comes from the render store directly (--store URL: s3://… or file:///…) or from the
// controller's history endpoint next to the sync API (--history-url https://host:port, with the
// kubeconfig's bearer token or --token). Both default from $CONVOY_RENDER_STORE and
// $CONVOY_HISTORY_URL.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

const usage = `kubectl convoy: inspect and steer convoy Releases.

Usage:
  kubectl convoy history REL   [--store URL | --history-url URL]
  kubectl convoy rollback REL N [--store URL | --history-url URL]   (N: history number or sha256:… reference)
  kubectl convoy unpin REL
  kubectl convoy sync REL [--force]
  kubectl convoy status REL

Flags:
`

// options are the flags of every command.
type options struct {
	kubeconfig string
	context    string
	namespace  string
	store      string
	historyURL string
	token      string
	caFile     string
	insecure   bool
	force      bool
	noColor    bool
}

func main() {
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

// run parses args and runs one command.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	opts, pos, err := parseArgs(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	if len(pos) < 2 {
		return fmt.Errorf("need a command and a Release name; see kubectl convoy --help")
	}
	cmd, rel, rest := pos[0], pos[1], pos[2:]
	want := map[string]int{"history": 0, "rollback": 1, "unpin": 0, "sync": 0, "status": 0}
	n, ok := want[cmd]
	if !ok {
		return fmt.Errorf("unknown command %q (history, rollback, unpin, sync, status)", cmd)
	}
	if len(rest) != n {
		return fmt.Errorf("%s takes %d argument(s) after the Release name, got %q", cmd, n, rest)
	}
	cl, err := newClients(opts)
	if err != nil {
		return err
	}
	switch cmd {
	case "history":
		return historyCmd(ctx, cl, opts, rel, stdout)
	case "rollback":
		return rollbackCmd(ctx, cl, opts, rel, rest[0], stdout)
	case "unpin":
		return unpinCmd(ctx, cl, rel, stdout)
	case "sync":
		return syncCmd(ctx, cl, rel, opts.force, stdout)
	default:
		return statusCmd(ctx, cl, rel, useColor(opts, stdout), stdout)
	}
}

// parseArgs parses flags placed anywhere among the positional arguments.
func parseArgs(args []string, stderr io.Writer) (options, []string, error) {
	var o options
	fs := flag.NewFlagSet("kubectl-convoy", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage); fs.PrintDefaults() }
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file; default $KUBECONFIG, then ~/.kube/config")
	fs.StringVar(&o.context, "context", "", "kubeconfig context")
	fs.StringVar(&o.namespace, "namespace", "", "namespace of the Release; default the context's")
	fs.StringVar(&o.namespace, "n", "", "shorthand for --namespace")
	fs.StringVar(&o.store, "store", os.Getenv("CONVOY_RENDER_STORE"), "render store URL to read history from (s3://bucket/prefix?endpoint=…, file:///dir)")
	fs.StringVar(&o.historyURL, "history-url", os.Getenv("CONVOY_HISTORY_URL"), "the controller's sync API base URL serving /history")
	fs.StringVar(&o.token, "token", "", "bearer token for --history-url; default the kubeconfig's")
	fs.StringVar(&o.caFile, "ca-file", "", "CA bundle verifying --history-url")
	fs.BoolVar(&o.insecure, "insecure-skip-tls-verify", false, "do not verify --history-url's certificate")
	fs.BoolVar(&o.force, "force", false, "sync: force (skip the dry-run gate, re-run hooks of the same render)")
	fs.BoolVar(&o.noColor, "no-color", false, "status: no colour even on a terminal")
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return o, nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
	return o, pos, nil
}

// useColor is true on a terminal unless --no-color or $NO_COLOR.
func useColor(o options, w io.Writer) bool {
	if o.noColor || os.Getenv("NO_COLOR") != "" || strings.EqualFold(os.Getenv("TERM"), "dumb") {
		return false
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
