package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// slowPod writes a one-container pod, "slow", whose simulated CRI calls
// named in delays take that long.
func slowPod(t *testing.T, delays map[string]string) string {
	t.Helper()
	ann := map[string]string{}
	for m, d := range delays {
		ann["sim.podstep.dev/delay."+m] = d
	}
	return simPod(t, "slow", ann)
}

// simPod writes a one-container pod (app: busybox, sleep 3600) with the
// annotations given (the simulated runtime's delays and errors).
func simPod(t *testing.T, name string, annotations map[string]string) string {
	t.Helper()
	var ann strings.Builder
	for k, v := range annotations {
		ann.WriteString("    " + k + ": \"" + v + "\"\n")
	}
	return writeTemp(t, name+".yaml", `apiVersion: v1
kind: Pod
metadata:
  name: `+name+`
  annotations:
`+ann.String()+`spec:
  containers:
  - name: app
    image: docker.io/library/busybox:1.35
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
`)
}

// writeTemp writes content to a file name in a temporary dir of t's.
func writeTemp(t *testing.T, name, content string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(f, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestSecondInterruptAbandonsTeardown: a second SIGINT while teardown waits
// for StopContainer (10 s on the simulated runtime here) ends podstep at
// once, lists what is left and exits 4; nothing claims "torn down".
func TestSecondInterruptAbandonsTeardown(t *testing.T) {
	root, logs := dirs(t)
	f := slowPod(t, map[string]string{"StopContainer": "10s"})
	var second time.Time
	res := stream(t, time.Minute, func(p *exec.Cmd, line string) {
		var st struct{ Name string }
		if json.Unmarshal([]byte(line), &st) == nil && st.Name == "start/app" && second.IsZero() {
			if err := p.Process.Signal(syscall.SIGINT); err != nil {
				t.Errorf("first SIGINT: %v", err)
			}
			time.Sleep(300 * time.Millisecond) // teardown is in StopContainer now
			if err := p.Process.Signal(syscall.SIGINT); err != nil {
				t.Errorf("second SIGINT: %v", err)
			}
			second = time.Now()
		}
	}, "run", "--auto", "--sim", "-o", "json", "-f", f, "--grace-period", "0", "--root-dir", root, "--log-dir", logs)
	if second.IsZero() {
		t.Fatalf("never reached start/app; stderr %s", res.stderr)
	}
	if took := time.Since(second); took > 2*time.Second {
		t.Errorf("podstep took %s to exit after the second SIGINT", took.Round(time.Millisecond))
	}
	if res.code != ExitLeftBehind {
		t.Errorf("exit = %d, want %d", res.code, ExitLeftBehind)
	}
	podDir := filepath.Join(root, "pods")
	ents, _ := os.ReadDir(podDir)
	for _, want := range []string{"teardown abandoned; left: sandbox ", ", container app ", "dir " + podDir + "/", "run `podstep cleanup`"} {
		if !strings.Contains(res.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, res.stderr)
		}
	}
	if strings.Contains(res.stderr, "torn down") {
		t.Errorf("stderr says torn down:\n%s", res.stderr)
	}
	if len(ents) != 1 {
		t.Errorf("pod dirs %v, want the one left behind", ents)
	}
}

// TestStdoutReaderGone: when whoever reads stdout goes away (`| head`),
// podstep notices (the pipe's POLLERR, or the next write's EPIPE) and tears
// the pod down, rather than dying of SIGPIPE with the pod left behind; and
// ends quietly with exit 0, as a reader that read what it wanted is no
// failure (`set -o pipefail` scripts reading the first lines go on).
func TestStdoutReaderGone(t *testing.T) {
	root, logs := dirs(t)
	f := slowPod(t, map[string]string{"StartContainer": "500ms"})
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "run", "--auto", "--sim", "-f", f, "--grace-period", "0", "--root-dir", root, "--log-dir", logs)
	cmd.Stdout = w
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil {
		t.Fatalf("first line: %v", err)
	}
	r.Close() // the reader leaves after one line, as `head -1` does
	err = cmd.Wait()
	if !strings.HasPrefix(line, "podstep: pod default/slow") {
		t.Errorf("first line %q", line)
	}
	if err != nil {
		t.Errorf("exit = %v, want 0 (stdout closed, torn down); stderr %s", err, stderr.String())
	}
	if strings.Contains(stderr.String(), "interrupted") {
		t.Errorf("stderr = %q, want no interrupt said", stderr.String())
	}
	assertEmpty(t, filepath.Join(root, "pods"))
	assertEmpty(t, logs)
}
