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

// Stages of a wave, in the order Stage returns them.
const (
	// StageDefinitions holds the kinds later objects need to exist to be accepted at all:
	// Namespaces and CustomResourceDefinitions. One kind at a time.
	StageDefinitions = iota
	// StageFoundation holds what pods are admitted against and mount: policies, quotas, service
	// accounts, Secrets, ConfigMaps, storage and RBAC (the kinds Helm installs before Services).
	StageFoundation
	// StageWorkloads holds everything else: Services, workloads, Ingresses, webhooks, custom kinds.
	StageWorkloads
)

// Stage returns the stage of kind within a wave. The objects of one stage do not depend on each
// other to be admitted, so they may be applied in parallel; stages go one after the other.
func Stage(kind string) int {
	switch rank := kindRank(kind); {
	case rank < kindRank("NetworkPolicy"):
		return StageDefinitions
	case rank < kindRank("Service"):
		return StageFoundation
	default:
		return StageWorkloads
	}
}
