package volume

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podstep/podstep/internal/golden"
	"github.com/podstep/podstep/internal/reason"
)

// fakeSource holds ConfigMaps and Secrets of namespace "default".
type fakeSource struct {
	cms     map[string]*corev1.ConfigMap
	secrets map[string]*corev1.Secret
}

func (f fakeSource) ConfigMap(ns, name string) (*corev1.ConfigMap, bool) {
	c, ok := f.cms[ns+"/"+name]
	return c, ok
}

func (f fakeSource) Secret(ns, name string) (*corev1.Secret, bool) {
	s, ok := f.secrets[ns+"/"+name]
	return s, ok
}

func testSource() fakeSource {
	return fakeSource{
		cms: map[string]*corev1.ConfigMap{
			"default/app": {
				ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "default"},
				Data:       map[string]string{"app.conf": "greeting = hello\n", "run.sh": "#!/bin/sh\necho run\n", "level": "debug"},
				BinaryData: map[string][]byte{"logo.bin": {0, 1, 2, 0xff}},
			},
		},
		secrets: map[string]*corev1.Secret{
			"default/creds": {
				ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "default"},
				Data:       map[string][]byte{"username": []byte("demo"), "password": []byte("s3cr3t-value"), "tls.key": []byte("-----BEGIN KEY-----\n")},
			},
		},
	}
}

func testPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "demo", Namespace: "default", UID: "0123456789abcdef0123456789abcdef",
			Labels:      map[string]string{"app": "demo", "tier": "debug"},
			Annotations: map[string]string{"podstep.dev/about": `quotes " and\nnewline`, "b": "2"},
		},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: "app",
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")},
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")},
				},
			}},
		},
	}
}

func testHost(src Source) *Host {
	return &Host{
		Source: src, Mount: false,
		NodeAllocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi")},
		Now:             func() time.Time { return time.Date(2026, 11, 21, 15, 4, 5, 0, time.UTC) },
	}
}

func ptr[T any](v T) *T { return &v }

// render walks a volume dir into the golden text: one line per entry with
// relative path (timestamp masked), type, mode, and content (secret
// volumes: the length only).
func render(t *testing.T, dir string, secret bool) string {
	t.Helper()
	entries, err := List(dir)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%-40s dir %04o\n", ".", fi.Mode().Perm())
	for _, e := range entries {
		p := MaskTimestamp(e.Path)
		switch e.Type {
		case "symlink":
			fmt.Fprintf(&b, "%-40s symlink -> %s\n", p, MaskTimestamp(e.Target))
		case "dir":
			fmt.Fprintf(&b, "%-40s dir %04o\n", p, e.Mode.Perm())
		default:
			data, err := os.ReadFile(filepath.Join(dir, e.Path))
			if err != nil {
				t.Fatal(err)
			}
			content := fmt.Sprintf("%q", data)
			if secret {
				content = fmt.Sprintf("<%d bytes>", len(data))
			}
			fmt.Fprintf(&b, "%-40s file %04o %s\n", p, e.Mode.Perm(), content)
		}
	}
	return b.String()
}

// checkGolden compares got with testdata/name.golden (-update rewrites it).
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	golden.Check(t, filepath.Join("testdata", name+".golden"), got)
}

