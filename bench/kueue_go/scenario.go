package main

import (
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	"sigs.k8s.io/kueue/pkg/controller/jobframework"
)

// The scenario file of `tas solve` (SCENARIO.md), YAML or JSON; only the fields placement reads.
type scenarioFile struct {
	Topology struct {
		Levels []struct {
			NodeLabel string `json:"nodeLabel"`
		} `json:"levels"`
	} `json:"topology"`
	ResourceFlavor struct {
		NodeLabels  map[string]string   `json:"nodeLabels"`
		Tolerations []corev1.Toleration `json:"tolerations"`
	} `json:"resourceFlavor"`
	FeatureGates map[string]bool    `json:"featureGates"`
	Nodes        []scenarioNode     `json:"nodes"`
	Workloads    []scenarioWorkload `json:"workloads"`
}

type scenarioNode struct {
	Name          string              `json:"name"`
	Labels        map[string]string   `json:"labels"`
	Allocatable   corev1.ResourceList `json:"allocatable"`
	Usage         corev1.ResourceList `json:"usage"`
	Taints        []corev1.Taint      `json:"taints"`
	Ready         *bool               `json:"ready"`
	Unschedulable bool                `json:"unschedulable"`
}

type scenarioWorkload struct {
	Name    string           `json:"name"`
	PodSets []scenarioPodSet `json:"podSets"`
}

type scenarioPodSet struct {
	Name         string              `json:"name"`
	Count        int32               `json:"count"`
	Requests     corev1.ResourceList `json:"requests"`
	Annotations  map[string]string   `json:"annotations"`
	NodeSelector map[string]string   `json:"nodeSelector"`
	Tolerations  []corev1.Toleration `json:"tolerations"`
}

// defaultPods is the "pods" allocatable of a node that gives none (SCENARIO.md).
const defaultPods = 110

func readScenario(path string) (*scenarioFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var s scenarioFile
	if err := yaml.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(s.Topology.Levels) == 0 {
		return nil, fmt.Errorf("topology.levels: at least one level is required")
	}
	return &s, nil
}

func (s *scenarioFile) levels() []kueue.TopologyLevel {
	levels := make([]kueue.TopologyLevel, len(s.Topology.Levels))
	for i, level := range s.Topology.Levels {
		levels[i] = kueue.TopologyLevel{NodeLabel: level.NodeLabel}
	}
	return levels
}

// kubeNode is the Node object Kueue's node controller would hand to the TAS cache.
func (n *scenarioNode) kubeNode() *corev1.Node {
	allocatable := n.Allocatable.DeepCopy()
	if allocatable == nil {
		allocatable = corev1.ResourceList{}
	}
	if _, found := allocatable[corev1.ResourcePods]; !found {
		allocatable[corev1.ResourcePods] = *resource.NewQuantity(defaultPods, resource.DecimalSI)
	}
	ready := corev1.ConditionTrue
	if n.Ready != nil && !*n.Ready {
		ready = corev1.ConditionFalse
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: n.Labels},
		Spec:       corev1.NodeSpec{Taints: n.Taints, Unschedulable: n.Unschedulable},
		Status: corev1.NodeStatus{
			Allocatable: allocatable,
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready}},
		},
	}
}

// usagePods are running pods outside topology-aware admission that take the node's `usage`:
// Kueue counts one "pods" per pod, so the first pod carries every other resource and the rest
// are empty ones, as many as usage.pods says (one when it says nothing but asks for more).
func (n *scenarioNode) usagePods() []*corev1.Pod {
	requests := n.Usage.DeepCopy()
	count := int64(0)
	if pods, found := requests[corev1.ResourcePods]; found {
		count = pods.Value()
		delete(requests, corev1.ResourcePods)
	}
	if count == 0 && len(requests) > 0 {
		count = 1
	}
	pods := make([]*corev1.Pod, count)
	for i := range pods {
		container := corev1.Container{Name: "c"}
		if i == 0 {
			container.Resources.Requests = requests
		}
		pods[i] = &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: fmt.Sprintf("%s-%d", n.Name, i)},
			Spec:       corev1.PodSpec{NodeName: n.Name, Containers: []corev1.Container{container}},
			Status:     corev1.PodStatus{Phase: corev1.PodRunning},
		}
	}
	return pods
}

// kueuePodSets are the Workload's pod sets as Kueue's job integration writes them: the
// topology request comes from the PodTemplate annotations through jobframework's builder.
func (w *scenarioWorkload) kueuePodSets() ([]kueue.PodSet, error) {
	podSets := make([]kueue.PodSet, len(w.PodSets))
	for i, ps := range w.PodSets {
		template := corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Annotations: ps.Annotations},
			Spec: corev1.PodSpec{
				NodeSelector: ps.NodeSelector,
				Tolerations:  ps.Tolerations,
				Containers: []corev1.Container{
					{Name: "c", Resources: corev1.ResourceRequirements{Requests: ps.Requests}},
				},
			},
		}
		request, err := jobframework.NewPodSetTopologyRequest(&template.ObjectMeta).Build()
		if err != nil {
			return nil, fmt.Errorf("workloads[%s].podSets[%s].annotations: %w", w.Name, ps.Name, err)
		}
		podSets[i] = kueue.PodSet{
			Name:            kueue.PodSetReference(ps.Name),
			Count:           ps.Count,
			Template:        template,
			TopologyRequest: request,
		}
	}
	return podSets, nil
}
