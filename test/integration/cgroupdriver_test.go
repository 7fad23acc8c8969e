//go:build integration

package integration

import (
	"strings"
	"testing"
)

// TestCgroupDriverFlag: where the cgroup driver comes from, on each runtime
// (KEP-4033; the kubelet's getCgroupDriverFromCRI). containerd 2.x answers
// RuntimeConfig (cgroupfs in the harness): `--cgroup-driver systemd` is
// not used, and the step warns so; the pod runs. containerd 1.6 answers
// Unimplemented: the flag is used (stated in the step), and podstep checks
// it against the runtime's own config (its runc handler's SystemdCgroup,
// from CRI Status verbose info): the default cgroupfs agrees; systemd
// disagrees and is warned about (with the harness's cgroupfs runc and no
// QOS cgroups the pod still runs). The refusal of a cgroupfs flag against a
// systemd runc, which needs a runtime configured for systemd, is
// TestCgroupDriver's (internal/steps).
func TestCgroupDriverFlag(t *testing.T) {
	e := setup(t)
	for _, flag := range []string{"", "systemd"} {
		name := map[string]string{"": "default flag", "systemd": "--cgroup-driver systemd"}[flag]
		t.Run(name, func(t *testing.T) {
			d := newDirs(t)
			var args []string
			if flag != "" {
				args = []string{"--cgroup-driver", flag}
			}
			r := e.mustRun(t, d, e.pod("hello"), args...)
			st := r.step("runtime-status")
			driver, warns := valueOf(st, "cgroup driver"), strings.Join(st.Warnings, "\n")
			switch {
			case e.rt.major >= 2:
				t.Logf("%s answers RuntimeConfig: its driver is used whatever --cgroup-driver says", e.rt)
				if driver != "cgroupfs from RuntimeConfig" {
					t.Errorf("cgroup driver detail %q, want cgroupfs from RuntimeConfig", driver)
				}
				const w = "--cgroup-driver=systemd is not used: the runtime reports the cgroupfs cgroup driver (RuntimeConfig)"
				if (flag == "systemd") != strings.Contains(warns, w) {
					t.Errorf("warnings %q; want %q only with --cgroup-driver systemd", warns, w)
				}
				if st.call("Status") == nil || len(st.Calls) != 4 {
					t.Errorf("runtime-status calls %v, want Version, Status, RuntimeConfig, ListPodSandbox (no verbose Status: the runtime answered)", methodsOf(st))
				}
			default:
				t.Logf("%s answers RuntimeConfig Unimplemented: --cgroup-driver is used, and checked against the runtime's config", e.rt)
				want := "cgroupfs"
				if flag != "" {
					want = flag
				}
				if !strings.HasPrefix(driver, want+" from --cgroup-driver (RuntimeConfig: ") {
					t.Errorf("cgroup driver detail %q, want %s from --cgroup-driver (RuntimeConfig: ...)", driver, want)
				}
				if rd := valueOf(st, "  runtime's driver"); !strings.HasPrefix(rd, `cgroupfs (handler "runc": SystemdCgroup = false`) {
					t.Errorf("runtime's driver detail %q, want the harness's runc handler: cgroupfs, SystemdCgroup = false", rd)
				}
				const w = "--cgroup-driver=systemd, but the runtime's runc uses cgroupfs"
				if (flag == "systemd") != strings.Contains(warns, w) {
					t.Errorf("warnings %q; want %q only with --cgroup-driver systemd", warns, w)
				}
			}
			e.assertNothingLeft(t, d, "default", "hello", r.summary.UID)
		})
	}
}
