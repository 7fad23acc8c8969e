package fleet

import (
	"github.com/podstep/podstep/internal/session"

	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/podstep/podstep/internal/cluster"
	"github.com/podstep/podstep/internal/diff"
	"github.com/podstep/podstep/internal/manifest"
)

// A configz answer as a v1.37 kubelet gives it (trimmed).
const configz = `{"kubeletconfig":{"enableServer":true,"staticPodPath":"","podLogsDir":"/var/lib/c/pod-logs",
"containerRuntimeEndpoint":"unix:///var/lib/podstep-harness2/run/containerd.sock","imageServiceEndpoint":"",
"cgroupDriver":"systemd","clusterDNS":["10.96.0.10"],"clusterDomain":"cluster.local","maxPods":50,
"featureGates":{"ProcMountType":true,"ContainerRestartRules":false,"SomeGateUnknownToPodstep":true},"cgroupsPerQOS":true,"cgroupRoot":"/c-n2"}}`

func testRunner(t *testing.T, node string) *Runner {
	t.Helper()
	cfg, err := cluster.ParseConfigz([]byte(configz))
	if err != nil {
		t.Fatal(err)
	}
	b, err := manifest.Load("../../testdata/pods/hello.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return &Runner{Fleet: "0a1b2c3d", Parent: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "podstep-fleet-0a1b2c3d", UID: "p-uid"}},
		Namespace: "podstep-fleet", Node: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}, Config: cfg, Pod: b.Pod,
		Image: "localhost/podstep:bin-1", ServiceAccount: DefaultServiceAccount, HostDir: DefaultHostDir}
}

func TestRunnerPod(t *testing.T) {
	r := testRunner(t, "podstep-node-2")
	cm, err := r.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	p := r.RunnerPod(cm)
	s := p.Spec
	for _, tc := range []struct {
		what string
		ok   bool
	}{
		{"pinned with spec.nodeName", s.NodeName == "podstep-node-2"},
		{"tolerates every taint", len(s.Tolerations) == 1 && s.Tolerations[0].Operator == corev1.TolerationOpExists && s.Tolerations[0].Key == ""},
		{"privileged", *s.Containers[0].SecurityContext.Privileged},
		{"host namespaces as kubectl debug node", s.HostNetwork && s.HostPID && s.HostIPC},
		{"never restarted", s.RestartPolicy == corev1.RestartPolicyNever},
		{"its service account", s.ServiceAccountName == DefaultServiceAccount},
		{"owned by the parent", len(p.OwnerReferences) == 1 && p.OwnerReferences[0].UID == "p-uid" && len(cm.OwnerReferences) == 1},
		{"labelled", p.Labels[LabelFleet] == "0a1b2c3d" && p.Labels[LabelRole] == RoleRunner && cm.Labels[LabelFleet] == "0a1b2c3d"},
		{"names its node", p.Annotations[AnnotationNode] == "podstep-node-2"},
	} {
		if !tc.ok {
			t.Errorf("runner pod: not %s", tc.what)
		}
	}
	mounts := map[string]corev1.VolumeMount{}
	for _, m := range s.Containers[0].VolumeMounts {
		mounts[m.MountPath] = m
	}
	hostPaths := map[string]string{}
	for _, v := range s.Volumes {
		if v.HostPath != nil {
			hostPaths[v.Name] = v.HostPath.Path
		}
	}
	// the host dir, not the node's dirs: those the runner makes and removes
	for _, want := range []string{"/var/lib/podstep-fleet"} {
		m, ok := mounts[want]
		if !ok || m.MountPropagation == nil || *m.MountPropagation != corev1.MountPropagationBidirectional || hostPaths[m.Name] != want {
			t.Errorf("%s: not a Bidirectional hostPath at the same path: %+v", want, m)
		}
	}
	sock := "/var/lib/podstep-harness2/run/containerd.sock"
	if m, ok := mounts[sock]; !ok || hostPaths[m.Name] != sock {
		t.Errorf("the runtime socket %s is not mounted: %v", sock, mounts)
	}
	args := strings.Join(s.Containers[0].Args, " ")
	for _, want := range []string{"run --auto -o json", "-r unix://" + sock, "--cgroup-driver systemd", "--cluster-dns 10.96.0.10",
		"--max-pods 50", "--feature-gates ContainerRestartRules=false,ProcMountType=true", "--root-dir /var/lib/podstep-fleet/podstep-node-2/root",
		"--node /etc/podstep-fleet/node.yaml", "--fleet-host-dir /var/lib/podstep-fleet"} {
		if !strings.Contains(args, want) {
			t.Errorf("args %q lack %q", args, want)
		}
	}
	// the node's cgroup root and per-QOS cgroups, on the kubelet's runtime;
	// beside a replay runtime the cgroup root only (the kubelet would kill an
	// unknown pod cgroup in its kubepods tree)
	if !strings.Contains(args, "--cgroup-root /c-n2") || !strings.Contains(args, "--cgroups-per-qos") {
		t.Errorf("args %q: want the node's --cgroup-root /c-n2 and --cgroups-per-qos", args)
	}
	r.ReplayEndpoint = "unix:///var/lib/replay/containerd.sock"
	if replay := strings.Join(r.Args(), " "); !strings.Contains(replay, "--cgroup-root /c-n2") || strings.Contains(replay, "--cgroups-per-qos") {
		t.Errorf("args on a replay runtime %q: want --cgroup-root, not --cgroups-per-qos", replay)
	}
	if strings.Contains(args, "SomeGateUnknownToPodstep") {
		t.Errorf("args %q pass a gate podstep does not know (run would refuse it)", args)
	}
}

