package sim

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/internal/imageconfig"
	"github.com/podstep/podstep/internal/imageconfig/imageconfigtest"
)

// newEnvWith is newEnv with the image config reader f.
func newEnvWith(t *testing.T, f *imageconfig.Fetcher) *env {
	t.Helper()
	clk := &fakeClock{t: time.Date(2026, 1, 2, 15, 4, 5, 1, time.UTC)}
	dir := socketDir(t)
	srv, err := StartWithOptions(dir, Options{InitRunTime: testInitRunTime, Clock: clk.Now, ImageConfig: f})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient(srv.Endpoint(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return &env{t: t, srv: srv, clk: clk, dir: dir, ctx: ctx,
		rt: runtimeapi.NewRuntimeServiceClient(conn), im: runtimeapi.NewImageServiceClient(conn)}
}

// TestImageConfigRead: PullImage reads the image's config with the
// request's credentials; ImageStatus reports its user as containerd does
// and where it comes from; a container without a command runs the image's
// entrypoint and cmd.
func TestImageConfigRead(t *testing.T) {
	const user, password = "puller", "pa55-Word"
	reg := imageconfigtest.New(t, user, password)
	push := func(repo string, c imageconfig.Config) string {
		return reg.Host + "/" + repo + "@" + reg.Push(t, repo, "1", imageconfigtest.ConfigJSON(c))
	}
	right := &runtimeapi.AuthConfig{Username: user, Password: password, ServerAddress: reg.Host}
	tests := []struct {
		name     string
		config   imageconfig.Config
		auth     *runtimeapi.AuthConfig
		uid      *int64
		username string
		args     []string
		// exits: the container exits with code; else it keeps running.
		exits   bool
		code    int32
		restsOn string
		// unknown: the config was not read (the annotations say so).
		unknown  bool
		errorHas string
		garbage  bool // the registry holds a config that does not parse
	}{
		{name: "numeric user", config: imageconfig.Config{User: "1000", Entrypoint: []string{"/server"}}, auth: right,
			uid: ptr(1000), restsOn: "assumed: it keeps running (a server): the simulator cannot read `/server`; image config from "},
		{name: "uid:gid", config: imageconfig.Config{User: "1000:1000", Entrypoint: []string{"sh", "-c"}, Cmd: []string{"exit 3"}}, auth: right,
			uid: ptr(1000), exits: true, code: 3, restsOn: "script: exits 3 after `exit 3`; image config from "},
		{name: "user name", config: imageconfig.Config{User: "app", Cmd: []string{"sleep", "infinity"}}, auth: right,
			username: "app", restsOn: "image CMD: keeps running: "},
		{name: "root by name", config: imageconfig.Config{User: "root", Entrypoint: []string{"/bin/true"}}, auth: right,
			username: "root", exits: true, restsOn: "image entrypoint: exits 0 after `/bin/true`; image config from "},
		{name: "no user", config: imageconfig.Config{Entrypoint: []string{"sh", "-c", "echo $GREETING; exit $CODE"}, Env: []string{"GREETING=hi", "CODE=4"}}, auth: right,
			exits: true, code: 4, restsOn: "script: exits 4 after"},
		{name: "entrypoint and the image's cmd", config: imageconfig.Config{Entrypoint: []string{"sleep"}, Cmd: []string{"2"}}, auth: right,
			exits: true, restsOn: "image entrypoint: runs 2s, then exits 0 (`sleep 2`)"},
		{name: "args replace the image's cmd", config: imageconfig.Config{Entrypoint: []string{"sleep"}, Cmd: []string{"infinity"}}, auth: right, args: []string{"0"},
			exits: true, restsOn: "image entrypoint: exits 0 after `sleep 0`"},
		{name: "a config that is no config", config: imageconfig.Config{User: "1000"}, auth: right, garbage: true,
			unknown: true, errorHas: "config is not an image config", restsOn: "assumed: the entrypoint of"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnvWith(t, imageconfig.New(imageconfig.Options{}))
			ref := push("app"+string(rune('a'+i)), tt.config)
			if tt.garbage {
				repo := "app" + string(rune('a'+i))
				ref = reg.Host + "/" + repo + "@" + reg.Push(t, repo, "2", []byte("\x00 not JSON"))
			}
			if _, err := e.im.PullImage(e.ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}, Auth: tt.auth}); err != nil {
				t.Fatal(err)
			}
			st, err := e.im.ImageStatus(e.ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
			if err != nil {
				t.Fatal(err)
			}
			img := st.GetImage()
			ann := img.GetSpec().GetAnnotations()
			if tt.unknown {
				if ann[AnnotationImageConfig] != ImageConfigUnknown || !strings.Contains(ann[AnnotationImageConfigError], tt.errorHas) {
					t.Errorf("annotations %v, want unknown and an error with %q", ann, tt.errorHas)
				}
				if strings.Contains(ann[AnnotationImageConfigError], password) || strings.Contains(ann[AnnotationImageConfigError], "nope") {
					t.Errorf("the error holds a password: %q", ann[AnnotationImageConfigError])
				}
			} else {
				if want := ImageConfigFrom + ref; ann[AnnotationImageConfig] != want {
					t.Errorf("%s = %q, want %q", AnnotationImageConfig, ann[AnnotationImageConfig], want)
				}
				if (img.GetUid() == nil) != (tt.uid == nil) || tt.uid != nil && img.GetUid().GetValue() != *tt.uid {
					t.Errorf("uid = %v, want %v", img.GetUid(), tt.uid)
				}
				if img.GetUsername() != tt.username {
					t.Errorf("username = %q, want %q", img.GetUsername(), tt.username)
				}
				got := ImageOf(ref, img)
				if got.Config == nil || got.Source != ref {
					t.Errorf("ImageOf = %+v, want the config from %s", got, ref)
				}
			}
			sb := sandboxConfig("pod", nil)
			sbID := e.runSandbox(sb)
			cfg := containerConfig("app")
			cfg.Image = &runtimeapi.ImageSpec{Image: ref, UserSpecifiedImage: ref}
			cfg.Args = tt.args
			id := e.create(sbID, sb, cfg)
			e.start(id)
			e.clk.Advance(time.Hour)
			cs := e.status(id)
			if exited := cs.GetState() == runtimeapi.ContainerState_CONTAINER_EXITED; exited != tt.exits || exited && cs.GetExitCode() != tt.code {
				t.Errorf("state %s exit code %d, want exits %t code %d", cs.GetState(), cs.GetExitCode(), tt.exits, tt.code)
			}
			// The engine's view (ImageOf the ImageStatus answer) decides as the simulator did.
			b := Decide(cfg, nil, ImageOf(ref, img), "")
			if !strings.Contains(b.RestsOn, tt.restsOn) {
				t.Errorf("RestsOn %q, want it to contain %q", b.RestsOn, tt.restsOn)
			}
			if !tt.unknown && !strings.HasSuffix(b.RestsOn, "image config from "+ref) {
				t.Errorf("RestsOn %q does not end with its source %s", b.RestsOn, ref)
			}
		})
	}
}

