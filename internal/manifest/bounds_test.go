package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxErrorLen bounds an error message: one line a person reads, whatever
// the input.
const maxErrorLen = 1024

// zeros is an endless reader of zero bytes that counts what was read.
type zeros struct{ n int64 }

func (z *zeros) Read(p []byte) (int, error) {
	clear(p)
	z.n += int64(len(p))
	return len(p), nil
}

const podDoc = "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  containers:\n  - {name: web, image: docker.io/library/busybox:1.35}\n"

// padded returns podDoc followed by comment lines, n bytes in all.
func padded(n int) []byte {
	b := []byte(podDoc)
	for len(b) < n {
		line := "# " + strings.Repeat("x", min(76, n-len(b)-3)) + "\n"
		if len(b)+len(line) > n {
			line = strings.Repeat("#", n-len(b))
		}
		b = append(b, line...)
	}
	return b
}

func TestReadSizeLimit(t *testing.T) {
	for _, tc := range []struct {
		name string
		size int
		ok   bool
	}{
		{"at the limit", MaxSize, true},
		{"one byte over", MaxSize + 1, false},
		{"far over", 5 * MaxSize, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := padded(tc.size)
			if len(data) != tc.size {
				t.Fatalf("padded(%d) has %d bytes", tc.size, len(data))
			}
			r := bytes.NewReader(data)
			b, err := Read("big.yaml", r)
			if tc.ok {
				if err != nil {
					t.Fatal(err)
				}
				if b.Pod.Name != "web" {
					t.Errorf("pod %q", b.Pod.Name)
				}
				return
			}
			var me *Error
			if !errors.As(err, &me) || !strings.Contains(err.Error(), "big.yaml: the manifest is larger than 3 MiB (3145728 bytes)") {
				t.Fatalf("Read = %v, want the size error", err)
			}
			if read := int64(len(data)) - int64(r.Len()); read > MaxSize+1 {
				t.Errorf("read %d bytes, want at most MaxSize+1 = %d", read, MaxSize+1)
			}
		})
	}
}

// TestReadStopsOnEndlessInput: standard input that never ends (a pipe of
// zeros, /dev/zero) is refused after MaxSize+1 bytes, not read to the end
// of memory.
func TestReadStopsOnEndlessInput(t *testing.T) {
	var z zeros
	_, err := Read("-", io.LimitReader(&z, 64<<20))
	if err == nil || !strings.HasPrefix(err.Error(), "<stdin>: the manifest is larger than 3 MiB") {
		t.Fatalf("Read = %v", err)
	}
	if z.n > MaxSize+1+64<<10 {
		t.Errorf("read %d bytes of an endless input, want about MaxSize+1 = %d", z.n, MaxSize+1)
	}
}

func TestLoadDevice(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero")
	}
	_, err := Load("/dev/zero")
	if err == nil || !strings.Contains(err.Error(), "/dev/zero: the manifest is larger than 3 MiB") {
		t.Fatalf("Load(/dev/zero) = %v", err)
	}
}

func TestLoadLargeFile(t *testing.T) {
	f := filepath.Join(t.TempDir(), "sparse.yaml")
	if err := os.WriteFile(f, []byte(podDoc), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(f, 1<<30); err != nil { // 1 GiB, sparse: zeros
		t.Fatal(err)
	}
	_, err := Load(f)
	if err == nil || !strings.Contains(err.Error(), "the manifest is larger than 3 MiB") {
		t.Fatalf("Load = %v", err)
	}
}

func TestAliases(t *testing.T) {
	cm := func(value string, refs int) string {
		var sb strings.Builder
		fmt.Fprintf(&sb, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  annotations: {a: &a %q}\ndata:\n", value)
		for i := range refs {
			fmt.Fprintf(&sb, "  k%d: *a\n", i)
		}
		return sb.String()
	}
	for _, tc := range []struct {
		name, doc string
		ok        bool
	}{
		{"a few aliases", cm("hello", 10), true},
		{"1 MiB in all", cm(strings.Repeat("x", 1024), 1000), true},
		// Under 1000 aliases: go-yaml's own alias limit does not apply.
		{"4 MiB in all", cm(strings.Repeat("x", 4096), 1000), false},
		{"one long string twice", cm(strings.Repeat("x", 2<<20), 1), false},
		{"a merge key", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, labels: &l {a: b}, annotations: {<<: *l}}\ndata: {k: v}\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("a.yaml", []byte(tc.doc+"---\n"+podDoc))
			switch {
			case tc.ok && err != nil:
				t.Fatal(err)
			case !tc.ok && (err == nil || !strings.Contains(err.Error(), "YAML aliases (*name) expand the manifest to more than 3 MiB")):
				t.Fatalf("Parse = %v, want the alias error", err)
			}
		})
	}
	// The budget is for the whole file: two documents of 2 MiB each.
	half := cm(strings.Repeat("x", 2048), 1000)
	_, err := Parse("a.yaml", []byte(half+"---\n"+strings.Replace(half, "name: c", "name: d", 1)+"---\n"+podDoc))
	if err == nil || !strings.Contains(err.Error(), "a.yaml: document 2: YAML aliases (*name) expand the manifest to more than 3 MiB") {
		t.Fatalf("two documents of 2 MiB: %v, want the alias error on document 2", err)
	}
}