// TestGoldenTrees sets up atomic-writer volumes and compares the trees.
func TestGoldenTrees(t *testing.T) {
	cases := []struct {
		name string
		vol  corev1.VolumeSource
	}{
		{"configmap-all", corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "app"}, DefaultMode: ptr[int32](0o644)}}},
		{"configmap-items", corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "app"}, DefaultMode: ptr[int32](0o600),
			Items: []corev1.KeyToPath{
				{Key: "app.conf", Path: "app.conf"},
				{Key: "run.sh", Path: "bin/run.sh", Mode: ptr[int32](0o755)},
				{Key: "logo.bin", Path: "assets/img/logo.bin", Mode: ptr[int32](0o444)},
			}}}},
		{"configmap-optional-missing", corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "nope"}, Optional: ptr(true), DefaultMode: ptr[int32](0o644)}}},
		{"configmap-optional-key", corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "app"}, Optional: ptr(true), DefaultMode: ptr[int32](0o644),
			Items: []corev1.KeyToPath{{Key: "missing", Path: "missing"}, {Key: "level", Path: "level"}}}}},
		{"secret", corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: "creds", DefaultMode: ptr[int32](0o400)}}},
		{"secret-items", corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: "creds", DefaultMode: ptr[int32](0o644),
			Items: []corev1.KeyToPath{{Key: "tls.key", Path: "tls/key.pem", Mode: ptr[int32](0o600)}, {Key: "username", Path: "user"}}}}},
		{"downwardapi", corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{
			DefaultMode: ptr[int32](0o644),
			Items: []corev1.DownwardAPIVolumeFile{
				{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.labels"}},
				{Path: "annotations", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.annotations"}},
				{Path: "name", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}},
				{Path: "meta/namespace", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}},
				{Path: "meta/uid", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.uid"}, Mode: ptr[int32](0o400)},
				{Path: "tier", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.labels['tier']"}},
				{Path: "cpu-limit-m", ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "app", Resource: "limits.cpu", Divisor: resource.MustParse("1m")}},
				{Path: "cpu-limit", ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "app", Resource: "limits.cpu"}},
				{Path: "cpu-request-m", ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "app", Resource: "requests.cpu", Divisor: resource.MustParse("1m")}},
				{Path: "mem-limit-mi", ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "app", Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}},
			}}}},
		{"projected", corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			DefaultMode: ptr[int32](0o440),
			Sources: []corev1.VolumeProjection{
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "app"},
					Items: []corev1.KeyToPath{{Key: "app.conf", Path: "config/app.conf"}}}},
				{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"},
					Items: []corev1.KeyToPath{{Key: "username", Path: "config/user", Mode: ptr[int32](0o400)}}}},
				{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}, Optional: ptr(true)}},
				{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{
					{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.labels"}}}}},
			}}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "vol")
			vol := corev1.Volume{Name: "v", VolumeSource: c.vol}
			r, err := testHost(testSource()).Setup(context.Background(), testPod(), vol, dir)
			if err != nil {
				t.Fatal(err)
			}
			if r.Path != dir || r.Tmpfs {
				t.Errorf("result path %q tmpfs %v", r.Path, r.Tmpfs)
			}
			checkGolden(t, c.name, render(t, dir, r.Secret))
			if strings.HasPrefix(c.name, "secret") && !r.Secret {
				t.Error("a secret volume is not marked Secret")
			}
			if strings.HasPrefix(c.name, "secret") || c.name == "downwardapi" || c.name == "projected" {
				if !strings.Contains(strings.Join(r.Notes, "\n"), "tmpfs") {
					t.Errorf("no note that the kubelet uses a tmpfs: %q", r.Notes)
				}
			}
		})
	}
}

