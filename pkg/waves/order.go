package waves

// installOrder is the order of kinds inside a wave: Namespaces and CustomResourceDefinitions
// first, then the order in which Helm installs kinds. Kinds not listed come after all of these.
var installOrder = []string{
	"Namespace",
	"CustomResourceDefinition",
	// Helm's install order, without the two kinds above.
	"NetworkPolicy",
	"ResourceQuota",
	"LimitRange",
	"PodSecurityPolicy",
	"PodDisruptionBudget",
	"ServiceAccount",
	"Secret",
	"SecretList",
	"ConfigMap",
	"StorageClass",
	"PersistentVolume",
	"PersistentVolumeClaim",
	"ClusterRole",
	"ClusterRoleList",
	"ClusterRoleBinding",
	"ClusterRoleBindingList",
	"Role",
	"RoleList",
	"RoleBinding",
	"RoleBindingList",
	"Service",
	"DaemonSet",
	"Pod",
	"ReplicationController",
	"ReplicaSet",
	"Deployment",
	"HorizontalPodAutoscaler",
	"StatefulSet",
	"Job",
	"CronJob",
	"IngressClass",
	"Ingress",
	"APIService",
	"MutatingWebhookConfiguration",
	"ValidatingWebhookConfiguration",
}

// kindRanks maps each listed kind to its position in installOrder.
var kindRanks = func() map[string]int {
	ranks := make(map[string]int, len(installOrder))
	for i, kind := range installOrder {
		ranks[kind] = i
	}
	return ranks
}()

// kindRank returns the position of kind in the apply order; unknown kinds share the last rank.
func kindRank(kind string) int {
	if rank, ok := kindRanks[kind]; ok {
		return rank
	}
	return len(installOrder)
}
