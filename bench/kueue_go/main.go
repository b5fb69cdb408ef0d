// kueue-go places a `tas solve` scenario (SCENARIO.md) with Kueue v0.17.0's own TAS code, for
// bench/solver_bench.py: the same workloads in the same order on one snapshot, each admitted
// one's usage added before the next. It prints `tas solve`'s output shape on stdout and, with
// --stats, `tas solve --stats`'s stats line on stderr.
//
//	go build -o ~/.cache/tas-operator/kueue-go/kueue-go . && kueue-go --stats scenario.json
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strings"

	"github.com/go-logr/logr"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	ctrl "sigs.k8s.io/controller-runtime"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	_ "sigs.k8s.io/kueue/pkg/features" // registers Kueue's gates
)

func main() {
	stats := flag.Bool("stats", false, "print the timing stats line on stderr")
	version := flag.Bool("version", false, "print the Kueue module and Go versions built in")
	profile := flag.String("cpuprofile", "", "write a CPU profile of the placements to this file")
	flag.Parse()
	if *version {
		printVersion()
		return
	}
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: kueue-go [--stats] SCENARIO")
		os.Exit(2)
	}
	if err := run(flag.Arg(0), *stats, *profile); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// printVersion says which Kueue this binary places with, for the bench's result file.
func printVersion() {
	versions := map[string]string{"go": runtime.Version(), "kueue": "unknown"}
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == "sigs.k8s.io/kueue" {
				versions["kueue"] = dep.Version
			}
		}
	}
	_ = json.NewEncoder(os.Stdout).Encode(versions)
}

func run(path string, withStats bool, profile string) error {
	log := logr.Discard()
	ctrl.SetLogger(log) // controller-runtime warns on stderr when no logger is ever set
	ctx := ctrl.LoggerInto(context.Background(), log)
	t := timings{}
	parseStart := now()
	s, err := readScenario(path)
	if err != nil {
		return err
	}
	if err := utilfeature.DefaultMutableFeatureGate.SetFromMap(s.FeatureGates); err != nil {
		return fmt.Errorf("featureGates: %w", err)
	}
	podSets := make([][]kueue.PodSet, len(s.Workloads))
	for i := range s.Workloads {
		if podSets[i], err = s.Workloads[i].kueuePodSets(); err != nil {
			return err
		}
	}
	t.parse = since(parseStart)
	snapshotStart := now()
	cq, err := snapshotOf(ctx, log, s)
	if err != nil {
		return err
	}
	t.snapshot = since(snapshotStart)
	answers := make([]placed, len(s.Workloads))
	if profile != "" {
		stop, err := startProfile(profile)
		if err != nil {
			return err
		}
		defer stop()
	}
	for i := range s.Workloads {
		start := now()
		answers[i] = place(cq, podSets[i])
		t.add(answers[i].admitted, since(start))
	}
	if err := json.NewEncoder(os.Stdout).Encode(output(s, answers)); err != nil {
		return err
	}
	if withStats {
		return json.NewEncoder(os.Stderr).Encode(map[string]any{"stats": t.line()})
	}
	return nil
}

// startProfile profiles the placements alone (go tool pprof reads the file).
func startProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// output has the shape of `tas solve`'s: domains sorted by values, as the API writes them.
func output(s *scenarioFile, answers []placed) map[string]any {
	workloads := make([]map[string]any, len(answers))
	for i, answer := range answers {
		w := map[string]any{"name": s.Workloads[i].Name, "admitted": answer.admitted}
		if !answer.admitted {
			w["message"] = answer.message
			workloads[i] = w
			continue
		}
		podSets := []map[string]any{}
		for _, ps := range s.Workloads[i].PodSets {
			ta := answer.assignments[kueue.PodSetReference(ps.Name)]
			domains := make([]map[string]any, len(ta.Domains))
			for j, d := range ta.Domains {
				domains[j] = map[string]any{"values": d.Values, "count": d.Count}
			}
			slices.SortFunc(domains, func(x, y map[string]any) int {
				return strings.Compare(strings.Join(x["values"].([]string), "\x00"),
					strings.Join(y["values"].([]string), "\x00"))
			})
			podSets = append(podSets, map[string]any{
				"name": ps.Name, "count": ps.Count,
				"topologyAssignment": map[string]any{"levels": ta.Levels, "domains": domains},
			})
		}
		w["podSets"] = podSets
		workloads[i] = w
	}
	return map[string]any{"workloads": workloads}
}
