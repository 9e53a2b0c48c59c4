"""Kueue, pinned: its release (chart, CRDs, API) and the labels a workload names its queue and priority by. One home
for every construct that installs or queues on Kueue: the EKS cluster (whole UltraServers at admission,
eks.manifests.placement_objects) and the shared pool (neuronfleet.sharing). No aws-cdk-lib import;
tests/unit/test_sharing_facts.py pins each value against Kueue's own files (tests/data/kueue)."""

from __future__ import annotations

from datetime import date

READ = date(2026, 11, 23)

KUEUE_VERSION = "0.19.2"
KUEUE_COMMIT = "8eab68778fc1b52affe165fdf5af29d1e9b4f3cb"
KUEUE_CHART = "oci://registry.k8s.io/kueue/charts/kueue"
KUEUE_MANIFESTS = f"https://github.com/kubernetes-sigs/kueue/releases/download/v{KUEUE_VERSION}/manifests.yaml"
KUEUE_NAMESPACE = "kueue-system"
KUEUE_API = "kueue.x-k8s.io/v1beta2"
KUEUE_SOURCE = (
    f"kubernetes-sigs/kueue tag v{KUEUE_VERSION} @ {KUEUE_COMMIT} (2026-08-20, the newest release tag stored; "
    "v0.20.0-devel is not a release): charts/kueue/Chart.yaml (version 0.19.2, appVersion v0.19.2); charts/kueue/"
    "README.md: 'helm install kueue oci://registry.k8s.io/kueue/charts/kueue --version=\"0.19.2\" --create-namespace "
    "--namespace=kueue-system'; README.md: 'kubectl apply --server-side -f https://github.com/kubernetes-sigs/kueue/"
    "releases/download/v0.19.2/manifests.yaml'; the CRDs serve v1beta1 (deprecated: 'Use v1beta2 instead') and "
    "v1beta2 (storage)")
"""Kueue, pinned. The kit writes v1beta2 objects only."""
KUEUE_IMAGE = f"registry.k8s.io/kueue/kueue:v{KUEUE_VERSION}"
"""The controller image the pinned chart runs, as its registry serves it: the release packages charts/kueue with
hack/helm-chart-package.sh @ KUEUE_COMMIT, which for a release tag (``promoted_version_regex``) sets
``controllerManager.manager.image`` to ``registry.k8s.io/kueue`` + ``/kueue`` at the tag (read 2026-11-29; the script is
copied in tests/data/kueue). The tree at the tag names the staging image
(``us-central1-docker.pkg.dev/k8s-staging-images/kueue/kueue:release-0.19``) instead. By tag, as the chart pins it; the
kit passes the chart no values (tests/constructs/test_kueue_chart_render.py)."""

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
"""site/content/en/docs/concepts/workload_priority_class.md @ v0.19.2: 'You can specify the WorkloadPriorityClass by
setting the label kueue.x-k8s.io/priority-class'; tasks/run/jobs.md: the Job sets 'the kueue.x-k8s.io/queue-name
label selecting the LocalQueue'; Kueue 'automatically manages the Job's suspension'."""

TAS_DRA = (
    "Kueue v0.19.2 does not place DRA devices by topology: keps/2941-DRA/README.md @ KUEUE_COMMIT, Non-Goals and "
    "Risks: 'This design does not work with Kueue's Topology Aware Scheduling feature and will be addressed in future "
    "work' (its graduation list: 'TAS + DRA integration and testing'); pkg/scheduler/flavorassigner/"
    "tas_flavorassigner.go ``podSetTopologyRequest`` sizes a pod for TAS from its containers' requests only "
    "(``resources.NewRequestsFromPodSpec``: 'Use PodSpec directly for TAS placement'), so a ResourceClaimTemplate's "
    "devices are not counted on the nodes; no publisher test puts a DRA workload through TAS (pkg/scheduler/"
    "scheduler_tas_test.go, pkg/cache/scheduler/tas_cache_test.go, test/integration/singlecluster/tas: none names a "
    "resource claim). And a claim's DeviceClass must be mapped in the Configuration's ``resources.deviceClassMappings`` "
    "or the workload is inadmissible (pkg/dra/claims.go ``GetResourceRequestsForResourceClaimTemplates``: 'DeviceClass "
    "%s is not mapped in DRA configuration for podset %s'; test pkg/dra/claims_test.go Test_GetResourceRequests "
    "'Unmapped DeviceClass returns error'); ``allocationMode: All`` is refused ('AllocationMode All returns error').")
"""Why the kit queues no DRA Job on Kueue: a DRA UltraServer job is one UltraServer (required pod affinity), and a
Job of several UltraServers on a DRA node group is refused (eks.manifests.training_job)."""
