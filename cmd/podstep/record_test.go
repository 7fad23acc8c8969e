package main

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"github.com/podstep/podstep/internal/golden"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// readRecording returns a recording's bytes, gunzipped when it is gzip.
func readRecording(t *testing.T, path string) string {
	t.Helper()
	return string(golden.ReadFile(t, path))
}

// TestRecordReplay runs pods with --record on the simulated runtime and
// replays each recording: `replay --auto` prints exactly what the run
// printed, in JSON and in text, from plain and gzipped recordings, for
// running and failing pods; the replay exits 0.
func TestRecordReplay(t *testing.T) {
	for _, tc := range []struct {
		file   string
		format string
		gz     bool
		exit   int
	}{
		{"testdata/pods/hello.yaml", "json", false, 0},
		{"testdata/pods/init.yaml", "json", true, 0},
		{"testdata/pods/hooks.yaml", "text", false, 0},
		{"testdata/pods/volumes.yaml", "text", true, 0},
		{"internal/scenario/data/crashloop.yaml", "json", true, ExitPodFailed},
		{"internal/scenario/data/out-of-cpu.yaml", "text", false, ExitPodFailed},
	} {
		t.Run(filepath.Base(tc.file)+"-"+tc.format, func(t *testing.T) {
			root, logs := dirs(t)
			rec := filepath.Join(t.TempDir(), "run.rec")
			if tc.gz {
				rec += ".gz"
			}
			code, out, errOut := run(t, "run", "--auto", "--sim", "--no-color", "--grace-period", "0", "-o", tc.format,
				"--max-restarts", "1", "--backoff-scale", "0.001", "-f", "../../"+tc.file, "--root-dir", root, "--log-dir", logs, "--record", rec)
			if code != tc.exit {
				t.Fatalf("run: exit %d, want %d: %s\n%s", code, tc.exit, errOut, out)
			}
			readRecording(t, rec) // gzip exactly when named .gz
			rcode, rout, rerr := run(t, "replay", rec, "--auto", "-o", tc.format)
			if rcode != 0 {
				t.Fatalf("replay: exit %d: %s", rcode, rerr)
			}
			if rout != out {
				t.Errorf("replay printed something else than the run:\n%s", firstDiff(out, rout))
			}
			if !strings.Contains(rerr, "podstep: REPLAY of "+rec+": recorded ") || !strings.Contains(rerr, "SIMULATED") {
				t.Errorf("replay stderr %q lacks the REPLAY line", rerr)
			}
		})
	}
}

// firstDiff shows the first line where want and got differ.
func firstDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < max(len(w), len(g)); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return "line " + strconv.Itoa(i+1) + ":\n run:    " + wl + "\n replay: " + gl
		}
	}
	return "(no line differs)"
}

