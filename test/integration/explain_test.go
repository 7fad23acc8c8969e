//go:build integration

package integration

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// explainCase is one known failure (internal/explain's table) made for
// real: the pod, and the entry its failing steps must name.
type explainCase struct {
	// name is the entry's Reproduced name (internal/explain checks that
	// every entry has a case here).
	name string
	// manifest is the pod (and its objects); REG is replaced by the
	// harness registry's host:port, SECRET by a pull secret for it.
	manifest string
	// password is the pull secret's password ("": the registry's own).
	password string
	// want is the entry the failed steps name, and the summary's; on
	// containerd 1.6 want16 when it differs.
	want, want16 string
	// raced, when set, is the entry wanted instead when the runtime
	// answered the exit as code 137 (Error): the OOM kill whose exit
	// containerd handled before its OOM event.
	raced string
	// extra flags.
	extra []string
	// proxy, when set, is the entry the proxy's failed step names when the
	// run is made again through `podstep proxy` in front of the runtime
	// (the run's calls as a kubelet's).
	proxy string
	// image, when set, makes the image the pod names (IMAGE in manifest).
	image func(t *testing.T) string
	// sick, when set, runs the pod on a sick node of its own
	// (sick_test.go): a copy of the harness's containerd with a broken
	// network.
	sick *sickCase
}

// sickCase is the sick node a case runs on.
type sickCase struct {
	// plugins are CNI plugins (name → script) beside the harness's.
	plugins map[string]string
	// network and conflist are its only CNI config ("": none).
	network, conflist string
	// disk, when set, is the size of a tmpfs the node keeps all its state
	// on (its images, the containers' writable layers): a small disk. Its
	// network is then its own bridge (the harness's, copied) and busybox
	// is copied in.
	disk string
	// prepare runs before podstep; after runs after it (with the failed
	// step's message).
	prepare func(t *testing.T, n *sickNode)
	after   func(t *testing.T, n *sickNode)
}

const busybox = "docker.io/library/busybox:1.35"

