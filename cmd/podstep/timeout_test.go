package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestTimeoutBench runs `bench --sim` under coreutils timeout 60 times, the
// deadlines spread over the whole run (start, pods in creation, teardown).
// timeout sends SIGTERM to podstep and again to its process group: that is
// one interrupt, so every run tears its pods down (issue 25: 10 of 60 left
// pod dirs when the copy counted as a second interrupt).
func TestTimeoutBench(t *testing.T) {
	timeout, err := exec.LookPath("timeout")
	if err != nil {
		t.Fatal("coreutils timeout is needed: ", err)
	}
	const runs, parallel = 60, 4
	var (
		mu       sync.Mutex
		failures []string
		codes    = map[int]int{}
		wg       sync.WaitGroup
		next     = make(chan int)
	)
	for range parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				msg, code := timeoutBenchOnce(t, timeout, i)
				mu.Lock()
				codes[code]++
				if msg != "" {
					failures = append(failures, fmt.Sprintf("run %d: %s", i, msg))
				}
				mu.Unlock()
			}
		}()
	}
	for i := range runs {
		next <- i
	}
	close(next)
	wg.Wait()
	t.Logf("exit codes over %d runs: %v", runs, codes)
	if len(failures) > 0 {
		t.Errorf("%d of %d runs under timeout did not tear down:\n%s", len(failures), runs, strings.Join(failures, "\n"))
	}
}

// timeoutBenchOnce is one run; it says what is wrong ("" for nothing).
func timeoutBenchOnce(t *testing.T, timeout string, i int) (string, int) {
	d := t.TempDir()
	root, logs := filepath.Join(d, "root"), filepath.Join(d, "logs")
	after := 150*time.Millisecond + time.Duration(i%12)*100*time.Millisecond // 0.15 s … 1.25 s
	cmd := exec.Command(timeout, "--preserve-status", fmt.Sprintf("%.2f", after.Seconds()),
		bin, "bench", "--sim", "-f", "../../testdata/pods/hello.yaml", "-n", "20", "--warmup", "0", "--concurrency", "4",
		"--grace-period", "0", "--root-dir", root, "--log-dir", logs)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	_ = cmd.Run() // its exit code is checked below
	code := cmd.ProcessState.ExitCode()
	var bad []string
	switch code {
	case ExitOK, ExitInterrupted, 128 + 15: // finished first; interrupted and torn down
	default:
		bad = append(bad, fmt.Sprintf("exit %d", code))
	}
	if strings.Contains(stderr.String(), "interrupted again") {
		bad = append(bad, "a second interrupt")
	}
	for _, dir := range []string{filepath.Join(root, "pods"), logs} {
		if ents, _ := os.ReadDir(dir); len(ents) > 0 {
			bad = append(bad, fmt.Sprintf("%d entries left in %s", len(ents), dir))
		}
	}
	if len(bad) == 0 {
		return "", code
	}
	return fmt.Sprintf("timeout %s: %s; stderr: %s", after, strings.Join(bad, ", "), lastLine(stderr.String())), code
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}