// TestRecordHidesSecrets records runs of pods whose Secret values reach the
// container by every path (env, envFrom, $(VAR) in args, env and a
// subPathExpr, a hook and the container's log that print them) and whose
// image is pulled with a registry password: neither the recording, plain
// or gunzipped, nor its replay holds any value, in clear or base64 (a
// short value too, where the pod spec has it literally as an env value).
// The header keeps the Secrets' keys, and the log line is there, masked.
func TestRecordHidesSecrets(t *testing.T) {
	const envValue, password, short = "TopSecretEnv-4411", "RegistryPw-9932", "Pw9!"
	auth := base64.StdEncoding.EncodeToString([]byte("bob:" + password))
	dockercfg := base64.StdEncoding.EncodeToString([]byte(`{"auths":{"registry.example:5000":{"username":"bob","password":"` + password + `","auth":"` + auth + `"}}}`))
	pull := writeTemp(t, "pull.yaml", `apiVersion: v1
kind: Secret
metadata:
  name: db
stringData:
  password: `+envValue+`
  short: "`+short+`"
---
apiVersion: v1
kind: Secret
metadata:
  name: regcred
  annotations:
    kubectl.kubernetes.io/last-applied-configuration: '{"data":{".dockerconfigjson":"`+dockercfg+`"}}'
type: kubernetes.io/dockerconfigjson
data:
  .dockerconfigjson: `+dockercfg+`
---
apiVersion: v1
kind: Pod
metadata:
  name: secrets
spec:
  imagePullSecrets:
  - name: regcred
  containers:
  - name: app
    image: registry.example:5000/team/app:1
    imagePullPolicy: Always
    command: ["sh", "-c", "echo db password is $DB_PASSWORD; sleep 3600"]
    env:
    - name: DB_PASSWORD
      valueFrom:
        secretKeyRef:
          name: db
          key: password
    - name: COPY
      value: `+envValue+`
    - name: SHORT_COPY
      value: "`+short+`"
`)
	forbidden := append(secretForms(expansionSecrets...), secretForms(envValue, password, "bob:"+password, short)...)
	forbidden = append(forbidden, dockercfg, auth)
	for _, tc := range []struct {
		file, rec string
		want      []string
	}{
		{"../../testdata/pods/secrets-expansion.yaml", "exp.rec", []string{
			`"data":{"password":"","pin":""}`, `"data":{"TOKEN":""}`,
			`"line":"app: connecting to postgres://u:\u003credacted\u003e@db with token \u003credacted\u003e"`,
			`"args":["checks","\u003credacted\u003e","--pin=\u003credacted\u003e"]`}},
		{"../../testdata/pods/secrets-expansion.yaml", "exp.rec.gz", nil},
		{pull, "pull.rec", []string{`"data":{".dockerconfigjson":""}`, `"name":"COPY","value":"\u003credacted\u003e"`, `"name":"SHORT_COPY","value":"\u003credacted\u003e"`,
			`"line":"db password is \u003credacted\u003e"`, `"username":"bob"`}},
		{pull, "pull.rec.gz", nil},
	} {
		t.Run(tc.rec, func(t *testing.T) {
			root, logs := dirs(t)
			rec := filepath.Join(t.TempDir(), tc.rec)
			code, stdout, stderr := run(t, "run", "--auto", "--sim", "--grace-period", "0", "-o", "json", "-f", tc.file,
				"--root-dir", root, "--log-dir", logs, "--record", rec)
			if code != 0 {
				t.Fatalf("exit %d: %s\n%s", code, stderr, stdout)
			}
			raw, _ := os.ReadFile(rec)
			text := readRecording(t, rec)
			_, replayed, replayErr := run(t, "replay", rec, "--auto", "-o", "json")
			_, replayedText, _ := run(t, "replay", rec, "--auto")
			assertNoSecrets(t, map[string]string{"recording file": string(raw), "recording": text,
				"replay -o json": replayed, "replay": replayedText, "replay stderr": replayErr}, forbidden)
			for _, w := range tc.want {
				if !strings.Contains(text, w) {
					t.Errorf("recording lacks %s", w)
				}
			}
		})
	}
}

