package sim

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/internal/fsperm"
)

// logLine is one line a simulated process writes.
type logLine struct {
	stream string // "stdout" or "stderr"
	text   string
}

// logPath is where a container's log goes: under its sandbox's log
// directory, and nowhere else.
type logPath struct {
	root string // the allowed directory (service.roots) it is under
	rel  string // the rest, a local path
}

func (l logPath) String() string { return filepath.Join(l.root, l.rel) }

// confine checks that p, a path a request names (the field what, e.g.
// "log_directory"), is absolute and inside one of the runtime's own
// directories (its run dir, the run's --root-dir and --log-dir), and
// returns it as that directory and the rest. Else InvalidArgument, as a
// runtime refuses a path it will not write: a request must not make the
// runtime (often root) write where its caller could not.
func (s *service) confine(what, p string) (logPath, error) {
	if !filepath.IsAbs(p) {
		return logPath{}, status.Error(codes.InvalidArgument, fmt.Sprintf("%s %q is not an absolute path", what, p))
	}
	clean := filepath.Clean(p)
	for _, r := range s.roots {
		if rel, err := filepath.Rel(r, clean); err == nil && (rel == "." || filepath.IsLocal(rel)) {
			return logPath{root: r, rel: rel}, nil
		}
	}
	return logPath{}, status.Error(codes.InvalidArgument, fmt.Sprintf("%s %q is outside the simulated runtime's directories (%s): it writes only there", what, p, strings.Join(s.roots, ", ")))
}

// containerLog is where a container of a sandbox with log directory dir
// logs: dir joined with the request's log_path, a relative path that
// stays inside dir (InvalidArgument otherwise, "../x" included).
func (s *service) containerLog(dir, rel string) (logPath, error) {
	base, err := s.confine("log_directory", dir)
	if err != nil {
		return logPath{}, err
	}
	if filepath.IsAbs(rel) || !filepath.IsLocal(rel) {
		return logPath{}, status.Error(codes.InvalidArgument, fmt.Sprintf("log_path %q is not a relative path inside the sandbox's log_directory %q", rel, dir))
	}
	base.rel = filepath.Join(base.rel, rel)
	return base, nil
}

