//go:build integration

package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/podstep/podstep/test/internal/testenv"
)

// subPathEscapePod: the init container leaves a symlink to a host dir in
// the emptyDir; the app container mounts that symlink with subPath. Sent as
// <volume>/escape, containerd would follow the symlink on the host and give
// the container the host dir.
const subPathEscapePod = `apiVersion: v1
kind: Pod
metadata:
  name: subpath-escape-demo
spec:
  initContainers:
  - name: setup
    image: docker.io/library/busybox:1.35
    command: ["sh", "-c", "ln -s %[1]s /work/escape"]
    volumeMounts: [{name: work, mountPath: /work}]
  containers:
  - name: app
    image: docker.io/library/busybox:1.35
    command: ["sh", "-c", "echo pwned > /escape/pwned; sleep 3600"]
    volumeMounts: [{name: work, mountPath: /escape, subPath: escape}]
  volumes:
  - {name: work, emptyDir: {}}
`

// TestSubPathEscape: a subPath that is a symlink out of its volume is
// refused as the kubelet refuses it: CreateContainerConfigError at the app
// container's create step, no CreateContainer, the host dir untouched, and
// nothing left behind.
func TestSubPathEscape(t *testing.T) {
	e := setup(t)
	hostDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(hostDir, "marker"), []byte("host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "subpath-escape.yaml")
	if err := os.WriteFile(file, []byte(fmt.Sprintf(subPathEscapePod, hostDir)), 0o644); err != nil {
		t.Fatal(err)
	}
	d := newDirs(t)
	r := e.run(t, d, file)

	const msg = `failed to prepare subPath for volumeMount "work" of container "app"`
	if r.code != 1 || r.summary.Failure == nil {
		t.Errorf("exit %d, failure %+v; want exit 1 with a failure", r.code, r.summary.Failure)
	} else if f := *r.summary.Failure; f.Stage != "containers" || f.Step != "create/app" || f.Reason != "CreateContainerConfigError" || f.Message != msg {
		t.Errorf("failure %+v, want containers/create/app CreateContainerConfigError %q", f, msg)
	}
	if r.summary.Display != "CreateContainerConfigError" {
		t.Errorf("STATUS %q, want CreateContainerConfigError", r.summary.Display)
	}
	if st := r.step("wait/setup"); st == nil || st.State != "done" {
		t.Errorf("the init container did not run to completion: %+v", st)
	}
	if st := r.step("create/app"); st == nil {
		t.Errorf("no create/app step\n%s", r)
	} else {
		if st.call("CreateContainer") != nil {
			t.Errorf("create/app sent CreateContainer for a refused subPath")
		}
		cause, _ := st.detailValue("subPath")
		if want := fmt.Sprintf(`refused: subpath %q not within volume path`, hostDir); !strings.Contains(cause, want) {
			t.Errorf("create/app subPath detail %q, want %q", cause, want)
		}
	}
	// The host dir holds only its marker: the container never got it.
	entries, err := os.ReadDir(hostDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != "marker" {
		var names []string
		for _, en := range entries {
			names = append(names, en.Name())
		}
		t.Errorf("host dir %s written to through the subPath: %v\n%s", hostDir, names, r)
	}
	e.assertNothingLeft(t, d, "default", "subpath-escape-demo", r.summary.UID)
	assertEmptyDir(t, "pod dirs", filepath.Join(d.root, "pods"))
}

// subPathPod mounts a directory, a file, a missing path, a symlink that
// stays in the volume, and a hostPath's subdirectory, all by subPath.
const subPathPod = `apiVersion: v1
kind: Pod
metadata:
  name: subpath-demo
spec:
  initContainers:
  - name: setup
    image: docker.io/library/busybox:1.35
    command: ["sh", "-c", "mkdir /work/dir && echo hello from init > /work/dir/hello && echo a file > /work/file.txt && ln -s dir /work/inside"]
    volumeMounts: [{name: work, mountPath: /work}]
  containers:
  - name: app
    image: docker.io/library/busybox:1.35
    command: ["sleep", "3600"]
    volumeMounts:
    - {name: work, mountPath: /mnt/dir, subPath: dir}
    - {name: work, mountPath: /mnt/file.txt, subPath: file.txt}
    - {name: work, mountPath: /mnt/made, subPath: made/by/podstep}
    - {name: work, mountPath: /mnt/inside, subPath: inside}
    - {name: host, mountPath: /mnt/keep, subPath: keep}
  volumes:
  - {name: work, emptyDir: {}}
  - {name: host, hostPath: {path: %[1]s, type: Directory}}
`

// TestSubPathInContainer: good subPaths are bind-mounted under
// volume-subpaths/<volume>/<container>/<index>, that is the host_path
// containerd gets, the container sees the right content, and teardown
// unmounts them before removing the pod dir: the hostPath's files stay.
func TestSubPathInContainer(t *testing.T) {
	e := setup(t)
	hostDir := t.TempDir()
	if err := os.Mkdir(filepath.Join(hostDir, "keep"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(hostDir, "keep", "me"), []byte("host data\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "subpath.yaml")
	if err := os.WriteFile(file, []byte(fmt.Sprintf(subPathPod, hostDir)), 0o644); err != nil {
		t.Fatal(err)
	}
	d := newDirs(t)
	r := e.mustRun(t, d, file, "--keep")
	uid := r.summary.UID
	pod := d.podDir(uid)
	vol := filepath.Join(pod, "volumes", "kubernetes.io~empty-dir", "work")
	target := func(volume string, i int) string {
		return filepath.Join(pod, "volume-subpaths", volume, "app", fmt.Sprint(i))
	}
	want := map[string]string{
		"/mnt/dir":      target("work", 0),
		"/mnt/file.txt": target("work", 1),
		"/mnt/made":     target("work", 2),
		"/mnt/inside":   target("work", 3),
		"/mnt/keep":     target("host", 4),
	}

	t.Run("host_path is the bind mount", func(t *testing.T) {
		st := r.step("create/app")
		if st == nil || st.call("CreateContainer") == nil {
			t.Fatalf("no CreateContainer in create/app\n%s", r)
		}
		var req struct {
			Config struct {
				Mounts []struct {
					ContainerPath string `json:"container_path"`
					HostPath      string `json:"host_path"`
				} `json:"mounts"`
			} `json:"config"`
		}
		if err := json.Unmarshal(st.call("CreateContainer").Request, &req); err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, m := range req.Config.Mounts {
			got[m.ContainerPath] = m.HostPath
		}
		mounted := map[string]bool{}
		for _, m := range testenv.MountsUnder(pod) {
			mounted[m] = true
		}
		for cp, hp := range want {
			if got[cp] != hp {
				t.Errorf("%s: host_path %q, want %q", cp, got[cp], hp)
			}
			if !mounted[hp] {
				t.Errorf("%s: nothing mounted at %s", cp, hp)
			}
		}
		if !strings.Contains(st.Summary, "5 subPaths bind-mounted") {
			t.Errorf("create/app summary %q, want it to count 5 subPaths bind-mounted", st.Summary)
		}
		var details []string
		for _, dt := range st.Details {
			if dt.Key == "subPath" {
				details = append(details, dt.Value)
			}
		}
		if len(details) != 5 {
			t.Fatalf("create/app has %d subPath details, want 5: %q", len(details), details)
		}
		for i, w := range []string{
			fmt.Sprintf(`volumeMount 0 (work, subPath "dir"): opened %s/dir without following symlinks, bind-mounted it at %s`, vol, target("work", 0)),
			fmt.Sprintf(`volumeMount 1 (work, subPath "file.txt"): opened %s/file.txt`, vol),
			fmt.Sprintf(`volumeMount 2 (work, subPath "made/by/podstep"): opened %s/made/by/podstep`, vol),
			fmt.Sprintf(`volumeMount 3 (work, subPath "inside"): opened %s/dir `, vol),
			fmt.Sprintf(`volumeMount 4 (host, subPath "keep"): opened %s/keep`, hostDir),
		} {
			if !strings.HasPrefix(details[i], w) {
				t.Errorf("subPath detail %d = %q, want it to start %q", i, details[i], w)
			}
		}
		if !strings.Contains(details[2], "the subPath did not exist: made it") {
			t.Errorf("detail %q does not say the missing subPath was made", details[2])
		}
	})

	t.Run("content", func(t *testing.T) {
		c := dialCRI(t, e.endpoint)
		app := c.running(t, uid, "app")
		sh := func(script string) string { return strings.TrimSpace(c.exec(t, app.Id, "sh", "-c", script)) }
		for _, tc := range []struct{ what, script, want string }{
			{"a directory", "cat /mnt/dir/hello", "hello from init"},
			{"a file", "cat /mnt/file.txt", "a file"},
			{"a symlink inside the volume", "cat /mnt/inside/hello", "hello from init"},
			{"a hostPath subdirectory", "cat /mnt/keep/me", "host data"},
			{"a subPath podstep made", "echo made > /mnt/made/probe && cat /mnt/made/probe", "made"},
		} {
			if got := sh(tc.script); got != tc.want {
				t.Errorf("%s: `%s` = %q, want %q", tc.what, tc.script, got, tc.want)
			}
		}
		if b, err := os.ReadFile(filepath.Join(vol, "made", "by", "podstep", "probe")); err != nil || string(b) != "made\n" {
			t.Errorf("the write to /mnt/made is not in the volume: %q %v", b, err)
		}
		if st, err := os.Stat(filepath.Join(vol, "made", "by")); err != nil || st.Mode().Perm() != 0o777 {
			t.Errorf("made/by: %v %v, want 0777 (the emptyDir's mode)", st, err)
		}
	})

	e.cleanup(t)
	e.assertNothingLeft(t, d, "default", "subpath-demo", uid)
	if b, err := os.ReadFile(filepath.Join(hostDir, "keep", "me")); err != nil || string(b) != "host data\n" {
		t.Errorf("the hostPath's file after cleanup: %q %v (removing the pod dir went through the subPath mount)", b, err)
	}
}
