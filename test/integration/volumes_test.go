//go:build integration

package integration

import (
	"bufio"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/podstep/podstep/test/internal/testenv"
)

// hostPathDemo is the hostPath (DirectoryOrCreate) of testdata/pods/volumes.yaml.
const hostPathDemo = "/tmp/podstep-hostpath-demo"

// atomicDir is the atomic writer's timestamped dir name, as the kubelet's
// writer makes it (os.MkdirTemp with the prefix
// time.Now().UTC().Format("..2006_01_02_15_04_05.")).
var atomicDir = regexp.MustCompile(`^\.\.(\d{4}_\d{2}_\d{2}_\d{2}_\d{2}_\d{2})\.\d{1,10}$`)

// TestNestedVolumeMountpoints: volumes mounted beneath a read-only secret
// volume (testdata/nested-mounts.yaml, 103 grafana's layout) start, because
// podstep makes their mount points in the secret's dir as the kubelet does;
// the container sees each volume at its path and the secret's own file
// beside the mount points. (Without them runc answered `make mountpoint
// "/etc/grafana/provisioning/datasources": mkdirat ...: read-only file
// system`.)
func TestNestedVolumeMountpoints(t *testing.T) {
	e := setup(t)
	d := newDirs(t)
	r := e.mustRun(t, d, e.local("nested-mounts"), "--keep")
	defer e.cleanup(t)
	c := dialCRI(t, e.endpoint)
	app := c.running(t, r.summary.UID, "app")
	for _, tc := range []struct{ script, want string }{
		{"cat /etc/grafana/provisioning/datasources/datasources.yaml", "apiVersion: 1"},
		{"cat /etc/grafana/provisioning/dashboards/dashboards.yaml", "providers: []"},
		{"ls /etc/grafana /etc/grafana/provisioning", "/etc/grafana:\ngrafana.ini\nprovisioning\n\n/etc/grafana/provisioning:\ndashboards\ndatasources"},
	} {
		if got := strings.TrimSpace(c.exec(t, app.Id, "sh", "-c", tc.script)); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.script, got, tc.want)
		}
	}
}

