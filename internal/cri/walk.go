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
	m.walkPlan(msg, nil)
}

// walkPlan is walk with msg's plan when the caller has it (nil: look it up).
func (m *maskSet) walkPlan(msg protoreflect.Message, plan []fieldPlan) {
	// Env vars are most of a container config's messages: their values are
	// masked without reflection, and the plan leaves the envs field out.
	switch x := msg.Interface().(type) {
	case *runtimeapi.ContainerConfig:
		m.envs(x.Envs)
	case *runtimeapi.KeyValue:
		m.envs([]*runtimeapi.KeyValue{x})
		return
	}
	if plan == nil {
		plan = planFor(msg.Descriptor())
	}
	for _, f := range plan {
		if !msg.Has(f.fd) {
			continue
		}
		switch {
		case f.fd.IsMap():
			if sm := stringMap(msg, f); sm != nil {
				for k, v := range sm {
					if nv := m.text(v); nv != v {
						sm[k] = nv
					}
				}
				continue
			}
			m.walkMap(f, msg.Mutable(f.fd).Map())
		case f.fd.IsList():
			l := msg.Mutable(f.fd).List()
			for j := 0; j < l.Len(); j++ {
				if f.kind == protoreflect.MessageKind {
					m.walkPlan(l.Get(j).Message(), f.sub)
				} else if nv, ok := m.value(f.kind, l.Get(j), f.placed); ok {
					l.Set(j, nv)
				}
			}
		case f.kind == protoreflect.MessageKind:
			m.walkPlan(msg.Mutable(f.fd).Message(), f.sub)
		default:
			if nv, ok := m.value(f.kind, msg.Get(f.fd), f.placed); ok {
				msg.Set(f.fd, nv)
			}
		}
	}
}

// changes reports whether walk would change anything in msg, reading it
// only: the same plan, fields and masks, no copy made.
func (m *maskSet) changes(msg protoreflect.Message, plan []fieldPlan) bool {
	switch x := msg.Interface().(type) {
	case *runtimeapi.ContainerConfig:
		for _, kv := range x.Envs {
			if _, changed := m.bytes(kv.Value, true); changed {
				return true
			}
		}
	case *runtimeapi.KeyValue:
		_, changed := m.bytes(x.Value, true)
		return changed
	}
	if plan == nil {
		plan = planFor(msg.Descriptor())
	}
	for _, f := range plan {
		if !msg.Has(f.fd) {
			continue
		}
		switch {
		case f.fd.IsMap():
			if sm := stringMap(msg, f); sm != nil {
				for _, v := range sm {
					if m.text(v) != v {
						return true
					}
				}
				continue
			}
			found := false
			msg.Get(f.fd).Map().Range(func(_ protoreflect.MapKey, v protoreflect.Value) bool {
				if f.kind == protoreflect.MessageKind {
					found = m.changes(v.Message(), f.sub)
				} else {
					_, found = m.value(f.kind, v, false)
				}
				return !found
			})
			if found {
				return true
			}
		case f.fd.IsList():
			l := msg.Get(f.fd).List()
			for j := 0; j < l.Len(); j++ {
				if f.kind == protoreflect.MessageKind {
					if m.changes(l.Get(j).Message(), f.sub) {
						return true
					}
				} else if _, ok := m.value(f.kind, l.Get(j), f.placed); ok {
					return true
				}
			}
		case f.kind == protoreflect.MessageKind:
			if m.changes(msg.Get(f.fd).Message(), f.sub) {
				return true
			}
		default:
			if _, ok := m.value(f.kind, msg.Get(f.fd), f.placed); ok {
				return true
			}
		}
	}
	return false
}

// labeled and annotated are the generated getters of the label and
// annotation maps, which most CRI messages have.
type (
	labeled   interface{ GetLabels() map[string]string }
	annotated interface{ GetAnnotations() map[string]string }
)

// stringMap returns the Go map of a labels or annotations field, to mask in
// place: protoreflect's map Range copies every key and value.
func stringMap(msg protoreflect.Message, f fieldPlan) map[string]string {
	if f.kind != protoreflect.StringKind {
		return nil
	}
	switch f.fd.Name() {
	case "labels":
		if l, ok := msg.Interface().(labeled); ok {
			return l.GetLabels()
		}
	case "annotations":
		if a, ok := msg.Interface().(annotated); ok {
			return a.GetAnnotations()
		}
	}
	return nil
}

func (m *maskSet) walkMap(f fieldPlan, mp protoreflect.Map) {
	mp.Range(func(k protoreflect.MapKey, v protoreflect.Value) bool {
		if f.kind == protoreflect.MessageKind {
			m.walkPlan(v.Message(), f.sub)
			return true
		}
		if nv, ok := m.value(f.kind, v, false); ok {
			mp.Set(k, nv)
		}
		return true
	})
}

// value masks one scalar; ok is true when it changed.
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
	sub    []fieldPlan // the plan of a message value (nil: look it up, for recursive types)
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
			if visiting[sub.FullName()] {
				out = append(out, f)
				continue
			}
			if f.sub = buildPlan(sub, visiting); len(f.sub) > 0 {
				out = append(out, f)
			}
		}
	}
	return out
}
