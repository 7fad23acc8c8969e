package watch

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/internal/cluster"
	"github.com/podstep/podstep/internal/cluster/kubefake"
	"github.com/podstep/podstep/internal/report"
	"github.com/podstep/podstep/internal/steps"
)

// specPodYAML is the pod of TestSpecStages as a static pod manifest: two
// init containers, a sidecar (an init container with restartPolicy
// Always), two containers.
const specPodYAML = `apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  initContainers:
  - name: init-a
    image: docker.io/library/busybox:1.35
    command: ["true"]
  - name: init-b
    image: docker.io/library/busybox:1.35
    command: ["true"]
  - name: proxy
    image: docker.io/library/busybox:1.35
    command: ["sleep", "3600"]
    restartPolicy: Always
    ports:
    - containerPort: 9000
  containers:
  - name: app
    image: docker.io/library/busybox:1.35
    command: ["sleep", "3600"]
    env:
    - name: DB_PASSWORD
      valueFrom:
        secretKeyRef: {name: db, key: password}
    volumeMounts:
    - name: data
      mountPath: /data
  - name: logger
    image: docker.io/library/busybox:1.35
    command: ["sleep", "3600"]
  volumes:
  - name: data
    emptyDir: {}
`

// specPod is specPodYAML as the API server has it.
func specPod(ns, name, uid string) *corev1.Pod {
	always := corev1.ContainerRestartPolicyAlways
	bb := "docker.io/library/busybox:1.35"
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid), ResourceVersion: "4242"},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{
				{Name: "init-a", Image: bb, Command: []string{"true"}},
				{Name: "init-b", Image: bb, Command: []string{"true"}},
				{Name: "proxy", Image: bb, Command: []string{"sleep", "3600"}, RestartPolicy: &always, Ports: []corev1.ContainerPort{{ContainerPort: 9000, Protocol: corev1.ProtocolTCP}}},
			},
			Containers: []corev1.Container{
				{Name: "app", Image: bb, Command: []string{"sleep", "3600"},
					Env:          []corev1.EnvVar{{Name: "DB_PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "db"}, Key: "password"}}}},
					VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}},
				{Name: "logger", Image: bb, Command: []string{"sleep", "3600"}},
			},
		},
	}
}

// slowSpecs answers after a delay, longer than RunPodSandbox takes.
type slowSpecs struct {
	SpecSource
	delay time.Duration
}

func (s slowSpecs) Spec(ctx context.Context, ns, name, uid string) (*corev1.Pod, string, error) {
	time.Sleep(s.delay)
	return s.SpecSource.Spec(ctx, ns, name, uid)
}

// secretValue is the value the kubelet sends for DB_PASSWORD.
const secretValue = "hunter2-Podstep-Db-Password"

// playSpecPod plays the kubelet's calls for specPod: the sandbox, the init
// containers one after the other (each exits before the next is created;
// the sidecar only starts), then the containers, with the kubelet's
// additions to app's config (a service-link env, the hosts file).
func playSpecPod(ctx context.Context, k *kubelet) {
	k.sandbox(ctx)
	for _, n := range []string{"init-a", "init-b"} {
		k.container(ctx, n, nil, "true")
		k.relist(ctx)
		// It exits (the simulator's exit-code annotation); the next
		// relist sees it, then the kubelet creates the next container.
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			st, err := k.c.ContainerStatus(ctx, k.ids[n])
			k.must(err)
			if st.Status.State == runtimeapi.ContainerState_CONTAINER_EXITED {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		k.relist(ctx)
	}
	k.container(ctx, "proxy", nil, "sleep", "3600")
	k.relist(ctx)
	for _, n := range []string{"app", "logger"} {
		img := &runtimeapi.ImageSpec{Image: "docker.io/library/busybox:1.35"}
		_, err := k.c.ImageStatus(ctx, img)
		k.must(err)
		cfg := containerConfig(k.cfg, n, "sleep", "3600")
		if n == "app" {
			cfg.Envs = []*runtimeapi.KeyValue{{Key: "DB_PASSWORD", Value: []byte(secretValue)}, {Key: "KUBERNETES_PORT", Value: []byte("tcp://10.0.0.1:443")}}
			cfg.Mounts = []*runtimeapi.Mount{{ContainerPath: "/etc/hosts", HostPath: "/tmp/podstep-watch-test/etc-hosts"}}
		}
		r, err := k.c.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: k.sb, Config: cfg, SandboxConfig: k.cfg})
		k.must(err)
		k.ids[n] = r.ContainerId
		_, err = k.c.StartContainer(ctx, r.ContainerId)
		k.must(err)
	}
	k.relist(ctx)
}

