package fleet

import (
	"strings"
	"testing"
	"time"

	"github.com/podstep/podstep/internal/session"
)

// Flags.Validate: every bad flag is one message, exit 2, before anything
// is read or sent.
func TestFlagsValidate(t *testing.T) {
	good := Flags{File: "pod.yaml", Image: "img", PullPolicy: "IfNotPresent", Output: "text", Concurrency: 1, Timeout: time.Second, RunTimeout: time.Second, HostDir: DefaultHostDir}
	for _, tt := range []struct {
		name string
		edit func(*Flags)
		want string // "" = valid
	}{
		{"valid", func(*Flags) {}, ""},
		{"no pod", func(f *Flags) { f.File = "" }, "give the pod with -f FILE or --pod"},
		{"both", func(f *Flags) { f.Pod = "ns/p" }, "one of them"},
		{"node and nodes", func(f *Flags) { f.Nodes, f.Selector = []string{"a"}, "x=y" }, "--node and --nodes"},
		{"no image", func(f *Flags) { f.Image = "" }, "--image is required: podstep unknown is not a release"},
		{"no image, a dev build", func(f *Flags) { f.Image, f.Version = "", func() string { return "0.1.0-dev" } }, "--image is required: podstep 0.1.0-dev is not a release, so it has no release image; build the runner image with hack/image-build.sh and give it with --image"},
		{"no image, a snapshot", func(f *Flags) { f.Image, f.Version = "", func() string { return "v0.2.0-snapshot" } }, "podstep v0.2.0-snapshot is not a release"},
		{"no image, between tags", func(f *Flags) { f.Image, f.Version = "", func() string { return "v0.2.0-3-gabc1234" } }, "podstep v0.2.0-3-gabc1234 is not a release"},
		{"no image, a release", func(f *Flags) { f.Image, f.Version = "", func() string { return "v0.2.0" } }, ""},
		{"pull policy", func(f *Flags) { f.PullPolicy = "Sometimes" }, `--image-pull-policy "Sometimes"`},
		{"output", func(f *Flags) { f.Output = "yaml" }, "yaml"},
		{"concurrency", func(f *Flags) { f.Concurrency = 0 }, "--concurrency 0"},
		{"timeout", func(f *Flags) { f.Timeout = 0 }, "--timeout and --run-timeout"},
		{"runner server", func(f *Flags) { f.RunnerServer = "http://h" }, `--runner-server "http://h"`},
		{"run flag", func(f *Flags) { f.RunFlags = []string{"settle=0"} }, `--run-flag "settle=0"`},
		{"host dir relative", func(f *Flags) { f.HostDir = "podstep-fleet" }, `--host-dir "podstep-fleet"`},
		{"host dir root", func(f *Flags) { f.HostDir = "//" }, `--host-dir "//"`},
		{"shadow", func(f *Flags) { f.Shadow = "sometimes" }, `--shadow "sometimes"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := good
			tt.edit(&f)
			err := f.Validate()
			if tt.name == "no image, a release" && f.Image != "ghcr.io/podstep/podstep:v0.2.0" {
				t.Errorf("--image defaults to %q, want the release image ghcr.io/podstep/podstep:v0.2.0", f.Image)
			}
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("%v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) || session.Code(err) != session.ExitUsage):
				t.Errorf("%v (exit %d), want exit 2 with %q", err, session.Code(err), tt.want)
			}
		})
	}
}
