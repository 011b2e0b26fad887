package v1alpha1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Annotations and labels convoy reads or writes.
const (
	// SyncRequestedAtAnnotation holds the RFC 3339 time of the latest /sync request.
	SyncRequestedAtAnnotation = "release.core.convoy.kumodo.io/sync-requested-at"
	// ForceSyncRequestedAtAnnotation holds the RFC 3339 time of the latest /sync?force=true request.
	ForceSyncRequestedAtAnnotation = "release.core.convoy.kumodo.io/force-sync-requested-at"
	// PruneWorkloadsFinalizer keeps a Release until its objects are pruned from the target.
	PruneWorkloadsFinalizer = "release.core.convoy.kumodo.io/prune-workloads"
	// OwnerAnnotation names the Release ("namespace/name") that applied an object.
	OwnerAnnotation = "release.core.convoy.kumodo.io/owner"
	// ManagedByLabel is set to ManagedByValue on every applied object.
	ManagedByLabel = "app.kubernetes.io/managed-by"
	// ManagedByValue is the value of ManagedByLabel.
	ManagedByValue = "convoy"
	// SyncWaveAnnotation puts an object into a sync wave (an integer, default 0).
	SyncWaveAnnotation = "convoy.kumodo.io/sync-wave"
	// WaveHealthAnnotation set to "required" makes the object's wave wait for the previous wave's health.
	WaveHealthAnnotation = "convoy.kumodo.io/wave-health"
	// PruneAnnotation set to "disabled" keeps an object when it leaves the render.
	PruneAnnotation = "convoy.kumodo.io/prune"
	// AllowEmptyAnnotation set to "true" on a Release lets an empty render prune everything.
	AllowEmptyAnnotation = "convoy.kumodo.io/allow-empty"
	// HookAnnotation makes a rendered object a lifecycle hook of the named phase.
	HookAnnotation = "convoy.kumodo.io/hook"
	// HookOnFailureAnnotation is Fail (default) or Continue.
	HookOnFailureAnnotation = "convoy.kumodo.io/hook-on-failure"
)

// Reasons of the Applied condition. Each is one word and a stable API.
const (
	ReasonApplied               = "Applied"
	ReasonWaitingForSync        = "WaitingForSync"
	ReasonWaitingForClusterWave = "WaitingForClusterWave"
	ReasonClusterWaveFailed     = "ClusterWaveFailed"
	ReasonWaitingForWaveHealth  = "WaitingForWaveHealth"
	ReasonWaveUnhealthy         = "WaveUnhealthy"
	ReasonWaitingForHook        = "WaitingForHook"
	ReasonHookFailed            = "HookFailed"
	ReasonUnappliable           = "Unappliable"
	ReasonClusterNotReady       = "ClusterNotReady"
	ReasonPinned                = "Pinned"
	ReasonRolledBack            = "RolledBack"
	ReasonUnsupported           = "Unsupported"
	ReasonFetchFailed           = "FetchFailed"
	ReasonRenderFailed          = "RenderFailed"
	ReasonApplyFailed           = "ApplyFailed"
	ReasonPruneFailed           = "PruneFailed"
	ReasonConflict              = "Conflict"
	ReasonStoreUnavailable      = "StoreUnavailable"
)

// Condition types of a Release, each owned by one field manager.
const (
	// ConditionApplied is owned by convoy-release.
	ConditionApplied = "Applied"
	// ConditionRolloutSucceeded is owned by convoy-release.
	ConditionRolloutSucceeded = "RolloutSucceeded"
	// ConditionLifecycleSucceeded is owned by convoy-release.
	ConditionLifecycleSucceeded = "LifecycleSucceeded"
	// ConditionInSync is owned by convoy-observe.
	ConditionInSync = "InSync"
	// ConditionHealthy is owned by convoy-health.
	ConditionHealthy = "Healthy"
	// ConditionReady is the Cluster's reachability condition.
	ConditionReady = "Ready"
)

// ContentType says how the fetched source is turned into objects.
// +kubebuilder:validation:Enum=helm;manifests;kustomize
type ContentType string

// Content types.
const (
	ContentTypeHelm      ContentType = "helm"
	ContentTypeManifests ContentType = "manifests"
	ContentTypeKustomize ContentType = "kustomize"
)

// SyncMode says whether every reconcile applies (Automatic) or only one with a pending /sync (Manual).
// +kubebuilder:validation:Enum=Automatic;Manual
type SyncMode string

// Sync modes.
const (
	SyncModeAutomatic SyncMode = "Automatic"
	SyncModeManual    SyncMode = "Manual"
)

