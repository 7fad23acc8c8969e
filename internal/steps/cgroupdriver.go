package steps

import (
	"context"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/internal/cri"
	"github.com/podstep/podstep/internal/reason"
)

// cgroupDriver mirrors getCgroupDriverFromCRI (cmd/kubelet/app/server.go,
// KEP-4033, GA): the kubelet asks the runtime's RuntimeConfig and, when it
// answers, uses the runtime's cgroup driver whatever its own cgroupDriver
// setting says; a runtime that answers Unimplemented (containerd 1.6 and
// 1.7, CRI-O before 1.28) leaves the kubelet on its --cgroup-driver.
//
// That fallback is where a node breaks: a kubelet on cgroupfs with a runtime
// whose runc uses systemd sends cgroupfs paths, and runc refuses the sandbox
// (expected cgroupsPath to be of format "slice:prefix:name" for systemd
// cgroups). podstep's own check, not the kubelet's, reads the runtime's
// driver from its config (CRI Status with verbose info: containerd's
// runtimes.<handler>.options.SystemdCgroup) and refuses first, saying what
// to change; the other way round (systemd flag, cgroupfs runtime) is a
// warning.
//
// It returns the step's details and warnings, and the refusal, if any.
func (e *Engine) cgroupDriver(ctx context.Context) ([]Detail, []string, *Result) {
	if e.rt.flagDriver == "" {
		e.rt.flagDriver = e.opts.Config.CgroupDriver
	}
	flag := e.rt.flagDriver
	set := func(driver string) {
		e.rt.cgroupDriver = driver
		e.opts.Config.CgroupDriver = driver
	}
	rc, err := e.client.RuntimeConfig(ctx)
	if err == nil && rc.GetLinux() != nil {
		var driver string
		switch d := rc.GetLinux().GetCgroupDriver(); d {
		case runtimeapi.CgroupDriver_SYSTEMD:
			driver = "systemd"
		case runtimeapi.CgroupDriver_CGROUPFS:
			driver = "cgroupfs"
		default:
			err := fmt.Errorf("runtime returned an unknown cgroup driver %d", d)
			r := fail(reason.CgroupDriverMismatch, err, "the runtime's RuntimeConfig names no known cgroup driver (a kubelet would not start)")
			return nil, nil, &r
		}
		set(driver)
		var warnings []string
		if e.opts.CgroupDriverSet && flag != driver {
			warnings = append(warnings, fmt.Sprintf("%s is not used: the runtime reports the %s cgroup driver (RuntimeConfig), and the kubelet takes the runtime's answer over its own cgroupDriver setting (getCgroupDriverFromCRI, cmd/kubelet/app/server.go)", e.driverSetting(flag), driver))
		}
		return []Detail{kv("cgroup driver", driver+" from RuntimeConfig")}, warnings, nil
	}
	set(flag)
	src := e.from(SettingCgroupDriver, "--cgroup-driver")
	if err != nil {
		src += " (RuntimeConfig: " + unwrapMsg(err) + ")"
	}
	details := []Detail{kv("cgroup driver", flag+" from "+src)}
	if err != nil && status.Code(unwrapCRI(err)) != codes.Unimplemented {
		return details, nil, nil
	}
	// podstep's own check of the fallback.
	st, serr := e.client.StatusCgroupInfo(ctx)
	if serr != nil {
		return append(details, kv("  runtime's driver", "unknown: Status with verbose info failed: "+unwrapMsg(serr))), nil, nil
	}
	driver, where, ok := configCgroupDriver(st.GetInfo(), e.runtimeHandler())
	if !ok {
		return append(details, kv("  runtime's driver", "unknown: its Status info has no containerd runtime config to read it from; nothing to check --cgroup-driver against")), nil, nil
	}
	details = append(details, kv("  runtime's driver", fmt.Sprintf("%s (%s, from CRI Status verbose info: podstep's check, not the kubelet's)", driver, where)))
	switch driver {
	case flag:
		return details, nil, nil
	case "systemd":
		msg := fmt.Sprintf("--cgroup-driver=cgroupfs, but the runtime's runc uses the systemd cgroup driver (%s) and does not report it (RuntimeConfig Unimplemented), so a kubelet would keep its cgroupfs setting: "+
			"it would send cgroupfs cgroup paths and runc would refuse RunPodSandbox with: expected cgroupsPath to be of format \"slice:prefix:name\" for systemd cgroups, got %q instead. "+
			"Set --cgroup-driver=systemd (the kubelet's cgroupDriver: systemd), or SystemdCgroup = false in the runtime's config (then restart it); a runtime that answers RuntimeConfig (containerd 2.x) settles it for the kubelet",
			where, cgroupsPathExample(e))
		r := fail(reason.CgroupDriverMismatch, fmt.Errorf("%s", msg), "--cgroup-driver disagrees with the runtime's systemd cgroup driver: RunPodSandbox would fail")
		r.Details = details
		return nil, nil, &r
	default:
		return details, []string{fmt.Sprintf("--cgroup-driver=systemd, but the runtime's runc uses cgroupfs (%s) and does not report it (RuntimeConfig Unimplemented): a kubelet would name the pod's cgroups as systemd slices (kubepods-….slice) under a cgroupfs runtime. Set --cgroup-driver=cgroupfs, or SystemdCgroup = true in the runtime's config", where)}, nil
	}
}

// cgroupsPathExample is the cgroupsPath containerd would give runc for the
// sandbox with a cgroupfs cgroup parent (getCgroupsPath in containerd's CRI
// plugin: <parent>/<sandbox id>).
func cgroupsPathExample(e *Engine) string {
	cfg, _, err := e.sandboxConfig()
	parent := ""
	if err == nil {
		parent = cfg.GetLinux().GetCgroupParent()
	}
	if parent == "" {
		return "<sandbox id>"
	}
	return parent + "/<sandbox id>"
}

// configCgroupDriver reads the cgroup driver of handler (the default
// runtime for "") from containerd's verbose Status info: its "config" holds
// the CRI plugin config, whose containerd.runtimes.<name>.options.SystemdCgroup
// is the runc shim's driver.
func configCgroupDriver(info map[string]string, handler string) (driver, where string, ok bool) {
	cfg, found := cri.ParseContainerdConfig(info)
	if !found {
		return "", "", false
	}
	name := handler
	if name == "" {
		name = cfg.Containerd.DefaultRuntimeName
	}
	rt, found := cfg.Containerd.Runtimes[name]
	if !found || rt.Type != "io.containerd.runc.v2" {
		return "", "", false
	}
	systemd, _ := rt.Options["SystemdCgroup"].(bool)
	driver = "cgroupfs"
	if systemd {
		driver = "systemd"
	}
	return driver, fmt.Sprintf("handler %q: SystemdCgroup = %t", name, systemd), true
}

// driverSetting names the cgroup driver setting podstep was given:
// "--cgroup-driver=X", or "cgroupDriver X (configz of node N)".
func (e *Engine) driverSetting(driver string) string {
	if f := e.opts.From[SettingCgroupDriver]; f != "" && f != "--cgroup-driver" {
		return "cgroupDriver " + driver + " (" + f + ")"
	}
	return "--cgroup-driver=" + driver
}