// TestAtomicLayout checks the writer's layout beyond the golden text: the
// timestamped dir's name, ..data pointing to it, top-level links.
func TestAtomicLayout(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "vol")
	vol := corev1.Volume{Name: "v", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: "app"},
		Items:                []corev1.KeyToPath{{Key: "run.sh", Path: "bin/run.sh"}}}}}
	if _, err := testHost(testSource()).Setup(context.Background(), testPod(), vol, dir); err != nil {
		t.Fatal(err)
	}
	target, err := os.Readlink(filepath.Join(dir, "..data"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(target, "..2026_11_21_15_04_05.") || MaskTimestamp(target) != "..<timestamp>" {
		t.Errorf("..data -> %q, want ..2026_11_21_15_04_05.<random>", target)
	}
	if l, _ := os.Readlink(filepath.Join(dir, "bin")); l != "..data/bin" {
		t.Errorf("bin -> %q, want ..data/bin", l)
	}
	if data, err := os.ReadFile(filepath.Join(dir, "bin", "run.sh")); err != nil || string(data) != "#!/bin/sh\necho run\n" {
		t.Errorf("bin/run.sh through the links: %q %v", data, err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "..data_tmp")); !os.IsNotExist(err) {
		t.Errorf("..data_tmp left behind: %v", err)
	}
}

func TestErrors(t *testing.T) {
	cm := func(name string, optional bool, items ...corev1.KeyToPath) corev1.VolumeSource {
		return corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: name}, Optional: ptr(optional), Items: items}}
	}
	sec := func(name string, optional bool, items ...corev1.KeyToPath) corev1.VolumeSource {
		return corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: name, Optional: ptr(optional), Items: items}}
	}
	cases := []struct {
		name string
		src  corev1.VolumeSource
		want string
		typ  any
	}{
		{"configmap missing", cm("nope", false), `MountVolume.SetUp failed for volume "v" : configmap "nope" not found`, &NotFoundError{}},
		{"configmap key missing", cm("app", false, corev1.KeyToPath{Key: "k", Path: "k"}), `MountVolume.SetUp failed for volume "v" : configmap references non-existent config key: k`, &MissingKeyError{}},
		{"secret missing", sec("nope", false), `MountVolume.SetUp failed for volume "v" : secret "nope" not found`, &NotFoundError{}},
		{"secret key missing", sec("creds", false, corev1.KeyToPath{Key: "k", Path: "k"}), `MountVolume.SetUp failed for volume "v" : references non-existent secret key: k`, &MissingKeyError{}},
		{"bad item path", cm("app", false, corev1.KeyToPath{Key: "level", Path: "../escape"}), `MountVolume.SetUp failed for volume "v" : invalid path: must not contain '..': ../escape`, nil},
		{"downward field", corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
			{Path: "n", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}}}},
			`MountVolume.SetUp failed for volume "v" : unsupported fieldPath: spec.nodeName`, nil},
		{"downward container", corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
			{Path: "n", ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "other", Resource: "limits.cpu"}}}}},
			`MountVolume.SetUp failed for volume "v" : container other not found`, nil},
		{"projected two errors", corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "a"}}},
			{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "b"}}}}}},
			`MountVolume.SetUp failed for volume "v" : [configmap "a" not found, secret "b" not found]`, nil},
		{"projected token", corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "app"}}},
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}}}}},
			`MountVolume.SetUp failed for volume "v" : no token for service account "default": a serviceAccountToken projection needs the API server's TokenRequest API (the kubelet's token manager asks it), and this run has none`, &UnsupportedError{}},
		{"nfs", corev1.VolumeSource{NFS: &corev1.NFSVolumeSource{Server: "nfs", Path: "/x"}},
			`MountVolume.SetUp failed for volume "v" : an NFS volume needs the NFS client (mount.nfs) and a reachable NFS server; podstep does not mount network filesystems`, &UnsupportedError{}},
		{"csi", corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "x.example.com"}},
			`MountVolume.SetUp failed for volume "v" : kubernetes.io/csi: mounter.SetUpAt failed to get CSI client: driver name x.example.com not found in the list of registered CSI drivers`, &UnsupportedError{}},
		{"iscsi", corev1.VolumeSource{ISCSI: &corev1.ISCSIVolumeSource{}}, "iSCSI", &UnsupportedError{}},
		{"hugepages", corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: "HugePages-2Mi"}}, "hugetlbfs", &UnsupportedError{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, "vol")
			_, err := testHost(testSource()).Setup(context.Background(), testPod(), corev1.Volume{Name: "v", VolumeSource: c.src}, dir)
			var ve *Error
			if !errors.As(err, &ve) {
				t.Fatalf("err %v (%T), want *Error", err, err)
			}
			if ve.Reason() != reason.FailedMountVolume || ve.Volume != "v" {
				t.Errorf("reason %q volume %q", ve.Reason(), ve.Volume)
			}
			if strings.HasPrefix(c.want, "MountVolume") {
				if err.Error() != c.want {
					t.Errorf("error\n got %s\nwant %s", err, c.want)
				}
			} else if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not mention %q", err, c.want)
			}
			switch c.typ.(type) {
			case *NotFoundError:
				var x *NotFoundError
				if !errors.As(err, &x) || !IsNotFound(err) {
					t.Errorf("not a *NotFoundError: %T", ve.Err)
				}
			case *MissingKeyError:
				var x *MissingKeyError
				if !errors.As(err, &x) {
					t.Errorf("not a *MissingKeyError: %T", ve.Err)
				}
			case *UnsupportedError:
				if !errors.Is(err, ErrUnsupported) {
					t.Errorf("not ErrUnsupported: %T", ve.Err)
				}
			}
			// Prepare fails before anything is written.
			if _, err := os.Lstat(dir); !os.IsNotExist(err) {
				t.Errorf("%s was created for a failed volume", dir)
			}
		})
	}
}

