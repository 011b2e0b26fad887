// Package v1alpha1 holds the convoy API: Release, Cluster and ReleaseInventory in the group
// core.convoy.kumodo.io. Field names follow docs/api.md and are a contract: never rename them.
//
// +k8s:deepcopy-gen=package
// +groupName=core.convoy.kumodo.io
package v1alpha1