// TestExplainReal makes every failure of podstep's explanation table on
// the harness's containerd (1.6 and 2.4, one suite run each) and checks
// the entry shown: in the failed steps' and the summary's JSON
// "explanation", and as the text output's why: line.
func TestExplainReal(t *testing.T) {
	e, reg := setupRegistry(t)
	arm64 := base64.StdEncoding.EncodeToString(arm64ELF())
	pod := func(name, spec string) string {
		return "apiVersion: v1\nkind: Pod\nmetadata: {name: " + name + "}\nspec:\n" + spec
	}
	cases := []explainCase{
		{name: "image-not-found", manifest: "SECRET" + pod("nf", "  imagePullSecrets: [{name: reg}]\n  containers: [{name: app, image: REG/podstep/no-such-image:1.0}]\n"),
			want: "image-not-found"},
		{name: "image-unauthorized", manifest: "SECRET" + pod("unauth", "  imagePullSecrets: [{name: reg}]\n  containers: [{name: app, image: IMAGE, imagePullPolicy: Always}]\n"),
			password: "Wrong-Password-1", want: "image-unauthorized"},
		// containerd 1.6 answers a pull without credentials with the same
		// 401 as a wrong password.
		{name: "image-pull-access-denied", manifest: pod("denied", "  containers: [{name: app, image: IMAGE, imagePullPolicy: Always}]\n"),
			want: "image-pull-access-denied", want16: "image-unauthorized"},
		{name: "image-never-pull", manifest: pod("never", "  containers: [{name: app, image: docker.io/library/absent-image:1.0, imagePullPolicy: Never}]\n"),
			want: "image-never-pull"},
		{name: "executable-not-found", manifest: pod("noexec", "  containers: [{name: app, image: "+busybox+", imagePullPolicy: IfNotPresent, command: [\"/no/such/binary\"]}]\n"),
			want: "executable-not-found"},
		{name: "executable-not-found-in-path", manifest: pod("notinpath", "  containers: [{name: app, image: "+busybox+", imagePullPolicy: IfNotPresent, command: [nosuchcommand]}]\n"),
			want: "executable-not-found"},
		// An ELF header for arm64 (e_machine 183) in a ConfigMap mounted
		// executable: runc starts the container, its exec fails, and the
		// log's last line says so.
		{name: "exec-format-error", manifest: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bad}\nbinaryData: {arm64: " + arm64 + "}\n---\n" +
			pod("execformat", "  volumes: [{name: cm, configMap: {name: bad, defaultMode: 0755}}]\n  containers: [{name: app, image: "+busybox+", imagePullPolicy: IfNotPresent, command: [/cm/arm64], volumeMounts: [{name: cm, mountPath: /cm}]}]\n"),
			want: "exec-format-error", extra: []string{"--max-restarts", "0", "--settle", "10s"}}, // runc's exec fails within a second; later on a loaded machine
		// containerd may handle the exit before the OOM event and answer
		// Error (containerd issue 8180): seen on 1.6 under load. Then the
		// run must say "killed", whose first cause is that race.
		{name: "oom-killed", manifest: pod("oom", "  restartPolicy: Never\n  containers: [{name: app, image: "+busybox+", imagePullPolicy: IfNotPresent, command: [sh, -c, 'a=xxxxxxxxxxxxxxxx; while :; do a=$a$a; done'], resources: {limits: {memory: 16Mi}}}]\n"),
			want: "oom-killed", raced: "killed", extra: []string{"--settle", "20s"}}, // 16Mi in about a second; several seconds on a loaded machine
		// A real SIGKILL: with a shared process namespace the shell is not
		// the namespace's init (pause is), so its kill -9 of itself lands ($$$$: the kubelet's expansion makes $$ of it).
		{name: "killed", manifest: pod("killed", "  restartPolicy: Never\n  shareProcessNamespace: true\n  containers: [{name: app, image: "+busybox+", imagePullPolicy: IfNotPresent, command: [sh, -c, 'kill -9 $$$$']}]\n"),
			want: "killed", extra: []string{"--settle", "10s"}},
		{name: "run-as-non-root", manifest: pod("nonroot", "  securityContext: {runAsNonRoot: true}\n  containers: [{name: app, image: "+busybox+", imagePullPolicy: IfNotPresent, command: [sleep, '1']}]\n"),
			want: "run-as-non-root"},
		{name: "config-object-missing", manifest: pod("cmmissing", "  containers: [{name: app, image: "+busybox+", imagePullPolicy: IfNotPresent, command: [sleep, '1'], env: [{name: X, valueFrom: {configMapKeyRef: {name: absent, key: k}}}]}]\n"),
			want: "config-object-missing"},
		{name: "config-object-missing-volume", manifest: pod("secretvol", "  volumes: [{name: creds, secret: {secretName: absent}}]\n  containers: [{name: app, image: "+busybox+", imagePullPolicy: IfNotPresent, command: [sleep, '1'], volumeMounts: [{name: creds, mountPath: /creds}]}]\n"),
			want: "config-object-missing"},
		// The crash loop of a failing hook is explained by the hook.
		{name: "poststart-hook-failed", manifest: pod("hookfail", "  containers: [{name: app, image: "+busybox+", imagePullPolicy: IfNotPresent, command: [sleep, '30'], lifecycle: {postStart: {exec: {command: [sh, -c, 'echo no config; exit 3']}}}}]\n"),
			want: "poststart-hook-failed", extra: []string{"--max-restarts", "0"}},
		{name: "container-exited-error", manifest: pod("crash", "  restartPolicy: Never\n  containers: [{name: app, image: "+busybox+", imagePullPolicy: IfNotPresent, command: [sh, -c, 'echo bad config >&2; exit 3']}]\n"),
			want: "container-exited-error", extra: []string{"--settle", "10s"}},
		// A container that completes under restartPolicy Always loops with
		// no error of its own: the back-off is the explanation.
		{name: "crash-loop-back-off", manifest: pod("completes", "  containers: [{name: app, image: "+busybox+", imagePullPolicy: IfNotPresent, command: [sh, -c, 'echo done']}]\n"),
			want: "crash-loop-back-off", extra: []string{"--max-restarts", "0", "--settle", "10s"}},
		// An image index with only another architecture's image.
		{name: "image-platform-mismatch", manifest: pod("foreign", "  containers: [{name: app, image: IMAGE, imagePullPolicy: Always}]\n"),
			image: foreignImage, proxy: "image-platform-mismatch", want: "image-platform-mismatch"},
		// A TLS registry whose CA the node does not trust.
		{name: "image-x509-untrusted", manifest: pod("untrusted", "  containers: [{name: app, image: IMAGE, imagePullPolicy: Always}]\n"),
			image: untrustedRegistry, proxy: "image-x509-untrusted", want: "image-x509-untrusted"},
		// A node whose disk is full: the container's writable layer is on a
		// 64 MiB tmpfs with containerd's state, and the container writes
		// until the kernel says ENOSPC. The proxy reads the same last log
		// line as the run (the log's end, from the pod's log directory).
		{name: "no-space-left", manifest: pod("full", "  restartPolicy: Never\n  containers: [{name: app, image: "+busybox+", imagePullPolicy: IfNotPresent, command: [sh, -c, 'dd if=/dev/zero of=/fill bs=1M']}]\n"),
			proxy: "no-space-left", want: "no-space-left", extra: []string{"--settle", "20s"}, sick: &sickCase{disk: "64m"}},
		// The same full disk at a pull: the layers do not fit.
		// (An image of its own, with 1 MiB left on the disk: the harness's
		// private busybox shares its layer with the pause image the node
		// has when both were built in the same second, and its pull then
		// fitted.)
		{name: "no-space-left-pull", manifest: pod("fullpull", "  containers: [{name: app, image: IMAGE, imagePullPolicy: Always}]\n"),
			image: bigImage, want: "no-space-left", sick: &sickCase{disk: "16m", prepare: leaveFree(1 << 20)}},
		// A sick node's network (sick_test.go), each its own copy of the
		// harness's containerd. No CNI config: containerd says
		// NetworkReady=false and the kubelet sends no RunPodSandbox; one sent
		// anyway (the config removed after the kubelet's last Status) fails
		// with the runtime's own words, which the entry matches too.
		{name: "cni-not-initialized", manifest: pod("nonet", "  containers: [{name: app, image: "+busybox+", imagePullPolicy: IfNotPresent, command: [sleep, '1']}]\n"),
			want: "cni-not-initialized", sick: &sickCase{after: runSandboxMatches("cni-not-initialized")}},
		{name: "cni-plugin-failed", manifest: pod("cnifail", "  containers: [{name: app, image: "+busybox+", imagePullPolicy: IfNotPresent, command: [sleep, '1']}]\n"),
			proxy: "cni-plugin-failed", want: "cni-plugin-failed", sick: &sickCase{plugins: map[string]string{"podstep-fail": failingPlugin},
				network: "sick-fail", conflist: sickConflist("sick-fail", "podstep-fail")}},
		// A /30: host-local's one address (.1 is the gateway) is held by a
		// file of a sandbox long gone.
		{name: "cni-ip-exhausted", manifest: pod("noip", "  containers: [{name: app, image: "+busybox+", imagePullPolicy: IfNotPresent, command: [sleep, '1']}]\n"),
			proxy: "cni-ip-exhausted", want: "cni-ip-exhausted", sick: &sickCase{network: "sick-ipam", conflist: exhaustedConflist, prepare: leakAddresses}},
		// A CNI ADD that hangs: the run's deadline for RunPodSandbox passes
		// (twice --timeout: 6 s, as the kubelet's is twice its
		// runtimeRequestTimeout, 4 min). The run again through the proxy is
		// the kubelet's retry while the first call still hangs: name is
		// reserved.
		{name: "sandbox-create-timeout", manifest: pod("hang", "  containers: [{name: app, image: "+busybox+", imagePullPolicy: IfNotPresent, command: [sleep, '1']}]\n"),
			proxy: "sandbox-name-reserved", want: "sandbox-create-timeout", extra: []string{"--timeout", "3s"}, sick: &sickCase{plugins: map[string]string{"podstep-hang": hangingPlugin},
				network: "sick-hang", conflist: sickConflist("sick-hang", "podstep-hang")}},
		// The kubelet's first RunPodSandbox gave up on the hung CNI ADD (the
		// runtime did not): its retry, the same name, is refused.
		{name: "sandbox-name-reserved", manifest: "apiVersion: v1\nkind: Pod\nmetadata: {name: reserved, uid: " + reservedUID + "}\nspec:\n  containers: [{name: app, image: " + busybox + ", imagePullPolicy: IfNotPresent, command: [sleep, '1']}]\n",
			proxy: "sandbox-name-reserved", want: "sandbox-name-reserved", sick: &sickCase{plugins: map[string]string{"podstep-hang": hangingPlugin},
				network: "sick-hang", conflist: sickConflist("sick-hang", "podstep-hang"), prepare: firstCallGivesUp("reserved", reservedUID)}},
	}
	t.Run("cases", func(t *testing.T) { explainCases(t, e, reg, cases) })
	// The cases ran at once: nothing of any is left in the runtime (what
	// another test left is that test's to report, but is named here).
	ours := map[string]bool{}
	for _, c := range cases {
		for _, m := range podName.FindAllStringSubmatch(c.manifest, -1) {
			ours[m[1]] = true
		}
	}
	c := dialCRI(t, e.endpoint)
	for _, sb := range c.managedSandboxes(t) {
		name := sb.GetMetadata().GetName()
		what := fmt.Sprintf("sandbox %s of pod %s/%s (%s, created %s)", sb.GetId(), sb.GetMetadata().GetNamespace(), name,
			sb.GetState(), time.Unix(0, sb.GetCreatedAt()).UTC().Format(time.RFC3339Nano))
		if ours[name] {
			t.Errorf("left by a case: %s", what)
		} else {
			t.Logf("left by another test: %s", what)
		}
	}
	for _, ct := range c.managedContainers(t) {
		name := ct.GetLabels()["io.kubernetes.pod.name"]
		what := fmt.Sprintf("container %s %s of pod %s (%s)", ct.GetId(), ct.GetMetadata().GetName(), name, ct.GetState())
		if ours[name] {
			t.Errorf("left by a case: %s", what)
		} else {
			t.Logf("left by another test: %s", what)
		}
	}
}

