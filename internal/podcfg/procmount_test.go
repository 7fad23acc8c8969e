package podcfg

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestProcMountScenarios: the container configs of the two procMount
// scenarios (internal/scenario/data) carry what determineEffectiveSecurityContext
// gives them: Default the kubelet's default lists, in order; Unmasked (in
// a hostUsers: false pod) both lists empty, not absent, as
// ConvertToRuntimeMaskedPaths/ReadonlyPaths return them (on the wire both
// are the same: no masked_paths, no readonly_paths, which containerd 2.x
// takes as "mask nothing"). The machine's thermal_throttle dirs are masked
// too, unless Unmasked.
func TestProcMountScenarios(t *testing.T) {
	const cpu0 = "/sys/devices/system/cpu/cpu0/thermal_throttle"
	for _, tc := range []struct {
		file             string
		thermal          []string // Options.ThermalThrottlePaths
		masked, readonly []string
	}{
		{"procmount-default.yaml", nil, defaultStaticMaskedPaths, defaultReadonlyPaths},
		{"procmount-default.yaml", []string{cpu0}, append(slices.Clone(defaultStaticMaskedPaths), cpu0), defaultReadonlyPaths},
		{"procmount-unmasked.yaml", nil, []string{}, []string{}},
		{"procmount-unmasked.yaml", []string{cpu0}, []string{}, []string{}},
	} {
		t.Run(fmt.Sprintf("%s, %d thermal_throttle", strings.TrimSuffix(tc.file, ".yaml"), len(tc.thermal)), func(t *testing.T) {
			pod := loadPod(t, filepath.Join("..", "..", "..", "internal", "scenario", "data", tc.file))
			o := Options{Node: testNode("n"), ThermalThrottlePaths: tc.thermal}
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
