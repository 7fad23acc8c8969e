//go:build integration

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/podstep/podstep/internal/golden"
	"github.com/podstep/podstep/internal/record"
)

// TestRecordReplayOnContainerd records a run of the init pod on the
// harness containerd (-o json, --record FILE.gz), then replays the file as
// a user who is not root (nobody), with no environment and no network at
// all (a network namespace of its own), as a laptop without a runtime
// would: `replay --auto -o json` prints the run's JSON, line for line. The
// recording names containerd in its header and holds the app's log line.
func TestRecordReplayOnContainerd(t *testing.T) {
	e := setup(t)
	share, rec, r := e.recordInit(t)

	text := gunzip(t, rec)
	var h struct {
		Version int `json:"version"`
		Runtime struct {
			Name      string `json:"name"`
			Endpoint  string `json:"endpoint"`
			Simulated bool   `json:"simulated"`
		} `json:"runtime"`
	}
	if err := json.Unmarshal([]byte(text[:strings.IndexByte(text, '\n')]), &h); err != nil {
		t.Fatalf("header: %v", err)
	}
	if h.Version != record.Version || h.Runtime.Name != "containerd" || h.Runtime.Simulated || h.Runtime.Endpoint != e.endpoint {
		t.Errorf("header: version %d, runtime %+v; want %d and containerd at %s", h.Version, h.Runtime, record.Version, e.endpoint)
	}
	if !strings.Contains(text, `"type":"log","step":`) || !strings.Contains(text, `"container":"app","attempt":0,`) ||
		!strings.Contains(text, `"stream":"stdout","line":"ready"}`) {
		t.Errorf("the recording lacks the app's log line \"ready\"")
	}

	out, errOut, code := asNobody(t, share, "replay", rec, "--auto", "-o", "json")
	if code != 0 {
		t.Fatalf("replay as nobody: exit %d: %s", code, errOut)
	}
	if out != r.stdout {
		want, got := strings.Split(r.stdout, "\n"), strings.Split(out, "\n")
		for i := range max(len(want), len(got)) {
			if i >= len(want) || i >= len(got) || want[i] != got[i] {
				t.Fatalf("replay -o json differs from the run at line %d of %d/%d:\n run:    %.300s\n replay: %.300s",
					i+1, len(want), len(got), at(want, i), at(got, i))
			}
		}
	}
	if !strings.Contains(errOut, "podstep: REPLAY of "+rec+": recorded ") || !strings.Contains(errOut, "containerd") {
		t.Errorf("replay stderr %q lacks the REPLAY line naming containerd", errOut)
	}
}

// TestRecordTUIOnContainerd records an interactive run: the TUI in tmux,
// `c` to the end, q and Enter to tear down. The recording says it was
// interactive and replays (as nobody) with every creation and teardown
// step and a summary of a running pod.
func TestRecordTUIOnContainerd(t *testing.T) {
	e := setup(t)
	d := newDirs(t)
	share := sharedDir(t)
	rec := filepath.Join(share, "tui.rec")
	tui := startTUI(t, "podstep-record-it", 100, 30, e.bin, "run", "-f", e.pod("hello"), "-r", e.endpoint, "--grace-period", "0",
		"--root-dir", d.root, "--log-dir", d.logs, "--record", rec)
	tui.waitFor("the first screen", func(f string) bool { return strings.Contains(f, "1 admit") })
	tui.key("c")
	tui.waitFor("the pod to run", func(f string) bool { return strings.Contains(f, "plan 11/11") && strings.Contains(f, "Running") })
	tui.quitWithTeardown()
	if err := os.Chmod(rec, 0o644); err != nil {
		t.Fatal(err)
	}
	text := gunzip(t, rec)
	if !strings.Contains(text[:strings.IndexByte(text, '\n')], `"interactive":true`) {
		t.Errorf("the header does not say interactive")
	}
	out, errOut, code := asNobody(t, share, "replay", rec, "--auto", "-o", "json")
	if code != 0 {
		t.Fatalf("replay as nobody: exit %d: %s", code, errOut)
	}
	r := &result{args: []string{"replay"}, stdout: out, stderr: errOut}
	r.parseJSON(t)
	if len(r.steps) != 16 || r.step("start/hello") == nil || r.step("remove-dirs") == nil {
		t.Errorf("replayed %d steps, want 11 creation and 5 teardown steps\n%s", len(r.steps), r)
	}
	if r.summary == nil || r.summary.Outcome != "running" || r.summary.ExitCode != 0 || r.summary.Kept {
		t.Errorf("summary %+v, want a running pod, torn down", r.summary)
	}
}

