package sim

import (
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestDecide pins what a simulated container does for each kind of
// command, and what the verdict says it rests on.
func TestDecide(t *testing.T) {
	type want struct {
		exits   bool
		code    int32
		after   time.Duration
		restsOn string // a substring of RestsOn
		assumed bool
	}
	sh := func(script string) []string { return []string{"sh", "-c", script} }
	tests := []struct {
		name      string
		image     string
		command   []string
		args      []string
		env       map[string]string
		stdin     bool
		ann       map[string]string
		completes string
		want      want
	}{
		// No command: the image's entrypoint.
		{name: "unknown image, args only", image: "coredns/coredns:1.9.4", args: []string{"-conf", "/etc/coredns/Corefile"},
			want: want{restsOn: "assumed: the entrypoint of coredns/coredns:1.9.4 keeps running (a server)", assumed: true}},
		{name: "unknown image, nothing", image: "nginx",
			want: want{restsOn: "assumed: the entrypoint of nginx keeps running", assumed: true}},
		{name: "unknown image, init container", image: "cockroachdb/cockroach-k8s-init:0.2", args: []string{"-on-start=/on-start.sh"}, completes: "an init container",
			want: want{exits: true, restsOn: "assumed: the entrypoint of cockroachdb/cockroach-k8s-init:0.2 runs to completion and exits 0 (an init container)", assumed: true}},
		{name: "busybox, nothing: sh reads an empty stdin", image: "busybox:1.35",
			want: want{exits: true, restsOn: "image CMD: exits 0 after `sh`"}},
		{name: "busybox, nothing, stdin open", image: "busybox:1.35", stdin: true,
			want: want{restsOn: "image CMD: keeps running: `sh` reads its stdin"}},
		{name: "busybox, args only: they are the command", image: "busybox", args: []string{"/bin/sh", "-c", "date; echo Hello"},
			want: want{exits: true, restsOn: "script: exits 0 after `date; echo Hello` (assumed: `date` exits 0)", assumed: true}},

		// Commands.
		{name: "sleep N", image: "busybox", command: []string{"sleep", "3600"},
			want: want{exits: true, after: time.Hour, restsOn: "command: runs 1h, then exits 0 (`sleep 3600`)"}},
		{name: "sleep infinity", image: "debian", command: []string{"sleep", "infinity"},
			want: want{restsOn: "command: keeps running: `sleep infinity` never ends"}},
		{name: "true", image: "x", command: []string{"/bin/true"}, want: want{exits: true, restsOn: "command: exits 0 after `/bin/true`"}},
		{name: "false", image: "x", command: []string{"false"}, want: want{exits: true, code: 1, restsOn: "command: exits 1 after `false`"}},
		{name: "unknown binary", image: "registry.k8s.io/etcd:3.5.1-0", command: []string{"/usr/local/bin/etcd", "--data-dir", "/var/lib/etcd"},
			want: want{restsOn: "assumed: it keeps running (a server): the simulator cannot read `/usr/local/bin/etcd --data-dir /var/lib/etcd`", assumed: true}},
		{name: "unknown binary in a Job", image: "x", command: []string{"/bin/descheduler"}, completes: "restartPolicy: Never",
			want: want{exits: true, restsOn: "runs to completion and exits 0 (restartPolicy: Never)", assumed: true}},
		{name: "tail -f", image: "x", command: []string{"sh", "-c"}, args: []string{"tail -f /dev/null"},
			want: want{restsOn: "script: keeps running: `tail -f /dev/null` follows its file"}},
		{name: "cat of nothing", image: "x", command: []string{"cat"}, want: want{exits: true, restsOn: "command: exits 0 after `cat`"}},
		{name: "cat with stdin", image: "x", command: []string{"cat"}, stdin: true, want: want{restsOn: "keeps running: `cat` reads its stdin"}},
		{name: "cat of a file", image: "x", command: sh("cat /work/ready; exit 4"),
			want: want{exits: true, code: 4, restsOn: "script: exits 4 after `cat /work/ready; exit 4` (assumed: `cat` exits 0)", assumed: true}},
		{name: "utility", image: "x", command: []string{"cp", "/sample.war", "/app"},
			want: want{exits: true, restsOn: "command: exits 0 after `cp /sample.war /app` (assumed: `cp` exits 0)", assumed: true}},

		// Scripts.
		{name: "echo; exit N", image: "busybox", command: sh("echo crashing; exit 2"),
			want: want{exits: true, code: 2, restsOn: "script: exits 2 after `echo crashing; exit 2`"}},
		{name: "echo && sleep && exit", image: "bash:5", command: []string{"bash"}, args: []string{"-c", `echo "Hello world!" && sleep 5 && exit 42`},
			want: want{exits: true, code: 42, after: 5 * time.Second, restsOn: "script: runs 5s, then exits 42"}},
		{name: "false || exit 3", image: "x", command: sh("false || exit 3; exit 4"), want: want{exits: true, code: 3}},
		{name: "true && exit 3", image: "x", command: sh("true && exit 3"), want: want{exits: true, code: 3}},
		{name: "false && exit 3: the status of false", image: "x", command: sh("false && exit 3"), want: want{exits: true, code: 1}},
		{name: "exit without a code: $?", image: "x", command: sh("false; exit"), want: want{exits: true, code: 1}},
		{name: "exit 256 wraps", image: "x", command: sh("exit 257"), want: want{exits: true, code: 1}},
		{name: "set -e stops at a failure", image: "x", command: sh("set -e; false; sleep 3600"), want: want{exits: true, code: 1}},
		{name: "sh -e flag", image: "x", command: []string{"/bin/bash", "-ec", "false; sleep 3600"}, want: want{exits: true, code: 1}},
		{name: "a failure in a condition does not stop set -e", image: "x", command: sh("set -e; false || true; exit 5"), want: want{exits: true, code: 5}},
		{name: "test of strings from the env", image: "x", command: sh(`[ "$MODE" = debug ] && exit 7; exit 8`), env: map[string]string{"MODE": "debug"},
			want: want{exits: true, code: 7}},
		{name: "test of integers", image: "x", command: sh(`test 3 -gt 4 || exit 9`), want: want{exits: true, code: 9}},
		{name: "assignment then test", image: "x", command: sh(`x=1; [ $x -eq 1 ] && exit 6`), want: want{exits: true, code: 6}},
		{name: "an unknown variable's value decides", image: "x", command: sh(`exit $CODE`),
			want: want{restsOn: "assumed: it keeps running (a server): the simulator cannot read `$CODE`, whose value is not known", assumed: true}},
		{name: "an unknown variable echoed does not matter", image: "x", command: sh(`echo $HOME; exit 3`), want: want{exits: true, code: 3}},
		{name: "a file test cannot be read", image: "busybox", command: sh("[ -f /ready ] || exit 9; sleep 3600"),
			want: want{restsOn: "the simulator cannot read `[ -f /ready ]`", assumed: true}},
		{name: "an unknown program stops the reading", image: "busybox", command: sh("grep -q x /f || exit 9; exec sleep 3600"),
			want: want{restsOn: "assumed: it keeps running (a server): the simulator cannot read `grep -q x /f`", assumed: true}},
		{name: "exec sleep", image: "busybox", command: sh("echo hi; exec sleep 3600"),
			want: want{exits: true, after: time.Hour, restsOn: "script: runs 1h, then exits 0"}},
		{name: "exec of a server", image: "busybox", command: sh("echo hi > /tmp/index.html; exec httpd -f -p 8080"),
			want: want{restsOn: "the simulator cannot read `httpd -f -p 8080` (assumed: the write to /tmp/index.html succeeds)", assumed: true}},
		{name: "an endless loop", image: "busybox", command: sh("while true; do sleep 1; done"),
			want: want{restsOn: "script: keeps running: `while true; do sleep 1; done` is an endless loop"}},
		{name: "an endless loop in a Job still runs", image: "busybox", command: sh("echo start\nwhile :\ndo printenv A; sleep 10; done"), completes: "restartPolicy: Never",
			want: want{restsOn: "script: keeps running: `while :` is an endless loop"}},
		{name: "a loop that can break", image: "busybox", command: sh("while true; do [ -f /x ] && break; sleep 1; done"),
			want: want{restsOn: "the simulator cannot read the shell keyword `while` in `while true; do [ -f /x ] && break; sleep 1; done`", assumed: true}},
		{name: "a loop under set -e", image: "busybox", command: sh("set -e; while true; do date; sleep 1; done"),
			want: want{restsOn: "cannot read the shell keyword `while`", assumed: true}},
		{name: "a conditional loop", image: "busybox", command: sh("until nslookup db; do sleep 2; done"), completes: "an init container",
			want: want{exits: true, restsOn: "assumed: it runs to completion and exits 0 (an init container)", assumed: true}},
		{name: "a pipe", image: "x", command: sh("echo x | grep x"), want: want{restsOn: "cannot read a pipe", assumed: true}},
		{name: "a command substitution", image: "x", command: sh("echo $(date); exit 1"), want: want{restsOn: "cannot read a command substitution", assumed: true}},
		{name: "a background job", image: "x", command: sh("sleep 10 & exit 1"), want: want{restsOn: "cannot read a background job", assumed: true}},
		{name: "a nested shell", image: "x", command: sh("sh -c 'exit 4'; exit $?"), want: want{restsOn: "cannot read `$?`", assumed: true}},
		{name: "a nested shell's exit is a status", image: "x", command: sh("sh -c 'exit 4' || exit 5"), want: want{exits: true, code: 5}},
		{name: "comments and line continuations", image: "x", command: sh("# setup\necho a \\\n  b\nexit 3 # done"), want: want{exits: true, code: 3}},
		{name: "stderr redirections change nothing", image: "x", command: sh("echo oops >&2 2>/dev/null; exit 2"), want: want{exits: true, code: 2}},
		{name: "a script file", image: "x", command: []string{"sh", "/start.sh"}, want: want{restsOn: "cannot read the script file `/start.sh`", assumed: true}},
		{name: "an unknown script in an init container", image: "mysql:5.7", command: []string{"bash", "-c", "set -ex\n[[ `hostname` =~ -([0-9]+)$ ]] || exit 1\n"},
			completes: "an init container", want: want{exits: true, restsOn: "assumed: it runs to completion and exits 0 (an init container)", assumed: true}},

		// Faults win.
		{name: "exit-code fault", image: "busybox", command: sh("echo done"), ann: map[string]string{AnnotationExitCode + "c": "3"},
			want: want{exits: true, code: 3, restsOn: "fault: sim.podstep.dev/exit-code.c makes it exit 3"}},
		{name: "keep-running fault", image: "busybox", command: sh("exit 1"), ann: map[string]string{AnnotationKeepRunning + "c": "true"},
			want: want{restsOn: "fault: sim.podstep.dev/keep-running.c keeps it running"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "c"}, Command: tt.command, Args: tt.args, Stdin: tt.stdin,
				Image: &runtimeapi.ImageSpec{Image: "sha256:0000000000000000000000000000000000000000000000000000000000000000", UserSpecifiedImage: tt.image}}
			for k, v := range tt.env {
				cfg.Envs = append(cfg.Envs, &runtimeapi.KeyValue{Key: k, Value: []byte(v)})
			}
			got := Decide(cfg, tt.ann, Image{Name: tt.image}, tt.completes)
			if got.Exits != tt.want.exits || got.Code != tt.want.code || got.After != tt.want.after || got.Assumed != tt.want.assumed {
				t.Errorf("Decide = exits %v code %d after %s assumed %v, want exits %v code %d after %s assumed %v (rests on %q)",
					got.Exits, got.Code, got.After, got.Assumed, tt.want.exits, tt.want.code, tt.want.after, tt.want.assumed, got.RestsOn)
			}
			if !strings.Contains(got.RestsOn, tt.want.restsOn) {
				t.Errorf("RestsOn = %q, want it to contain %q", got.RestsOn, tt.want.restsOn)
			}
		})
	}
}