// WaveHealthPolicy says whether every sync wave waits for the previous one to be healthy.
// +kubebuilder:validation:Enum=None;Required
type WaveHealthPolicy string

// Wave health policies.
const (
	WaveHealthNone     WaveHealthPolicy = "None"
	WaveHealthRequired WaveHealthPolicy = "Required"
)

// FailureAction is what the rollout state machine does with a failed render.
// +kubebuilder:validation:Enum=Rollback;Halt
type FailureAction string

// Failure actions.
const (
	FailureActionRollback FailureAction = "Rollback"
	FailureActionHalt     FailureAction = "Halt"
)

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=rel,categories=convoy
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.clusterRef.name`
// +kubebuilder:printcolumn:name="Applied",type=string,JSONPath=`.status.conditions[?(@.type=="Applied")].reason`
// +kubebuilder:printcolumn:name="Healthy",type=string,JSONPath=`.status.conditions[?(@.type=="Healthy")].status`
// +kubebuilder:printcolumn:name="InSync",type=string,JSONPath=`.status.conditions[?(@.type=="InSync")].status`
// +kubebuilder:printcolumn:name="Render",type=string,JSONPath=`.status.lastSuccessful.shortRef`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// Release names a source, a target Cluster, values and mutations; convoy renders it and applies the
// result to the Cluster.
type Release struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ReleaseSpec   `json:"spec"`
	Status ReleaseStatus `json:"status,omitempty"`
}

// ReleaseSpec is the desired state of a Release.
type ReleaseSpec struct {
	// ClusterRef names a Cluster in the Release's namespace.
	ClusterRef LocalObjectReference `json:"clusterRef"`
	// TargetNamespace is given to namespaced objects that name none.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	TargetNamespace string `json:"targetNamespace"`
	// ServiceAccountName, if set, is impersonated on the target cluster
	// (system:serviceaccount:<targetNamespace>:<name>).
	// +optional
	ServiceAccountName string `json:"serviceAccountName,omitempty"`
	// Source says where the content comes from.
	Source ReleaseSource `json:"source"`
	// ContentType is helm, manifests or kustomize. Default: helm for source.helm, else manifests.
	// +optional
	ContentType ContentType `json:"contentType,omitempty"`
	// Values are inline Helm values: the last (strongest) layer.
	// +optional
	Values *apiextensionsv1.JSON `json:"values,omitempty"`
	// ValuesFrom are earlier Helm value layers, merged in order before Values.
	// +optional
	// +listType=atomic
	ValuesFrom []ValuesReference `json:"valuesFrom,omitempty"`
	// Mutations run in order on the rendered objects before the render reference is taken.
	// +optional
	// +listType=atomic
	Mutations []Mutation `json:"mutations,omitempty"`
	// SyncPolicy says when and how the render is applied.
	// +optional
	// +kubebuilder:default={}
	SyncPolicy SyncPolicy `json:"syncPolicy,omitempty"`
	// Rollout enables the rollout state machine when it has a failure policy.
	// +optional
	Rollout *RolloutPolicy `json:"rollout,omitempty"`
	// Pin makes the Release apply exactly a stored render.
	// +optional
	Pin *Pin `json:"pin,omitempty"`
	// DeletionPolicy says what deleting the Release does to its objects.
	// +optional
	DeletionPolicy DeletionPolicy `json:"deletionPolicy,omitempty"`
	// Retention of rendered history; absent: the Cluster's, then the controller's flags.
	// +optional
	Retention *RetentionPolicy `json:"retention,omitempty"`
}

// LocalObjectReference names an object in the same namespace.
type LocalObjectReference struct {
	// Name of the object.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// ReleaseSource has exactly one of Helm, Git or ConfigMapRef, and optional credentials.
// +kubebuilder:validation:XValidation:rule="[has(self.helm), has(self.git), has(self.configMapRef)].filter(x, x).size() == 1",message="exactly one of helm, git or configMapRef must be set"
type ReleaseSource struct {
	// Helm is a chart in an HTTP repository or an OCI registry (oci://).
	// +optional
	Helm *HelmSource `json:"helm,omitempty"`
	// Git is a path in a git repository.
	// +optional
	Git *GitSource `json:"git,omitempty"`
	// ConfigMapRef names a ConfigMap of the Release's namespace whose data keys hold manifests.
	// +optional
	ConfigMapRef *LocalObjectReference `json:"configMapRef,omitempty"`
	// SecretRef names a Secret of the Release's namespace with credentials for helm or git
	// (username/password, token, ssh key, caFile).
	// +optional
	SecretRef *LocalObjectReference `json:"secretRef,omitempty"`
}

// HelmSource is a chart in a Helm repository.
type HelmSource struct {
	// RepoURL is an http(s):// repository or an oci:// registry path.
	// +kubebuilder:validation:Pattern=`^(https?|oci)://`
	RepoURL string `json:"repoURL"`
	// Chart is the chart name.
	// +kubebuilder:validation:MinLength=1
	Chart string `json:"chart"`
	// Version is an exact version or a semver constraint ("1.4.x", ">=2 <3"); empty means latest.
	// +optional
	Version string `json:"version,omitempty"`
}