// TestRecordHidesSecretsOnContainerd records, on containerd, the pod whose
// Secret values reach the container by every path (and whose log and hook
// print them), and a pull from the harness registry with a pull secret and
// a wrong one (the registry's 401 quoted in the error): no recording, plain
// or gunzipped, nor its replay, holds a Secret value or the password, in
// clear or base64.
func TestRecordHidesSecretsOnContainerd(t *testing.T) {
	e, reg := setupRegistry(t)
	share := sharedDir(t)
	check := func(t *testing.T, rec string, secrets []string) {
		raw, err := os.ReadFile(rec)
		if err != nil {
			t.Fatal(err)
		}
		assertNoSecret(t, "recording file", string(raw), secrets)
		assertNoSecret(t, "recording", gunzip(t, rec), secrets)
		for _, format := range []string{"json", "text"} {
			r := e.podstep(t, "replay", rec, "--auto", "-o", format)
			if r.code != 0 {
				t.Fatalf("replay: exit %d\n%s", r.code, r)
			}
			assertNoSecret(t, "replay -o "+format, r.stdout+r.stderr, secrets)
		}
	}
	t.Run("secrets-expansion", func(t *testing.T) {
		rec := filepath.Join(share, "secrets.rec.gz")
		r := e.mustRun(t, newDirs(t), e.pod("secrets-expansion"), "--record", rec)
		assertNoSecret(t, "run", r.stdout, expansionSecrets())
		check(t, rec, expansionSecrets())
		if text := gunzip(t, rec); !strings.Contains(text, `"line":"app: connecting to postgres://u:\u003credacted\u003e@db with token \u003credacted\u003e"`) {
			t.Errorf("the recording lacks the app's log line, masked")
		}
	})
	for _, c := range []pullCase{
		{name: "right", key: reg.addr, user: reg.user, password: reg.password, refSecret: true, policy: "Always"},
		{name: "wrong", key: reg.addr, user: reg.user, password: "Wrong-" + reg.password + "-Pw", refSecret: true, policy: "Always"},
	} {
		t.Run("pull-"+c.name, func(t *testing.T) {
			m := writePullManifest(t, reg, c)
			rec := filepath.Join(share, "pull-"+c.name+".rec")
			r := e.run(t, newDirs(t), m.path, "--record", rec)
			if (c.name == "right") != (r.code == 0) {
				t.Fatalf("exit %d\n%s", r.code, r)
			}
			check(t, rec, append(m.secrets, reg.password))
		})
	}
}

// sharedDir is a directory any user can read, for the binary and the
// recording (t.TempDir is root's own).
func sharedDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "podstep-record-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// recordInit runs the init pod on the harness containerd with --record into
// a fresh dir that user nobody can read, checks nothing is left, and
// returns the dir, the recording (.gz) and the run.
func (e *env) recordInit(t *testing.T) (share, rec string, r *result) {
	t.Helper()
	d := newDirs(t)
	share = sharedDir(t)
	rec = filepath.Join(share, "init.rec.gz")
	r = e.mustRun(t, d, e.pod("init"), "--record", rec)
	e.assertNothingLeft(t, d, "default", "init-demo", r.summary.UID)
	if err := os.Chmod(rec, 0o644); err != nil {
		t.Fatal(err)
	}
	return share, rec, r
}

// nobodyBinary copies the podstep binary under test into dir (once), where
// user nobody can run it, and returns its path.
func nobodyBinary(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "podstep")
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	data, err := os.ReadFile(os.Getenv("PODSTEP_BIN"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

// asNobody runs a copy of the podstep binary (in dir) as user and group
// 65534 with no supplementary groups, an empty environment (no
// CONTAINER_RUNTIME_ENDPOINT) and a network namespace of its own (no
// network at all).
func asNobody(t *testing.T, dir string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	bin := nobodyBinary(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmdline := append([]string{"--net", "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--", bin}, args...)
	cmd := exec.CommandContext(ctx, "unshare", cmdline...)
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("unshare setpriv podstep: %v", err)
	}
	return out.String(), errb.String(), code
}

// gunzip reads a recording, gunzipped if it is gzip.
func gunzip(t *testing.T, path string) string {
	t.Helper()
	return string(golden.ReadFile(t, path))
}

func at(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return "(none)"
}
