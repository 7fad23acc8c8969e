//go:build integration

package integration

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// runtimeUnderTest is what the harness's runtime says it is (CRI Version).
// The suite runs on each runtime of the matrix (hack/test.sh: Debian's
// containerd 1.6 and containerd 2.x); every test logs it, and the few tests
// whose expectations differ between runtimes branch on major and say so.
type runtimeUnderTest struct {
	name, version, apiVersion string
	// major is containerd's major version (1 or 2), 0 for another runtime.
	major int
}

// String is "containerd v2.4.2", as the harness prints it (PODSTEP_RUNTIME).
func (rt runtimeUnderTest) String() string { return rt.name + " " + rt.version }

// parseRuntime reads CRI Version's answer. containerd's versions look like
// "1.6.20~ds1" (Debian) or "v2.4.2".
func parseRuntime(v *runtimeapi.VersionResponse) runtimeUnderTest {
	rt := runtimeUnderTest{name: v.RuntimeName, version: v.RuntimeVersion, apiVersion: v.RuntimeApiVersion}
	if rt.name == "containerd" {
		major, _, _ := strings.Cut(strings.TrimPrefix(rt.version, "v"), ".")
		rt.major, _ = strconv.Atoi(major)
	}
	return rt
}

var (
	identifyOnce sync.Once
	identified   runtimeUnderTest
	identifyErr  error
)

// identifyRuntime asks the runtime at endpoint once per test binary, and
// logs it in every test that calls it (setup does), so that each test's
// output names the runtime it ran on. PODSTEP_RUNTIME (hack/test.sh sets it
// from the harness's output) must match: the suite must not pass on one
// runtime while the summary names another.
func identifyRuntime(t *testing.T, endpoint string) runtimeUnderTest {
	t.Helper()
	identifyOnce.Do(func() {
		c := dialCRI(t, endpoint)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		v, err := c.rt.Version(ctx, &runtimeapi.VersionRequest{})
		if err != nil {
			identifyErr = fmt.Errorf("CRI Version at %s: %w", endpoint, err)
			return
		}
		identified = parseRuntime(v)
	})
	if identifyErr != nil {
		t.Fatal(identifyErr)
	}
	rt := identified
	t.Logf("runtime under test: %s (CRI %s) at %s", rt, rt.apiVersion, endpoint)
	if want := os.Getenv("PODSTEP_RUNTIME"); want != "" && want != rt.String() {
		t.Fatalf("PODSTEP_RUNTIME=%q (the harness's), but the runtime at %s says it is %q", want, endpoint, rt)
	}
	if rt.name != "containerd" || rt.major < 1 || rt.major > 2 {
		t.Fatalf("runtime %q: this suite knows containerd 1.x and 2.x (its expectations differ per runtime)", rt)
	}
	return rt
}

// runtimeConfig asks the runtime for its cgroup driver: the driver, or ""
// when it answers Unimplemented (containerd 1.6).
func (c *criClient) runtimeConfig(t *testing.T) string {
	t.Helper()
	rc, err := c.rt.RuntimeConfig(ctx10(t), &runtimeapi.RuntimeConfigRequest{})
	if status.Code(err) == codes.Unimplemented {
		return ""
	}
	if err != nil {
		t.Fatalf("CRI RuntimeConfig: %v", err)
	}
	return strings.ToLower(rc.GetLinux().GetCgroupDriver().String())
}

// cgroupV1 reports whether the host runs cgroup v1 (no unified hierarchy
// at /sys/fs/cgroup).
func cgroupV1() bool {
	_, err := os.Stat("/sys/fs/cgroup/cgroup.controllers")
	return err != nil
}

// runtimeFacts are the per-runtime facts the tests below assert, from the
// runtime itself, checked against what is known of each containerd.
type runtimeFacts struct {
	status *runtimeapi.StatusResponse
	// driver is RuntimeConfig's cgroup driver, "" when Unimplemented.
	driver string
	// extra are the conditions besides RuntimeReady and NetworkReady.
	extra []*runtimeapi.RuntimeCondition
}

