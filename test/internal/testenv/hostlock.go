//go:build unix

package testenv

import (
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// HostLockFile is the file whose flock is the host lock: in /run/lock
// (gone at reboot, as a holder is), or the temp dir where there is none.
// PODSTEP_TEST_HOST_LOCK names another (a test of HostLock's own).
func HostLockFile() string {
	if f := os.Getenv("PODSTEP_TEST_HOST_LOCK"); f != "" {
		return f
	}
	if fi, err := os.Stat("/run/lock"); err == nil && fi.IsDir() {
		return "/run/lock/podstep-test-host.lock"
	}
	return filepath.Join(os.TempDir(), "podstep-test-host.lock")
}

// host is this process's hold on the host lock: its file while held, and
// how many tests hold it.
var host struct {
	sync.Mutex
	f       *os.File
	holders int
}

// HostLock holds the host lock until t and its subtests end. hack/test.sh
// runs the integration suites of both runtimes at once; a test that needs
// the host alone takes it: a shadow or a sick node (their tests check the
// host's cgroups under /podstep and the CNI chains no other network holds,
// and their CNI networks take host-wide subnets) and a pod on the host's
// port 18080. The lock is a flock, so a killed holder releases it. In one
// process it is shared: the tests of a suite that hold it at once
// (parallel subtests) count as one holder, and the last one to end
// releases it.
func HostLock(t testing.TB) {
	t.Helper()
	host.Lock()
	defer host.Unlock()
	if host.holders == 0 {
		name := HostLockFile()
		f, err := os.OpenFile(name, os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			t.Fatalf("host lock: %v", err)
		}
		start := time.Now()
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
			f.Close()
			t.Fatalf("host lock %s: %v", name, err)
		}
		if d := time.Since(start); d > time.Second {
			t.Logf("waited %s for the host lock (%s): a test of another suite held it", d.Round(100*time.Millisecond), name)
		}
		host.f = f
	}
	host.holders++
	t.Cleanup(func() {
		host.Lock()
		defer host.Unlock()
		host.holders--
		if host.holders == 0 {
			_ = syscall.Flock(int(host.f.Fd()), syscall.LOCK_UN)
			host.f.Close()
			host.f = nil
		}
	})
}
