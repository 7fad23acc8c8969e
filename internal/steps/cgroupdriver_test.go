package steps

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/internal/reason"
)

// driverRuntime answers what the runtime-status step asks: Version, Status
// (verbose: a containerd config whose runc handler has systemd set or
// not), RuntimeConfig (a driver, or Unimplemented as containerd 1.6 does).
type driverRuntime struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	reported *runtimeapi.CgroupDriver // nil: RuntimeConfig is Unimplemented
	config   string                   // Status verbose info["config"]; "" for none
}

func (driverRuntime) Version(context.Context, *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error) {
	return &runtimeapi.VersionResponse{RuntimeName: "containerd", RuntimeVersion: "1.6.20", RuntimeApiVersion: "v1"}, nil
}

func (r driverRuntime) Status(_ context.Context, req *runtimeapi.StatusRequest) (*runtimeapi.StatusResponse, error) {
	st := &runtimeapi.StatusResponse{Status: &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{
		{Type: runtimeapi.RuntimeReady, Status: true}, {Type: runtimeapi.NetworkReady, Status: true}}}}
	if req.Verbose && r.config != "" {
		st.Info = map[string]string{"config": r.config, "cniconfig": `{"secret":"cni-stuff"}`}
	}
	return st, nil
}

func (r driverRuntime) RuntimeConfig(context.Context, *runtimeapi.RuntimeConfigRequest) (*runtimeapi.RuntimeConfigResponse, error) {
	if r.reported == nil {
		return nil, status.Error(codes.Unimplemented, "unknown method RuntimeConfig for service runtime.v1.RuntimeService")
	}
	return &runtimeapi.RuntimeConfigResponse{Linux: &runtimeapi.LinuxRuntimeConfiguration{CgroupDriver: *r.reported}}, nil
}

func (driverRuntime) ListPodSandbox(context.Context, *runtimeapi.ListPodSandboxRequest) (*runtimeapi.ListPodSandboxResponse, error) {
	return &runtimeapi.ListPodSandboxResponse{}, nil
}

// containerdConfig is containerd 1.6's verbose Status config, cut down,
// with a registry password that must not be recorded.
func containerdConfig(systemd string) string {
	return `{"containerd":{"defaultRuntimeName":"runc","runtimes":{"runc":{"runtimeType":"io.containerd.runc.v2","options":{"Root":"/run/runc","SystemdCgroup":` + systemd + `}}}},"registry":{"configs":{"r.example":{"auth":{"password":"hunter2-registry-pw"}}}}}`
}

// TestCgroupDriver: the runtime's answer wins when it gives one (a
// different --cgroup-driver given is a warning); when RuntimeConfig is
// Unimplemented, --cgroup-driver is used, checked against the runtime's
// config: a systemd runc under a cgroupfs flag is refused before
// RunPodSandbox with runc's error explained, the other way round warned.
func TestCgroupDriver(t *testing.T) {
	systemd, cgroupfs := runtimeapi.CgroupDriver_SYSTEMD, runtimeapi.CgroupDriver_CGROUPFS
	for _, tc := range []struct {
		name       string
		rt         driverRuntime
		flag       string
		flagSet    bool
		wantDriver string // "" when refused
		wantDetail string
		wantWarn   string
		wantRefuse string
	}{
		{name: "reported, flag default", rt: driverRuntime{reported: &systemd}, flag: "cgroupfs", wantDriver: "systemd", wantDetail: "systemd from RuntimeConfig"},
		{name: "reported, flag given and different", rt: driverRuntime{reported: &systemd}, flag: "cgroupfs", flagSet: true, wantDriver: "systemd", wantDetail: "systemd from RuntimeConfig",
			wantWarn: "--cgroup-driver=cgroupfs is not used: the runtime reports the systemd cgroup driver (RuntimeConfig)"},
		{name: "reported, flag given and the same", rt: driverRuntime{reported: &cgroupfs}, flag: "cgroupfs", flagSet: true, wantDriver: "cgroupfs", wantDetail: "cgroupfs from RuntimeConfig"},
		{name: "unimplemented, config agrees", rt: driverRuntime{config: containerdConfig("false")}, flag: "cgroupfs", wantDriver: "cgroupfs", wantDetail: "cgroupfs from --cgroup-driver (RuntimeConfig: "},
		{name: "unimplemented, systemd runc, cgroupfs flag", rt: driverRuntime{config: containerdConfig("true")}, flag: "cgroupfs",
			wantRefuse: `expected cgroupsPath to be of format "slice:prefix:name" for systemd cgroups, got "<sandbox id>" instead. Set --cgroup-driver=systemd`},
		{name: "unimplemented, cgroupfs runc, systemd flag", rt: driverRuntime{config: containerdConfig("false")}, flag: "systemd", flagSet: true, wantDriver: "systemd", wantDetail: "systemd from --cgroup-driver",
			wantWarn: "--cgroup-driver=systemd, but the runtime's runc uses cgroupfs (handler \"runc\": SystemdCgroup = false)"},
		{name: "unimplemented, no config", rt: driverRuntime{}, flag: "cgroupfs", wantDriver: "cgroupfs", wantDetail: "cgroupfs from --cgroup-driver"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := serveFake(t, tc.rt)
			o := testOptions(t)
			o.Config.CgroupDriver, o.CgroupDriverSet = tc.flag, tc.flagSet
			e := New(parse(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: app, image: busybox}]\n"), c, o)
			for {
				next, ok := e.NextStep()
				if !ok || next.Kind == KindRunSandbox {
					break
				}
				if _, err := e.Next(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			var st Step
			for _, s := range e.Steps() {
				if s.Kind == KindRuntimeStatus {
					st = s
				}
			}
			res := st.Result
			if tc.wantRefuse != "" {
				if st.State != Failed || res.Reason != reason.CgroupDriverMismatch || !strings.Contains(res.Message, tc.wantRefuse) {
					t.Fatalf("runtime-status %s %s %q, want failed %s with %q", st.State, res.Reason, res.Message, reason.CgroupDriverMismatch, tc.wantRefuse)
				}
				for _, call := range c.Calls() {
					if call.Method == "RunPodSandbox" {
						t.Error("RunPodSandbox was sent")
					}
				}
			} else {
				if st.State != Done {
					t.Fatalf("runtime-status %s: %s %s", st.State, res.Reason, res.Message)
				}
				if e.rt.cgroupDriver != tc.wantDriver {
					t.Errorf("driver %q, want %q", e.rt.cgroupDriver, tc.wantDriver)
				}
				var got string
				for _, d := range res.Details {
					if d.Key == "cgroup driver" {
						got = d.Value
					}
				}
				if !strings.HasPrefix(got, tc.wantDetail) {
					t.Errorf("detail cgroup driver = %q, want it to start with %q", got, tc.wantDetail)
				}
			}
			warns := strings.Join(res.Warnings, "\n")
			if (tc.wantWarn == "") != (warns == "") || !strings.Contains(warns, tc.wantWarn) {
				t.Errorf("warnings %q, want %q", warns, tc.wantWarn)
			}
			// Of the runtime's config only the handlers' drivers are recorded.
			for _, call := range c.Calls() {
				if call.Response == nil {
					continue
				}
				if s := fmt.Sprint(call.Response); strings.Contains(s, "hunter2") || strings.Contains(s, "cni-stuff") {
					t.Errorf("%s response recorded more of the runtime's config than its cgroup drivers: %v", call.Method, call.Response)
				}
			}
		})
	}
}