// GitSource is a path inside a git repository at a branch, tag or commit.
type GitSource struct {
	// URL of the repository (http or https).
	// +kubebuilder:validation:MinLength=1
	URL string `json:"url"`
	// Ref selects a branch, tag or commit; empty means the default branch.
	// +optional
	Ref GitRef `json:"ref,omitempty"`
	// Path inside the repository; empty means the root.
	// +optional
	Path string `json:"path,omitempty"`
}

// GitRef selects one revision; the most specific field set wins (commit, tag, branch).
type GitRef struct {
	// +optional
	Branch string `json:"branch,omitempty"`
	// +optional
	Tag string `json:"tag,omitempty"`
	// +optional
	Commit string `json:"commit,omitempty"`
}

// ValuesReference is one Helm values layer read from a ConfigMap or Secret of the Release's namespace.
type ValuesReference struct {
	// Kind is ConfigMap or Secret.
	// +kubebuilder:validation:Enum=ConfigMap;Secret
	Kind string `json:"kind"`
	// Name of the ConfigMap or Secret.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// Key of the data entry; default values.yaml.
	// +optional
	// +kubebuilder:default=values.yaml
	Key string `json:"key,omitempty"`
	// Optional layers that are missing are skipped; a missing required layer is RenderFailed.
	// +optional
	Optional bool `json:"optional,omitempty"`
}

// Mutation changes rendered objects after rendering. Exactly one change is set.
type Mutation struct {
	// Target selects the objects; empty selects all.
	// +optional
	Target *MutationTarget `json:"target,omitempty"`
	// Labels are added or overwritten.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// Annotations are added or overwritten.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
	// Namespace is set on namespaced objects.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// Images rewrite container and initContainer images.
	// +optional
	// +listType=atomic
	Images []ImageMutation `json:"images,omitempty"`
	// JSONPatch is an RFC 6902 patch.
	// +optional
	// +listType=atomic
	JSONPatch []JSONPatchOperation `json:"jsonPatch,omitempty"`
	// MergePatch is an RFC 7386 merge patch.
	// +optional
	MergePatch *apiextensionsv1.JSON `json:"mergePatch,omitempty"`
	// StrategicMergePatch is a strategic merge patch for built-in kinds.
	// +optional
	StrategicMergePatch *apiextensionsv1.JSON `json:"strategicMergePatch,omitempty"`
}

// MutationTarget selects rendered objects; every field set must match.
type MutationTarget struct {
	// +optional
	Group string `json:"group,omitempty"`
	// +optional
	Version string `json:"version,omitempty"`
	// +optional
	Kind string `json:"kind,omitempty"`
	// +optional
	Name string `json:"name,omitempty"`
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// LabelSelector in the kubectl syntax.
	// +optional
	LabelSelector string `json:"labelSelector,omitempty"`
	// AnnotationSelector in the label selector syntax, matched against annotations.
	// +optional
	AnnotationSelector string `json:"annotationSelector,omitempty"`
}

// ImageMutation rewrites the images whose name (without tag or digest) equals Name.
type ImageMutation struct {
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// +optional
	NewName string `json:"newName,omitempty"`
	// +optional
	NewTag string `json:"newTag,omitempty"`
	// +optional
	Digest string `json:"digest,omitempty"`
}

// JSONPatchOperation is one RFC 6902 operation.
type JSONPatchOperation struct {
	// +kubebuilder:validation:Enum=add;remove;replace;move;copy;test
	Op string `json:"op"`
	// Path is a JSON pointer.
	Path string `json:"path"`
	// From is a JSON pointer, for move and copy.
	// +optional
	From string `json:"from,omitempty"`
	// Value for add, replace and test.
	// +optional
	Value *apiextensionsv1.JSON `json:"value,omitempty"`
}

