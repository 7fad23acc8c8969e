package watch

import (
	"fmt"
	"unicode/utf8"

	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/podstep/podstep/internal/record"
)

// What the proxy keeps of each call's bodies (what it shows, records and
// traces; what it forwards is never changed). A kubelet's CRI message may
// be 16 MiB (an ExecSync's output, a runtime's error); kept whole, a few of
// them grow podstep without bound and make recording lines that replay
// refuses (record.MaxLine).
const (
	// FieldCut is the longest string or bytes field kept whole; a longer
	// one keeps its first FieldCut bytes and says how long it was.
	FieldCut = 16 << 10
	// MaxBody is the largest message kept (its protobuf size): a larger
	// one, after FieldCut, is cut harder (shorter fields, shorter lists).
	MaxBody = 256 << 10
	// StepBudget is the protobuf size of the bodies one step keeps: past
	// it, its later calls are cut to almost nothing (no field, no list
	// item, the marks). With JSON's worst expansion (×6: a control
	// character is \u0001) a step's line stays under record.MaxLine, what
	// replay reads.
	StepBudget = record.MaxLine / 8
)

// cutLevels are the successive cuts: longest field kept, most list items.
var cutLevels = []struct{ field, items int }{{FieldCut, -1}, {1 << 10, 100}, {64, 10}, {0, 0}}

// CutMark is what ends a cut field: the bytes it had.
func CutMark(n int) string { return fmt.Sprintf("…[cut by podstep: %d bytes]", n) }

// cutBody is m as the watcher keeps it: itself when it is small, else a
// copy cut to at most limit bytes (protobuf size), or the cut that comes
// closest. It returns what it kept and its size.
func cutBody(m proto.Message, limit int) (proto.Message, int) {
	if m == nil {
		return nil, 0
	}
	size := proto.Size(m)
	if size <= limit && !hasLongField(m.ProtoReflect(), FieldCut) {
		return m, size
	}
	var c proto.Message
	for _, l := range cutLevels {
		c = proto.Clone(m)
		cutFields(c.ProtoReflect(), l.field, l.items)
		if size = proto.Size(c); size <= limit {
			break
		}
	}
	return c, size
}

// hasLongField reports whether any string or bytes field in m is longer
// than n.
func hasLongField(m protoreflect.Message, n int) bool {
	long := false
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		vd := fd
		if fd.IsMap() {
			vd = fd.MapValue()
		}
		each(fd, v, func(v protoreflect.Value) {
			switch vd.Kind() {
			case protoreflect.StringKind:
				long = long || len(v.String()) > n
			case protoreflect.BytesKind:
				long = long || len(v.Bytes()) > n
			case protoreflect.MessageKind, protoreflect.GroupKind:
				long = long || hasLongField(v.Message(), n)
			}
		})
		return !long
	})
	return long
}

// each calls fn with v's values: v itself, each list item, each map value.
func each(fd protoreflect.FieldDescriptor, v protoreflect.Value, fn func(protoreflect.Value)) {
	switch {
	case fd.IsList():
		l := v.List()
		for i := range l.Len() {
			fn(l.Get(i))
		}
	case fd.IsMap():
		v.Map().Range(func(_ protoreflect.MapKey, v protoreflect.Value) bool { fn(v); return true })
	default:
		fn(v)
	}
}

// cutFields cuts, in place, every string and bytes field of m longer than
// field, and every list longer than items (items < 0: lists are kept).
func cutFields(m protoreflect.Message, field, items int) {
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.IsList() && items >= 0 && v.List().Len() > items {
			v.List().Truncate(items)
		}
		switch {
		case fd.IsList():
			l := v.List()
			for i := range l.Len() {
				if nv, ok := cutValue(fd, l.Get(i), field, items); ok {
					l.Set(i, nv)
				}
			}
		case fd.IsMap():
			mp := v.Map()
			mp.Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				if nv, ok := cutValue(fd.MapValue(), mv, field, items); ok {
					mp.Set(k, nv)
				}
				return true
			})
		default:
			if nv, ok := cutValue(fd, v, field, items); ok {
				m.Set(fd, nv)
			}
		}
		return true
	})
}

// cutValue is v cut (ok: it changed); messages are cut in place.
func cutValue(fd protoreflect.FieldDescriptor, v protoreflect.Value, field, items int) (protoreflect.Value, bool) {
	switch fd.Kind() {
	case protoreflect.StringKind:
		if s := v.String(); len(s) > field {
			return protoreflect.ValueOfString(cutString(s, field)), true
		}
	case protoreflect.BytesKind:
		if b := v.Bytes(); len(b) > field {
			return protoreflect.ValueOfBytes(append(b[:field:field], CutMark(len(b))...)), true
		}
	case protoreflect.MessageKind, protoreflect.GroupKind:
		cutFields(v.Message(), field, items)
	}
	return v, false
}

// cutString keeps s's first n bytes (whole runes) and the mark.
func cutString(s string, n int) string {
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + CutMark(len(s))
}

// cutErr is err with its message cut to FieldCut.
func cutErr(err error) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		if len(err.Error()) > FieldCut {
			return fmt.Errorf("%s", cutString(err.Error(), FieldCut))
		}
		return err
	}
	if len(st.Message()) <= FieldCut {
		return err
	}
	return status.Error(st.Code(), cutString(st.Message(), FieldCut))
}
