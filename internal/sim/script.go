package sim

import (
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The simulator runs no process. What a started container does (keep
// running, or exit with a code after some time) is read from its command as
// far as that can be done without running anything: a small shell reader
// (run, runScript) that knows what echo, printf, true, false, :, exit,
// sleep, test/[ ], cat of nothing, set, export and assignments do, the ;
// && || lists between them, and sh -c / exec around them. It never guesses
// what an unknown program does: it stops there, and the container's
// behaviour is then an assumption (see Decide), labelled as one.

// outcome is what reading a command found.
type outcome struct {
	kind   outcomeKind
	code   int32         // exits: the exit code
	after  time.Duration // exits: how long its sleeps make it run
	why    string        // forever: what keeps it running; unreadable: what could not be read
	status int32         // a shell's $? so far (for a nested sh -c that returns)
	// assumed are the readings that are assumptions (a utility assumed to
	// exit 0, a write to a file assumed to succeed).
	assumed []string
}

type outcomeKind int

const (
	// goesOn: a script read to its end without exiting (its status is $?).
	goesOn outcomeKind = iota
	// exits: the process exits with code after after.
	exits
	// forever: the process runs until it is stopped (sleep infinity, tail -f, ...).
	forever
	// unreadable: the reader met something it cannot know the effect of.
	unreadable
)

// maxSleep caps what sleeps add up to (a sleep of years is "running").
const maxSleep = 100 * 365 * 24 * time.Hour

// utilities are programs that do their work and exit: their exit code is
// assumed to be 0 (the assumption is labelled). Programs whose exit code
// is their answer (grep, test of a file, wget, ...) are not here: what
// follows them cannot be known.
var utilities = map[string]bool{
	"cp": true, "mv": true, "rm": true, "ln": true, "mkdir": true, "rmdir": true, "touch": true,
	"chmod": true, "chown": true, "chgrp": true, "ls": true, "env": true, "printenv": true, "id": true,
	"whoami": true, "hostname": true, "uname": true, "date": true, "pwd": true, "basename": true,
	"dirname": true, "rev": true, "cat": true, "wc": true, "head": true, "stat": true, "df": true, "du": true,
	"sync": true, "cd": true, "trap": true, "umask": true, "ulimit": true,
}

// shells are the programs whose -c script the reader reads.
var shells = map[string]bool{"sh": true, "bash": true, "ash": true, "dash": true}

// reader reads one command line (and the shell scripts in it).
type reader struct {
	env     map[string]string // the container's environment and the script's assignments
	unset   map[string]bool   // variables the script set to values the reader does not know
	stdin   bool              // the container has an open stdin (ContainerConfig.stdin)
	errexit bool
	status  int32 // $?
	elapsed time.Duration
	assumed []string
}

// readCommand reads what argv (a container's command line, or a program
// exec'd from a script) does.
func (r *reader) readCommand(argv []string) outcome {
	if len(argv) == 0 {
		return r.done(exits, 0, "")
	}
	base := filepath.Base(argv[0])
	if shells[base] {
		return r.readShell(argv)
	}
	o := r.simple(argv, "", true)
	if o.kind == goesOn {
		return r.done(exits, o.status, "")
	}
	return o
}

// readShell reads `sh [-flags] -c SCRIPT [name args...]`, or a shell with
// no script (which reads its stdin).
func (r *reader) readShell(argv []string) outcome {
	script, hasScript := "", false
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		if !strings.HasPrefix(a, "-") || a == "-" || a == "--" {
			if !hasScript {
				return r.done(unreadable, 0, fmt.Sprintf("the script file %s", quote(a)))
			}
			break
		}
		if strings.HasPrefix(a, "--") {
			return r.done(unreadable, 0, fmt.Sprintf("the shell option %s", quote(a)))
		}
		if strings.Contains(a, "e") {
			r.errexit = true
		}
		if strings.Contains(a, "c") && i+1 < len(argv) {
			script, hasScript = argv[i+1], true
			break
		}
	}
	if !hasScript {
		if r.stdin {
			return r.done(forever, 0, fmt.Sprintf("%s reads its stdin, which stays open (stdin: true)", quote(filepath.Base(argv[0]))))
		}
		return r.done(exits, 0, "")
	}
	o := r.runScript(script)
	if o.kind == goesOn {
		return r.done(exits, o.status, "")
	}
	return o
}

// done makes an outcome with what the reader assumed so far.
func (r *reader) done(k outcomeKind, code int32, why string) outcome {
	return outcome{kind: k, code: code, after: r.elapsed, why: why, status: code, assumed: r.assumed}
}

// runScript reads a shell script: lists of simple commands joined by ;
// newlines, && and ||.
func (r *reader) runScript(script string) outcome {
	toks := lex(script)
	status := int32(0)
	for i := 0; i < len(toks); {
		// One and-or list: cmd (&& / || cmd)* up to ; or the end.
		skip := false
		last := true // the last command run is the list's last (not a condition)
		for i < len(toks) && toks[i].op != ";" {
			t := toks[i]
			switch {
			case t.bad != "" && !skip && endless(t, r.errexit):
				return r.done(forever, 0, fmt.Sprintf("%s is an endless loop (no exit, break or return in it)", quote(strings.SplitN(t.rest, "\n", 2)[0])))
			case t.bad != "":
				return r.done(unreadable, 0, t.bad)
			case t.op == "&&":
				skip = status != 0
				i++
				continue
			case t.op == "||":
				skip = status == 0
				i++
				continue
			case t.op != "":
				return r.done(unreadable, 0, fmt.Sprintf("the %s of %s", opName(t.op), snippet(script)))
			}
			// A simple command: words up to the next operator.
			j := i
			for j < len(toks) && toks[j].op == "" && toks[j].bad == "" {
				j++
			}
			if j < len(toks) && toks[j].bad != "" && !skip {
				return r.done(unreadable, 0, toks[j].bad)
			}
			cmd := toks[i:j]
			i = j
			last = i >= len(toks) || toks[i].op == ";"
			if skip {
				continue
			}
			o := r.simpleTokens(cmd)
			if o.kind != goesOn {
				return o
			}
			status = o.status
			r.status = status
		}
		if r.errexit && status != 0 && last {
			return r.done(exits, status, "")
		}
		i++ // the ;
	}
	o := r.done(goesOn, status, "")
	return o
}

// simpleTokens expands a simple command's words and reads it. A word
// whose value the reader cannot know (an unknown variable, a glob) is
// fine where the command's outcome does not depend on it (echo, a
// utility); elsewhere the command is unreadable.
func (r *reader) simpleTokens(toks []token) outcome {
	var words []string
	redirect := ""
	unknown := ""
	for _, t := range toks {
		w, known := r.expand(t.word)
		if t.redir != "" {
			switch {
			case !known:
				return r.done(unreadable, 0, fmt.Sprintf("the redirection to %s", quote(t.word)))
			case !strings.HasPrefix(w, "&") && w != "/dev/null" && w != "/dev/stdout" && w != "/dev/stderr":
				redirect = w
			}
			continue
		}
		if !known {
			if len(words) == n0(words) && isAssignment(w) {
				k, _, _ := strings.Cut(w, "=")
				if r.unset == nil {
					r.unset = map[string]bool{}
				}
				r.unset[k] = true
				continue
			}
			if unknown == "" {
				unknown = t.word
			}
		}
		words = append(words, w)
	}
	if unknown != "" {
		i := n0(words)
		if i == len(words) || !argsIgnored(filepath.Base(words[i])) {
			return r.done(unreadable, 0, fmt.Sprintf("%s, whose value is not known before it runs", quote(unknown)))
		}
	}
	return r.simple(words, redirect, false)
}

// n0 is the number of leading assignments in words.
func n0(words []string) int {
	n := 0
	for n < len(words) && isAssignment(words[n]) {
		n++
	}
	return n
}

// argsIgnored says whether a command's outcome does not depend on its
// arguments' values (it exits 0 whatever they are, or is assumed to).
func argsIgnored(name string) bool {
	switch name {
	case "echo", "printf", "true", "false", ":":
		return true
	}
	return utilities[name]
}

// simple reads one simple command, already split into words (top: it is a
// container's whole command line, not a line of a script).
func (r *reader) simple(words []string, redirect string, top bool) outcome {
	// Leading assignments: alone they set variables; before a command they
	// set its environment only.
	n := 0
	for n < len(words) && isAssignment(words[n]) {
		n++
	}
	if n == len(words) {
		for _, w := range words {
			k, v, _ := strings.Cut(w, "=")
			r.env[k] = v
			delete(r.unset, k)
		}
		return r.done(goesOn, 0, "")
	}
	words = words[n:]
	name := filepath.Base(words[0])
	args := words[1:]
	ok := r.done(goesOn, 0, "")
	if redirect != "" && !top {
		r.assumed = append(r.assumed, fmt.Sprintf("the write to %s succeeds", redirect))
		ok = r.done(goesOn, 0, "")
	}
	switch name {
	case "echo", "printf", "true", ":":
		return ok
	case "false":
		return r.done(goesOn, 1, "")
	case "exit":
		if top {
			break
		}
		if len(args) == 0 {
			return r.done(exits, r.status, "")
		}
		c, err := strconv.Atoi(args[0])
		if err != nil {
			return r.done(unreadable, 0, fmt.Sprintf("`exit %s`", args[0]))
		}
		return r.done(exits, int32(c&0xff), "")
	case "sleep":
		return r.sleep(args)
	case "test", "[":
		return r.test(name, args)
	case "set":
		for _, a := range args {
			if strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && a != "-o" {
				if strings.Contains(a, "e") {
					r.errexit = true
				}
			} else if a == "errexit" {
				r.errexit = true
			}
		}
		return ok
	case "export":
		for _, a := range args {
			if k, v, found := strings.Cut(a, "="); found {
				r.env[k] = v
				delete(r.unset, k)
			}
		}
		return ok
	case "cat":
		if len(args) == 0 {
			if r.stdin {
				return r.done(forever, 0, "`cat` reads its stdin, which stays open (stdin: true)")
			}
			return ok // its stdin is empty: it exits 0 at once
		}
	case "tail":
		for _, a := range args {
			if a == "-f" || a == "-F" || a == "--follow" || strings.HasPrefix(a, "--follow=") ||
				strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.ContainsAny(a, "fF") {
				return r.done(forever, 0, fmt.Sprintf("`tail %s` follows its file until it is stopped", strings.Join(args, " ")))
			}
		}
	case "exec":
		if len(args) == 0 {
			return ok
		}
		// The shell becomes the program: its outcome is the container's.
		o := r.readCommand(args)
		if o.kind == goesOn {
			return r.done(exits, o.status, "")
		}
		return o
	case "env":
		// env [NAME=value...] [PROGRAM args...]: runs PROGRAM if there is one.
		i := 0
		for i < len(args) && isAssignment(args[i]) {
			i++
		}
		if i < len(args) && !strings.HasPrefix(args[i], "-") {
			if top {
				return r.readCommand(args[i:])
			}
			return r.simple(args[i:], redirect, false)
		}
	}
	if shells[name] {
		// A nested shell: a child process whose exit is this command's status.
		child := &reader{env: maps.Clone(r.env), unset: maps.Clone(r.unset), stdin: r.stdin, elapsed: r.elapsed}
		o := child.readShell(words)
		r.elapsed, r.assumed = o.after, append(r.assumed, o.assumed...)
		if o.kind == exits {
			return r.done(goesOn, o.code, "")
		}
		return o
	}
	if utilities[name] {
		r.assumed = append(r.assumed, fmt.Sprintf("%#q exits 0", name))
		return r.done(goesOn, 0, "")
	}
	return r.done(unreadable, 0, quote(strings.Join(words, " ")))
}

// sleep reads `sleep N[smhd]...` (several numbers add up, as busybox's and
// coreutils' sleep do); infinity never ends.
func (r *reader) sleep(args []string) outcome {
	if len(args) == 0 {
		return r.done(unreadable, 0, "`sleep` without a time")
	}
	var total time.Duration
	for _, a := range args {
		if a == "infinity" || a == "inf" {
			return r.done(forever, 0, fmt.Sprintf("`sleep %s` never ends", a))
		}
		d, ok := sleepDuration(a)
		if !ok {
			return r.done(unreadable, 0, fmt.Sprintf("`sleep %s`", a))
		}
		total += d
	}
	r.elapsed += total
	if r.elapsed > maxSleep {
		r.elapsed = maxSleep
	}
	return r.done(goesOn, 0, "")
}

// sleepDuration parses one sleep argument: a decimal number of seconds,
// or with a suffix s, m, h or d.
func sleepDuration(a string) (time.Duration, bool) {
	unit := time.Second
	switch {
	case strings.HasSuffix(a, "s"):
		a = a[:len(a)-1]
	case strings.HasSuffix(a, "m"):
		a, unit = a[:len(a)-1], time.Minute
	case strings.HasSuffix(a, "h"):
		a, unit = a[:len(a)-1], time.Hour
	case strings.HasSuffix(a, "d"):
		a, unit = a[:len(a)-1], 24*time.Hour
	}
	f, err := strconv.ParseFloat(a, 64)
	if err != nil || f < 0 || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	d := f * float64(unit)
	if d > float64(maxSleep) {
		return maxSleep, true
	}
	return time.Duration(d), true
}

// test reads test / [ ] of strings and integers (a file test needs the
// container's files, which the simulator does not have).
func (r *reader) test(name string, args []string) outcome {
	shown := fmt.Sprintf("`%s %s`", name, strings.Join(args, " "))
	if name == "[" {
		if len(args) == 0 || args[len(args)-1] != "]" {
			return r.done(unreadable, 0, "`[` without `]`")
		}
		args = args[:len(args)-1]
	}
	v, ok := evalTest(args)
	if !ok {
		return r.done(unreadable, 0, shown)
	}
	if v {
		return r.done(goesOn, 0, "")
	}
	return r.done(goesOn, 1, "")
}

// evalTest evaluates a test expression of strings and integers.
func evalTest(a []string) (bool, bool) {
	if len(a) > 0 && a[0] == "!" {
		v, ok := evalTest(a[1:])
		return !v, ok
	}
	switch len(a) {
	case 0:
		return false, true
	case 1:
		return a[0] != "", true
	case 2:
		switch a[0] {
		case "-z":
			return a[1] == "", true
		case "-n":
			return a[1] != "", true
		}
	case 3:
		switch a[1] {
		case "=", "==":
			return a[0] == a[2], true
		case "!=":
			return a[0] != a[2], true
		case "-eq", "-ne", "-lt", "-le", "-gt", "-ge":
			x, err1 := strconv.ParseInt(strings.TrimSpace(a[0]), 10, 64)
			y, err2 := strconv.ParseInt(strings.TrimSpace(a[2]), 10, 64)
			if err1 != nil || err2 != nil {
				return false, false
			}
			switch a[1] {
			case "-eq":
				return x == y, true
			case "-ne":
				return x != y, true
			case "-lt":
				return x < y, true
			case "-le":
				return x <= y, true
			case "-gt":
				return x > y, true
			default:
				return x >= y, true
			}
		}
	}
	return false, false
}

// endless reports whether a bad keyword token starts a loop that never
// ends: `while true`, `while :` or `until false`, with no exit, break or
// return in the rest of the script, and no set -e (under which a failing
// command in it would end the shell).
func endless(t token, errexit bool) bool {
	if errexit || (t.word != "while" && t.word != "until") {
		return false
	}
	f := strings.Fields(strings.NewReplacer(";", " ; ", "\n", " ; ").Replace(t.rest))
	if len(f) < 3 || f[2] != ";" && f[2] != "do" {
		return false
	}
	if (t.word != "while" || (f[1] != "true" && f[1] != ":")) && (t.word != "until" || f[1] != "false") {
		return false
	}
	for _, w := range f {
		switch strings.Trim(w, "(){}") {
		case "exit", "break", "return", "exec", "kill":
			return false
		}
	}
	return true
}

// isAssignment reports whether w is NAME=value.
func isAssignment(w string) bool {
	k, _, found := strings.Cut(w, "=")
	if !found || k == "" {
		return false
	}
	for i, c := range k {
		if c != '_' && (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// token is a word, a redirection (redir and its target word), an
// operator (; && || | & and the like), or something the reader cannot read
// (bad says what).
type token struct {
	word  string // raw, quotes kept
	redir string // > >> <
	op    string
	bad   string
	rest  string // for a bad keyword: the script from it on
}

// keywords start compound commands the reader does not read.
var keywords = map[string]bool{
	"if": true, "then": true, "else": true, "elif": true, "fi": true, "for": true, "while": true,
	"until": true, "do": true, "done": true, "case": true, "esac": true, "function": true,
	"{": true, "}": true, "[[": true, "]]": true, "!": true, "select": true, "source": true, ".": true,
	"eval": true, "wait": true, "read": true, "shift": true, "local": true, "return": true,
}

// lex splits a script into tokens; it stops at the first construct it
// cannot read (a compound command, a command substitution, a pipe, a
// background job, a here-document), which becomes a bad token.
func lex(script string) []token {
	rest := "" // the script from the word being read on
	var toks []token
	var cur strings.Builder
	inWord := false
	redir := ""
	endWord := func() {
		if !inWord {
			return
		}
		w := cur.String()
		cur.Reset()
		inWord = false
		if redir != "" {
			toks = append(toks, token{word: w, redir: redir})
			redir = ""
			return
		}
		// A keyword only where a command starts.
		if keywords[w] && (len(toks) == 0 || toks[len(toks)-1].op != "") {
			toks = append(toks, token{bad: fmt.Sprintf("the shell keyword %s", quote(w)), word: w, rest: rest})
			return
		}
		toks = append(toks, token{word: w})
	}
	bad := func(what string) []token {
		endWord()
		return append(toks, token{bad: what})
	}
	rs := []rune(script)
	for i := 0; i < len(rs); i++ {
		c := rs[i]
		if !inWord {
			rest = string(rs[i:])
		}
		switch {
		case c == ' ' || c == '\t' || c == '\r':
			endWord()
		case c == '\n' || c == ';':
			endWord()
			if redir != "" {
				return bad("a redirection without a target")
			}
			if c == ';' && i+1 < len(rs) && rs[i+1] == ';' {
				return bad("`;;`")
			}
			toks = append(toks, token{op: ";"})
		case c == '#' && !inWord:
			for i < len(rs) && rs[i] != '\n' {
				i++
			}
			i--
		case c == '\'':
			inWord = true
			cur.WriteRune(c)
			for i++; i < len(rs) && rs[i] != '\''; i++ {
				cur.WriteRune(rs[i])
			}
			if i == len(rs) {
				return bad("an unterminated quote")
			}
			cur.WriteRune('\'')
		case c == '"':
			inWord = true
			cur.WriteRune(c)
			for i++; i < len(rs) && rs[i] != '"'; i++ {
				switch {
				case rs[i] == '\\' && i+1 < len(rs):
					cur.WriteRune(rs[i])
					i++
					cur.WriteRune(rs[i])
				case rs[i] == '`' || rs[i] == '$' && i+1 < len(rs) && rs[i+1] == '(':
					return bad("a command substitution")
				default:
					cur.WriteRune(rs[i])
				}
			}
			if i == len(rs) {
				return bad("an unterminated quote")
			}
			cur.WriteRune('"')
		case c == '\\' && i+1 < len(rs):
			i++
			if rs[i] == '\n' {
				continue // a line continuation
			}
			inWord = true
			cur.WriteRune('\\')
			cur.WriteRune(rs[i])
		case c == '`' || c == '$' && i+1 < len(rs) && rs[i+1] == '(':
			return bad("a command substitution")
		case c == '&' && i+1 < len(rs) && rs[i+1] == '&', c == '|' && i+1 < len(rs) && rs[i+1] == '|':
			endWord()
			toks = append(toks, token{op: string([]rune{c, c})})
			i++
		case c == '|':
			return bad("a pipe")
		case c == '&':
			return bad("a background job (`&`)")
		case c == '(' || c == ')':
			return bad("a subshell or function")
		case c == '<':
			return bad("an input redirection or here-document")
		case c == '>':
			// [fd]>[>][&fd] target
			fd := ""
			if inWord {
				if w := cur.String(); w == "1" || w == "2" {
					fd = w
					cur.Reset()
					inWord = false
				} else {
					endWord()
				}
			}
			op := ">"
			if i+1 < len(rs) && rs[i+1] == '>' {
				op = ">>"
				i++
			}
			if i+1 < len(rs) && rs[i+1] == '|' {
				i++
			}
			if fd == "2" {
				op = "2>" // stderr: where it goes changes nothing the reader reads
			}
			if i+1 < len(rs) && rs[i+1] == '&' {
				// >&2, 2>&1, >&-: a duplication, its target in place.
				j := i + 2
				for j < len(rs) && (rs[j] >= '0' && rs[j] <= '9' || rs[j] == '-') {
					j++
				}
				toks = append(toks, token{word: string(rs[i+1 : j]), redir: op})
				i = j - 1
				continue
			}
			redir = op
		default:
			inWord = true
			cur.WriteRune(c)
		}
	}
	endWord()
	if redir != "" {
		return append(toks, token{bad: "a redirection without a target"})
	}
	// Drop stderr redirections: they change nothing the reader reads.
	out := toks[:0]
	for _, t := range toks {
		if t.redir == "2>" {
			continue
		}
		out = append(out, t)
	}
	return out
}

// expand removes a word's quotes and expands its variables. known is false
// when it names a variable the reader does not know (not in the
// container's environment nor set by the script, or a special one).
func (r *reader) expand(raw string) (string, bool) {
	var b strings.Builder
	known := true
	rs := []rune(raw)
	for i := 0; i < len(rs); i++ {
		c := rs[i]
		switch {
		case c == '\'':
			for i++; i < len(rs) && rs[i] != '\''; i++ {
				b.WriteRune(rs[i])
			}
		case c == '"':
			for i++; i < len(rs) && rs[i] != '"'; i++ {
				switch {
				case rs[i] == '\\' && i+1 < len(rs) && strings.ContainsRune(`"\$`+"`", rs[i+1]):
					i++
					b.WriteRune(rs[i])
				case rs[i] == '$':
					var k bool
					i, k = r.variable(rs, i, &b)
					known = known && k
				default:
					b.WriteRune(rs[i])
				}
			}
		case c == '\\' && i+1 < len(rs):
			i++
			b.WriteRune(rs[i])
		case c == '$':
			var k bool
			i, k = r.variable(rs, i, &b)
			known = known && k
		case c == '*' || c == '?' || c == '[' && strings.ContainsRune(string(rs[i:]), ']') && raw != "[" || c == '~' && i == 0:
			// A glob or a home directory: what it matches is on the container's disk.
			b.WriteRune(c)
			known = false
		default:
			b.WriteRune(c)
		}
	}
	return b.String(), known
}

// variable expands the variable reference at rs[i] == '$' and returns the
// index of its last rune, and whether its value is known.
func (r *reader) variable(rs []rune, i int, b *strings.Builder) (int, bool) {
	if i+1 >= len(rs) {
		b.WriteRune('$')
		return i, true
	}
	name, end := "", i
	if rs[i+1] == '{' {
		j := i + 2
		for j < len(rs) && rs[j] != '}' {
			j++
		}
		if j == len(rs) {
			return len(rs) - 1, false
		}
		name, end = string(rs[i+2:j]), j
	} else {
		j := i + 1
		for j < len(rs) && (rs[j] == '_' || rs[j] >= 'a' && rs[j] <= 'z' || rs[j] >= 'A' && rs[j] <= 'Z' || j > i+1 && rs[j] >= '0' && rs[j] <= '9') {
			j++
		}
		if j == i+1 {
			if strings.ContainsRune(`?$!#@*-0123456789`, rs[j]) {
				return j, false // a special parameter
			}
			b.WriteRune('$')
			return i, true
		}
		name, end = string(rs[i+1:j]), j-1
	}
	if !isAssignment(name + "=") {
		return end, false // ${X:-y}, ${#X}, ...: not read
	}
	v, ok := r.env[name]
	if !ok || r.unset[name] {
		return end, false
	}
	b.WriteString(v)
	return end, true
}

// quote shows a command in backquotes, on one line, cut short.
func quote(s string) string { return "`" + snippet(s) + "`" }

// snippet is s on one line (runs of white space as one space), cut to 60
// characters.
func snippet(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 60 {
		return string(r[:59]) + "…"
	}
	return s
}

func opName(op string) string {
	switch op {
	case "|":
		return "pipe"
	case "&":
		return "background job"
	}
	return "operator " + op
}
