// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package measure

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's CPU times; 100 on
// every Linux architecture Kubernetes runs on.
const clockTicks = 100

// CPUSeconds is the process's user plus system CPU time.
func CPUSeconds(pid int) (float64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// Fields after the parenthesised command name; utime and stime are the
	// 14th and 15th fields of the whole line.
	rest := string(data[strings.LastIndexByte(string(data), ')')+2:])
	fields := strings.Fields(rest)
	if len(fields) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	utime, err1 := strconv.ParseFloat(fields[11], 64)
	stime, err2 := strconv.ParseFloat(fields[12], 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: bad CPU times", pid)
	}
	return (utime + stime) / clockTicks, nil
}

// MachineTicks is the machine's CPU time so far, from /proc/stat's first
// line, in clock ticks: busy (all but idle and iowait) and in all.
func MachineTicks() (busy, total float64, err error) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, err
	}
	return parseMachineTicks(data)
}

func parseMachineTicks(data []byte) (busy, total float64, err error) {
	line, _, _ := strings.Cut(string(data), "\n")
	fields := strings.Fields(line)
	// cpu user nice system idle iowait irq softirq steal (guest and
	// guest_nice are counted in user and nice already).
	if len(fields) < 9 || fields[0] != "cpu" {
		return 0, 0, fmt.Errorf("/proc/stat: first line %q: want cpu and eight times", line)
	}
	var ticks [8]float64
	for i := range ticks {
		if ticks[i], err = strconv.ParseFloat(fields[i+1], 64); err != nil {
			return 0, 0, fmt.Errorf("/proc/stat: %w", err)
		}
		total += ticks[i]
	}
	return total - ticks[3] - ticks[4], total, nil
}

// PeakRSSMiB is the process's peak resident set size (VmHWM).
func PeakRSSMiB(pid int) (float64, error) {
	return ProcMiB(fmt.Sprintf("/proc/%d/status", pid), "VmHWM:")
}

// ProcMiB reads a size in kB from a /proc file of "Field: N kB" lines
// (/proc/<pid>/status, /proc/meminfo), in MiB.
func ProcMiB(path, field string) (float64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, field); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb / 1024, err
		}
	}
	return 0, fmt.Errorf("%s has no %s", path, field)
}