// writeLog creates the container log at name (confined again) (and its parent directories,
// following no symbolic link: fsperm.OpenBeneath) and appends, in the CRI
// log format the kubelet reads
// ("2026-01-02T15:04:05.123456789Z stdout F hello"), one line per string
// the container's command echoes. A file that is not a regular file of
// one link is refused: a hard link to another file is not a log.
func (s *service) writeLog(name string, t time.Time, cfg *runtimeapi.ContainerConfig) error {
	path, err := s.confine("log path", name)
	if err != nil {
		return err
	}
	f, err := fsperm.OpenBeneath(path.root, path.rel, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o640, 0o755)
	if err != nil {
		return err
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() || links(fi) > 1 {
		_ = f.Close()
		if err == nil {
			err = fmt.Errorf("%s is not a regular file of its own (mode %v, %d links)", path, fi.Mode(), links(fi))
		}
		return err
	}
	ts := t.UTC().Format(time.RFC3339Nano)
	var b strings.Builder
	for _, l := range echoLines(commandLine(cfg), envMap(cfg)) {
		b.WriteString(ts + " " + l.stream + " F " + l.text + "\n")
	}
	var werr error
	if b.Len() > 0 { // most commands echo nothing: the file made is the log
		_, werr = f.WriteString(b.String())
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	return werr
}

func links(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}

func commandLine(cfg *runtimeapi.ContainerConfig) []string {
	return append(append([]string(nil), cfg.GetCommand()...), cfg.GetArgs()...)
}

func envMap(cfg *runtimeapi.ContainerConfig) map[string]string {
	env := map[string]string{}
	for _, kv := range cfg.GetEnvs() {
		env[kv.GetKey()] = string(kv.GetValue())
	}
	return env
}

// echoLines returns what a command line writes with echo: for
// `sh -c 'echo hello; echo bye >&2; echo x > /f'` that is "hello" on
// stdout and "bye" on stderr (output redirected to a file or piped is not
// logged). It is a deliberately small shell: segments split on ; && || |
// and newlines, single and double quotes, backslash escapes and $VAR /
// ${VAR} expansion from the container's environment.
func echoLines(argv []string, env map[string]string) []logLine {
	if len(argv) == 0 {
		return nil
	}
	var script string
	switch filepath.Base(argv[0]) {
	case "sh", "bash", "ash", "dash":
		for i := 1; i < len(argv); i++ {
			if strings.HasPrefix(argv[i], "-") && strings.Contains(argv[i], "c") && i+1 < len(argv) {
				script = argv[i+1]
				break
			}
		}
	case "echo":
		script = shellQuoteAll(argv)
	}
	var out []logLine
	for _, seg := range splitScript(script) {
		out = append(out, echoSegment(seg, env)...)
	}
	return out
}

// shellQuoteAll quotes argv as a shell command line.
func shellQuoteAll(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

// splitScript splits a script into simple commands on unquoted ; & | and
// newlines. A segment followed by a pipe is marked by a trailing "|".
func splitScript(script string) []string {
	var segs []string
	var cur strings.Builder
	var quote rune
	flush := func(piped bool) {
		s := strings.TrimSpace(cur.String())
		if piped {
			s += " |"
		}
		if s != "" {
			segs = append(segs, s)
		}
		cur.Reset()
	}
	rs := []rune(script)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case quote != 0:
			if r == '\\' && quote == '"' && i+1 < len(rs) {
				cur.WriteRune(r)
				i++
				cur.WriteRune(rs[i])
				continue
			}
			if r == quote {
				quote = 0
			}
			cur.WriteRune(r)
		case r == '\\' && i+1 < len(rs):
			cur.WriteRune(r)
			i++
			cur.WriteRune(rs[i])
		case r == '\'' || r == '"':
			quote = r
			cur.WriteRune(r)
		case r == ';' || r == '\n':
			flush(false)
		case r == '&' && i+1 < len(rs) && rs[i+1] == '&':
			flush(false)
			i++
		case r == '&' && i > 0 && rs[i-1] == '>':
			cur.WriteRune(r) // >&2
		case r == '&':
			flush(false)
		case r == '|' && i+1 < len(rs) && rs[i+1] == '|':
			flush(false)
			i++
		case r == '|':
			flush(true)
		default:
			cur.WriteRune(r)
		}
	}
	flush(false)
	return segs
}

// shellKeywords may precede a command in a segment (`do echo x`).
var shellKeywords = map[string]bool{"do": true, "then": true, "else": true, "{": true, "(": true, "!": true, "exec": true}

// echoSegment returns the lines an `echo` simple command writes.
func echoSegment(seg string, env map[string]string) []logLine {
	if strings.HasSuffix(seg, " |") {
		return nil // piped into another command
	}
	words, redirect := shellWords(seg, env)
	for len(words) > 0 && shellKeywords[words[0]] {
		words = words[1:]
	}
	if len(words) == 0 || filepath.Base(words[0]) != "echo" {
		return nil
	}
	stream := "stdout"
	switch redirect {
	case "":
	case "&2":
		stream = "stderr"
	case "&1":
	default:
		return nil // written to a file
	}
	args := words[1:]
	for len(args) > 0 && isEchoFlag(args[0]) {
		args = args[1:]
	}
	text := strings.Join(args, " ")
	var out []logLine
	for l := range strings.SplitSeq(text, "\n") {
		out = append(out, logLine{stream: stream, text: l})
	}
	return out
}

func isEchoFlag(s string) bool {
	if len(s) < 2 || s[0] != '-' {
		return false
	}
	return strings.Trim(s[1:], "neE") == ""
}

// shellWords splits a simple command into words, removing quotes and
// expanding variables. The target of the stdout redirection, if any, is
// returned separately ("&2" for >&2); stderr redirections are ignored.
func shellWords(seg string, env map[string]string) (words []string, redirect string) {
	var cur strings.Builder
	inWord := false
	redirFD := "" // fd of a pending redirection whose target is the next word
	endWord := func() {
		if !inWord {
			return
		}
		w := cur.String()
		cur.Reset()
		inWord = false
		if redirFD != "" {
			if redirFD == "1" {
				redirect = w
			}
			redirFD = ""
			return
		}
		words = append(words, w)
	}
	rs := []rune(seg)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case r == ' ' || r == '\t':
			endWord()
		case r == '\'':
			inWord = true
			for i++; i < len(rs) && rs[i] != '\''; i++ {
				cur.WriteRune(rs[i])
			}
		case r == '"':
			inWord = true
			for i++; i < len(rs) && rs[i] != '"'; i++ {
				switch {
				case rs[i] == '\\' && i+1 < len(rs) && strings.ContainsRune(`"\$`+"`", rs[i+1]):
					i++
					cur.WriteRune(rs[i])
				case rs[i] == '$':
					i = expandVar(rs, i, env, &cur)
				default:
					cur.WriteRune(rs[i])
				}
			}
		case r == '\\' && i+1 < len(rs):
			inWord = true
			i++
			cur.WriteRune(rs[i])
		case r == '$':
			inWord = true
			i = expandVar(rs, i, env, &cur)
		case r == '>':
			fd := "1"
			if inWord && (cur.String() == "1" || cur.String() == "2") {
				fd = cur.String()
				cur.Reset()
				inWord = false
			} else {
				endWord()
			}
			if i+1 < len(rs) && rs[i+1] == '>' {
				i++
			}
			redirFD = fd
			if i+1 < len(rs) && rs[i+1] == '&' {
				i++
				inWord = true
				cur.WriteRune('&')
			}
		default:
			inWord = true
			cur.WriteRune(r)
		}
	}
	endWord()
	return words, redirect
}

// expandVar expands the variable reference starting at rs[i] == '$' into
// cur and returns the index of its last rune.
func expandVar(rs []rune, i int, env map[string]string, cur *strings.Builder) int {
	if i+1 >= len(rs) {
		cur.WriteRune('$')
		return i
	}
	if rs[i+1] == '{' {
		end := i + 2
		for end < len(rs) && rs[end] != '}' {
			end++
		}
		if end == len(rs) {
			cur.WriteString(string(rs[i:]))
			return len(rs) - 1
		}
		name, _, _ := strings.Cut(string(rs[i+2:end]), ":")
		cur.WriteString(env[name])
		return end
	}
	end := i + 1
	for end < len(rs) && (rs[end] == '_' || rs[end] >= 'a' && rs[end] <= 'z' || rs[end] >= 'A' && rs[end] <= 'Z' || end > i+1 && rs[end] >= '0' && rs[end] <= '9') {
		end++
	}
	if end == i+1 {
		cur.WriteRune('$') // "$(" , "$1", a lone "$"
		return i
	}
	cur.WriteString(env[string(rs[i+1:end])])
	return end - 1
}
