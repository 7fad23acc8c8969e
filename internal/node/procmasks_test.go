package node

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
)

// TestThermalThrottlePathsOn: the thermal_throttle dir of each possible CPU
// that has one, as pkg/securitycontext defaultMaskedPaths (v1.37) adds them
// to its static list of masked paths.
func TestThermalThrottlePathsOn(t *testing.T) {
	thermal := func(cpu string) string { return "/sys/devices/system/cpu/cpu" + cpu + "/thermal_throttle" }
	for _, tc := range []struct {
		name     string
		possible string // "" = no possible file
		throttle []string
		want     []string
	}{
		{"none has one", "0-1\n", nil, nil},
		{"a range", "0-3\n", []string{"1", "3"}, []string{thermal("1"), thermal("3")}},
		{"a list", "0,2\n", []string{"1", "2"}, []string{thermal("2")}},
		{"no possible file: NumCPU", "", []string{"0"}, []string{thermal("0")}},
		{"malformed: NumCPU", "x-1\n", []string{"0", "4096"}, []string{thermal("0")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sys := t.TempDir()
			cpu := filepath.Join(sys, "devices", "system", "cpu")
			if err := os.MkdirAll(cpu, 0o755); err != nil {
				t.Fatal(err)
			}
			if tc.possible != "" {
				if err := os.WriteFile(filepath.Join(cpu, "possible"), []byte(tc.possible), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			for _, n := range tc.throttle {
				if err := os.MkdirAll(filepath.Join(cpu, "cpu"+n, "thermal_throttle"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			got, want := thermalThrottlePathsOn(sys), tc.want
			if !slices.Equal(got, want) {
				t.Errorf("masked paths\n got %v\nwant %v", got, want)
			}
		})
	}
	if runtime.NumCPU() > 4096 {
		t.Log("more than 4096 CPUs: the malformed case's second dir is a possible CPU here")
	}
}