// TestPullRefused: a pull whose registry refuses the config read with the
// request's credentials fails as containerd 2's does (its words, its gRPC
// code), and the image is not there after it; an image that was there
// before (pulled with Always) stays. The simulator pulled them all before
// (issue 32: a wrong password ran the pod).
func TestPullRefused(t *testing.T) {
	const user, password = "puller", "pa55-Word"
	reg := imageconfigtest.New(t, user, password)
	reg.Push(t, "team/app", "1", imageconfigtest.ConfigJSON(imageconfig.Config{User: "1000"}))
	right := &runtimeapi.AuthConfig{Username: user, Password: password, ServerAddress: reg.Host}
	wrong := &runtimeapi.AuthConfig{Username: user, Password: "nope", ServerAddress: reg.Host}
	for _, tt := range []struct {
		name string
		ref  string
		auth *runtimeapi.AuthConfig
		code codes.Code
		msg  string
	}{
		{"wrong password", "team/app:1", wrong, codes.Unknown,
			`failed to pull and unpack image "HOST/team/app:1": failed to resolve image: unexpected status from HEAD request to http://HOST/v2/team/app/manifests/1: 401 Unauthorized`},
		{"no credentials", "team/app:1", nil, codes.Unknown,
			`failed to pull and unpack image "HOST/team/app:1": failed to resolve image: pull access denied, repository does not exist or may require authorization: authorization failed`},
		{"no such tag", "team/app:9", right, codes.NotFound,
			`failed to pull and unpack image "HOST/team/app:9": failed to resolve image: HOST/team/app:9: not found`},
		{"no such repository", "team/nope:1", right, codes.NotFound,
			`failed to pull and unpack image "HOST/team/nope:1": failed to resolve image: HOST/team/nope:1: not found`},
		{"right password", "team/app:1", right, codes.OK, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnvWith(t, imageconfig.New(imageconfig.Options{}))
			ref := reg.Ref(tt.ref)
			_, err := e.im.PullImage(e.ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}, Auth: tt.auth})
			st, _ := status.FromError(err)
			if want := strings.ReplaceAll(tt.msg, "HOST", reg.Host); st.Code() != tt.code || st.Message() != want {
				t.Errorf("PullImage: %s %q\nwant %s %q", st.Code(), st.Message(), tt.code, want)
			}
			if strings.Contains(st.Message(), "nope") && tt.auth == wrong || strings.Contains(st.Message(), password) {
				t.Errorf("the error holds a password: %q", st.Message())
			}
			is, err := e.im.ImageStatus(e.ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
			if err != nil {
				t.Fatal(err)
			}
			if (is.GetImage() != nil) != (tt.code == codes.OK) {
				t.Errorf("image present after the pull: %t", is.GetImage() != nil)
			}
		})
	}
	// An image pulled before: a pull of it again (Always) that the registry
	// refuses fails, and the image stays.
	e := newEnvWith(t, imageconfig.New(imageconfig.Options{}))
	app := &runtimeapi.ImageSpec{Image: reg.Ref("team/app:1")}
	if _, err := e.im.PullImage(e.ctx, &runtimeapi.PullImageRequest{Image: app, Auth: right}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.im.PullImage(e.ctx, &runtimeapi.PullImageRequest{Image: app, Auth: wrong}); status.Code(err) != codes.Unknown {
		t.Errorf("refused pull of a present image: %v", err)
	}
	if is, err := e.im.ImageStatus(e.ctx, &runtimeapi.ImageStatusRequest{Image: app}); err != nil || is.GetImage() == nil {
		t.Errorf("the image pulled before is gone after a refused pull: %v %v", is, err)
	}
}

// TestImageConfigOffline: a registry that no one answers for leaves the
// image as without a reader: unknown, no error annotation.
func TestImageConfigOffline(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	host := l.Addr().String()
	l.Close()
	for _, f := range []*imageconfig.Fetcher{nil, imageconfig.New(imageconfig.Options{})} {
		e := newEnvWith(t, f)
		ref := host + "/app:1"
		if _, err := e.im.PullImage(e.ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}}); err != nil {
			t.Fatal(err)
		}
		st, err := e.im.ImageStatus(e.ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
		if err != nil {
			t.Fatal(err)
		}
		ann := st.GetImage().GetSpec().GetAnnotations()
		if len(ann) != 1 || ann[AnnotationImageConfig] != ImageConfigUnknown {
			t.Errorf("reader %v: annotations %v, want only %s: %s", f != nil, ann, AnnotationImageConfig, ImageConfigUnknown)
		}
	}
}

func ptr(v int64) *int64 { return &v }