// blockDevice finds a block device under /dev, or "".
func blockDevice() string {
	ents, _ := os.ReadDir("/dev")
	for _, e := range ents {
		p := "/dev/" + e.Name()
		if fi, err := os.Stat(p); err == nil && fi.Mode()&os.ModeDevice != 0 && fi.Mode()&os.ModeCharDevice == 0 {
			return p
		}
	}
	return ""
}

func TestHostPathTypes(t *testing.T) {
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "dir")
	file := filepath.Join(tmp, "file")
	sock := filepath.Join(tmp, "sock")
	missing := filepath.Join(tmp, "missing")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	chr := "/dev/null"
	blk := blockDevice()

	type tc struct {
		name, path string
		typ        corev1.HostPathType
		want       string // "" = success
		created    bool
	}
	cases := []tc{
		{"unset missing", missing, corev1.HostPathUnset, "", false},
		{"unset file", file, corev1.HostPathUnset, "", false},
		{"dir ok", dir, corev1.HostPathDirectory, "", false},
		{"dir on file", file, corev1.HostPathDirectory, "hostPath type check failed: " + file + " is not a directory, it's a File", false},
		{"dir missing", missing, corev1.HostPathDirectory, "hostPath " + missing + " doesn't exist", false},
		{"dir-or-create exists", dir, corev1.HostPathDirectoryOrCreate, "", false},
		{"dir-or-create on file", file, corev1.HostPathDirectoryOrCreate, "hostPath type check failed: " + file + " is not a directory, it's a File", false},
		{"dir-or-create makes", filepath.Join(tmp, "new", "nested"), corev1.HostPathDirectoryOrCreate, "", true},
		{"file ok", file, corev1.HostPathFile, "", false},
		{"file on dir", dir, corev1.HostPathFile, "hostPath type check failed: " + dir + " is not a file, it's a Directory", false},
		{"file missing", missing, corev1.HostPathFile, "hostPath " + missing + " doesn't exist", false},
		{"file-or-create exists", file, corev1.HostPathFileOrCreate, "", false},
		{"file-or-create on dir", dir, corev1.HostPathFileOrCreate, "hostPath type check failed: " + dir + " is not a file, it's a Directory", false},
		{"file-or-create makes", filepath.Join(tmp, "newfile"), corev1.HostPathFileOrCreate, "", true},
		{"file-or-create no parent", filepath.Join(tmp, "noparent", "f"), corev1.HostPathFileOrCreate, "open " + filepath.Join(tmp, "noparent", "f") + ": no such file or directory", false},
		{"socket ok", sock, corev1.HostPathSocket, "", false},
		{"socket on file", file, corev1.HostPathSocket, "hostPath type check failed: " + file + " is not a socket file, it's a File", false},
		{"socket missing", missing, corev1.HostPathSocket, "hostPath " + missing + " doesn't exist", false},
		{"chardev ok", chr, corev1.HostPathCharDev, "", false},
		{"chardev on dir", dir, corev1.HostPathCharDev, "hostPath type check failed: " + dir + " is not a character device, it's a Directory", false},
		{"blockdev on chardev", chr, corev1.HostPathBlockDev, "hostPath type check failed: /dev/null is not a block device, it's a CharDevice", false},
		{"blockdev on socket", sock, corev1.HostPathBlockDev, "hostPath type check failed: " + sock + " is not a block device, it's a Socket", false},
		{"invalid type", dir, "Pipe", "Pipe is an invalid volume type", false},
		{"backsteps", "/tmp/../etc", corev1.HostPathUnset, "invalid HostPath `/tmp/../etc`: must not contain '..'", false},
	}
	if blk != "" {
		cases = append(cases,
			tc{"blockdev ok", blk, corev1.HostPathBlockDev, "", false},
			tc{"chardev on blockdev", blk, corev1.HostPathCharDev, "hostPath type check failed: " + blk + " is not a character device, it's a BlockDevice", false})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			vol := corev1.Volume{Name: "h", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: c.path, Type: ptr(c.typ)}}}
			r, err := testHost(nil).Setup(context.Background(), testPod(), vol, Path("/unused", vol))
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
			} else {
				want := `MountVolume.SetUp failed for volume "h" : ` + c.want
				if err == nil || err.Error() != want {
					t.Fatalf("error\n got %v\nwant %s", err, want)
				}
			}
			if r.Path != c.path || r.Created != c.created {
				t.Errorf("path %q created %v, want %q %v", r.Path, r.Created, c.path, c.created)
			}
			if c.created {
				fi, err := os.Stat(c.path)
				if err != nil {
					t.Fatal(err)
				}
				umask := syscall.Umask(0)
				syscall.Umask(umask)
				want := os.FileMode(0o644)
				if c.typ == corev1.HostPathDirectoryOrCreate {
					want = 0o755
				}
				if fi.Mode().Perm() != want&^os.FileMode(umask) {
					t.Errorf("created mode %04o, want %04o &^ umask", fi.Mode().Perm(), want)
				}
			}
		})
	}
	if blk == "" {
		t.Run("blockdev ok", func(t *testing.T) { t.Skip("no block device under /dev on this machine") })
	}
}