// TestReplayBadFiles: what is not a recording is one error, exit 2, and
// nothing on stdout; a damaged recording replays up to the damage, then
// says at which line and byte, and why; exit 2.
func TestReplayBadFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	fixture, err := os.ReadFile("../../testdata/recordings/hello.v1.rec")
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(fixture, []byte{'\n'})
	cutAt := len(bytes.Join(lines[:20], nil))
	manifest, _ := os.ReadFile("../../testdata/pods/hello.yaml")
	for _, tc := range []struct {
		name, path string
		stderr     string // a regexp
		stdout     string // a line stdout must hold ("" = stdout empty)
	}{
		{"missing", filepath.Join(dir, "nope.rec"), `^error: replay \S+/nope.rec: open \S+: no such file or directory\n$`, ""},
		{"directory", dir, `^error: replay \S+: read recording: read \S+: is a directory\n$`, ""},
		{"empty", write("empty.rec", nil), `^error: replay \S+: not a podstep recording: the file is empty \(a recording starts with a line \{"type":"header",.*written by podstep run --record\)\n$`, ""},
		{"manifest", write("pod.yaml", manifest), `^error: replay \S+: not a podstep recording: line 1 is not a JSON object: it starts "# The simplest pod`, ""},
		{"png", write("x.png", []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")), `not a podstep recording: it starts with binary data`, ""},
		{"newer", write("new.rec", []byte(`{"type":"header","format":"podstep-recording","version":7}`+"\n")),
			`^error: replay \S+: recording format version 7 is newer than this podstep reads \(2 and older\): upgrade podstep\n$`, ""},
		{"cut", write("cut.rec", fixture[:cutAt+25]),
			`^error: replay \S+: line 21 \(byte ` + strconv.Itoa(cutAt) + `\): the file ends inside this line, after 25 bytes of it \(cut off\)\n$`, "admit"},
		{"killed", write("killed.rec", fixture[:cutAt]),
			`^error: replay \S+: line 21 \(byte ` + strconv.Itoa(cutAt) + `\): the recording ends without a summary line: the run did not finish writing it`, "admit"},
		{"corrupt", write("corrupt.rec", append(append(bytes.Join(lines[:20], nil), "\xff\xfegarbage\n"...), bytes.Join(lines[20:], nil)...)),
			`^error: replay \S+: line 21 \(byte ` + strconv.Itoa(cutAt) + `\): the line is not text`, "admit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := run(t, "replay", tc.path, "--auto")
			if code != ExitUsage {
				t.Errorf("exit %d, want 2", code)
			}
			stderr = regexp.MustCompile(`(?m)^podstep: REPLAY of .*\n`).ReplaceAllString(stderr, "")
			if !regexp.MustCompile(tc.stderr).MatchString(stderr) {
				t.Errorf("stderr %q, want it to match %q", stderr, tc.stderr)
			}
			if (tc.stdout == "") != (stdout == "") || !strings.Contains(stdout, tc.stdout) {
				t.Errorf("stdout %q, want it to hold %q", stdout, tc.stdout)
			}
		})
	}
}