func runtimeFactsOf(t *testing.T, c *criClient, rt runtimeUnderTest) runtimeFacts {
	t.Helper()
	st, err := c.rt.Status(ctx10(t), &runtimeapi.StatusRequest{})
	if err != nil {
		t.Fatalf("CRI Status: %v", err)
	}
	f := runtimeFacts{status: st, driver: c.runtimeConfig(t)}
	for _, cond := range st.GetStatus().GetConditions() {
		if cond.Type != runtimeapi.RuntimeReady && cond.Type != runtimeapi.NetworkReady {
			f.extra = append(f.extra, cond)
		}
	}
	switch rt.major {
	case 1:
		// containerd 1.6 predates RuntimeConfig (KEP-4033, cgroup driver from the runtime).
		if f.driver != "" {
			t.Errorf("%s answered RuntimeConfig (cgroup driver %s); containerd 1.6 answers Unimplemented", rt, f.driver)
		}
		t.Logf("%s: RuntimeConfig is Unimplemented: podstep must fall back to --cgroup-driver", rt)
	case 2:
		if f.driver == "" {
			t.Errorf("%s answered RuntimeConfig with Unimplemented; containerd 2.x reports its cgroup driver", rt)
		}
		t.Logf("%s: RuntimeConfig says cgroup driver %q", rt, f.driver)
		// containerd 2.2+ on cgroup v1: an extra, false condition. Without
		// it the "extra condition" expectations below would test nothing.
		if cgroupV1() && !hasCondition(f.extra, "ContainerdHasNoDeprecationWarnings", false) {
			t.Errorf("%s on cgroup v1: no ContainerdHasNoDeprecationWarnings=false condition in CRI Status (%v)", rt, st.GetStatus().GetConditions())
		}
	}
	if len(f.extra) == 0 {
		t.Logf("%s reports no condition besides RuntimeReady and NetworkReady: the extra-condition case is not exercised on this runtime", rt)
	}
	return f
}

func hasCondition(conds []*runtimeapi.RuntimeCondition, typ string, want bool) bool {
	for _, c := range conds {
		if c.Type == typ && c.Status == want {
			return true
		}
	}
	return false
}

// TestRuntimeStatusStep: the runtime-status step (the kubelet's runtime
// health check) on each runtime: it names the runtime, lists every
// condition CRI Status reports, passes although containerd 2.x adds a false
// ContainerdHasNoDeprecationWarnings condition on cgroup v1 (the kubelet's
// Kubelet.updateRuntimeUp, pkg/kubelet/kubelet.go, only looks at
// RuntimeReady and NetworkReady), and takes the cgroup driver from
// RuntimeConfig where the runtime answers it (2.x) or from --cgroup-driver
// where it answers Unimplemented (1.6).
func TestRuntimeStatusStep(t *testing.T) {
	e := setup(t)
	c := dialCRI(t, e.endpoint)
	f := runtimeFactsOf(t, c, e.rt)
	d := newDirs(t)
	r := e.mustRun(t, d, e.pod("hello"))
	st := r.step("runtime-status")
	if st == nil {
		t.Fatalf("no runtime-status step\n%s", r)
	}
	if st.State != "done" {
		t.Errorf("runtime-status state %q (%s: %s), want done", st.State, st.Reason, st.Message)
	}
	if want := fmt.Sprintf("%s %s ready", e.rt.name, e.rt.version); st.Summary != want {
		t.Errorf("runtime-status summary %q, want %q", st.Summary, want)
	}
	if got, want := valueOf(st, "runtime"), fmt.Sprintf("%s %s (CRI %s)", e.rt.name, e.rt.version, e.rt.apiVersion); got != want {
		t.Errorf("runtime-status detail runtime = %q, want %q", got, want)
	}
	var conds []string
	for _, cond := range f.status.GetStatus().GetConditions() {
		conds = append(conds, fmt.Sprintf("%s=%t", cond.Type, cond.Status))
	}
	if got, want := valueOf(st, "conditions"), strings.Join(conds, ", "); got != want {
		t.Errorf("runtime-status detail conditions = %q, want every condition of CRI Status: %q", got, want)
	}
	rc := st.call("RuntimeConfig")
	if rc == nil {
		t.Fatalf("runtime-status sent no RuntimeConfig\n%s", r)
	}
	driver := valueOf(st, "cgroup driver")
	if f.driver != "" {
		if rc.Code != "OK" {
			t.Errorf("RuntimeConfig code %s (%s), want OK", rc.Code, rc.Error)
		}
		if want := f.driver + " from RuntimeConfig"; driver != want {
			t.Errorf("runtime-status detail cgroup driver = %q, want %q", driver, want)
		}
	} else {
		if rc.Code != "Unimplemented" {
			t.Errorf("RuntimeConfig code %s (%s), want Unimplemented", rc.Code, rc.Error)
		}
		// podstep's default --cgroup-driver is cgroupfs, as the kubelet's
		if want := "cgroupfs from --cgroup-driver (RuntimeConfig: "; !strings.HasPrefix(driver, want) {
			t.Errorf("runtime-status detail cgroup driver = %q, want it to start with %q", driver, want)
		}
	}
	e.assertNothingLeft(t, d, "default", "hello", r.summary.UID)
}

// valueOf is the step's detail KEY, "" when absent.
func valueOf(s *stepEvent, key string) string {
	v, _ := s.detailValue(key)
	return v
}
