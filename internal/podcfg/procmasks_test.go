package podcfg

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// TestMaskedPathsOn: the default masked paths are the static list plus the
// thermal_throttle dir of each possible CPU that has one, as
// pkg/securitycontext defaultMaskedPaths (v1.37) reads them from sysfs.
func TestMaskedPathsOn(t *testing.T) {
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
			got := maskedPathsOn(sys)
			want := append(append([]string(nil), defaultStaticMaskedPaths...), tc.want...)
			if !slices.Equal(got, want) {
				t.Errorf("masked paths\n got %v\nwant %v", got, want)
			}
		})
	}
	if runtime.NumCPU() > 4096 {
		t.Log("more than 4096 CPUs: the malformed case's second dir is a possible CPU here")
	}
}

// TestProcMountScenarios: the container configs of the two procMount
// scenarios (testdata/scenarios) carry what determineEffectiveSecurityContext
// gives them: Default the kubelet's default lists, in order; Unmasked (in
// a hostUsers: false pod) both lists empty, not absent, as
// ConvertToRuntimeMaskedPaths/ReadonlyPaths return them (on the wire both
// are the same: no masked_paths, no readonly_paths, which containerd 2.x
// takes as "mask nothing").
func TestProcMountScenarios(t *testing.T) {
	for _, tc := range []struct {
		file             string
		masked, readonly []string
	}{
		{"procmount-default.yaml", defaultMaskedPaths(), defaultReadonlyPaths},
		{"procmount-unmasked.yaml", []string{}, []string{}},
	} {
		t.Run(strings.TrimSuffix(tc.file, ".yaml"), func(t *testing.T) {
			pod := loadPod(t, filepath.Join("..", "..", "..", "testdata", "scenarios", tc.file))
			o := Options{Node: testNode("n")}
			if OwnUserNamespace(pod) {
				o.UserNamespace = NewUserNamespace(65536).CRI()
			}
			cfg, err := ContainerConfig(pod, nil, ContainerInput{Container: &pod.Spec.Containers[0]}, o)
			if err != nil {
				t.Fatal(err)
			}
			sc := cfg.GetLinux().GetSecurityContext()
			if sc.MaskedPaths == nil || sc.ReadonlyPaths == nil {
				t.Errorf("masked %#v, readonly %#v: want lists, not nil", sc.MaskedPaths, sc.ReadonlyPaths)
			}
			if !slices.Equal(sc.MaskedPaths, tc.masked) || !slices.Equal(sc.ReadonlyPaths, tc.readonly) {
				t.Errorf("masked %v, readonly %v; want %v, %v", sc.MaskedPaths, sc.ReadonlyPaths, tc.masked, tc.readonly)
			}
		})
	}
}
