package cri

import (
	"sync"

	"google.golang.org/protobuf/reflect/protoreflect"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// walk masks every string and bytes field of msg in place, at any depth:
// placed fields with field, the others (map values included) with text. Map
// keys are names, left as they are.
func (m *maskSet) walk(msg protoreflect.Message) {
	// Env vars are most of a container config's messages: their values are
	// masked without reflection, and the plan leaves the envs field out.
	switch x := msg.Interface().(type) {
	case *runtimeapi.ContainerConfig:
		m.envs(x.Envs)
	case *runtimeapi.KeyValue:
		m.envs([]*runtimeapi.KeyValue{x})
		return
	}
	for _, f := range planFor(msg.Descriptor()) {
		if !msg.Has(f.fd) {
			continue
		}
		switch {
		case f.fd.IsMap():
			m.walkMap(f, msg.Mutable(f.fd).Map())
		case f.fd.IsList():
			l := msg.Mutable(f.fd).List()
			for j := 0; j < l.Len(); j++ {
				if nv, ok := m.value(f.kind, l.Get(j), f.placed); ok {
					l.Set(j, nv)
				}
			}
		case f.kind == protoreflect.MessageKind:
			m.walk(msg.Mutable(f.fd).Message())
		default:
			if nv, ok := m.value(f.kind, msg.Get(f.fd), f.placed); ok {
				msg.Set(f.fd, nv)
			}
		}
	}
}

func (m *maskSet) walkMap(f fieldPlan, mp protoreflect.Map) {
	mp.Range(func(k protoreflect.MapKey, v protoreflect.Value) bool {
		if f.kind == protoreflect.MessageKind {
			m.walk(v.Message())
			return true
		}
		if nv, ok := m.value(f.kind, v, false); ok {
			mp.Set(k, nv)
		}
		return true
	})
}

// value masks one scalar or walks one message; ok is true when a scalar
// changed.
func (m *maskSet) value(k protoreflect.Kind, v protoreflect.Value, precise bool) (protoreflect.Value, bool) {
	mask := m.text
	if precise {
		mask = m.field
	}
	switch k {
	case protoreflect.StringKind:
		s := v.String()
		if ns := mask(s); ns != s {
			return protoreflect.ValueOfString(ns), true
		}
	case protoreflect.BytesKind:
		if nb, changed := m.bytes(v.Bytes(), precise); changed {
			return protoreflect.ValueOfBytes(nb), true
		}
	case protoreflect.MessageKind:
		m.walk(v.Message())
	}
	return protoreflect.Value{}, false
}

// envs masks env values, placed fields.
func (m *maskSet) envs(kvs []*runtimeapi.KeyValue) {
	for _, kv := range kvs {
		if nb, changed := m.bytes(kv.Value, true); changed {
			kv.Value = nb
		}
	}
}

// bytes masks a bytes field, converted to a string only when something may
// match; changed is false when it stays as it is.
func (m *maskSet) bytes(b []byte, precise bool) ([]byte, bool) {
	_, whole := m.exact[string(b)]
	if !whole && (m.starts == nil || !in(m.starts, b)) && (!precise || len(m.suffixes) == 0) {
		return b, false
	}
	s := string(b)
	ns := m.text(s)
	if precise {
		ns = m.field(s)
	}
	if ns == s {
		return b, false
	}
	return []byte(ns), true
}

// fieldPlan is one field walk visits: a string or bytes field, or a message
// field (also list or map value) whose type holds one at some depth.
type fieldPlan struct {
	fd     protoreflect.FieldDescriptor
	kind   protoreflect.Kind // of the value (of a map: the map value); groups are MessageKind
	placed bool
}

const envsField = "runtime.v1.ContainerConfig.envs"

// plans caches, per message type, the fields walk visits: messages of
// numbers only (resources, most of the security context) are not entered.
var plans sync.Map // protoreflect.FullName → []fieldPlan

func planFor(md protoreflect.MessageDescriptor) []fieldPlan {
	if p, ok := plans.Load(md.FullName()); ok {
		return p.([]fieldPlan)
	}
	p := buildPlan(md, map[protoreflect.FullName]bool{})
	plans.Store(md.FullName(), p)
	return p
}

// buildPlan lists md's fields that hold strings; visiting guards recursive types.
func buildPlan(md protoreflect.MessageDescriptor, visiting map[protoreflect.FullName]bool) []fieldPlan {
	visiting[md.FullName()] = true
	defer delete(visiting, md.FullName())
	var out []fieldPlan
	fields := md.Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		if fd.FullName() == envsField {
			continue // walk masks them directly
		}
		vd := fd
		if fd.IsMap() {
			vd = fd.MapValue()
		}
		f := fieldPlan{fd: fd, kind: vd.Kind(), placed: placed[string(fd.FullName())]}
		switch f.kind {
		case protoreflect.StringKind, protoreflect.BytesKind:
			out = append(out, f)
		case protoreflect.MessageKind, protoreflect.GroupKind:
			f.kind = protoreflect.MessageKind
			sub := vd.Message()
			if visiting[sub.FullName()] || len(buildPlan(sub, visiting)) > 0 {
				out = append(out, f)
			}
		}
	}
	return out
}
