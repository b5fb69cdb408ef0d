package main

import (
	"math"
	"slices"
	"time"

	"golang.org/x/sys/unix"
)

// clock is a wall-clock and a process CPU-time reading; the CPU time counts every thread
// (the garbage collector's too), as Python's time.process_time does for `tas solve`.
type clock struct {
	wall time.Time
	cpu  time.Duration
}

type elapsed struct {
	wall, cpu time.Duration
}

func now() clock {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &ts)
	return clock{wall: time.Now(), cpu: time.Duration(ts.Nano())}
}

func since(start clock) elapsed {
	end := now()
	return elapsed{wall: end.wall.Sub(start.wall), cpu: end.cpu - start.cpu}
}

type sample struct {
	admitted bool
	elapsed
}

type timings struct {
	parse, snapshot elapsed
	placements      []sample
}

func (t *timings) add(admitted bool, e elapsed) {
	t.placements = append(t.placements, sample{admitted, e})
}

// line is `tas solve --stats`'s stats object: times in milliseconds, nearest-rank percentiles.
func (t *timings) line() map[string]any {
	var admitted, rejected []sample
	for _, s := range t.placements {
		if s.admitted {
			admitted = append(admitted, s)
		} else {
			rejected = append(rejected, s)
		}
	}
	return map[string]any{
		"parse_ms":     ms(t.parse.wall, 1),
		"parse_cpu_ms": ms(t.parse.cpu, 1),
		"snapshot_ms":  ms(t.snapshot.wall, 1),
		"placement":    summary(t.placements),
		"admitted":     summary(admitted),
		"rejected":     summary(rejected),
	}
}

func summary(samples []sample) map[string]any {
	walls := make([]time.Duration, len(samples))
	var total, cpu time.Duration
	for i, s := range samples {
		walls[i] = s.wall
		total += s.wall
		cpu += s.cpu
	}
	slices.Sort(walls)
	return map[string]any{
		"count":        len(samples),
		"total_ms":     ms(total, 3),
		"p50_ms":       ms(percentile(walls, 0.50), 3),
		"p99_ms":       ms(percentile(walls, 0.99), 3),
		"cpu_total_ms": ms(cpu, 3),
	}
}

func percentile(ordered []time.Duration, fraction float64) time.Duration {
	if len(ordered) == 0 {
		return 0
	}
	return ordered[max(0, int(math.Ceil(fraction*float64(len(ordered))))-1)]
}

func ms(d time.Duration, digits int) float64 {
	scale := math.Pow(10, float64(digits))
	return math.Round(float64(d.Nanoseconds())/1e6*scale) / scale
}
