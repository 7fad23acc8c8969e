package node

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
)

// ThermalThrottlePaths returns what pkg/securitycontext/util.go
// defaultMaskedPaths (kubelet v1.37) adds to its static list of masked
// paths on this machine: /sys/devices/system/cpu/cpuN/thermal_throttle for
// each possible CPU N whose dir exists; nil when none does. podcfg takes it
// as Options.ThermalThrottlePaths.
func ThermalThrottlePaths() []string { return thermalThrottlePathsOn("/sys") }

// thermalThrottlePathsOn is ThermalThrottlePaths with sysfs at sys (a test's
// fake tree): the paths it returns are always the container's (/sys/...).
func thermalThrottlePathsOn(sys string) []string {
	var paths []string
	for _, cpu := range possibleCPUs(sys) {
		rel := fmt.Sprintf("devices/system/cpu/cpu%d/thermal_throttle", cpu)
		if _, err := os.Stat(filepath.Join(sys, rel)); err == nil {
			paths = append(paths, "/sys/"+rel)
		}
	}
	return paths
}

// possibleCPUs mirrors pkg/securitycontext/util_linux.go possibleCPUs: the
// ranges of devices/system/cpu/possible ("0-3,8"), or 0..NumCPU-1 when the
// file is missing or malformed.
func possibleCPUs(sys string) []int {
	if cpus := parsePossibleCPUs(sys); cpus != nil {
		return cpus
	}
	var cpus []int
	for i := range runtime.NumCPU() {
		cpus = append(cpus, i)
	}
	return cpus
}

// parsePossibleCPUs mirrors possibleCPUsParsed: nil on any error.
func parsePossibleCPUs(sys string) []int {
	data, err := os.ReadFile(filepath.Join(sys, "devices", "system", "cpu", "possible"))
	if err != nil {
		return nil
	}
	var cpus []int
	for _, r := range strings.Split(strings.TrimSpace(string(data)), ",") {
		lo, hi, isRange := strings.Cut(r, "-")
		start, err := strconv.Atoi(lo)
		if err != nil {
			return nil
		}
		end := start
		if isRange {
			if end, err = strconv.Atoi(hi); err != nil {
				return nil
			}
		}
		for cpu := start; cpu <= end; cpu++ {
			cpus = append(cpus, cpu)
		}
	}
	return cpus
}