// podName finds the names in a case's manifest (its objects' and its
// pod's).
var podName = regexp.MustCompile(`metadata: \{name: ([a-z0-9-]+)`)

func explainCases(t *testing.T, e *env, reg registry, cases []explainCase) {
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// Each case is its own pod: they run at once.
			t.Parallel()
			want := c.want
			if e.rt.major == 1 && c.want16 != "" {
				want = c.want16
			}
			password := reg.password
			if c.password != "" {
				password = c.password
			}
			secret := fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata: {name: reg}\ntype: kubernetes.io/dockerconfigjson\ndata:\n  .dockerconfigjson: %s\n---\n",
				base64.StdEncoding.EncodeToString(fmt.Appendf(nil, `{"auths":{%q:{"auth":%q}}}`, reg.addr,
					base64.StdEncoding.EncodeToString([]byte(reg.user+":"+password)))))
			image := reg.image
			if c.image != nil {
				image = c.image(t)
			}
			m := strings.NewReplacer("SECRET", secret, "IMAGE", image, "REG", reg.addr).Replace(c.manifest)
			file := filepath.Join(t.TempDir(), c.name+".yaml")
			if err := os.WriteFile(file, []byte(m), 0o600); err != nil {
				t.Fatal(err)
			}
			d := newDirs(t)
			re := e
			var sick *sickNode
			if c.sick != nil {
				if c.sick.disk != "" {
					var images []string
					if strings.Contains(c.manifest, busybox) {
						images = append(images, busybox)
					}
					sick = startSick(t, e, smallDisk(t, c.sick.disk), c.sick.plugins, images...)
				} else {
					sick = startSick(t, e, "", c.sick.plugins)
					sick.setNetwork(t, c.sick.network, c.sick.conflist)
				}
				if c.sick.prepare != nil {
					c.sick.prepare(t, sick)
				}
				re = sick.env
			}
			start := time.Now()
			r := re.run(t, d, file, c.extra...)
			t.Logf("the run took %s", time.Since(start).Round(time.Millisecond))
			if sick != nil && c.sick.after != nil {
				c.sick.after(t, sick)
			}
			if r.code != 1 || r.summary.Failure == nil {
				t.Fatalf("want exit 1 with a failure\n%s", r)
			}
			if c.raced != "" && strings.Contains(r.summary.Failure.Message, "exited with code 137 (Error)") {
				t.Logf("the runtime answered the OOM kill as Error (its exit handled before its OOM event): want %s", c.raced)
				want = c.raced
			}
			if x := r.summary.Failure.Explanation; x == nil || x.ID != want {
				t.Errorf("summary.failure.explanation = %+v, want id %s\n%s", x, want, r)
			} else if x.Title == "" || len(x.Causes) == 0 || x.Next == "" || len(x.Confirm) == 0 || x.Fix == "" {
				t.Errorf("summary.failure.explanation %s is not whole: %+v", want, x)
			}
			failed := 0
			for _, s := range r.steps {
				if s.State != "failed" || s.Stage == "teardown" {
					continue
				}
				failed++
				if s.Explanation == nil || s.Explanation.ID != want {
					t.Errorf("step %s (%s: %s): explanation %+v, want %s", s.Name, s.Reason, s.Message, s.Explanation, want)
				}
				t.Logf("step %s failed: %s: %s", s.Name, s.Reason, s.Message)
			}
			if failed == 0 {
				t.Errorf("no failed step\n%s", r)
			}
			if r.summary.Failure.Explanation == nil {
				return
			}
			// The commands name this pod's objects.
			confirm := strings.Join(r.summary.Failure.Explanation.Confirm, "\n")
			if strings.Contains(confirm, "{POD}") || strings.Contains(confirm, "{IMAGE}") || strings.Contains(confirm, "{CONTAINER_ID}") {
				t.Errorf("placeholders left in the commands:\n%s", confirm)
			}
			assertGone(t, "pod dir", d.podDir(r.summary.UID))
			assertGone(t, "pod log dir", d.podLogDir("default", r.summary.Pod[strings.IndexByte(r.summary.Pod, '/')+1:], r.summary.UID))

			if c.proxy != "" {
				proxyExplains(t, re, file, c.proxy, c.extra)
			}
			// podstep explain ID prints the entry whole.
			if x := e.podstep(t, "explain", want); x.code != 0 || !strings.HasPrefix(x.stdout, want+": ") || !strings.Contains(x.stdout, "fix: ") {
				t.Errorf("podstep explain %s:\n%s", want, x)
			}
			// Text: the why: line under the error, whole once (one case: the
			// printer is the same for all).
			if i != 0 && c.name != "cni-plugin-failed" {
				return
			}
			d2 := newDirs(t)
			txt := e.podstep(t, append([]string{"run", "--auto", "-f", file, "-r", re.endpoint, "--grace-period", "0",
				"--root-dir", d2.root, "--log-dir", d2.logs}, c.extra...)...)
			if txt.code != 1 || !strings.Contains(txt.stdout, "(podstep explain "+want+")") || !strings.Contains(txt.stdout, "fix: ") {
				t.Errorf("text output lacks the explanation %s\n%s", want, txt)
			}
		})
	}
}

