//! The kinds the simulator serves and stores, with their names on the wire (plural,
//! group and version, kind).

/// The kinds the simulator stores.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Resource {
    Pods,
    Events,
    Services,
    ConfigMaps,
    Namespaces,
    Nodes,
    PersistentVolumeClaims,
    ResourceQuotas,
    /// `podgroups.scheduling.volcano.sh/v1beta1` (as Volcano's CRD serves them).
    PodGroups,
    /// `workloads.kueue.x-k8s.io/v1beta1` (Kueue's CRD).
    KueueWorkloads,
    /// `workloads.scheduling.k8s.io/v1alpha1` (the native gang, 1.35 alpha).
    Workloads,
    /// `apps/v1`: what Spark's statefulset and deployment allocators create (stored and
    /// served; the simulated driver plays their controllers, docs/simulator.md).
    StatefulSets,
    ReplicaSets,
    Deployments,
    /// `sparkapplications.sparkoperator.k8s.io/v1beta2` (the kubeflow spark-operator's CRD;
    /// served only where installed: `Resource::OPTIONAL`).
    KubeflowSparkApps,
    /// `sparkapplications.spark.apache.org/v1` (Apache's spark-kubernetes-operator's CRD).
    ApacheSparkApps,
    /// `scheduledsparkapplications.sparkoperator.k8s.io/v1beta2` (kubeflow's cron of runs).
    KubeflowScheduledApps,
}

impl Resource {
    /// The kinds a cluster serves only when their CRD is installed (a scenario installs
    /// them by using them).
    pub const OPTIONAL: [Self; 3] = [
        Self::KubeflowSparkApps,
        Self::ApacheSparkApps,
        Self::KubeflowScheduledApps,
    ];

    pub const ALL: [Self; 17] = [
        Self::Pods,
        Self::Events,
        Self::Services,
        Self::ConfigMaps,
        Self::Namespaces,
        Self::Nodes,
        Self::PersistentVolumeClaims,
        Self::ResourceQuotas,
        Self::PodGroups,
        Self::KueueWorkloads,
        Self::Workloads,
        Self::StatefulSets,
        Self::ReplicaSets,
        Self::Deployments,
        Self::KubeflowSparkApps,
        Self::ApacheSparkApps,
        Self::KubeflowScheduledApps,
    ];

    pub fn plural(self) -> &'static str {
        match self {
            Self::Pods => "pods",
            Self::Events => "events",
            Self::Services => "services",
            Self::ConfigMaps => "configmaps",
            Self::Namespaces => "namespaces",
            Self::Nodes => "nodes",
            Self::PersistentVolumeClaims => "persistentvolumeclaims",
            Self::ResourceQuotas => "resourcequotas",
            Self::PodGroups => "podgroups",
            Self::KueueWorkloads | Self::Workloads => "workloads",
            Self::StatefulSets => "statefulsets",
            Self::ReplicaSets => "replicasets",
            Self::Deployments => "deployments",
            Self::KubeflowSparkApps | Self::ApacheSparkApps => "sparkapplications",
            Self::KubeflowScheduledApps => "scheduledsparkapplications",
        }
    }

    /// The core resource of this plural (`/api/v1/...`).
    pub fn from_plural(s: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|r| r.group_version() == "v1" && r.plural() == s)
    }

    /// The resource of this plural served at `/apis/{group}/{version}/...`.
    pub fn from_group(group_version: &str, plural: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|r| r.group_version() == group_version && r.plural() == plural)
    }

    /// `v1`, or `group/version` for the resources of API groups.
    pub fn group_version(self) -> &'static str {
        match self {
            Self::PodGroups => "scheduling.volcano.sh/v1beta1",
            Self::KueueWorkloads => "kueue.x-k8s.io/v1beta1",
            Self::Workloads => "scheduling.k8s.io/v1alpha1",
            Self::StatefulSets | Self::ReplicaSets | Self::Deployments => "apps/v1",
            Self::KubeflowSparkApps | Self::KubeflowScheduledApps => "sparkoperator.k8s.io/v1beta2",
            Self::ApacheSparkApps => "spark.apache.org/v1",
            _ => "v1",
        }
    }

    pub fn kind(self) -> &'static str {
        match self {
            Self::Pods => "Pod",
            Self::Events => "Event",
            Self::Services => "Service",
            Self::ConfigMaps => "ConfigMap",
            Self::Namespaces => "Namespace",
            Self::Nodes => "Node",
            Self::PersistentVolumeClaims => "PersistentVolumeClaim",
            Self::ResourceQuotas => "ResourceQuota",
            Self::PodGroups => "PodGroup",
            Self::KueueWorkloads | Self::Workloads => "Workload",
            Self::StatefulSets => "StatefulSet",
            Self::ReplicaSets => "ReplicaSet",
            Self::Deployments => "Deployment",
            Self::KubeflowSparkApps | Self::ApacheSparkApps => "SparkApplication",
            Self::KubeflowScheduledApps => "ScheduledSparkApplication",
        }
    }

    pub fn namespaced(self) -> bool {
        !matches!(self, Self::Namespaces | Self::Nodes)
    }
}