// TestHiddenDocuments: a document the YAML decoder would skip (it starts on
// the "---" line, or after a "..." end marker) is refused; "---" with a
// comment, or trailing spaces, is a separator as before.
func TestHiddenDocuments(t *testing.T) {
	for _, tc := range []struct {
		name, tail, want string
	}{
		{"binary on the separator line", "--- !!binary aGVsbG8=\n", `document 2: starts on line 7 after "---" ("--- !!binary aGVsbG8=")`},
		{"a Pod on the separator line", "--- {apiVersion: v1, kind: Pod}\n", `document 2: starts on line 7 after "---"`},
		{"a block scalar", "--- |\n  text\n", `document 2: starts on line 7 after "---" ("--- |")`},
		{"after an end marker", "...\nkind: Secret\n", `document 2: follows the document end marker "..." on line 7`},
		{"an end marker alone", "...\n", ""},
		{"a separator with a comment", "--- # end\n", ""},
		{"a separator with spaces", "---   \n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("h.yaml", []byte(podDoc+tc.tail))
			switch {
			case tc.want == "" && err != nil:
				t.Fatal(err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Parse = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestDeepNesting(t *testing.T) {
	for _, depth := range []int{100, 9000, 20000} {
		doc := podDoc + "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: " + strings.Repeat("[", depth) + strings.Repeat("]", depth) + "}\n"
		_, err := Parse("d.yaml", []byte(doc))
		var me *Error
		if !errors.As(err, &me) || me.Doc != 2 {
			t.Errorf("depth %d: %v, want an *Error about document 2", depth, err)
		}
	}
}

func TestQuantityBounds(t *testing.T) {
	for _, tc := range []struct {
		name, q, want string // want "" means accepted
	}{
		{"memory", "memory: 64Mi", ""},
		{"exa", "memory: 7Ei", ""},
		{"the largest memory", `memory: "9223372036854775807"`, ""},
		{"the largest cpu", `cpu: "9223372036854775807m"`, ""},
		{"an exponent", "memory: 1e18", ""},
		{"a small exponent", `memory: "1e-100"`, ""},
		{"suffix E", `memory: "1E"`, ""},
		{"2^63 bytes", `memory: "9223372036854775808"`, "too large to represent: the kubelet reads it as a 64-bit integer of bytes"},
		{"1e1000 unquoted", "memory: 1e1000", `invalid quantity "1e1000": too large to represent`},
		{"cpu in millicores", `cpu: "9223372036854776"`, "too large to represent: the kubelet reads it as a 64-bit integer of millicores"},
		{"negative and huge", `memory: "-1e1000"`, "too large to represent"},
		{"exponent wraps", `memory: "1e9223372036854775807"`, "too large to represent"},
		{"exponent too small", `memory: "1e-101"`, "exponent -101 out of range; expected an exponent between -100 and 100"},
		{"exponent overflows", `memory: "1e-99999999999999999999"`, "exponent -99999999999999999999 out of range"},
		{"many digits", `memory: "` + strings.Repeat("1", 65) + `"`, "65 characters long; expected at most 64 characters"},
		{"leading zeros", `memory: "` + strings.Repeat("0", 60) + `64Mi"`, ""},
		{"a syntax error", `memory: "64 megabytes"`, `invalid quantity string "64 megabytes"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := strings.Replace(podDoc, "busybox:1.35}", "busybox:1.35, resources: {limits: {"+tc.q+"}}}", 1)
			_, err := Parse("q.yaml", []byte(doc))
			switch {
			case tc.want == "" && err != nil:
				t.Fatal(err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Parse = %v, want %q", err, tc.want)
			}
		})
	}
	// Quantities outside resources are bounded too.
	doc := strings.Replace(podDoc, "spec:\n", "spec:\n  volumes: [{name: v, emptyDir: {sizeLimit: 1e1000}}]\n", 1)
	if _, err := Parse("q.yaml", []byte(doc)); err == nil || !strings.Contains(err.Error(), "spec.volumes[0].emptyDir.sizeLimit: invalid quantity \"1e1000\": too large") {
		t.Errorf("sizeLimit 1e1000: %v", err)
	}
}

// TestLongValuesShortened: a value of the input shown in a message is cut,
// so a hostile 1 MiB value still gives a one-line message.
func TestLongValuesShortened(t *testing.T) {
	long := strings.Repeat("a", 1<<20)
	key := strings.Repeat("k", 1000) // YAML keys are at most 1024 characters
	for _, tc := range []struct{ name, doc, want string }{
		{"name", strings.Replace(podDoc, "name: web}", "name: "+long+"-}", 1), `metadata.name: invalid value "aaaa`},
		{"uid", strings.Replace(podDoc, "name: web}", "name: web, uid: "+long+"/x}", 1), "metadata.uid: invalid value"},
		{"label key", strings.Replace(podDoc, "name: web}", "name: web, labels: {"+key+": x}}", 1), "metadata.labels: invalid key"},
		{"unknown field", strings.Replace(podDoc, "name: web}", "name: web, "+key+": x}", 1), "unknown field"},
		{"a number", strings.Replace(podDoc, "name: web}", "name: web, labels: {a: "+strings.Repeat("9", 1<<20)+"}}", 1), "metadata.labels[a]: invalid value"},
		{"kind", strings.Replace(podDoc, "kind: Pod", "kind: {"+key+": 1}", 1), "kind: invalid value"},
		{"document", strings.Repeat("x", 1<<20) + "\n", "document is string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("l.yaml", []byte(tc.doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse = %.300v, want %q", err, tc.want)
			}
			if n := len(err.Error()); n > maxErrorLen {
				t.Errorf("message of %d bytes, want at most %d: %.300s...", n, maxErrorLen, err)
			}
		})
	}
}
