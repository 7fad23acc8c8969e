package sim

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestExecSyncReads checks that ExecSync answers from what the script
// reader reads of the command (the exit code a knowable script gives, its
// output, its sleeps against the request's timeout), and that what it
// cannot read is an assumption, labelled as one.
func TestExecSyncReads(t *testing.T) {
	tests := []struct {
		name    string
		cmd     []string
		timeout int64
		env     map[string]string
		ann     map[string]string
		code    int32
		stdout  string
		grpc    codes.Code    // the ExecSync error's code (OK: none)
		minTook time.Duration // it answers after at least this
		restsOn string        // a part of ReadExec's RestsOn
		assumed bool
	}{
		{name: "true", cmd: []string{"true"}, restsOn: "command: exits 0 after `true`"},
		{name: "false", cmd: []string{"false"}, code: 1, restsOn: "command: exits 1 after `false`"},
		{name: "sh -c exit 3", cmd: []string{"sh", "-c", "exit 3"}, code: 3, restsOn: "script: exits 3 after `exit 3`"},
		{name: "echo then exit", cmd: []string{"/bin/sh", "-c", "echo not ready; exit 1"}, code: 1, stdout: "not ready\n"},
		{name: "test of integers", cmd: []string{"test", "1", "-eq", "2"}, code: 1},
		{name: "test of env", cmd: []string{"sh", "-c", `[ "$MODE" = ready ]`}, env: map[string]string{"MODE": "ready"}},
		{name: "test of env fails", cmd: []string{"sh", "-c", `[ "$MODE" = ready ]`}, env: map[string]string{"MODE": "starting"}, code: 1},
		{name: "and-or list", cmd: []string{"bash", "-c", "false || exit 7"}, code: 7},
		{name: "sleep within the timeout", cmd: []string{"sh", "-c", "sleep 1; exit 2"}, timeout: 3, code: 2, minTook: time.Second, restsOn: "script: runs 1s, then exits 2"},
		{name: "sleep past the timeout", cmd: []string{"sh", "-c", "sleep 5; exit 0"}, timeout: 1, grpc: codes.DeadlineExceeded, minTook: time.Second, restsOn: "its timeout (1s) ends it first"},
		{name: "never exits", cmd: []string{"sleep", "infinity"}, timeout: 1, grpc: codes.DeadlineExceeded, minTook: time.Second, restsOn: "does not exit"},
		{name: "unknown program", cmd: []string{"mysqladmin", "ping"}, restsOn: "assumed: it exits 0: the simulator cannot read `mysqladmin ping`", assumed: true},
		{name: "file test", cmd: []string{"sh", "-c", "test -f /tmp/healthy"}, restsOn: "assumed: it exits 0", assumed: true},
		{name: "utility", cmd: []string{"cat", "/tmp/healthy"}, restsOn: "command: exits 0 after `cat /tmp/healthy` (assumed: `cat` exits 0)", assumed: true},
		{name: "fault decides", cmd: []string{"true"}, ann: map[string]string{AnnotationExecExitCode + "c": "4"}, code: 4, restsOn: "fault: "},
	}
	e := newEnv(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sbCfg := sandboxConfig("exec-"+strings.ReplaceAll(tt.name, " ", "-"), tt.ann)
			sbID := e.runSandbox(sbCfg)
			cfg := containerConfig("c", "sleep", "3600")
			for k, v := range tt.env {
				cfg.Envs = append(cfg.Envs, &runtimeapi.KeyValue{Key: k, Value: []byte(v)})
			}
			id := e.create(sbID, sbCfg, cfg)
			e.start(id)
			v := ReadExec(tt.cmd, cfg, tt.ann, Image{Name: "busybox:1.35"}, time.Duration(tt.timeout)*time.Second)
			if !strings.Contains(v.RestsOn, tt.restsOn) || v.Assumed != tt.assumed {
				t.Errorf("ReadExec rests on %q (assumed %v), want %q (assumed %v)", v.RestsOn, v.Assumed, tt.restsOn, tt.assumed)
			}
			t0 := time.Now()
			r, err := e.rt.ExecSync(e.ctx, &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: tt.cmd, Timeout: tt.timeout})
			took := time.Since(t0)
			if status.Code(err) != tt.grpc {
				t.Fatalf("ExecSync = %v, %v: want code %s", r, err, tt.grpc)
			}
			if err != nil {
				if !strings.Contains(err.Error(), "failed to exec in container: timeout 1s exceeded") {
					t.Errorf("ExecSync error %q, want containerd's timeout message", err)
				}
			} else if r.ExitCode != tt.code || string(r.Stdout) != tt.stdout {
				t.Errorf("ExecSync = exit %d, stdout %q; want exit %d, stdout %q", r.ExitCode, r.Stdout, tt.code, tt.stdout)
			}
			if took < tt.minTook {
				t.Errorf("ExecSync took %v, want at least %v", took, tt.minTook)
			}
		})
	}
}

// TestExecSyncContainerStops checks that a command without a timeout that
// does not exit ends with exit code 137 when its container is stopped.
func TestExecSyncContainerStops(t *testing.T) {
	e := newEnv(t)
	sbCfg := sandboxConfig("exec-stop", nil)
	sbID := e.runSandbox(sbCfg)
	id := e.create(sbID, sbCfg, containerConfig("c", "sleep", "3600"))
	e.start(id)
	go func() {
		time.Sleep(200 * time.Millisecond)
		_, _ = e.rt.StopContainer(e.ctx, &runtimeapi.StopContainerRequest{ContainerId: id})
	}()
	r, err := e.rt.ExecSync(e.ctx, &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: []string{"tail", "-f", "/dev/null"}})
	if err != nil || r.ExitCode != 137 {
		t.Fatalf("ExecSync = %v, %v; want exit code 137", r, err)
	}
}
