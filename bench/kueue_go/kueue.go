package main

import (
	"context"
	"fmt"
	"slices"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	schdcache "sigs.k8s.io/kueue/pkg/cache/scheduler"
	"sigs.k8s.io/kueue/pkg/resources"
	utiltas "sigs.k8s.io/kueue/pkg/util/tas"
	utiltesting "sigs.k8s.io/kueue/pkg/util/testing"
	"sigs.k8s.io/kueue/pkg/workload"
)

const (
	flavorName   = "tas"
	topologyName = "default"
	queueName    = "cq"
)

// snapshotOf fills Kueue's scheduler cache as its controllers would (Topology, the TAS
// ResourceFlavor, a TAS-only ClusterQueue, every Node, the pods outside topology-aware
// admission) and takes the scheduler's snapshot of it: the ClusterQueue's, with its TAS flavor.
func snapshotOf(ctx context.Context, log logr.Logger, s *scenarioFile) (*schdcache.ClusterQueueSnapshot, error) {
	cache := schdcache.New(utiltesting.NewClientBuilder().Build())
	cache.AddOrUpdateTopology(log, &kueue.Topology{
		ObjectMeta: metav1.ObjectMeta{Name: topologyName},
		Spec:       kueue.TopologySpec{Levels: s.levels()},
	})
	cache.AddOrUpdateResourceFlavor(log, &kueue.ResourceFlavor{
		ObjectMeta: metav1.ObjectMeta{Name: flavorName},
		Spec: kueue.ResourceFlavorSpec{
			NodeLabels:   s.ResourceFlavor.NodeLabels,
			Tolerations:  s.ResourceFlavor.Tolerations,
			TopologyName: ptrTo(kueue.TopologyReference(topologyName)),
		},
	})
	if err := cache.AddClusterQueue(ctx, clusterQueue(s)); err != nil {
		return nil, fmt.Errorf("ClusterQueue: %w", err)
	}
	for i := range s.Nodes {
		cache.TASCache().SyncNode(s.Nodes[i].kubeNode())
		for _, pod := range s.Nodes[i].usagePods() {
			cache.TASCache().Update(pod, log)
		}
	}
	snapshot, err := cache.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	cq := snapshot.ClusterQueue(queueName)
	if cq == nil || cq.TASFlavors[flavorName] == nil {
		return nil, fmt.Errorf("the snapshot has no TAS flavor: is the ClusterQueue active?")
	}
	return cq, nil
}

// clusterQueue covers every resource the workloads ask for with the one TAS flavor; quota is
// never checked here (only topology placement is), so it is set far above any request.
func clusterQueue(s *scenarioFile) *kueue.ClusterQueue {
	names := []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}
	for _, w := range s.Workloads {
		for _, ps := range w.PodSets {
			for name := range ps.Requests {
				if !slices.Contains(names, name) {
					names = append(names, name)
				}
			}
		}
	}
	slices.Sort(names)
	quotas := make([]kueue.ResourceQuota, len(names))
	for i, name := range names {
		quotas[i] = kueue.ResourceQuota{Name: name, NominalQuota: resource.MustParse("1e15")}
	}
	return &kueue.ClusterQueue{
		ObjectMeta: metav1.ObjectMeta{Name: queueName},
		Spec: kueue.ClusterQueueSpec{
			ResourceGroups: []kueue.ResourceGroup{{
				CoveredResources: names,
				Flavors:          []kueue.FlavorQuotas{{Name: flavorName, Resources: quotas}},
			}},
		},
	}
}

// tasRequests is what Kueue's flavor assigner (podSetTopologyRequest in
// pkg/scheduler/flavorassigner/tas_flavorassigner.go) builds for each pod set of a workload in
// a TAS-only ClusterQueue: requests from the PodSpec, implied TAS when none is asked for.
func tasRequests(podSets []kueue.PodSet) schdcache.WorkloadTASRequests {
	requests := make(schdcache.FlavorTASRequests, len(podSets))
	for i := range podSets {
		ps := &podSets[i]
		var group *string
		if ps.TopologyRequest != nil {
			group = ps.TopologyRequest.PodSetGroupName
		}
		requests[i] = schdcache.TASPodSetRequests{
			PodSet:            ps,
			SinglePodRequests: resources.NewRequestsFromPodSpec(&ps.Template.Spec),
			Count:             ps.Count,
			Flavor:            flavorName,
			Implied:           !workload.IsExplicitlyRequestingTAS(*ps),
			PodSetGroupName:   group,
		}
	}
	return schdcache.WorkloadTASRequests{flavorName: requests}
}

// placed is one workload's answer: admitted with Kueue's assignment per pod set, or why not.
type placed struct {
	admitted    bool
	message     string
	assignments map[kueue.PodSetReference]*utiltas.TopologyAssignment
}

// place runs Kueue's TAS entry point for one workload and, when every pod set fits, adds its
// usage to the snapshot as the scheduler does after an admission (ClusterQueueSnapshot.AddUsage).
func place(cq *schdcache.ClusterQueueSnapshot, podSets []kueue.PodSet) placed {
	requests := tasRequests(podSets)
	result := cq.FindTopologyAssignmentsForWorkload(requests)
	if failure := result.Failure(); failure != nil {
		return placed{message: failure.Reason}
	}
	usage := workload.TASFlavorUsage{}
	out := placed{admitted: true, assignments: map[kueue.PodSetReference]*utiltas.TopologyAssignment{}}
	for _, request := range requests[flavorName] {
		ta := result[request.PodSet.Name].TopologyAssignment
		if ta == nil {
			return placed{message: fmt.Sprintf("pod set %s: no assignment", request.PodSet.Name)}
		}
		for _, d := range ta.Domains {
			usage = append(usage, workload.TopologyDomainRequests{
				Values: d.Values, SinglePodRequests: request.SinglePodRequests, Count: d.Count,
			})
		}
		out.assignments[request.PodSet.Name] = ta
	}
	cq.AddUsage(workload.Usage{TAS: workload.TASUsage{flavorName: usage}})
	return out
}

func ptrTo[T any](v T) *T { return &v }
