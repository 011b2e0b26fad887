// Package health assesses the health of objects on a target cluster, the way the observer's health
// loop reports them in the ReleaseInventory status and the Release's Healthy condition.
//
// # Object health
//
// Assess gives one of Healthy, Progressing, Degraded or Unknown for a live object (Missing is for an
// object that is not there at all):
//
//   - Deployment: the rollout status against metadata.generation, as `kubectl rollout status` reads
//     it: the controller observed the generation, every replica is updated and available and no old
//     replica is left. A Progressing condition with reason ProgressDeadlineExceeded is Degraded.
//   - Job: Complete is Healthy, Failed is Degraded, anything else Progressing.
//   - Service: a LoadBalancer is Progressing until it has an ingress; other types are Healthy.
//   - APIService: its Available condition.
//   - StatefulSet, DaemonSet, ReplicaSet, Pod, PersistentVolumeClaim, CustomResourceDefinition and
//     every other kind: sigs.k8s.io/cli-utils kstatus (Current is Healthy, InProgress and
//     Terminating are Progressing, Failed is Degraded). For a kind kstatus has no rules of its own
//     for (a custom resource), an explicit Ready=False condition is Degraded: convoy reads
//     Reconciling=True or Ready=Unknown as progress and Ready=False as a failure report.
//
// # Verdict
//
// Verdict folds object healths into the verdict of a Release or a sync wave: Degraded when any
// object is Degraded or Missing, else Progressing when any is Progressing, else Unknown when any is
// Unknown, else Healthy.
//
// # Hooks
//
// HookState reads a hook object: a Job by its conditions, a Pod by its phase, any other kind
// succeeds once it exists.
package health
