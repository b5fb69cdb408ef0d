package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-logr/logr"
)

// Two racks of two 2-cpu hosts; each test says what the cluster holds and what is asked.
const cluster = `
topology: {levels: [{nodeLabel: rack}, {nodeLabel: kubernetes.io/hostname}]}
nodes:
  - {name: a1, labels: {rack: a, kubernetes.io/hostname: a1}, allocatable: {cpu: "2"}}
  - {name: a2, labels: {rack: a, kubernetes.io/hostname: a2}, allocatable: {cpu: "2"}%s}
  - {name: b1, labels: {rack: b, kubernetes.io/hostname: b1}, allocatable: {cpu: "2"}}
  - {name: b2, labels: {rack: b, kubernetes.io/hostname: b2}, allocatable: {cpu: "2"}}
workloads:
  - {name: w1, podSets: [{name: main, count: 4, requests: {cpu: "1"}, annotations: {kueue.x-k8s.io/podset-required-topology: rack}}]}
  - {name: w2, podSets: [{name: main, count: 4, requests: {cpu: "1"}, annotations: {kueue.x-k8s.io/podset-required-topology: rack}}]}
`

func TestPlacesInOrderWithWhatTheClusterHolds(t *testing.T) {
	cases := map[string]struct {
		a2       string
		admitted []bool
	}{
		"both racks free: one workload each":    {"", []bool{true, true}},
		"a2 not ready: rack a cannot hold 4":    {", ready: false", []bool{true, false}},
		"a2 unschedulable: rack a cannot":       {", unschedulable: true", []bool{true, false}},
		"a2 half used by other pods":            {", usage: {cpu: '1', pods: 1}", []bool{true, false}},
		"a2 has room for one more pod only":     {", usage: {pods: 109}", []bool{true, false}},
		"a2's taint is not tolerated":           {", taints: [{key: k, effect: NoSchedule}]", []bool{true, false}},
		"a2's PreferNoSchedule taint is no bar": {", taints: [{key: k, effect: PreferNoSchedule}]", []bool{true, true}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			answers := placeAll(t, fmt.Sprintf(cluster, tc.a2))
			for i, want := range tc.admitted {
				if answers[i].admitted != want {
					t.Errorf("w%d admitted = %v, want %v (%s)", i+1, answers[i].admitted, want, answers[i].message)
				}
			}
		})
	}
}

func TestAnAdmittedWorkloadKeepsItsCapacity(t *testing.T) {
	answers := placeAll(t, fmt.Sprintf(cluster, ""))
	racks := map[string]bool{}
	for _, answer := range answers {
		for _, ta := range answer.assignments {
			var pods int32
			for _, d := range ta.Domains {
				racks[d.Values[0][:1]] = true
				pods += d.Count
			}
			if pods != 4 {
				t.Errorf("assigned %d pods, want 4", pods)
			}
		}
	}
	if len(racks) != 2 {
		t.Errorf("racks used: %v, want both (the second workload must not reuse the first's)", racks)
	}
}

func TestABadScenarioNamesTheField(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.yaml")
	if err := os.WriteFile(path, []byte("nodes: []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := readScenario(path); err == nil || !strings.Contains(err.Error(), "topology.levels") {
		t.Errorf("error = %v, want one naming topology.levels", err)
	}
}

func placeAll(t *testing.T, text string) []placed {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := readScenario(path)
	if err != nil {
		t.Fatal(err)
	}
	cq, err := snapshotOf(context.Background(), logr.Discard(), s)
	if err != nil {
		t.Fatal(err)
	}
	answers := make([]placed, len(s.Workloads))
	for i := range s.Workloads {
		podSets, err := s.Workloads[i].kueuePodSets()
		if err != nil {
			t.Fatal(err)
		}
		answers[i] = place(cq, podSets)
	}
	return answers
}
