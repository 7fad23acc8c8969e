package diff

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/podstep/podstep/internal/record"
	"github.com/podstep/podstep/internal/steps"
)

// A kubelet CRI trace is the text format of the reference traces of a real
// kubelet (testdata/kubelet-traces/*.calls.txt): per phase (CREATE, then
// TEARDOWN) a "# NAME: PHASE phase" title, its t0 as an epoch, then one
// "+ OFFSETms [DURATIONms] Method args -> result" line per call with the
// main request fields indented under the calls that make something.
// List polling is left out of the traces (folded into [polling: …] lines).
//
// ReadTrace rebuilds what it can of each call as a recording's call: the
// request, in protobuf JSON, from the args and the indented fields, so that
// the same decoding and normalisation apply; the response from "-> sandbox=
// / container=" (the IDs the later calls name). The trace shows a part of
// each request only: a Recording read from one is Partial, and only the
// fields it has are compared.

// TraceSuffix ends the file name of a kubelet CRI trace.
const TraceSuffix = ".calls.txt"

// TraceManifest is the manifest of the trace at path: NAME.yaml beside
// NAME.calls.txt, or "" for a trace named otherwise. It is derived from
// the path the user gave, never from the trace's content: a title such as
// "# ../../etc/x: CREATE phase" names no file (issue 25).
func TraceManifest(path string) string {
	base := filepath.Base(path)
	name, ok := strings.CutSuffix(base, TraceSuffix)
	if !ok || name == "" || strings.HasPrefix(name, ".") {
		return ""
	}
	return filepath.Join(filepath.Dir(path), name+".yaml")
}

// MaxTraceLine bounds one line of a kubelet CRI trace.
const MaxTraceLine = 4 << 20

// IsTrace says whether data starts like a kubelet CRI trace.
func IsTrace(data []byte) bool {
	line, _, _ := bytes.Cut(data, []byte{'\n'})
	return traceTitle().Match(line)
}

