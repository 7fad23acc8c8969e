package mark

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/podstep/podstep/internal/rmtree"
)

// Holder is the podstep process that made a directory: the marker records
// it, so that a second run of the same pod (the same UID, the same pod dir)
// can say which process holds it, and `podstep cleanup` can tell a pod dir
// still in use from one whose run has ended.
type Holder struct {
	PID int `json:"pid,omitempty"`
	// Start is the process's start time in clock ticks since boot
	// (/proc/PID/stat field 22): with PID, it names the process even after
	// the PID is reused.
	Start uint64 `json:"start,omitempty"`
	// Cmd is the process's command line, at most maxCmd bytes.
	Cmd string `json:"cmd,omitempty"`
	// Since is when it made the directory.
	Since time.Time `json:"since,omitzero"`
	// Runtime is the CRI endpoint the pod runs on ("" unknown); Simulated:
	// podstep's simulated runtime, which ends with the process.
	Runtime   string `json:"runtime,omitempty"`
	Simulated bool   `json:"simulated,omitempty"`
}

const maxCmd = 160

// Self is this process as a holder, on runtime.
func Self(runtime string, simulated bool) Holder {
	h := Holder{PID: os.Getpid(), Start: StartTime(os.Getpid()), Since: time.Now().UTC().Truncate(time.Second),
		Runtime: runtime, Simulated: simulated}
	h.Cmd = strings.Join(append([]string{filepath.Base(os.Args[0])}, os.Args[1:]...), " ")
	if len(h.Cmd) > maxCmd {
		h.Cmd = h.Cmd[:maxCmd] + "…"
	}
	return h
}

// Alive reports whether the holder process still runs: its PID exists and
// started when the record says (a reused PID is another process).
func (h Holder) Alive() bool {
	if h.PID <= 0 {
		return false
	}
	st := StartTime(h.PID)
	return st != 0 && (h.Start == 0 || st == h.Start)
}

// String names the holder for messages: "podstep PID 1234 (podstep run
// --auto -f pod.yaml) since 23:08:01 UTC".
func (h Holder) String() string {
	if h.PID == 0 {
		return "an unknown process (its marker records none)"
	}
	s := fmt.Sprintf("PID %d", h.PID)
	if h.Cmd != "" {
		s += fmt.Sprintf(" (%s)", h.Cmd)
	}
	if !h.Since.IsZero() {
		s += " since " + h.Since.UTC().Format("2006-01-02 15:04:05 UTC")
	}
	return s
}

// startTime is /proc/PID/stat's starttime (0: no such process).
func StartTime(pid int) uint64 {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// The command (field 2) is in parentheses and may hold spaces: count
	// the fields after its closing parenthesis (field 3 is the first).
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return 0
	}
	v, _ := strconv.ParseUint(f[19], 10, 64) // field 22
	return v
}

// ReadHolder reads the holder recorded in dir's marker (no link, at most
// MaxSize bytes). A marker written before podstep recorded holders gives
// a zero Holder; an error wrapping fs.ErrNotExist: dir holds no marker.
func ReadHolder(dir string) (Holder, error) {
	d, err := rmtree.Open(dir)
	if err != nil {
		return Holder{}, err
	}
	defer func() { _ = d.Close() }()
	return ReadHolderAt(d)
}

// ReadHolderAt is ReadHolder on an open directory.
func ReadHolderAt(d *rmtree.Dir) (Holder, error) {
	rec, err := readAt(d)
	return rec.Holder, err
}