// TestVolumesInContainer runs testdata/pods/volumes.yaml with --keep and
// looks at every volume from inside the running container (CRI ExecSync)
// and on the host: content, modes, the atomic writer's ..data link, the
// subPath mount, read-only and tmpfs mounts, the downward API, the emptyDir
// and the hostPath. Then `podstep cleanup` must leave nothing.
func TestVolumesInContainer(t *testing.T) {
	e := setup(t)
	// DirectoryOrCreate must make it; the kubelet leaves it behind, the test does not.
	if err := os.RemoveAll(hostPathDemo); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(hostPathDemo) })
	d := newDirs(t)
	r := e.mustRun(t, d, e.pod("volumes"), "--keep")
	uid := r.summary.UID
	c := dialCRI(t, e.endpoint)
	app := c.running(t, uid, "app")
	sh := func(script string) string { return strings.TrimSpace(c.exec(t, app.Id, "sh", "-c", script)) }
	const greeting = "greeting = hello from a ConfigMap volume"

	t.Run("content", func(t *testing.T) {
		for _, tc := range []struct{ what, script, want string }{
			{"configMap item", "cat /etc/app/app.conf", greeting},
			{"configMap item with a path", "cat /etc/app/bin/run.sh", "#!/bin/sh\necho run"},
			{"configMap: only the items", "ls /etc/app", "app.conf\nbin"},
			{"configMap modes (items[].mode 0755, default 0644)", "stat -L -c %a /etc/app/bin/run.sh /etc/app/app.conf", "755\n644"},
			{"configMap key is a link into ..data", "readlink /etc/app/app.conf", "..data/app.conf"},
			{"subPath mount of one key", "cat /etc/app.conf", greeting},
			{"secret", "cat /etc/creds/username", "demo"},
			{"secret, second key", "cat /etc/creds/password", "not-a-real-password"},
			{"secret modes (defaultMode 0400)", "stat -L -c %a /etc/creds/username /etc/creds/password", "400\n400"},
			{"secret volume is a read-only tmpfs", "awk '$2 == \"/etc/creds\" {split($4, o, \",\"); print $3, o[1]}' /proc/mounts", "tmpfs ro"},
			{"configMap mount (readOnly: true) is read-only", "awk '$2 == \"/etc/app\" {split($4, o, \",\"); print o[1]}' /proc/mounts", "ro"},
			{"downward API labels", "cat /etc/podinfo/labels", "app=\"volumes-demo\"\ntier=\"debug\""},
			{"downward API annotations", "grep '^podstep.dev/about=' /etc/podinfo/annotations", `podstep.dev/about="every volume type"`},
			{"downward API name", "cat /etc/podinfo/name", "volumes-demo"},
			{"projected configMap item", "cat /etc/bundle/config/app.conf", greeting},
			{"projected downward API namespace", "cat /etc/bundle/namespace", "default"},
			{"emptyDir is writable", "echo scratch-ok > /scratch/probe && cat /scratch/probe", "scratch-ok"},
			{"hostPath is writable", "echo from-container > /host/probe && cat /host/probe", "from-container"},
		} {
			if got := sh(tc.script); got != tc.want {
				t.Errorf("%s: `%s` = %q, want %q", tc.what, tc.script, got, tc.want)
			}
		}
	})

	t.Run("..data link", func(t *testing.T) {
		target := sh("readlink /etc/app/..data")
		m := atomicDir.FindStringSubmatch(target)
		if m == nil {
			t.Fatalf("/etc/app/..data -> %q, want ..YYYY_MM_DD_HH_MM_SS.N", target)
		}
		ts, err := time.Parse("2006_01_02_15_04_05", m[1])
		if err != nil {
			t.Fatalf("..data target %q: %v", target, err)
		} else if age := time.Since(ts); age < -time.Minute || age > 10*time.Minute {
			t.Errorf("..data target %q is %s away from now (UTC)", target, age)
		}
		if got := sh("cat /etc/app/" + target + "/app.conf"); got != greeting {
			t.Errorf("/etc/app/%s/app.conf = %q, want %q", target, got, greeting)
		}
		// the host has the same layout, where the kubelet puts it
		host := filepath.Join(d.podDir(uid), "volumes", "kubernetes.io~configmap", "config", "..data")
		if got, err := os.Readlink(host); err != nil || got != target {
			t.Errorf("host %s -> %q (%v), want %q", host, got, err, target)
		}
	})

	t.Run("read-only mounts refuse writes", func(t *testing.T) {
		// /etc/app and /etc/creds say readOnly: true; /etc/podinfo, /etc/bundle
		// and the subPath file do not, but the kubelet mounts configMap, secret,
		// downwardAPI and projected volumes read-only anyway (mustMountRO).
		for _, path := range []string{"/etc/app/new", "/etc/creds/new", "/etc/podinfo/new", "/etc/bundle/new"} {
			code, _, stderr := c.execResult(t, app.Id, "touch", path)
			if code == 0 || !strings.Contains(stderr, "Read-only file system") {
				t.Errorf("touch %s: exit %d, stderr %q; want non-zero and Read-only file system", path, code, stderr)
			}
		}
		code, _, stderr := c.execResult(t, app.Id, "sh", "-c", "echo changed >> /etc/app.conf")
		if code == 0 || !strings.Contains(stderr, "Read-only file system") {
			t.Errorf("append to the subPath file /etc/app.conf: exit %d, stderr %q; want Read-only file system", code, stderr)
		}
	})

	t.Run("projected resourceFieldRef limits.memory", func(t *testing.T) {
		got, err := strconv.ParseInt(sh("cat /etc/bundle/mem-limit-mi"), 10, 64)
		if err != nil {
			t.Fatalf("/etc/bundle/mem-limit-mi: %v", err)
		}
		// no limit: the node's allocatable memory, in Mi rounded up, as
		// the kubelet's GetNodeAllocatable gives it to the downwardAPI
		// plugin. podstep's node: MemTotal less the 100Mi eviction
		// threshold, not MemTotal itself (its capacity).
		memTotal := readMemTotal(t)
		const mi = 1 << 20
		capacity := int64(math.Ceil(float64(memTotal) / mi))
		allocatable := int64(math.Ceil(float64(memTotal-100*mi) / mi))
		if got != allocatable {
			t.Errorf("mem-limit-mi = %d, want the node's allocatable %d (capacity %d)", got, allocatable, capacity)
		}
		t.Logf("mem-limit-mi = %d (allocatable %d, capacity %d)", got, allocatable, capacity)
	})

	t.Run("host side", func(t *testing.T) {
		vols := filepath.Join(d.podDir(uid), "volumes")
		if b, err := os.ReadFile(filepath.Join(vols, "kubernetes.io~empty-dir", "scratch", "probe")); err != nil || string(b) != "scratch-ok\n" {
			t.Errorf("emptyDir on the host: probe = %q (%v), want scratch-ok", b, err)
		}
		for _, v := range []string{"kubernetes.io~secret/creds", "kubernetes.io~downward-api/podinfo", "kubernetes.io~projected/bundle"} {
			if fs := mountFSType(filepath.Join(vols, v)); fs != "tmpfs" {
				t.Errorf("host %s: mounted %q, want tmpfs", v, fs)
			}
		}
		st, err := os.Stat(hostPathDemo)
		if err != nil {
			t.Fatalf("hostPath DirectoryOrCreate did not make %s: %v", hostPathDemo, err)
		}
		if st.Mode().Perm() != 0o755 || !st.IsDir() {
			t.Errorf("%s: mode %s, want a 0755 directory", hostPathDemo, st.Mode())
		}
		if b, err := os.ReadFile(filepath.Join(hostPathDemo, "probe")); err != nil || string(b) != "from-container\n" {
			t.Errorf("%s/probe on the host = %q (%v), want from-container", hostPathDemo, b, err)
		}
		if err := os.WriteFile(filepath.Join(hostPathDemo, "from-host"), []byte("from-host\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := sh("cat /host/from-host"); got != "from-host" {
			t.Errorf("container: cat /host/from-host = %q, want from-host", got)
		}
	})

	e.cleanup(t)
	e.assertNothingLeft(t, d, "default", "volumes-demo", uid)
	// as on a node, the hostPath dir stays (the test removes it)
	if _, err := os.Stat(filepath.Join(hostPathDemo, "probe")); err != nil {
		t.Errorf("hostPath content after cleanup: %v (a hostPath is the node's, not the pod's)", err)
	}
}

// readMemTotal returns MemTotal of /proc/meminfo in bytes.
func readMemTotal(t *testing.T) int64 {
	t.Helper()
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 3 && f[0] == "MemTotal:" && f[2] == "kB" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				t.Fatalf("/proc/meminfo %q: %v", sc.Text(), err)
			}
			return kb * 1024
		}
	}
	t.Fatal("/proc/meminfo has no MemTotal")
	return 0
}

// mountFSType returns the filesystem type mounted at path (the last such
// mount in /proc/self/mountinfo), or "" when nothing is mounted there.
func mountFSType(path string) string {
	fs := ""
	for _, m := range testenv.Mounts() {
		if m.Point == path {
			fs = m.FSType
		}
	}
	return fs
}