// TestRecordBadPath: a --record file that cannot be made, or that is the
// manifest, is bad usage, before any runtime is contacted (the endpoint
// named does not exist: contacting it would be exit 3), and the manifest
// is kept; a run that ends before it begins (the runtime is unreachable)
// leaves no recording.
func TestRecordBadPath(t *testing.T) {
	root, logs := dirs(t)
	code, _, errOut := run(t, "run", "--auto", "-f", "../../testdata/pods/hello.yaml", "-r", "unix:///nonexistent/podstep.sock",
		"--root-dir", root, "--log-dir", logs, "--record", "/nonexistent/dir/run.rec")
	if code != ExitUsage || !strings.Contains(errOut, "error: --record /nonexistent/dir/run.rec: create recording: open /nonexistent/dir/run.rec: no such file or directory") {
		t.Errorf("exit %d, stderr %q; want 2 and the --record error", code, errOut)
	}
	manifest := filepath.Join(t.TempDir(), "pod.yaml")
	orig, _ := os.ReadFile("../../testdata/pods/hello.yaml")
	if err := os.WriteFile(manifest, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = run(t, "run", "--auto", "-f", manifest, "-r", "unix:///nonexistent/podstep.sock",
		"--root-dir", root, "--log-dir", logs, "--record", manifest)
	if now, _ := os.ReadFile(manifest); code != ExitUsage || !strings.Contains(errOut, "that is the manifest (-f)") || !bytes.Equal(now, orig) {
		t.Errorf("--record naming the manifest: exit %d, stderr %q, manifest kept %v", code, errOut, bytes.Equal(now, orig))
	}
	rec := filepath.Join(t.TempDir(), "run.rec")
	code, _, errOut = run(t, "run", "--auto", "-f", "../../testdata/pods/hello.yaml", "-r", "unix:///nonexistent/podstep.sock",
		"--root-dir", root, "--log-dir", logs, "--record", rec)
	if code != ExitRuntime {
		t.Errorf("exit %d (%s), want 3", code, errOut)
	}
	if _, err := os.Stat(rec); !os.IsNotExist(err) {
		t.Errorf("a recording is left after an unreachable runtime: %v", err)
	}
}

// TestRecordKilled kills podstep (SIGKILL) while a StartContainer is in
// flight: the recording, plain or gzipped, reads up to that call, and its
// replay prints the steps done, then says the summary is missing; exit 2.
func TestRecordKilled(t *testing.T) {
	for _, name := range []string{"killed.rec", "killed.rec.gz"} {
		t.Run(name, func(t *testing.T) {
			root, logs := dirs(t)
			f := slowPod(t, map[string]string{"StartContainer": "20s"})
			rec := filepath.Join(t.TempDir(), name)
			var killed, sent bool
			res := stream(t, time.Minute, func(p *exec.Cmd, line string) {
				if killed || !strings.Contains(line, "create") {
					return
				}
				// The create step is printed: wait for the StartContainer line.
				for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
					if sent = strings.Contains(readPartial(rec), `"type":"call-sent","step":10,"method":"StartContainer"`); sent {
						break
					}
				}
				if err := p.Process.Kill(); err != nil {
					t.Errorf("SIGKILL: %v", err)
				}
				killed = true
			}, "run", "--auto", "--sim", "-f", f, "--grace-period", "0", "--root-dir", root, "--log-dir", logs, "--record", rec)
			if !killed || !sent {
				t.Fatalf("killed %v, StartContainer in the recording %v (exit %d):\n%s", killed, sent, res.code, readPartial(rec))
			}

			code, out, errOut := run(t, "replay", rec, "--auto", "--no-color")
			if code != ExitUsage {
				t.Errorf("replay exit %d, want 2", code)
			}
			if !strings.Contains(out, "9 containers") || strings.Contains(out, "10 containers") || strings.Contains(out, "pod/default/slow") {
				t.Errorf("replay printed:\n%s\nwant steps 1 to 9 and no summary", out)
			}
			if !regexp.MustCompile(`error: replay \S+: line \d+ \(byte \d+\): the recording ends without a summary line`).MatchString(errOut) {
				t.Errorf("stderr %q", errOut)
			}
		})
	}
}

// readPartial reads a recording being written (a gzip stream not closed yet).
func readPartial(path string) string {
	data, _ := os.ReadFile(path)
	if bytes.HasPrefix(data, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return ""
		}
		data, _ = io.ReadAll(zr)
	}
	return string(data)
}

// TestReplayFixtures replays the checked-in recordings (format v1) in JSON,
// which must be their start, step and summary lines byte for byte, and in
// text, against golden files.
func TestReplayFixtures(t *testing.T) {
	files, _ := filepath.Glob("../../testdata/recordings/*.rec*")
	older, _ := filepath.Glob("../../testdata/recordings/containerd-1.6/*.rec*")
	if len(files) < 2 || len(older) < 2 {
		t.Fatalf("recordings: %v %v", files, older)
	}
	for _, f := range append(files, older...) {
		prefix := ""
		if filepath.Base(filepath.Dir(f)) == "containerd-1.6" {
			prefix = "containerd-1.6-"
		}
		t.Run(prefix+filepath.Base(f), func(t *testing.T) {
			var want []string
			for _, l := range strings.Split(strings.TrimSpace(readRecording(t, f)), "\n") {
				if regexp.MustCompile(`^\{"(type":"(step|summary)"|pod":)`).MatchString(l) {
					want = append(want, l)
				}
			}
			code, out, errOut := run(t, "replay", f, "--auto", "-o", "json")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			if got := strings.TrimSpace(out); got != strings.Join(want, "\n") {
				t.Errorf("replay -o json differs from the recorded lines:\n%s", firstDiff(strings.Join(want, "\n"), got))
			}
			code, out, errOut = run(t, "replay", f, "--auto", "--no-color")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			checkGolden(t, "replay-"+prefix+strings.TrimSuffix(strings.TrimSuffix(filepath.Base(f), ".gz"), ".rec")+".text", out)
		})
	}
}