// TestSpecStages: with the pod's spec (from the API server, a static pod
// manifest, or a source slower than RunPodSandbox), every step of an init
// container, the sidecar's too, is staged init as it is emitted, and the
// create steps say where the spec came from and how what was sent differs;
// without one (or when the pod is not found: a note), the stages are
// inferred as before: a sidecar never exits, so it stays "containers".
func TestSpecStages(t *testing.T) {
	const ns, sandboxName, uid = "default", "web-node1", "uid-web"
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "web.yaml"), []byte(specPodYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	// Ignored, as the kubelet's file source ignores dot files.
	if err := os.WriteFile(filepath.Join(dir, ".web-node1.yaml"), []byte("not: [a pod"), 0o644); err != nil {
		t.Fatal(err)
	}
	withSpec := map[string]steps.Stage{"init-a": steps.StageInit, "init-b": steps.StageInit, "proxy": steps.StageInit,
		"app": steps.StageContainers, "logger": steps.StageContainers}
	// Without a spec an init container is known only once the next
	// container is created after its exit: its steps are out by then.
	inferred := map[string]steps.Stage{"init-a": steps.StageContainers, "init-b": steps.StageContainers, "proxy": steps.StageContainers,
		"app": steps.StageContainers, "logger": steps.StageContainers}
	mirror := specPod(ns, sandboxName, "uid-of-the-mirror")
	mirror.Annotations = map[string]string{mirrorAnnotation: uid}

	for _, tc := range []struct {
		name    string
		specs   func() (SpecSource, *fake.Clientset)
		want    map[string]steps.Stage // the stage of each container's steps, as emitted
		from    string                 // in the spec note and the create steps' "spec" detail
		noteErr string
		vsSent  string // in app's "spec vs sent"
	}{
		{name: "none", specs: func() (SpecSource, *fake.Clientset) { return nil, nil }, want: inferred},
		{name: "API server", specs: func() (SpecSource, *fake.Clientset) {
			cs := fake.NewClientset(specPod(ns, sandboxName, uid))
			return APISpecs{Client: cluster.NewForTest(kubefake.New(cs), "https://api.test:6443")}, cs
		}, want: withSpec, from: "the API server https://api.test:6443 (resourceVersion 4242)",
			vsSent: "env: +1 names from the kubelet's service links (KUBERNETES_PORT); mounts: +1 from the kubelet (/etc/hosts); mounts: 1 of the spec not sent (/data)"},
		{name: "mirror pod", specs: func() (SpecSource, *fake.Clientset) {
			cs := fake.NewClientset(mirror)
			return APISpecs{Client: cluster.NewForTest(kubefake.New(cs), "https://api.test:6443")}, cs
		}, want: withSpec, from: "the mirror pod of a static pod"},
		{name: "manifest dir", specs: func() (SpecSource, *fake.Clientset) { return FileSpecs{Path: dir}, nil },
			want: withSpec, from: "the manifest " + filepath.Join(dir, "web.yaml")},
		{name: "slow source", specs: func() (SpecSource, *fake.Clientset) {
			return slowSpecs{FileSpecs{Path: dir}, 300 * time.Millisecond}, nil
		}, want: withSpec, from: "web.yaml"},
		{name: "pod not found", specs: func() (SpecSource, *fake.Clientset) {
			cs := fake.NewClientset()
			return APISpecs{Client: cluster.NewForTest(kubefake.New(cs), "https://api.test:6443")}, cs
		}, want: inferred, noteErr: `has no pod "web-node1" in namespace "default"`},
		{name: "another pod of the same name", specs: func() (SpecSource, *fake.Clientset) {
			cs := fake.NewClientset(specPod(ns, sandboxName, "uid-of-a-newer-pod"))
			return APISpecs{Client: cluster.NewForTest(kubefake.New(cs), "https://api.test:6443")}, cs
		}, want: inferred, noteErr: "not the sandbox's uid-web"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			specs, cs := tc.specs()
			var mu sync.Mutex
			var notes []SpecNote
			r := newRig(t, Options{Specs: specs, OnSpec: func(_ *Pod, n SpecNote) { mu.Lock(); notes = append(notes, n); mu.Unlock() }})
			ctx := context.Background()
			cfg := sandboxConfig(sandboxName, uid)
			cfg.Annotations = map[string]string{"sim.podstep.dev/exit-code.init-a": "0", "sim.podstep.dev/exit-code.init-b": "0"}
			k := newKubelet(t, r.client, cfg)
			playSpecPod(ctx, k)
			r.settle()

			// The stages as emitted (StepDone), which --auto, -o json and
			// recordings show: not retagged later.
			r.mu.Lock()
			var emitted []steps.Step
			for _, ev := range r.events {
				if ev.Kind == steps.StepDone {
					emitted = append(emitted, ev.Step)
				}
			}
			r.mu.Unlock()
			seen := map[string]bool{}
			for _, s := range emitted {
				want, ok := tc.want[s.Container]
				if !ok || s.Kind == steps.KindRelist {
					continue
				}
				seen[s.Container] = true
				if s.Stage != want {
					t.Errorf("step %s emitted in stage %s, want %s\nall: %q", s.Name, s.Stage, want, names(emitted))
				}
			}
			if len(seen) != len(tc.want) {
				t.Errorf("containers with steps %v, want %d", seen, len(tc.want))
			}
			// The summary's status reads the spec's init containers.
			pods := r.w.Pods()
			if len(pods) != 1 {
				t.Fatalf("pods %v", pods)
			}
			st := pods[0].PodState().Status
			var inits []string
			for _, s := range st.InitContainerStatuses {
				inits = append(inits, s.Name)
			}
			wantInits := []string{"init-a", "init-b", "proxy"}
			if tc.want["proxy"] != steps.StageInit {
				wantInits = []string{"init-a", "init-b"} // inferred at the end; the sidecar never exits
			}
			if !reflect.DeepEqual(inits, wantInits) {
				t.Errorf("initContainerStatuses %q, want %q", inits, wantInits)
			}

			mu.Lock()
			defer mu.Unlock()
			if specs == nil {
				if len(notes) != 0 {
					t.Errorf("spec notes without a source: %+v", notes)
				}
				return
			}
			if len(notes) != 1 {
				t.Fatalf("spec notes %+v, want one", notes)
			}
			n := notes[0]
			switch {
			case tc.noteErr != "" && (n.Err == nil || !strings.Contains(n.Err.Error(), tc.noteErr)):
				t.Errorf("note %+v, want the error %q", n, tc.noteErr)
			case tc.noteErr == "" && (n.Err != nil || !strings.Contains(n.From, tc.from)):
				t.Errorf("note %+v, want from %q", n, tc.from)
			}
			if cs != nil {
				gets := 0
				for _, a := range cs.Actions() {
					if a.GetVerb() != "get" || a.GetResource().Resource != "pods" {
						t.Errorf("API request %s %s: only one GET of the pod is allowed", a.GetVerb(), a.GetResource().Resource)
					}
					gets++
				}
				if gets != 1 {
					t.Errorf("%d GETs of the pod, want 1", gets)
				}
			}

			// The create steps' details, and no Secret value anywhere.
			var b strings.Builder
			pr := report.New(&b, report.JSON)
			var sb report.StepBuilder
			for _, s := range emitted {
				pr.Step(sb.Step(steps.Event{Kind: steps.StepDone, Step: s}))
			}
			var tb strings.Builder
			tp := report.New(&tb, report.Text)
			for _, s := range emitted {
				tp.Step(sb.Step(steps.Event{Kind: steps.StepDone, Step: s}))
			}
			if tc.vsSent != "" && !strings.Contains(tb.String(), "spec vs sent: "+tc.vsSent) {
				t.Errorf("the text output has no spec vs sent line for create/app:\n%s", tb.String())
			}
			if tc.noteErr == "" && strings.Contains(b.String()+tb.String(), secretValue) {
				t.Errorf("the Secret-sourced env value (DB_PASSWORD, a secretKeyRef in the spec) shows in the JSON steps")
			}
			for _, s := range emitted {
				if s.Kind != steps.KindCreate {
					continue
				}
				det := map[string]string{}
				for _, d := range s.Result.Details {
					det[d.Key] = d.Value
				}
				if tc.noteErr != "" {
					if !strings.Contains(det["spec"], "init containers inferred") {
						t.Errorf("%s: spec detail %q, want why there is none", s.Name, det["spec"])
					}
					continue
				}
				if !strings.Contains(det["spec"], tc.from) {
					t.Errorf("%s: spec detail %q, want %q", s.Name, det["spec"], tc.from)
				}
				if s.Container == "proxy" && (!strings.Contains(det["init"], "spec.initContainers[2], a sidecar") || !strings.Contains(det["spec vs sent"], "restartPolicy: Always")) {
					t.Errorf("create/proxy details %v: want the sidecar said", det)
				}
				if s.Container == "app" && tc.vsSent != "" && det["spec vs sent"] != tc.vsSent {
					t.Errorf("create/app spec vs sent\n got %q\nwant %q", det["spec vs sent"], tc.vsSent)
				}
				if s.Container == "logger" && det["spec vs sent"] != "as the spec (image, command, args, workingDir, env names, mounts, ports)" {
					t.Errorf("create/logger spec vs sent %q", det["spec vs sent"])
				}
			}
		})
	}
}