var (
	traceTitle = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^# (\S+): (CREATE|TEARDOWN) phase`) })
	traceEpoch = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^# t0 .*= epoch ([0-9.]+)`) })
	traceCall  = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^\+\s+([0-9.]+)ms\s+\[\s*([0-9.]+)ms\]\s+(\w+)\s*(.*)$`)
	})
	traceErr  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`!! ERR (\w+):`) })
	traceArg  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(\w+(?:\.\w+)?)=('[^']*'|\{.*\}|\S+)`) })
	traceName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\w+=\S+ \(([^)]+)\)`) })
)

// traceCall is one call being rebuilt.
type tcall struct {
	c      *Call
	req    map[string]any
	config map[string]any // the indented fields go here
}

// ReadTrace reads a kubelet CRI trace. The kubelet's periodic node-level
// calls (Version and Status after the pod's first call) are left out, as
// the trace leaves out its List polling: they are not about the pod.
func ReadTrace(name string, r io.Reader) (*Recording, error) {
	rec := &Recording{Name: name, Partial: true}
	rec.Header.Format = "kubelet CRI trace"
	rec.Header.Podstep = "none: a kubelet's CRI trace"
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), MaxTraceLine)
	var (
		stage       steps.Stage
		t0          time.Time
		cur         *tcall
		sandboxConf map[string]any
		inMounts    bool
		podSeen     bool
		lineNo      int
	)
	finish := func() error {
		if cur == nil {
			return nil
		}
		if cur.c.Method == "RunPodSandbox" {
			sandboxConf = cur.config
		}
		if cur.c.Method == "CreateContainer" && cur.req["sandbox_config"] == "same" {
			cur.req["sandbox_config"] = sandboxConf
		}
		b, err := json.Marshal(cur.req)
		if err != nil {
			return fmt.Errorf("%s: line %d: %w", name, lineNo, err)
		}
		cur.c.Request = b
		rec.Calls = append(rec.Calls, cur.c)
		cur = nil
		if len(rec.Calls) > MaxCalls {
			return tooManyCalls(name)
		}
		return nil
	}
	for sc.Scan() {
		lineNo++
		line := strings.TrimRight(sc.Text(), " ")
		switch {
		case traceTitle().MatchString(line):
			if err := finish(); err != nil {
				return nil, err
			}
			m := traceTitle().FindStringSubmatch(line)
			stage = steps.StageSandbox
			if m[2] == "TEARDOWN" {
				stage = steps.StageTeardown
			}
			if rec.Header.Manifest.File == "" {
				rec.Header.Manifest.File = m[1]
			}
		case traceEpoch().MatchString(line):
			f, _ := strconv.ParseFloat(traceEpoch().FindStringSubmatch(line)[1], 64)
			sec, frac := math.Modf(f)
			t0 = time.Unix(int64(sec), int64(frac*1e9)).UTC()
			if rec.Header.Recorded.IsZero() {
				rec.Header.Recorded = t0
			}
		case traceCall().MatchString(line):
			if err := finish(); err != nil {
				return nil, err
			}
			inMounts = false
			m := traceCall().FindStringSubmatch(line)
			off, _ := strconv.ParseFloat(m[1], 64)
			dur, _ := strconv.ParseFloat(m[2], 64)
			if off > record.MaxMs || dur > record.MaxMs {
				return nil, fmt.Errorf("%s: line %d: offset %sms, duration %sms: expected at most %.0f ms each", name, lineNo, m[1], m[2], record.MaxMs)
			}
			method, rest := m[3], m[4]
			if !podSeen && method == "RunPodSandbox" {
				podSeen = true
			}
			if podSeen && (method == "Version" || method == "Status") {
				continue
			}
			args, result, _ := strings.Cut(rest, " -> ")
			if method == "Version" && rec.Header.Runtime.Name == "" {
				if f := strings.Fields(result); len(f) >= 2 {
					rec.Header.Runtime.Name, rec.Header.Runtime.Version = f[0], f[1]
				}
			}
			c := &Call{Method: method, Code: "OK", Count: 1, Started: t0.Add(time.Duration(off * float64(time.Millisecond))),
				DurationMs: dur, Stage: stage, Step: lineNo, StepName: "(trace)"}
			if e := traceErr().FindStringSubmatch(rest); e != nil {
				c.Code = e[1]
			}
			if n := traceName().FindStringSubmatch(args); n != nil && strings.HasPrefix(args, "container=") {
				c.Container = n[1]
			}
			if method == "CreateContainer" {
				if n := regexp.MustCompile(` name=(\S+)`).FindStringSubmatch(args); n != nil {
					c.Container = n[1]
				}
			}
			cur = &tcall{c: c, req: map[string]any{}, config: map[string]any{}}
			cur.request(args, rest)
			cur.response(result)
			if stage == steps.StageSandbox {
				switch method {
				case "ImageStatus", "PullImage", "CreateContainer", "StartContainer":
					c.Stage = steps.StageContainers
				}
			}
			if method == "StartContainer" && stage == steps.StageSandbox {
				// What follows in the creation phase is the relist and
				// the statuses after the starts.
				stage = steps.StageContainers
			}
		case cur != nil && strings.HasPrefix(line, "      - ") && inMounts:
			cpath, hpath, _ := strings.Cut(strings.TrimPrefix(line, "      - "), " <- ")
			hpath, _, _ = strings.Cut(hpath, " ")
			mounts, _ := cur.config["mounts"].([]any)
			cur.config["mounts"] = append(mounts, map[string]any{"container_path": cpath, "host_path": hpath})
		case cur != nil && strings.HasPrefix(line, "    ") && !strings.HasPrefix(line, "     "):
			inMounts = strings.HasPrefix(line, "    mounts (")
			if !inMounts {
				cur.detail(strings.TrimSpace(line))
			}
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("%s: line %d: longer than %d MiB: not a kubelet CRI trace line", name, lineNo+1, MaxTraceLine>>20)
		}
		return nil, fmt.Errorf("%s: line %d: %w", name, lineNo+1, err)
	}
	if err := finish(); err != nil {
		return nil, err
	}
	if len(rec.Calls) == 0 {
		return nil, fmt.Errorf("%s: a kubelet trace without a call line (+ OFFSETms [DURATIONms] Method …)", name)
	}
	imagesFor(rec.Calls)
	stageTimes(rec)
	return rec, nil
}

// request fills the request from the call line's args.
func (t *tcall) request(args, rest string) {
	kv := map[string]string{}
	for _, m := range traceArg().FindAllStringSubmatch(args, -1) {
		kv[m[1]] = strings.Trim(m[2], "'")
	}
	r := t.req
	switch t.c.Method {
	case "Version":
		r["version"] = kv["req.version"]
	case "RunPodSandbox":
		r["config"] = t.config
		if h := kv["runtime_handler"]; h != "" {
			r["runtime_handler"] = h
		}
	case "CreateContainer":
		r["pod_sandbox_id"] = kv["sandbox"]
		r["config"] = t.config
		if strings.Contains(rest, "sandbox_config=(identical to RunPodSandbox config)") {
			r["sandbox_config"] = "same"
		}
	case "ImageStatus", "PullImage", "RemoveImage":
		r["image"] = map[string]any{"image": kv["image"]}
	case "StopContainer":
		r["container_id"] = kv["container"]
		if n, err := strconv.Atoi(kv["timeout"]); err == nil && n != 0 {
			r["timeout"] = n
		}
	case "ListPodSandbox", "ListContainers":
		if f := kv["filter"]; f != "" {
			var v any
			if json.Unmarshal([]byte(f), &v) == nil {
				r["filter"] = v
			}
		}
	default:
		if id := kv["sandbox"]; id != "" {
			r["pod_sandbox_id"] = id
		}
		if id := kv["container"]; id != "" {
			r["container_id"] = id
		}
	}
}

// response keeps the IDs a call answered.
func (t *tcall) response(result string) {
	kv := map[string]string{}
	for _, m := range traceArg().FindAllStringSubmatch(result, -1) {
		kv[m[1]] = m[2]
	}
	var resp map[string]any
	switch t.c.Method {
	case "RunPodSandbox":
		resp = map[string]any{"pod_sandbox_id": kv["sandbox"]}
	case "CreateContainer":
		resp = map[string]any{"container_id": kv["container"]}
	}
	if resp != nil {
		t.c.Response, _ = json.Marshal(resp)
	}
}

// detail adds one indented "key: value" line (some lines hold two).
func (t *tcall) detail(line string) {
	for line != "" {
		key, rest, ok := strings.Cut(line, ": ")
		if !ok {
			return
		}
		val, more := traceValue(rest)
		line = strings.TrimSpace(more)
		if val == nil {
			continue
		}
		switch key {
		case "metadata":
			md := map[string]any{}
			for _, m := range traceArg().FindAllStringSubmatch(rest, -1) {
				if n, err := strconv.Atoi(m[2]); err == nil && m[1] == "attempt" {
					if n != 0 {
						md[m[1]] = n
					}
					continue
				}
				md[m[1]] = m[2]
			}
			t.config["metadata"] = md
			line = ""
		case "linux.cgroup_parent", "linux.security_context", "linux.overhead", "linux.resources":
			linux, _ := t.config["linux"].(map[string]any)
			if linux == nil {
				linux = map[string]any{}
				t.config["linux"] = linux
			}
			linux[strings.TrimPrefix(key, "linux.")] = val
		case "port_mappings", "envs":
		default:
			t.config[key] = val
		}
	}
}

// traceValue reads one value: JSON, a quoted string, None/(none)/null
// (nil), or a word; and returns what follows it on the line.
func traceValue(s string) (any, string) {
	switch {
	case strings.HasPrefix(s, "'"):
		end := strings.Index(s[1:], "'")
		if end < 0 {
			return s[1:], ""
		}
		return s[1 : end+1], s[end+2:]
	case strings.HasPrefix(s, "{"), strings.HasPrefix(s, "["), strings.HasPrefix(s, "null"):
		dec := json.NewDecoder(strings.NewReader(s))
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, ""
		}
		return v, s[dec.InputOffset():]
	case strings.HasPrefix(s, "None"), strings.HasPrefix(s, "(none)"):
		_, rest, _ := strings.Cut(s, " ")
		return nil, rest
	}
	word, rest, _ := strings.Cut(s, " ")
	return word, rest
}

// imagesFor attributes each ImageStatus and PullImage, which a trace does
// not name a container for, to the container the next CreateContainer
// creates: the kubelet's startContainer checks the image (EnsureImageExists)
// and looks up its user right before it creates the container.
func imagesFor(calls []*Call) {
	var pending []*Call
	for _, c := range calls {
		switch c.Method {
		case "ImageStatus", "PullImage":
			if c.Container == "" {
				pending = append(pending, c)
			}
		case "CreateContainer":
			for _, p := range pending {
				p.Container = c.Container
			}
			pending = nil
		}
	}
}

// stageTimes gives a trace its time per stage: from the stage's first
// call to the end of its last (a trace has no steps).
func stageTimes(rec *Recording) {
	type span struct{ start, end time.Time }
	spans := map[steps.Stage]*span{}
	var order []steps.Stage
	for _, c := range rec.Calls {
		end := c.Started.Add(time.Duration(c.DurationMs * float64(time.Millisecond)))
		s := spans[c.Stage]
		if s == nil {
			s = &span{c.Started, end}
			spans[c.Stage] = s
			order = append(order, c.Stage)
		}
		if end.After(s.end) {
			s.end = end
		}
	}
	for _, st := range order {
		t := StageTime{Stage: st, Ms: float64(spans[st].end.Sub(spans[st].start).Microseconds()) / 1000}
		for _, c := range rec.Calls {
			if c.Stage == st {
				t.CRIMs += c.DurationMs
				t.Calls++
			}
		}
		rec.Stages = append(rec.Stages, t)
	}
}