// arm64ELF is an ELF header for an arm64 executable (e_machine 183), a
// program header and 8 bytes: a kernel of another architecture refuses to
// exec it (ENOEXEC, "exec format error").
func arm64ELF() []byte {
	b := []byte{0x7f, 'E', 'L', 'F', 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	le16 := func(v uint16) { b = append(b, byte(v), byte(v>>8)) }
	le32 := func(v uint32) { le16(uint16(v)); le16(uint16(v >> 16)) }
	le64 := func(v uint64) { le32(uint32(v)); le32(uint32(v >> 32)) }
	le16(2)        // e_type: executable
	le16(183)      // e_machine: AArch64
	le32(1)        // e_version
	le64(0x400078) // e_entry
	le64(64)       // e_phoff
	le64(0)        // e_shoff
	le32(0)        // e_flags
	le16(64)       // e_ehsize
	le16(56)       // e_phentsize
	le16(1)        // e_phnum
	le16(0)        // e_shentsize
	le16(0)        // e_shnum
	le16(0)        // e_shstrndx
	le32(1)        // p_type: PT_LOAD
	le32(5)        // p_flags: R+X
	le64(0)        // p_offset
	le64(0x400000) // p_vaddr
	le64(0x400000) // p_paddr
	le64(0x80)     // p_filesz
	le64(0x80)     // p_memsz
	le64(0x1000)   // p_align
	return append(b, make([]byte, 8)...)
}

// proxyExplains runs the pod again, through `podstep proxy` in front of
// e's runtime (the run's calls are what a kubelet's would be), and wants
// the proxy's failed step to name the entry want.
func proxyExplains(t *testing.T, e *env, file, want string, extra []string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "pxe")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	p := e.startProxy(t, filepath.Join(dir, "p.sock"))
	d := newDirs(t)
	r := e.podstep(t, append([]string{"run", "--auto", "-o", "json", "-f", file, "-r", "unix://" + filepath.Join(dir, "p.sock"),
		"--grace-period", "0", "--root-dir", d.root, "--log-dir", d.logs}, extra...)...)
	if r.code != 1 {
		t.Errorf("the run through the proxy: exit %d, want 1\n%s", r.code, r)
	}
	if out, missing := p.waitOutput(30*time.Second, `"explanation":{"id":"`+want+`"`); len(missing) > 0 {
		t.Errorf("the proxy's output names no %s:\n%s", want, out)
	}
}
