//go:build unix

package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestHostLockChild is the other process of TestHostLock: it takes the
// lock and prints when it got it (Unix nanoseconds).
func TestHostLockChild(t *testing.T) {
	if os.Getenv("PODSTEP_TEST_HOST_LOCK_CHILD") == "" {
		t.Skip("run by TestHostLock")
	}
	HostLock(t)
	os.Stdout.WriteString("got " + strconv.FormatInt(time.Now().UnixNano(), 10) + "\n")
}

// TestHostLock: another process waits for the lock until this one's last
// holder (two tests of this process hold it at once) has ended.
func TestHostLock(t *testing.T) {
	t.Setenv("PODSTEP_TEST_HOST_LOCK", filepath.Join(t.TempDir(), "host.lock"))
	var released time.Time
	var child *exec.Cmd
	var out strings.Builder
	t.Run("holders", func(t *testing.T) {
		t.Cleanup(func() { released = time.Now() }) // runs after HostLock's (LIFO)
		HostLock(t)
		t.Run("nested", func(t *testing.T) { HostLock(t) }) // shared: no deadlock
		HostLock(t)                                         // twice in one test
		child = exec.Command(os.Args[0], "-test.run=^TestHostLockChild$", "-test.v")
		child.Env = append(os.Environ(), "PODSTEP_TEST_HOST_LOCK_CHILD=1")
		child.Stdout, child.Stderr = &out, &out
		if err := child.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(1500 * time.Millisecond)
	})
	if err := child.Wait(); err != nil {
		t.Fatalf("child: %v\n%s", err, out.String())
	}
	var got int64
	for _, l := range strings.Split(out.String(), "\n") {
		if s, ok := strings.CutPrefix(l, "got "); ok {
			got, _ = strconv.ParseInt(s, 10, 64)
		}
	}
	if got == 0 {
		t.Fatalf("the child did not say when it got the lock:\n%s", out.String())
	}
	if gotAt := time.Unix(0, got); gotAt.Before(released.Add(-50 * time.Millisecond)) {
		t.Errorf("the child got the lock at %s, %s before this process released it", gotAt.Format(time.StampMicro), released.Sub(gotAt))
	}
	if !strings.Contains(out.String(), "waited") {
		t.Errorf("the child did not log that it waited:\n%s", out.String())
	}
}