// SyncPolicy says when and how a render is applied.
type SyncPolicy struct {
	// Mode is Automatic or Manual.
	// +optional
	// +kubebuilder:default=Automatic
	Mode SyncMode `json:"mode,omitempty"`
	// Interval between periodic reconciles; 0 disables them.
	// +optional
	// +kubebuilder:default="5m"
	Interval *metav1.Duration `json:"interval,omitempty"`
	// Prune deletes objects that left the render.
	// +optional
	// +kubebuilder:default=true
	Prune *bool `json:"prune,omitempty"`
	// ClusterWave orders the Releases of one cluster: lower waves go first.
	// +optional
	ClusterWave int32 `json:"clusterWave,omitempty"`
	// ClusterWaveTimeout bounds the wait for lower cluster waves; 0 waits forever.
	// +optional
	ClusterWaveTimeout *metav1.Duration `json:"clusterWaveTimeout,omitempty"`
	// WaveHealth Required makes every sync wave wait for the previous one to be healthy.
	// +optional
	// +kubebuilder:default=None
	WaveHealth WaveHealthPolicy `json:"waveHealth,omitempty"`
	// WaveHealthTimeout bounds the wait for a wave's health.
	// +optional
	// +kubebuilder:default="5m"
	WaveHealthTimeout *metav1.Duration `json:"waveHealthTimeout,omitempty"`
	// Backoff after failed attempts.
	// +optional
	Backoff *Backoff `json:"backoff,omitempty"`
}

// Backoff is initial × factor^(n−1), capped at max, after n consecutive failed attempts.
type Backoff struct {
	// +optional
	// +kubebuilder:default="5s"
	Initial *metav1.Duration `json:"initial,omitempty"`
	// +optional
	// +kubebuilder:default=2
	// +kubebuilder:validation:Minimum=1
	Factor *int32 `json:"factor,omitempty"`
	// +optional
	// +kubebuilder:default="1000s"
	Max *metav1.Duration `json:"max,omitempty"`
}

// RolloutPolicy configures the rollout state machine.
type RolloutPolicy struct {
	// ProgressDeadline is how long a new render may stay Progressing.
	// +optional
	// +kubebuilder:default="10m"
	ProgressDeadline *metav1.Duration `json:"progressDeadline,omitempty"`
	// FailurePolicy enables the state machine; absent = no rollout state machine.
	// +optional
	FailurePolicy *FailurePolicy `json:"failurePolicy,omitempty"`
}

// FailurePolicy says what a failed rollout does.
type FailurePolicy struct {
	Action FailureAction `json:"action"`
}

// Pin makes a Release apply exactly a stored render.
type Pin struct {
	// RenderRef is "sha256:<hex>".
	// +kubebuilder:validation:Pattern=`^sha256:[a-f0-9]{64}$`
	RenderRef string `json:"renderRef"`
}

// DeletionPolicy says what deleting the Release does.
type DeletionPolicy struct {
	// KeepWorkloads leaves the applied objects on the target.
	// +optional
	KeepWorkloads bool `json:"keepWorkloads,omitempty"`
	// BlockOnClusterUnreachable keeps the Release (and its finalizer) while the target is unreachable.
	// +optional
	BlockOnClusterUnreachable bool `json:"blockOnClusterUnreachable,omitempty"`
}

// RetentionPolicy bounds the rendered history.
type RetentionPolicy struct {
	// +optional
	// +kubebuilder:validation:Minimum=1
	MaxHistory *int32 `json:"maxHistory,omitempty"`
	// +optional
	MaxAge *metav1.Duration `json:"maxAge,omitempty"`
}

// ReleaseStatus is the observed state of a Release. Three field managers write it with server-side
// apply, each only its own fields: convoy-release, convoy-observe and convoy-health.
type ReleaseStatus struct {
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// ReconciledAt is when convoy-release last changed the status.
	// +optional
	ReconciledAt *metav1.Time `json:"reconciledAt,omitempty"`
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// +optional
	LastAttempted *AttemptRecord `json:"lastAttempted,omitempty"`
	// +optional
	LastSuccessful *RenderRecord `json:"lastSuccessful,omitempty"`
	// +optional
	LastHealthy *HealthyRecord `json:"lastHealthy,omitempty"`
	// +optional
	LastHandledSyncAt *metav1.Time `json:"lastHandledSyncAt,omitempty"`
	// +optional
	LastHandledForceSyncAt *metav1.Time `json:"lastHandledForceSyncAt,omitempty"`
	// +optional
	Pin *PinStatus `json:"pin,omitempty"`
	// +optional
	// +listType=atomic
	Waves []WaveStatus `json:"waves,omitempty"`
	// +optional
	Rollout *RolloutStatus `json:"rollout,omitempty"`
	// +optional
	// +listType=atomic
	Lifecycle []LifecycleStatus `json:"lifecycle,omitempty"`
	// +optional
	ResolvedRetentionPolicy *RetentionPolicy `json:"resolvedRetentionPolicy,omitempty"`
	// Health is written by the health loop (convoy-health).
	// +optional
	Health *HealthStatus `json:"health,omitempty"`
	// Drift is written by the drift loop (convoy-observe).
	// +optional
	Drift *DriftStatus `json:"drift,omitempty"`
}

