package cri

import (
	"encoding/base64"
	"sort"
	"strconv"
	"strings"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// MinSubstringLen is the length, in bytes, from which a Secret value (or a
// form of it, or a recorded expansion) is masked wherever it occurs inside a
// string. A shorter one would mask unrelated text ("1", "true", "80"), so it
// is masked only in the fields where podstep puts values from the
// environment (placed), when the whole field equals it or is an expansion
// that holds it.
const MinSubstringLen = 6

// placed are the CRI fields podstep fills with values from the environment:
// $(VAR) expansions in command and args, env values, and the mount host path
// a subPathExpr is joined to. In them a short Secret value or expansion is
// masked too.
var placed = map[string]bool{
	"runtime.v1.ContainerConfig.command": true,
	"runtime.v1.ContainerConfig.args":    true,
	"runtime.v1.KeyValue.value":          true,
	"runtime.v1.Mount.host_path":         true,
}

// maskSet is what a Redactor masks, precomputed: built when secrets are
// added, read-only afterwards.
type maskSet struct {
	secretEnv map[string]bool
	// exact maps a whole field value to what is shown instead: every Secret
	// value and form, and every recorded expansion.
	exact map[string]string
	// suffixes are short expansions (subPathExpr) matched at the end of a
	// path field: "/" + value.
	suffixes []suffix
	// repl replaces the long values, forms and expansions inside any string;
	// nil when there are none.
	repl *strings.Replacer
	// segments are the short subPath expansions, masked in text as path
	// components or quoted.
	segments []segment
	// starts holds the first four bytes of every string repl looks for,
	// hashed: most strings hold none of them and skip repl (which always
	// copies).
	starts *prefixTable
}

// prefixTable is a set of hashed four-byte sequences, one bit each (32 KiB):
// a string of text with none of them holds no string to mask.
type prefixTable [1 << prefixBits / 64]uint64

const prefixBits = 18

func prefixHash(x uint32) uint32 { return (x * 2654435761) >> (32 - prefixBits) }

func (t *prefixTable) add(s string) {
	h := prefixHash(uint32(s[0]) | uint32(s[1])<<8 | uint32(s[2])<<16 | uint32(s[3])<<24)
	t[h>>6] |= 1 << (h & 63)
}

// in reports whether s may hold a string whose first four bytes are in t.
func in[S ~string | ~[]byte](t *prefixTable, s S) bool {
	for i := 0; i+3 < len(s); i++ {
		h := prefixHash(uint32(s[i]) | uint32(s[i+1])<<8 | uint32(s[i+2])<<16 | uint32(s[i+3])<<24)
		if t[h>>6]&(1<<(h&63)) != 0 {
			return true
		}
	}
	return false
}

type suffix struct{ old, shown string }

// segment is a short expanded subPathExpr as it appears in free text: a
// path component ("/v" then a delimiter) or quoted.
type segment struct {
	seg, shown string   // "/" + value, and the masked value
	quoted     []string // pairs: a quoted form ("%q", `v`, 'v') and what it becomes
}

var emptyMaskSet = &maskSet{}

// active reports whether anything is masked by value.
func (m *maskSet) active() bool { return len(m.exact) > 0 }

// any reports whether the pod has any secret at all.
func (m *maskSet) any() bool { return len(m.exact) > 0 || len(m.secretEnv) > 0 }

func newMaskSet(secretEnv, values map[string]bool, expansions map[string]string, subPaths map[string]bool) *maskSet {
	m := &maskSet{secretEnv: map[string]bool{}, exact: map[string]string{}}
	for n := range secretEnv {
		m.secretEnv[n] = true
	}
	sub := map[string]string{}
	add := func(old, shown string, exactToo bool) {
		if old == "" || old == shown {
			return
		}
		if exactToo {
			if _, ok := m.exact[old]; !ok || shown == Mask {
				m.exact[old] = shown
			}
		}
		if len(old) >= MinSubstringLen {
			if _, ok := sub[old]; !ok || shown == Mask {
				sub[old] = shown
			}
		}
	}
	for v := range values {
		for _, f := range forms(v) {
			add(f, Mask, true)
		}
	}
	for v, shown := range expansions {
		add(v, shown, true)
		if len(v) < MinSubstringLen {
			m.suffixes = append(m.suffixes, suffix{"/" + v, shown})
			if subPaths[v] {
				q, qs := strconv.Quote(v), strconv.Quote(shown)
				m.segments = append(m.segments, segment{seg: "/" + v, shown: shown,
					quoted: []string{q, qs, "`" + v + "`", "`" + shown + "`", "'" + v + "'", "'" + shown + "'"}})
			}
		}
	}
	sort.Slice(m.segments, func(i, j int) bool { return m.segments[i].seg < m.segments[j].seg })
	sort.Slice(m.suffixes, func(i, j int) bool { return m.suffixes[i].old < m.suffixes[j].old })
	if len(sub) > 0 {
		olds := make([]string, 0, len(sub))
		for o := range sub {
			olds = append(olds, o)
		}
		// strings.Replacer tries the old strings in argument order at each
		// position: longest first, so that an expansion wins over the
		// Secret value inside it and a value over its own prefix.
		sort.Slice(olds, func(i, j int) bool {
			if len(olds[i]) != len(olds[j]) {
				return len(olds[i]) > len(olds[j])
			}
			return olds[i] < olds[j]
		})
		pairs := make([]string, 0, 2*len(olds))
		m.starts = &prefixTable{}
		for _, o := range olds {
			pairs = append(pairs, o, sub[o])
			m.starts.add(o)
		}
		m.repl = strings.NewReplacer(pairs...)
	}
	return m
}

// forms are the strings a Secret value may be printed as: itself, without
// surrounding white space (a trailing newline from `echo … | base64`), each
// line of a multi-line value, its standard base64 (protobuf JSON prints bytes
// fields so), and the inside of its Go %q quoting (runtime and kubelet
// messages quote output with %q).
func forms(v string) []string {
	out := []string{v}
	seen := map[string]bool{v: true}
	addf := func(f string) {
		if f != "" && !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	t := strings.TrimSpace(v)
	addf(t)
	if strings.ContainsAny(t, "\r\n") {
		for _, l := range strings.Split(t, "\n") {
			if l = strings.TrimSpace(l); len(l) >= MinSubstringLen {
				addf(l)
			}
		}
	}
	for _, s := range []string{v, t} {
		if s == "" {
			continue
		}
		addf(base64.StdEncoding.EncodeToString([]byte(s)))
		addf(base64.RawStdEncoding.EncodeToString([]byte(s)))
		q := strconv.Quote(s)
		addf(q[1 : len(q)-1])
	}
	return out
}

// text masks free text: the long values, forms and expansions, anywhere,
// and the short subPath expansions as path components or quoted.
func (m *maskSet) text(s string) string {
	if m.repl != nil && in(m.starts, s) {
		s = m.repl.Replace(s)
	}
	for _, g := range m.segments {
		s = g.mask(s)
	}
	return s
}

// mask replaces the segment's value where it is quoted or a whole path
// component: "/v" at the end of s or before a byte no file name in
// podstep's messages continues with.
func (g segment) mask(s string) string {
	for i := 0; i < len(g.quoted); i += 2 {
		if strings.Contains(s, g.quoted[i]) {
			s = strings.ReplaceAll(s, g.quoted[i], g.quoted[i+1])
		}
	}
	for i := 0; ; {
		j := strings.Index(s[i:], g.seg)
		if j < 0 {
			return s
		}
		j += i
		end := j + len(g.seg)
		if end < len(s) && !strings.ContainsRune("/ \t\r\n\"'`),:;]}", rune(s[end])) {
			i = j + 1
			continue
		}
		s = s[:j+1] + g.shown + s[end:]
		i = j + 1 + len(g.shown)
	}
}

// field masks one placed field of a CRI message: a whole-field match first
// (any length), then a short expansion at the end of a path, then the
// substrings.
func (m *maskSet) field(s string) string {
	if s == "" || s == Mask {
		return s
	}
	if shown, ok := m.exact[s]; ok {
		return shown
	}
	for _, sf := range m.suffixes {
		if strings.HasSuffix(s, sf.old) {
			s = s[:len(s)-len(sf.old)+1] + sf.shown
			break
		}
	}
	return m.text(s)
}

// redactEnv masks, whole, the values of the env vars named as Secret-sourced.
func (m *maskSet) redactEnv(cfg *runtimeapi.ContainerConfig) {
	if cfg == nil || len(m.secretEnv) == 0 {
		return
	}
	for _, kv := range cfg.Envs {
		if m.secretEnv[kv.Key] {
			kv.Value = []byte(Mask)
		}
	}
}