func TestEmptyDirPlain(t *testing.T) {
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	dir := filepath.Join(t.TempDir(), "vol")
	vol := corev1.Volume{Name: "e", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr(resource.MustParse("1Gi"))}}}
	r, err := testHost(nil).Setup(context.Background(), testPod(), vol, dir)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(dir)
	if err != nil || fi.Mode().Perm() != 0o777 {
		t.Fatalf("emptyDir mode %v %v, want 0777 despite the umask", fi.Mode(), err)
	}
	if r.Tmpfs || len(r.Warnings) != 0 || !strings.Contains(strings.Join(r.Notes, " "), "sizeLimit 1Gi") {
		t.Errorf("result %+v", r)
	}
}

func TestEmptyDirMemoryWithoutMount(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "vol")
	vol := corev1.Volume{Name: "m", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: ptr(resource.MustParse("64Mi"))}}}
	r, err := testHost(nil).Setup(context.Background(), testPod(), vol, dir)
	if err != nil {
		t.Fatal(err)
	}
	if r.Tmpfs || len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "size=67108864") {
		t.Errorf("result %+v, want one warning naming size=67108864", r)
	}
}

func TestTmpfsSize(t *testing.T) {
	h := &Host{NodeAllocatable: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("8Gi")}}
	pod := testPod()
	if got := h.tmpfsSize(pod, nil); got != 8<<30 {
		t.Errorf("no limits: %d, want node allocatable", got)
	}
	pod.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory] = resource.MustParse("256Mi")
	if got := h.tmpfsSize(pod, nil); got != 256<<20 {
		t.Errorf("pod limit: %d, want 256Mi", got)
	}
	if got := h.tmpfsSize(pod, ptr(resource.MustParse("1Mi"))); got != 1<<20 {
		t.Errorf("sizeLimit below the pod limit: %d, want 1Mi", got)
	}
	if got := h.tmpfsSize(pod, ptr(resource.MustParse("1Gi"))); got != 256<<20 {
		t.Errorf("sizeLimit above the pod limit: %d, want 256Mi", got)
	}
	pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: "nolimit"})
	if got := h.tmpfsSize(pod, nil); got != 8<<30 {
		t.Errorf("a container without a limit: %d, want node allocatable", got)
	}
}

// TestTmpfsMountAndTeardown mounts real tmpfs (root only).
func TestTmpfsMountAndTeardown(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting tmpfs needs root")
	}
	volumes := filepath.Join(t.TempDir(), "pods", "uid", "volumes")
	h := testHost(testSource())
	h.Mount = true
	t.Cleanup(func() {
		if err := Teardown(volumes); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	mem := corev1.Volume{Name: "m", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: ptr(resource.MustParse("1Mi"))}}}
	sec := corev1.Volume{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "creds", DefaultMode: ptr[int32](0o644)}}}
	for _, v := range []corev1.Volume{mem, sec} {
		r, err := h.Setup(context.Background(), testPod(), v, Path(filepath.Dir(volumes), v))
		if err != nil {
			t.Fatal(err)
		}
		if !r.Tmpfs {
			t.Errorf("%s: not on a tmpfs: %+v", v.Name, r)
		}
	}
	if r, _ := h.Setup(context.Background(), testPod(), mem, Path(filepath.Dir(volumes), mem)); !r.Tmpfs || r.Size != "1Mi" {
		t.Errorf("second setup of the same emptyDir: %+v", r)
	}
	ms, err := Mounts(volumes)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 2 {
		t.Fatalf("mounts under %s: %+v, want 2", volumes, ms)
	}
	for _, m := range ms {
		if m.FSType != "tmpfs" {
			t.Errorf("%s is %s", m.Path, m.FSType)
		}
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(Path(filepath.Dir(volumes), mem), &st); err != nil || st.Blocks*uint64(st.Bsize) != 1<<20 {
		t.Errorf("tmpfs size %d bytes, want 1Mi (%v)", st.Blocks*uint64(st.Bsize), err)
	}
	done, err := TeardownMounts(volumes)
	if err != nil || len(done) != 2 {
		t.Fatalf("teardown: %+v %v", done, err)
	}
	if ms, _ := Mounts(volumes); len(ms) != 0 {
		t.Errorf("left mounted: %+v", ms)
	}
	if err := os.RemoveAll(filepath.Dir(volumes)); err != nil {
		t.Errorf("pod dir not removable after teardown: %v", err)
	}
	if err := Teardown(filepath.Join(t.TempDir(), "gone")); err != nil {
		t.Errorf("teardown of a missing dir: %v", err)
	}
}

