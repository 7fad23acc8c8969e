package sim

import (
	"context"
	"fmt"
	"path"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ExecVerdict is what a command run in a simulated container (ExecSync:
// an exec probe or hook) does, and what that verdict rests on.
type ExecVerdict struct {
	// Code is the command's exit code.
	Code int32
	// After is how long the command runs before it exits (its sleeps).
	After time.Duration
	// Forever says the command does not exit by itself (sleep infinity,
	// tail -f, an endless loop).
	Forever bool
	// TimedOut says ExecSync's timeout ends the command first (Forever, or
	// After past it): ExecSync then fails with DeadlineExceeded, as
	// containerd's does, which the kubelet's exec prober counts as a
	// failure.
	TimedOut bool
	// RestsOn says what the verdict rests on, in words for the user:
	// "fault: …", "script: …" or "command: …" (read from the command),
	// "assumed: …" (what the simulator could not read, and what it assumed).
	RestsOn string
	// Assumed says RestsOn is, or includes, an assumption.
	Assumed bool
}

// ReadExec says what cmd, run by ExecSync with timeout (0: none) in a
// container created with cfg, does on the simulator. ann are the fault
// annotations (the pod's merged with the container's); image is the
// container's image (the config read from its registry, if one was, gives
// the process its Env under the container's, as containerd's exec process
// inherits the container's environment).
//
// The rules, in order:
//   - the exec-exit-code fault decides when set (at once);
//   - the command is read as a container's command is (Decide's reader: a
//     `sh -c` script of echo, exit N, true, false, test/[ ] of strings and
//     integers, sleep N, ...): it exits with the code the script would,
//     after its sleeps; sleep infinity or tail -f do not exit;
//   - what cannot be read (an unknown program such as `mysqladmin ping`, a
//     file test, a pipe) is assumed to exit 0, after the sleeps read
//     before it (labelled: the simulator has no files and runs nothing);
//   - with a timeout, a command that would run longer (or for good) is
//     ended by it: TimedOut.
//
// The engine calls it too, to say what an exec probe's or hook's verdict
// on the simulator rests on.
func ReadExec(cmd []string, cfg *runtimeapi.ContainerConfig, ann map[string]string, image Image, timeout time.Duration) ExecVerdict {
	name := cfg.GetMetadata().GetName()
	if code, ok := intFault(ann, AnnotationExecExitCode, name); ok {
		return ExecVerdict{Code: code, RestsOn: fmt.Sprintf("fault: %s%s makes ExecSync exit %d", AnnotationExecExitCode, name, code)}
	}
	r := &reader{env: execEnv(cfg, image), unset: map[string]bool{}}
	o := r.readCommand(cmd)
	src, shown := "command", quote(strings.Join(cmd, " "))
	if len(cmd) > 0 && shells[path.Base(cmd[0])] && scriptOf(cmd) != "" {
		src, shown = "script", quote(scriptOf(cmd))
	}
	v := ExecVerdict{After: o.after}
	switch o.kind {
	case exits:
		v.Code = o.code
		if o.after > 0 {
			v.RestsOn = fmt.Sprintf("%s: runs %s, then exits %d (%s)", src, shortDuration(o.after), o.code, shown)
		} else {
			v.RestsOn = fmt.Sprintf("%s: exits %d after %s", src, o.code, shown)
		}
	case forever:
		v.Forever = true
		v.RestsOn = fmt.Sprintf("%s: does not exit: %s", src, o.why)
		if src == "script" {
			v.RestsOn += " (" + shown + ")"
		}
	default:
		v.Assumed = true
		v.RestsOn = "assumed: it exits 0: the simulator cannot read " + o.why
		if src == "script" && !strings.HasPrefix(o.why, "`") {
			v.RestsOn += " in " + shown
		}
	}
	if len(o.assumed) > 0 {
		v.Assumed = true
		v.RestsOn += " (assumed: " + strings.Join(dedupe(o.assumed), ", ") + ")"
	}
	switch {
	case timeout > 0 && (v.Forever || v.After > timeout):
		v.TimedOut = true
		v.RestsOn += fmt.Sprintf("; its timeout (%s) ends it first: ExecSync fails with DeadlineExceeded", shortDuration(timeout))
	case v.Forever:
		v.RestsOn += "; with no timeout, ExecSync waits until the container stops"
	}
	return v
}

// execEnv is the environment of a process exec'd in a container of cfg:
// the image's Env (when its config was read) under the container's.
func execEnv(cfg *runtimeapi.ContainerConfig, image Image) map[string]string {
	env := envMap(cfg)
	if image.Config != nil {
		env = imageEnv(image.Config.Env, env)
	}
	return env
}

// execPoll is how often a waiting ExecSync looks whether its container
// still runs.
const execPoll = 20 * time.Millisecond

// ExecSync implements runtimeapi.RuntimeServiceServer. The command is not
// run: what it does is read (ReadExec). The answer is what it echoes (as
// for the container's log) and the exit code read, after the time its
// sleeps take; a command that runs past the request's timeout fails with
// DeadlineExceeded when the timeout ends, in containerd's words; one that
// does not exit and has no timeout waits until the container stops or the
// call is cancelled. A container that stops while the command runs ends
// it with exit code 137 (SIGKILL, as the exec's process is killed with the
// container's). The exec-exit-code / exec-stderr faults for the container
// decide at once.
// Exec in a container that is not running fails as in containerd.
func (s *service) ExecSync(ctx context.Context, req *runtimeapi.ExecSyncRequest) (*runtimeapi.ExecSyncResponse, error) {
	if len(req.GetCmd()) == 0 {
		return nil, status.Error(codes.InvalidArgument, "cmd must be set")
	}
	timeout := time.Duration(req.GetTimeout()) * time.Second
	s.mu.Lock()
	c, err := s.getContainer(req.GetContainerId())
	if err != nil {
		s.mu.Unlock()
		return nil, err
	}
	if c.state != runtimeapi.ContainerState_CONTAINER_RUNNING {
		s.mu.Unlock()
		return nil, status.Error(codes.Unknown, fmt.Sprintf("failed to exec in container: container is in %s state", c.state))
	}
	name := c.config.GetMetadata().GetName()
	image := c.imageInfo()
	v := ReadExec(req.GetCmd(), c.config, c.faults, image, timeout)
	// What the command echoes, as the container's own command is logged
	// (echoLines), with the exec's environment.
	var stdout, stderr strings.Builder
	for _, l := range echoLines(req.GetCmd(), execEnv(c.config, image)) {
		if l.stream == "stderr" {
			stderr.WriteString(l.text + "\n")
		} else {
			stdout.WriteString(l.text + "\n")
		}
	}
	resp := &runtimeapi.ExecSyncResponse{Stdout: []byte(stdout.String()), ExitCode: v.Code}
	if stderr.Len() > 0 {
		resp.Stderr = []byte(stderr.String())
	}
	if msg, ok := containerFault(c.faults, AnnotationExecStderr, name); ok {
		resp.Stderr = []byte(msg)
	}
	s.mu.Unlock()

	wait := v.After
	if v.TimedOut {
		wait = timeout
	}
	if wait <= 0 && !v.Forever {
		return resp, nil
	}
	var end <-chan time.Time
	if wait > 0 || v.TimedOut {
		t := time.NewTimer(wait)
		defer t.Stop()
		end = t.C
	}
	tick := time.NewTicker(execPoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, status.FromContextError(ctx.Err()).Err()
		case <-end:
			if v.TimedOut {
				return nil, status.Error(codes.DeadlineExceeded, fmt.Sprintf("failed to exec in container: timeout %v exceeded: %v", timeout, context.DeadlineExceeded))
			}
			return resp, nil
		case <-tick.C:
			if !s.running(req.GetContainerId()) {
				return &runtimeapi.ExecSyncResponse{Stdout: resp.Stdout, Stderr: resp.Stderr, ExitCode: 137}, nil
			}
		}
	}
}

// running says whether container id still runs.
func (s *service) running(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := s.getContainer(id)
	return err == nil && c.state == runtimeapi.ContainerState_CONTAINER_RUNNING
}