// TestFileSpecs: a static pod's name is NAME-NODE; the longest manifest
// name that matches wins; a bad --manifest is refused before anything
// listens.
func TestFileSpecs(t *testing.T) {
	dir := t.TempDir()
	write := func(file, data string) {
		if err := os.WriteFile(filepath.Join(dir, file), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("web.yaml", specPodYAML)
	write("web-api.yaml", strings.Replace(specPodYAML, "name: web\n", "name: web-api\n", 1))
	f := FileSpecs{Path: dir}
	for _, tc := range []struct{ ns, name, want string }{
		{"default", "web-node1", "web.yaml"},
		{"default", "web-api-node1", "web-api.yaml"},
		{"default", "web", "web.yaml"},
		{"kube-system", "web-node1", ""},
		{"default", "webby-node1", ""},
	} {
		_, from, err := f.Spec(context.Background(), tc.ns, tc.name, "")
		switch {
		case tc.want == "" && err == nil:
			t.Errorf("%s/%s: found %s, want none", tc.ns, tc.name, from)
		case tc.want != "" && (err != nil || !strings.HasSuffix(from, tc.want)):
			t.Errorf("%s/%s: from %q (%v), want %s", tc.ns, tc.name, from, err, tc.want)
		}
	}
	if err := CheckFileSpecs(dir); err != nil {
		t.Errorf("CheckFileSpecs(%s): %v", dir, err)
	}
	if err := CheckFileSpecs(filepath.Join(dir, "missing.yaml")); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("a missing --manifest: %v", err)
	}
	write("bad.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: bad}\nspec: {containers: [{name: x}]}\n")
	if err := CheckFileSpecs(dir); err == nil || !strings.Contains(err.Error(), "bad.yaml") {
		t.Errorf("an invalid manifest in --manifest's dir: %v", err)
	}
}

// laterSpecs has no spec at its first read (a restarted kubelet's static
// pod whose manifest it has not read back yet), then its source's.
type laterSpecs struct {
	SpecSource
	mu    sync.Mutex
	reads int
}

func (s *laterSpecs) Spec(ctx context.Context, ns, name, uid string) (*corev1.Pod, string, error) {
	s.mu.Lock()
	s.reads++
	first := s.reads == 1
	s.mu.Unlock()
	if first {
		return nil, "", &cluster.NotFoundError{Server: "test", What: "pod " + name}
	}
	return s.SpecSource.Spec(ctx, ns, name, uid)
}

// TestSpecRetriedAtRunPodSandbox: a pod whose spec was not found when it
// was first seen is looked up again when the kubelet makes its sandbox
// (issue 33 #15: the proxy kept "no spec" for good and staged the
// re-created pod's init containers as containers).
func TestSpecRetriedAtRunPodSandbox(t *testing.T) {
	const sandboxName, uid = "web-node1", "uid-web"
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "web.yaml"), []byte(specPodYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	src := &laterSpecs{SpecSource: FileSpecs{Path: dir}}
	var mu sync.Mutex
	var notes []SpecNote
	r := newRig(t, Options{Specs: src, OnSpec: func(_ *Pod, n SpecNote) { mu.Lock(); notes = append(notes, n); mu.Unlock() }})
	ctx := context.Background()
	cfg := sandboxConfig(sandboxName, uid)
	k := newKubelet(t, r.client, cfg)
	k.sandbox(ctx) // the first sighting: no spec yet
	r.settle()
	cfg.Metadata.Attempt = 1
	k.sandbox(ctx) // the kubelet makes the pod's sandbox again: read again
	k.container(ctx, "init-a", nil, "true")
	r.settle()

	mu.Lock()
	defer mu.Unlock()
	if len(notes) != 2 || notes[0].Err == nil || notes[1].Err != nil || !strings.Contains(notes[1].From, "web.yaml") {
		t.Fatalf("spec notes %+v, want no spec, then the manifest's", notes)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	found := false
	for _, ev := range r.events {
		if ev.Kind == steps.StepDone && ev.Step.Container == "init-a" && ev.Step.Kind != steps.KindRelist {
			found = true
			if ev.Step.Stage != steps.StageInit {
				t.Errorf("step %s emitted in stage %s, want init (the spec read at the second RunPodSandbox)", ev.Step.Name, ev.Step.Stage)
			}
		}
	}
	if !found {
		t.Fatal("no step of init-a")
	}
}