// TestFSGroup applies an fsGroup as SetVolumeOwnership does (root only).
func TestFSGroup(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chown needs root")
	}
	pod := testPod()
	pod.Spec.SecurityContext = &corev1.PodSecurityContext{FSGroup: ptr[int64](4321)}
	dir := filepath.Join(t.TempDir(), "vol")
	vol := corev1.Volume{Name: "v", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: "app"}, DefaultMode: ptr[int32](0o600),
		Items: []corev1.KeyToPath{{Key: "run.sh", Path: "bin/run.sh"}}}}}
	if _, err := testHost(testSource()).Setup(context.Background(), pod, vol, dir); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, "bin", "run.sh"))
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if st.Gid != 4321 || fi.Mode().Perm() != 0o640 {
		t.Errorf("file gid %d mode %04o, want 4321 0640", st.Gid, fi.Mode().Perm())
	}
	di, _ := os.Stat(filepath.Join(dir, "bin"))
	if di.Mode()&os.ModeSetgid == 0 {
		t.Errorf("dir mode %v, want setgid", di.Mode())
	}
}

func TestPathAndKind(t *testing.T) {
	pod := "/root/pods/uid"
	for _, c := range []struct {
		src  corev1.VolumeSource
		want string
	}{
		{corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}, pod + "/volumes/kubernetes.io~empty-dir/x"},
		{corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}, pod + "/volumes/kubernetes.io~configmap/x"},
		{corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{}}, pod + "/volumes/kubernetes.io~secret/x"},
		{corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{}}, pod + "/volumes/kubernetes.io~downward-api/x"},
		{corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{}}, pod + "/volumes/kubernetes.io~projected/x"},
		{corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/log"}}, "/var/log"},
		{corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{}}, pod + "/volumes/kubernetes.io~persistentvolumeclaim/x"},
	} {
		if got := Path(pod, corev1.Volume{Name: "x", VolumeSource: c.src}); got != c.want {
			t.Errorf("Path = %s, want %s", got, c.want)
		}
	}
	if k := Kind(corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{}}); k != "persistentVolumeClaim" {
		t.Errorf("Kind = %s", k)
	}
}

func TestUnescapeMountinfo(t *testing.T) {
	if got := UnescapeMountinfo(`/a\040b/c\011d`); got != "/a b/c\td" {
		t.Errorf("unescape = %q", got)
	}
}

// TestDownwardAPIDefaults: a resourceFieldRef item of a container without
// a limit, or with a zero one, is the node's allocatable
// (ExtractResourceValueByContainerNameAndNodeAllocatable).
func TestDownwardAPIDefaults(t *testing.T) {
	pod := testPod()
	pod.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory] = resource.MustParse("0")
	item := func(path, res, divisor string) corev1.DownwardAPIVolumeFile {
		return corev1.DownwardAPIVolumeFile{Path: path, ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "app", Resource: res, Divisor: resource.MustParse(divisor)}}
	}
	p, err := testHost(nil).downwardAPIPayload(pod, []corev1.DownwardAPIVolumeFile{
		item("cpu", "limits.cpu", "1m"),
		item("mem", "limits.memory", "1Mi"),
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for k, v := range p {
		got[k] = string(v.data)
	}
	want := map[string]string{"cpu": "500", "mem": "8192"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("payload %v, want %v", got, want)
	}
}
