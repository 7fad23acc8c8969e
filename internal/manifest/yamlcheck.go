package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	yamlv2 "go.yaml.in/yaml/v2"
)

// checkYAML parses one "---"-separated part of the file with the YAML
// decoder that sigs.k8s.io/yaml uses for the conversion to JSON, before that
// conversion runs, and refuses two things the conversion would not:
//
//   - a part that holds more than one YAML document: the conversion reads
//     the first document only and silently drops the rest, so
//     "--- !!binary ..." or "... " followed by more YAML would be ignored;
//   - YAML aliases (*name) that expand the manifest past MaxSize: the
//     decoder bounds how many nodes aliases may add, but an alias of a long
//     string costs nothing to decode and everything to convert (a 1 MiB
//     string aliased 990 times converts to 1 GB of JSON).
//
// The decoder itself bounds nesting (10000 levels). A part the decoder
// cannot parse is left to the conversion, which reports the same error
// (the YAML decoder is the same). used is the expanded size of the
// documents before this one; checkYAML returns it with this one added.
//
// Parsing twice costs time, so a part is checked only when it can hold an
// alias (it has a '*') or a second document (it has "---" or "..."); else
// its expanded size is at most its length, which is already bounded.
func (p *parser) checkYAML(d rawDoc, used int) (int, *Error) {
	if bytes.IndexByte(d.data, '*') < 0 && !bytes.Contains(d.data, []byte("---")) && !bytes.Contains(d.data, []byte("...")) {
		return used + len(d.data), nil
	}
	dec := yamlv2.NewDecoder(bytes.NewReader(d.data))
	dec.SetStrict(true)
	var v any
	if err := dec.Decode(&v); err != nil {
		return used, nil // io.EOF: an empty part; else the conversion reports it
	}
	used += expandedSize(v, MaxSize-used+1)
	if used > MaxSize {
		return used, p.errf("", "YAML aliases (*name) expand the manifest to more than %s; expected at most %s once aliases are expanded (write the values out, or reference them less often)", sizeText(MaxSize), sizeText(MaxSize))
	}
	var next any
	if err := dec.Decode(&next); !errors.Is(err, io.EOF) {
		// Number the hidden document after this one.
		e := p.errf("", "is inside document %d, where the YAML decoder would ignore it; expected \"---\" alone on its line between documents", p.doc)
		e.Doc++
		switch n, line := secondDocumentLine(d.data); {
		case strings.HasPrefix(line, "---"):
			e.Msg = fmt.Sprintf("starts on line %d after \"---\" (%q), where the YAML decoder would ignore it; expected \"---\" alone on its line, with the document on the lines below it", d.line+n-1, line)
		case n > 0:
			e.Msg = fmt.Sprintf("follows the document end marker \"...\" on line %d, where the YAML decoder would ignore it; expected \"---\" alone on its line between documents", d.line+n-1)
		}
		return used, e
	}
	return used, nil
}

// expandedSize returns the size of a decoded YAML value with its aliases
// expanded: the length of every string plus one for every node, map key
// and list item. For a document without aliases this is at most the length
// of its text. It stops counting once the size exceeds limit.
func expandedSize(v any, limit int) int {
	n := 1
	switch x := v.(type) {
	case string:
		n += len(x)
	case []any:
		for _, e := range x {
			if n > limit {
				break
			}
			n += expandedSize(e, limit-n)
		}
	case map[any]any:
		for k, e := range x {
			if n > limit {
				break
			}
			n += expandedSize(k, limit-n)
			n += expandedSize(e, limit-n)
		}
	}
	return n
}

// secondDocumentLine finds the line of data that starts a second YAML
// document: a "---" or "..." marker followed by something. It returns its
// 1-based number within data (0 if none) and its text, shortened.
func secondDocumentLine(data []byte) (int, string) {
	for i, l := range bytes.Split(data, []byte("\n")) {
		l = bytes.TrimRight(l, "\r")
		if bytes.HasPrefix(l, []byte("---")) || bytes.HasPrefix(l, []byte("...")) {
			if len(l) == 3 || l[3] == ' ' || l[3] == '\t' {
				return i + 1, shorten(string(l), 40)
			}
		}
	}
	return 0, ""
}
