// Package framework runs the real control planes the convoy e2e tests need and the convoy
// controller-manager against them, all as child processes on 127.0.0.1.
//
// # Topology
//
// One etcd holds several independent clusters, each an API server with its own etcd prefix:
//
//   - mgmt (/mgmt): the management cluster, with the convoy CRDs; the controller runs against it.
//   - live (/live): a target with kube-controller-manager, kube-scheduler and kwok with one fake
//     Node, so Deployments become Available and Jobs Complete.
//   - bare (/bare): a target with an API server only; nothing ever becomes healthy there.
//   - fault (/fault): like bare, but tests may Stop and Start it to simulate an outage.
//
// Options.BareTargets adds more bare targets by name (the sharding tests run four and none of the
// above), and Options.Audit gives every API server an audit log (APIServer.AuditEvents).
//
// The controller is the built binary bin/convoy-controller-manager, run as a real process
// with its log in the work directory. Options.Controllers runs several (Env.Controllers), each
// with flags of its own and through a link of its name (client-go's default user agent
// begins with the program's name). Binaries come from <repo>/bin (or $CONVOY_BIN_DIR),
// built by `make test-bins`.
//
// # Lifecycle
//
// Start brings everything up once per `go test` run (from TestMain); StartWith brings up only
// some targets (the demo, hack/demo, starts live alone); Env.Stop stops every process by PID. Each test calls Env.NewNamespace for a namespace of its own, with a Cluster
// per target. When a test fails, or CONVOY_E2E_KEEP=1 is set, the work directory (logs, etcd
// data, kubeconfigs) is kept and its path printed.
//
// # kwok stages
//
// Besides kwok's fast stages, bin/kwok-stages.yaml has two of the harness's own: a Pod
// labelled convoy-e2e/bad=true runs but never becomes Ready, and a Job's Pod labelled
// convoy-e2e/fail=true fails (see hack/tools/kwok/convoy-e2e-stages.yaml).
//
// # Source servers
//
// Tests that need sources start servers of their own in the test process, on 127.0.0.1:
// NewHelmRepo (a Helm repository over HTTP; charts packaged at test time), NewOCIRegistry (an
// in-memory distribution registry; charts pushed with Helm's registry client) and NewGitServer
// (`git http-backend` through net/http/cgi). The controller runs with a download limit of
// ControllerMaxDownloadBytes and its source cache in the work directory (sources.go).
package framework