// The runner reads the pod's Secrets from the API server itself
// (--in-cluster, its service account's token mounted), at --runner-server
// when given; the manifest ConfigMap names the Secret and holds no value.
func TestRunnerReadsSecretsInCluster(t *testing.T) {
	r := testRunner(t, "podstep-node-2")
	r.Pod.Spec.Containers[0].Env = append(r.Pod.Spec.Containers[0].Env, corev1.EnvVar{Name: "PASSWORD", ValueFrom: &corev1.EnvVarSource{
		SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "db"}, Key: "password"}}})
	r.APIServer = "https://127.0.0.1:17030"
	cm, err := r.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	p := r.RunnerPod(cm)
	c := p.Spec.Containers[0]
	if !slices.Contains(c.Args, "--in-cluster") {
		t.Errorf("args %q: no --in-cluster", c.Args)
	}
	if a := p.Spec.AutomountServiceAccountToken; a == nil || !*a {
		t.Error("the runner's service account token is not mounted")
	}
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	if env["KUBERNETES_SERVICE_HOST"] != "127.0.0.1" || env["KUBERNETES_SERVICE_PORT"] != "17030" {
		t.Errorf("env %v: want the --runner-server's host and port", env)
	}
	if !strings.Contains(cm.Data[podFile], "name: db") || strings.Contains(cm.Data[podFile], "kind: Secret") {
		t.Errorf("the manifest should reference Secret db and hold none:\n%s", cm.Data[podFile])
	}
	r.APIServer = ""
	if e := r.RunnerPod(cm).Spec.Containers[0].Env; len(e) != 0 {
		t.Errorf("env %v without --runner-server: want the kubelet's service variables", e)
	}
	for _, bad := range []string{"http://127.0.0.1:1", "127.0.0.1:6443", "https://h/api", "https://u:p@h"} {
		if CheckAPIServer(bad) == nil {
			t.Errorf("CheckAPIServer(%q) = nil", bad)
		}
	}
}

// Two nodes of one host: every dir, the pod UID and so the sandbox name
// differ; the runner's manifest is a valid podstep manifest.
func TestRunnersDoNotCollide(t *testing.T) {
	a, b := testRunner(t, "podstep-node-16"), testRunner(t, "podstep-node-2")
	ca, _ := a.Manifest()
	cb, _ := b.Manifest()
	if ca.Name == cb.Name {
		t.Errorf("both nodes' ConfigMaps are %s", ca.Name)
	}
	var uids []string
	for _, c := range []*corev1.ConfigMap{ca, cb} {
		bundle, err := manifest.Parse("pod.yaml", []byte(c.Data[podFile]))
		if err != nil {
			t.Fatalf("the runner's manifest does not load: %v\n%s", err, c.Data[podFile])
		}
		uids = append(uids, string(bundle.Pod.UID))
		var n corev1.Node
		if err := yaml.Unmarshal([]byte(c.Data[nodeFile]), &n); err != nil || n.Name == "" {
			t.Errorf("node.yaml: %v %q", err, n.Name)
		}
		if bundle.Pod.Spec.NodeName == "" {
			t.Errorf("the runner's pod has no spec.nodeName")
		}
	}
	if uids[0] == uids[1] || uids[0] == "" {
		t.Errorf("pod UIDs %v: want one per node", uids)
	}
	da, db := a.RunnerPod(ca).Spec.Containers[0].Args, b.RunnerPod(cb).Spec.Containers[0].Args
	for _, flag := range []string{"--root-dir", "--log-dir"} {
		ia, ib := slices.Index(da, flag), slices.Index(db, flag)
		if da[ia+1] == db[ib+1] {
			t.Errorf("%s is %s on both nodes", flag, da[ia+1])
		}
	}
}

