package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=cl,categories=convoy
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.status.kubernetesVersion`
// +kubebuilder:printcolumn:name="Shard",type=integer,JSONPath=`.status.shard`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// Cluster is a target cluster that Releases of the same namespace apply to.
type Cluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ClusterSpec   `json:"spec"`
	Status ClusterStatus `json:"status,omitempty"`
}

// ClusterSpec says how to reach a target cluster and what its Releases may do there.
// +kubebuilder:validation:XValidation:rule="has(self.kubeConfigSecretRef) != (has(self.inCluster) && self.inCluster)",message="set exactly one of kubeConfigSecretRef or inCluster"
type ClusterSpec struct {
	// KubeConfigSecretRef names a Secret of the Cluster's namespace holding a kubeconfig.
	// Exec and auth-provider plugins and file paths in it are refused.
	// +optional
	KubeConfigSecretRef *SecretKeyReference `json:"kubeConfigSecretRef,omitempty"`
	// InCluster targets the cluster convoy runs in, with convoy's own service account.
	// +optional
	InCluster bool `json:"inCluster,omitempty"`
	// Shard fixes the shard of this Cluster; else fnv32a(namespace/name) mod the shard count.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Shard *int32 `json:"shard,omitempty"`
	// Retention of rendered history for Releases that set none.
	// +optional
	Retention *RetentionPolicy `json:"retention,omitempty"`
	// AllowClusterScoped lets Releases create cluster-scoped objects here.
	// +optional
	AllowClusterScoped bool `json:"allowClusterScoped,omitempty"`
	// AllowedNamespaces lists namespaces, besides each Release's targetNamespace, that Releases may
	// put objects into; "*" allows any.
	// +optional
	// +listType=set
	AllowedNamespaces []string `json:"allowedNamespaces,omitempty"`
}

// SecretKeyReference names a key of a Secret in the same namespace.
type SecretKeyReference struct {
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// Key of the data entry; default "value".
	// +optional
	// +kubebuilder:default=value
	Key string `json:"key,omitempty"`
}

// ClusterStatus is what the cluster controller observed.
type ClusterStatus struct {
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// +optional
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`
	// +optional
	Shard *int32 `json:"shard,omitempty"`
	// +optional
	LastProbeAt *metav1.Time `json:"lastProbeAt,omitempty"`
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// ClusterList is a list of Clusters.
type ClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Cluster `json:"items"`
}
