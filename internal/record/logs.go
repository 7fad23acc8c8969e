package record

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podstep/podstep/internal/steps"
)

// maxLogRead bounds what is read of one container's log after one step: a
// container that writes faster is recorded from the last maxLogRead bytes
// (the TUI too shows a log's end), with a line saying what was skipped.
const maxLogRead = 1 << 20

// logTail follows one container's current log file.
type logTail struct {
	path    string
	attempt int
	offset  int64
}

// Bounds of reading the logs of a pod of many containers: its containers'
// logs are all read after a step at most every logScanEvery (and after
// every teardown step), the step's own container's after every step. Each
// read of a log is an open and a stat: after every step, for every
// container, a recording of 1,000 containers made 3 million (issue 34).
const (
	logScanAll   = 64 // up to this many containers, all logs after every step
	logScanEvery = 100 * time.Millisecond
)

// readLogs records the lines the pod's containers wrote to their CRI logs
// since the last step, masked as the TUI masks them. A container's log file
// changes with each restart (<attempt>.log): the old one is read to its end
// first. Missing files (not started yet, removed at teardown) are skipped.
// A pod of more than logScanAll containers has only the step's own
// container's log read after most steps (s.Container), all of them every
// logScanEvery and after teardown steps: a line may be recorded a few steps
// after the one it was written in.
func (r *Recorder) readLogs(s *steps.Step) {
	pod := r.src.Pod()
	all := len(pod.Spec.InitContainers)+len(pod.Spec.Containers) <= logScanAll || s.Stage == steps.StageTeardown
	if now := r.now(); all || now.Sub(r.logScan) >= logScanEvery {
		all, r.logScan = true, now
	}
	step := s.ID
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			name := list[i].Name
			if !all && name != s.Container {
				continue
			}
			path := r.src.ContainerLogPath(name)
			t := r.logs[name]
			if t != nil && t.path != path {
				r.readLog(step, name, t)
				t = nil
			}
			if path == "" {
				delete(r.logs, name)
				continue
			}
			if t == nil {
				t = &logTail{path: path, attempt: attemptOf(path)}
				r.logs[name] = t
			}
			r.readLog(step, name, t)
		}
	}
}

// readLog writes the complete lines added to t's file since its offset.
func (r *Recorder) readLog(step int, name string, t *logTail) {
	f, err := os.Open(t.path)
	if err != nil {
		return
	}
	defer func() { _ = f.Close() }() // read-only
	fi, err := f.Stat()
	if err != nil || fi.Size() <= t.offset {
		return
	}
	n := fi.Size() - t.offset
	skipped := int64(0)
	if n > maxLogRead {
		skipped = n - maxLogRead
		t.offset += skipped
		n = maxLogRead
	}
	buf := make([]byte, n)
	got, err := f.ReadAt(buf, t.offset)
	if err != nil && err != io.EOF {
		return
	}
	buf = buf[:got]
	if skipped > 0 {
		// Start at the first whole line.
		cut := bytes.IndexByte(buf, '\n') + 1
		skipped += int64(cut)
		t.offset += int64(cut)
		buf = buf[cut:]
		r.line(Log{Type: TypeLog, Step: step, Container: name, Attempt: t.attempt,
			Line: fmt.Sprintf("[podstep: %d bytes of this log skipped]", skipped)})
	}
	end := bytes.LastIndexByte(buf, '\n')
	if end < 0 {
		return // no complete line yet
	}
	t.offset += int64(end + 1)
	for _, l := range bytes.Split(buf[:end], []byte{'\n'}) {
		lg := parseCRILog(string(l))
		lg.Type, lg.Step, lg.Container, lg.Attempt = TypeLog, step, name, t.attempt
		lg.Line = r.red.Text(lg.Line)
		r.line(lg)
	}
}

// parseCRILog splits a CRI log line, "TIME STREAM TAG MESSAGE" (TAG F for a
// full line, P for a part); other lines are kept whole.
func parseCRILog(l string) Log {
	f := strings.SplitN(l, " ", 4)
	if len(f) < 3 || (f[1] != "stdout" && f[1] != "stderr") {
		return Log{Line: l}
	}
	lg := Log{Time: f[0], Stream: f[1], Partial: strings.HasPrefix(f[2], "P")}
	if len(f) == 4 {
		lg.Line = f[3]
	}
	return lg
}

// attemptOf reads the attempt from a log file named <attempt>.log.
func attemptOf(path string) int {
	n, _ := strconv.Atoi(strings.TrimSuffix(filepath.Base(path), ".log"))
	return n
}