// AttemptRecord describes the last reconcile attempt.
type AttemptRecord struct {
	// +optional
	RenderRef string `json:"renderRef,omitempty"`
	// +optional
	At *metav1.Time `json:"at,omitempty"`
	// Revision is the chart version or git commit.
	// +optional
	Revision string `json:"revision,omitempty"`
	// Reason is the Applied reason of the attempt.
	// +optional
	Reason string `json:"reason,omitempty"`
	// Failures counts consecutive failed attempts; it drives the backoff across restarts.
	// +optional
	Failures int32 `json:"failures,omitempty"`
}

// RenderRecord describes an applied render.
type RenderRecord struct {
	// +optional
	RenderRef string `json:"renderRef,omitempty"`
	// ShortRef is the first 12 hex digits of RenderRef, for printing.
	// +optional
	ShortRef string `json:"shortRef,omitempty"`
	// +optional
	At *metav1.Time `json:"at,omitempty"`
	// +optional
	Revision string `json:"revision,omitempty"`
}

// HealthyRecord describes the last render found healthy.
type HealthyRecord struct {
	// +optional
	RenderRef string `json:"renderRef,omitempty"`
	// +optional
	At *metav1.Time `json:"at,omitempty"`
}

// PinStatus says whether the pin is applied.
type PinStatus struct {
	// +optional
	RenderRef string `json:"renderRef,omitempty"`
	// +optional
	Applied bool `json:"applied,omitempty"`
	// +optional
	Message string `json:"message,omitempty"`
}

// WaveStatus is the outcome of one sync wave.
type WaveStatus struct {
	Wave int32 `json:"wave"`
	// +optional
	Objects int32 `json:"objects,omitempty"`
	// Phase is Pending, Applied, Waiting or Failed.
	// +optional
	Phase string `json:"phase,omitempty"`
	// +optional
	Message string `json:"message,omitempty"`
	// Since is when the wave started to wait for the previous wave's health; waveHealthTimeout counts
	// from it.
	// +optional
	Since *metav1.Time `json:"since,omitempty"`
}

// RolloutStatus is the state of the rollout state machine.
type RolloutStatus struct {
	// +optional
	RenderRef string `json:"renderRef,omitempty"`
	// Phase is Progressing, Succeeded, Failed or RolledBack.
	// +optional
	Phase string `json:"phase,omitempty"`
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`
	// +optional
	TransitionedAt *metav1.Time `json:"transitionedAt,omitempty"`
	// +optional
	Message string `json:"message,omitempty"`
}

// LifecycleStatus is the state of one hook phase of a render.
type LifecycleStatus struct {
	Phase string `json:"phase"`
	// +optional
	RenderRef string `json:"renderRef,omitempty"`
	// State is Running, Succeeded or Failed.
	// +optional
	State string `json:"state,omitempty"`
	// +optional
	Message string `json:"message,omitempty"`
}

// HealthStatus is the health loop's verdict.
type HealthStatus struct {
	// +optional
	RenderRef string `json:"renderRef,omitempty"`
	// Verdict is Healthy, Progressing, Degraded or Unknown.
	// +optional
	Verdict string `json:"verdict,omitempty"`
	// +optional
	AssessedAt *metav1.Time `json:"assessedAt,omitempty"`
	// +optional
	Message string `json:"message,omitempty"`
}

// DriftStatus is the drift loop's last check.
type DriftStatus struct {
	// +optional
	CheckedAt *metav1.Time `json:"checkedAt,omitempty"`
	// +optional
	RenderRef string `json:"renderRef,omitempty"`
	// +optional
	Drifted int32 `json:"drifted,omitempty"`
	// Objects are the first 20 drifted objects.
	// +optional
	// +listType=atomic
	Objects []ObjectReference `json:"objects,omitempty"`
}

// ObjectReference identifies an object on the target cluster.
type ObjectReference struct {
	// +optional
	Group string `json:"group,omitempty"`
	// +optional
	Version string `json:"version,omitempty"`
	Kind    string `json:"kind"`
	// +optional
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// ReleaseList is a list of Releases.
type ReleaseList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Release `json:"items"`
}