// A recording --record writes is one podstep diff reads.
func TestRecordingReadsBack(t *testing.T) {
	r := load(t, "node-e")
	dir := t.TempDir()
	file, err := writeRecording(dir, r, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: hello\n  namespace: default\nspec:\n  containers: []\n", "metadata:\n  name: node-e\n")
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(file) != "node-e.podstep.gz" {
		t.Errorf("file %s", file)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := diff.Read(file, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	for _, s := range r.Steps {
		calls += len(s.Calls)
	}
	if len(rec.Calls) != calls || len(rec.Stages) == 0 {
		t.Errorf("recording has %d calls and %d stages, the run %d calls", len(rec.Calls), len(rec.Stages), calls)
	}
}

// The replay endpoint: -r over the node's annotation over configz; the
// runner mounts that socket only, and says where it came from.
func TestRunnerReplayEndpoint(t *testing.T) {
	const replay = "unix:///var/lib/replay/containerd.sock"
	for _, tc := range []struct {
		name, annotation, flag string
		imageEndpoint          string
		want, from, err        string
	}{
		{name: "configz", want: "unix:///var/lib/podstep-harness2/run/containerd.sock", from: FromConfigz},
		{name: "configz with its image endpoint", imageEndpoint: "unix:///run/img.sock", want: "unix:///var/lib/podstep-harness2/run/containerd.sock", from: FromConfigz},
		{name: "annotation over configz (its image endpoint too)", annotation: replay, imageEndpoint: "unix:///run/img.sock", want: replay, from: FromAnnotation},
		{name: "flag over annotation", annotation: replay, flag: "unix:///run/flag.sock", want: "unix:///run/flag.sock", from: FromFlag},
		{name: "tcp annotation", annotation: "tcp://10.0.0.1:1234", err: `annotation podstep.dev/replay-endpoint="tcp://10.0.0.1:1234": expected unix:///ABSOLUTE/PATH`},
		{name: "relative annotation", annotation: "unix://run/x.sock", err: "expected unix:///ABSOLUTE/PATH"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := testRunner(t, "n1")
			r.Endpoint = tc.flag
			r.Config.ImageServiceEndpoint = tc.imageEndpoint
			if tc.annotation != "" {
				r.Node.Annotations = map[string]string{AnnotationReplayEndpoint: tc.annotation}
			}
			ep, err := ReplayEndpoint(r.Node)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			r.ReplayEndpoint = ep
			got, from := r.endpoint()
			if got != tc.want || from != tc.from {
				t.Errorf("endpoint %s (%s), want %s (%s)", got, from, tc.want, tc.from)
			}
			args := strings.Join(r.Args(), " ")
			if !strings.Contains(args, "-r "+tc.want) {
				t.Errorf("args %s lack -r %s", args, tc.want)
			}
			wantImage := tc.imageEndpoint != "" && from == FromConfigz
			if strings.Contains(args, "--image-endpoint") != wantImage {
				t.Errorf("args %s: --image-endpoint expected %v", args, wantImage)
			}
			var socks []string
			for _, v := range r.RunnerPod(&corev1.ConfigMap{}).Spec.Volumes {
				if v.HostPath != nil && *v.HostPath.Type == corev1.HostPathSocket {
					socks = append(socks, "unix://"+v.HostPath.Path)
				}
			}
			if len(socks) == 0 || socks[0] != tc.want || len(socks) != 1+btoi(wantImage) {
				t.Errorf("sockets mounted %v, want %s first", socks, tc.want)
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// The runner's --shadow: the fleet's on the kubelet's runtime (configz,
// default); never on -r's or the annotation's runtime, unless always.
func TestRunnerShadowMode(t *testing.T) {
	for _, tc := range []struct {
		name, fleet, annotation, flag, noConfigz string
		want                                     string
	}{
		{name: "configz, auto by default", want: session.ShadowAuto},
		{name: "configz, never", fleet: session.ShadowNever, want: session.ShadowNever},
		{name: "configz, always", fleet: session.ShadowAlways, want: session.ShadowAlways},
		{name: "default endpoint, auto", noConfigz: "y", fleet: session.ShadowAuto, want: session.ShadowAuto},
		{name: "annotation wins over auto", annotation: "unix:///var/lib/replay/containerd.sock", want: session.ShadowNever},
		{name: "flag wins over auto", flag: "unix:///run/flag.sock", fleet: session.ShadowAuto, want: session.ShadowNever},
		{name: "always shadows the annotation's runtime too", annotation: "unix:///var/lib/replay/containerd.sock", fleet: session.ShadowAlways, want: session.ShadowAlways},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := testRunner(t, "n1")
			r.Shadow, r.Endpoint, r.ReplayEndpoint = tc.fleet, tc.flag, tc.annotation
			if tc.noConfigz != "" {
				r.Config = nil
			}
			if got := r.ShadowMode(); got != tc.want {
				t.Errorf("ShadowMode() = %q, want %q", got, tc.want)
			}
			if args := strings.Join(r.Args(), " "); !strings.Contains(args, "--shadow "+tc.want) {
				t.Errorf("args %s lack --shadow %s", args, tc.want)
			}
		})
	}
}
