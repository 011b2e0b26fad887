package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=relinv,categories=convoy
// +kubebuilder:printcolumn:name="Render",type=string,JSONPath=`.spec.renderRef`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// ReleaseInventory records every object a Release applied to its target; it has the Release's name
// and is owned by it. The release controller writes the spec, the health loop the status.
type ReleaseInventory struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ReleaseInventorySpec   `json:"spec,omitempty"`
	Status ReleaseInventoryStatus `json:"status,omitempty"`
}

// ReleaseInventorySpec lists the applied objects and hooks.
type ReleaseInventorySpec struct {
	// RenderRef is the render the entries belong to.
	// +optional
	RenderRef string `json:"renderRef,omitempty"`
	// +optional
	// +listType=atomic
	Entries []InventoryEntry `json:"entries,omitempty"`
	// +optional
	// +listType=atomic
	Hooks []HookEntry `json:"hooks,omitempty"`
}

// InventoryEntry is one applied object.
type InventoryEntry struct {
	// +optional
	Group   string `json:"group,omitempty"`
	Version string `json:"version"`
	Kind    string `json:"kind"`
	// +optional
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// +optional
	Wave int32 `json:"wave,omitempty"`
}

// HookEntry is one hook object created for a render.
type HookEntry struct {
	Phase string `json:"phase"`
	// +optional
	RenderRef string `json:"renderRef,omitempty"`
	// +optional
	Group   string `json:"group,omitempty"`
	Version string `json:"version"`
	Kind    string `json:"kind"`
	// +optional
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// +optional
	CreatedAt *metav1.Time `json:"createdAt,omitempty"`
	// Hook is the hook's name in the render; Name carries the run suffix.
	// +optional
	Hook string `json:"hook,omitempty"`
	// State is the terminal state (Succeeded or Failed) once the release controller saw it; empty while
	// the hook runs. It survives the hook object, which delete policies may remove.
	// +optional
	State string `json:"state,omitempty"`
	// Message says why the hook ended as it did.
	// +optional
	Message string `json:"message,omitempty"`
}

// ReleaseInventoryStatus is the health loop's assessment.
type ReleaseInventoryStatus struct {
	// +optional
	AssessedAt *metav1.Time `json:"assessedAt,omitempty"`
	// +optional
	// +listType=atomic
	Objects []ObjectHealth `json:"objects,omitempty"`
	// +optional
	// +listType=atomic
	Waves []WaveHealth `json:"waves,omitempty"`
	// +optional
	// +listType=atomic
	Hooks []HookState `json:"hooks,omitempty"`
}

// ObjectHealth is the health of one inventoried object.
type ObjectHealth struct {
	// +optional
	Group string `json:"group,omitempty"`
	Kind  string `json:"kind"`
	// +optional
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// Health is Healthy, Progressing, Degraded, Missing or Unknown.
	Health string `json:"health"`
	// +optional
	Message string `json:"message,omitempty"`
}

// WaveHealth is the health of one sync wave.
type WaveHealth struct {
	Wave   int32  `json:"wave"`
	Health string `json:"health"`
}

// HookState is the state of one hook object.
type HookState struct {
	Phase string `json:"phase"`
	Name  string `json:"name"`
	// +optional
	RenderRef string `json:"renderRef,omitempty"`
	// State is Running, Succeeded or Failed.
	State string `json:"state"`
	// +optional
	Message string `json:"message,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// ReleaseInventoryList is a list of ReleaseInventories.
type ReleaseInventoryList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ReleaseInventory `json:"items"`
}
