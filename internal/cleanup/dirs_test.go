package cleanup_test

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/podstep/podstep/internal/cleanup"
	"github.com/podstep/podstep/internal/mark"
)

// TestOrphans: cleanup removes the marked pod and log dirs whose run has
// ended and whose pod its runtime no longer has, and leaves those a run
// still holds, those whose runtime still has the pod, those an older
// podstep marked without saying which run (it may still be going), and
// what podstep did not make.
func TestOrphans(t *testing.T) {
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	ended := mark.Holder{PID: dead.Process.Pid, Cmd: "podstep run --keep", Runtime: "unix:///gone.sock"}
	endedSim := mark.Holder{PID: dead.Process.Pid, Simulated: true}
	self := mark.Self("unix:///gone.sock", false)
	for _, tc := range []struct {
		name    string
		holder  *mark.Holder // nil: no marker
		present bool         // the runtime still has the pod
		removed bool
		listed  bool
	}{
		{"ended, runtime gone", &ended, false, true, true},
		{"ended on the simulated runtime", &endedSim, true, true, true},
		{"ended, runtime still has the pod", &ended, true, false, false},
		{"still running", &self, false, false, false},
		{"older marker", &mark.Holder{}, false, false, true},
		{"not podstep's", nil, false, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			root, logs := filepath.Join(base, "root"), filepath.Join(base, "logs")
			const uid = "u1"
			pod, log := filepath.Join(root, "pods", uid), filepath.Join(logs, "default_p_"+uid)
			for _, d := range []string{pod, log} {
				if err := os.MkdirAll(d, 0o750); err != nil {
					t.Fatal(err)
				}
				if tc.holder != nil {
					if err := mark.Dir(d, uid, *tc.holder); err != nil {
						t.Fatal(err)
					}
				}
			}
			got := cleanup.Orphans(root, logs, func(mark.Holder, string) bool { return tc.present })
			if (len(got) == 2) != tc.listed || (!tc.listed && len(got) != 0) {
				t.Errorf("listed %+v, want listed=%v", got, tc.listed)
			}
			for _, d := range []string{pod, log} {
				_, err := os.Stat(d)
				if gone := os.IsNotExist(err); gone != tc.removed {
					t.Errorf("%s removed=%v, want %v", d, gone, tc.removed)
				}
			}
		})
	}
}

// TestSimDirsDeadSocket: a sim dir with no owner file goes only when all it
// holds is a socket that refuses connections (a killed sim-serve child's);
// a live one's, or one with anything else in it, stays.
func TestSimDirsDeadSocket(t *testing.T) {
	// A short temp dir: a unix socket's path has a 108-byte limit.
	tmp, err := os.MkdirTemp("", "sd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	sock := func(name string, live bool, extra bool) string {
		dir := filepath.Join(tmp, "podstep-sim-"+name)
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		l, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(dir, "sim.sock"), Net: "unix"})
		if err != nil {
			t.Fatal(err)
		}
		if live {
			t.Cleanup(func() { l.Close() })
		} else {
			l.SetUnlinkOnClose(false)
			l.Close()
		}
		old := time.Now().Add(-time.Minute) // a fresh socket may be a starting child's
		if err := os.Chtimes(filepath.Join(dir, "sim.sock"), old, old); err != nil {
			t.Fatal(err)
		}
		if extra {
			if err := os.WriteFile(filepath.Join(dir, "notes"), nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	dead, live, other := sock("dead", false, false), sock("live", true, false), sock("other", false, true)
	got := cleanup.SimDirs(tmp, "podstep-sim-", "podstep-run.json")
	if len(got) != 1 || got[0].Path != dead || !got[0].Removed {
		t.Fatalf("SimDirs = %+v, want only %s removed", got, dead)
	}
	for _, d := range []string{live, other} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s: %v (want it kept)", d, err)
		}
	}
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Errorf("%s still there (%v)", dead, err)
	}
}
