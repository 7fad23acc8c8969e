package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
)

// PodDelta is what changed in the pod since the pod of the step line
// before (its "pod", or that pod with its own "pod_delta" applied): the
// "pod_delta" of a step line (issue 34). A whole pod per step made -o json
// and recordings quadratic in the containers (845 MB for 1,000); a delta
// is as large as what the step changed. Apply rebuilds the whole pod;
// PodFolder does so along a stream of step lines.
type PodDelta struct {
	// Phase, Display, Ready and Restarts are the pod's, always (as in PodJSON).
	Phase    corev1.PodPhase `json:"phase"`
	Display  string          `json:"display"`
	Ready    string          `json:"ready"`
	Restarts int32           `json:"restarts"`
	// Status is the pod status without its conditions and container
	// statuses (they follow), when one of its other fields changed (phase,
	// reason, host and pod IPs, start time, QoS class, …): it replaces them
	// all. Absent when none changed.
	Status *corev1.PodStatus `json:"status,omitempty"`
	// ConditionTypes are the condition types in the status's order, when
	// that list changed (a condition appeared, went or moved); absent when
	// it did not.
	ConditionTypes *[]corev1.PodConditionType `json:"condition_types,omitempty"`
	// Conditions are the conditions that changed or appeared, whole (one
	// long message, such as ContainersReady's list of unready containers,
	// as a MessageEdit of the one before).
	Conditions []ConditionDelta `json:"conditions,omitempty"`
	// ContainerLists are, by kind (init, regular, ephemeral), the names of
	// a status list in its order, when that list changed in its names (a
	// status appeared, went or moved); a kind absent kept its names.
	ContainerLists map[string][]string `json:"container_lists,omitempty"`
	// Containers are the container statuses that changed or appeared,
	// whole, each with its kind; its name is its key.
	Containers []ContainerDelta `json:"containers,omitempty"`
}

// Container status kinds: which list of the pod status a ContainerDelta
// is in.
const (
	KindInit      = "init"      // status.initContainerStatuses
	KindRegular   = "regular"   // status.containerStatuses
	KindEphemeral = "ephemeral" // status.ephemeralContainerStatuses
)

var kinds = []string{KindInit, KindRegular, KindEphemeral}

// ContainerDelta is one container status that changed: its kind and the
// status, whole.
type ContainerDelta struct {
	Kind string `json:"kind"`
	corev1.ContainerStatus
}

// ConditionDelta is one pod condition that changed. When MessageEdit is
// set the message is the one before with the edit applied (and the
// condition's own "message" is absent).
type ConditionDelta struct {
	corev1.PodCondition
	MessageEdit *TextEdit `json:"message_edit,omitempty"`
}

// TextEdit changes a text: Cut characters (Unicode code points) at At are
// replaced by Put, as JavaScript's splice on Array.from(text).
type TextEdit struct {
	At  int    `json:"at"`
	Cut int    `json:"cut"`
	Put string `json:"put"`
}

// minEdit is the shortest message sent as a TextEdit: a shorter one is
// sent whole.
const minEdit = 64

// statusLists is the list of kind's container statuses in st.
func statusLists(st *corev1.PodStatus, kind string) *[]corev1.ContainerStatus {
	switch kind {
	case KindInit:
		return &st.InitContainerStatuses
	case KindRegular:
		return &st.ContainerStatuses
	default:
		return &st.EphemeralContainerStatuses
	}
}

// rest is the status without its conditions and container statuses.
func rest(st corev1.PodStatus) corev1.PodStatus {
	st.Conditions, st.InitContainerStatuses, st.ContainerStatuses, st.EphemeralContainerStatuses = nil, nil, nil, nil
	return st
}

// DiffPod returns what changed from prev to cur (neither nil). Applied
// to prev (Apply), it gives a pod whose JSON is cur's, byte for byte.
// Container statuses are compared field by field, their pointers by
// identity first (podstate.Tracker shares what did not change from one
// snapshot to the next; so does Apply), then by their JSON: a step that
// touched one container costs one comparison per container, not a copy.
func DiffPod(prev, cur *PodJSON) *PodDelta {
	d := &PodDelta{Phase: cur.Phase, Display: cur.Display, Ready: cur.Ready, Restarts: cur.Restarts}
	if r := rest(cur.Status); !jsonEqual(rest(prev.Status), r) {
		d.Status = &r
	}
	// Conditions, by type.
	before := map[corev1.PodConditionType]*corev1.PodCondition{}
	for i := range prev.Status.Conditions {
		before[prev.Status.Conditions[i].Type] = &prev.Status.Conditions[i]
	}
	sameTypes := len(prev.Status.Conditions) == len(cur.Status.Conditions)
	for i, c := range cur.Status.Conditions {
		if sameTypes && prev.Status.Conditions[i].Type != c.Type {
			sameTypes = false
		}
		old := before[c.Type]
		if old != nil && jsonEqual(*old, c) {
			continue
		}
		cd := ConditionDelta{PodCondition: c}
		if old != nil && len(c.Message) >= minEdit && old.Message != c.Message {
			if e := editOf(old.Message, c.Message); len(e.Put)+16 < len(c.Message) {
				cd.Message, cd.MessageEdit = "", &e
			}
		}
		d.Conditions = append(d.Conditions, cd)
	}
	if !sameTypes {
		types := make([]corev1.PodConditionType, len(cur.Status.Conditions))
		for i, c := range cur.Status.Conditions {
			types[i] = c.Type
		}
		d.ConditionTypes = &types
	}
	// Container statuses, by kind and name.
	for _, kind := range kinds {
		was, now := *statusLists(&prev.Status, kind), *statusLists(&cur.Status, kind)
		same := len(was) == len(now)
		for i := 0; same && i < len(now); i++ {
			same = was[i].Name == now[i].Name
		}
		if same {
			for i := range now {
				if !sameStatus(&was[i], &now[i]) {
					d.Containers = append(d.Containers, ContainerDelta{Kind: kind, ContainerStatus: now[i]})
				}
			}
			continue
		}
		byName := make(map[string]*corev1.ContainerStatus, len(was))
		for i := range was {
			byName[was[i].Name] = &was[i]
		}
		names := make([]string, len(now))
		for i := range now {
			names[i] = now[i].Name
			if old := byName[now[i].Name]; old == nil || !sameStatus(old, &now[i]) {
				d.Containers = append(d.Containers, ContainerDelta{Kind: kind, ContainerStatus: now[i]})
			}
		}
		if d.ContainerLists == nil {
			d.ContainerLists = map[string][]string{}
		}
		d.ContainerLists[kind] = names
	}
	return d
}

// sameStatus says whether two container statuses read the same in JSON:
// at once when every field is equal and every pointer, map and slice the
// same (shared, not copied); else by their JSON.
func sameStatus(a, b *corev1.ContainerStatus) bool {
	if a.Name == b.Name && a.Ready == b.Ready && a.RestartCount == b.RestartCount && a.Image == b.Image &&
		a.ImageID == b.ImageID && a.ContainerID == b.ContainerID && a.Started == b.Started &&
		a.State == b.State && a.LastTerminationState == b.LastTerminationState &&
		a.Resources == b.Resources && a.User == b.User && a.StopSignal == b.StopSignal &&
		samePtr(a.AllocatedResources, b.AllocatedResources) && samePtr(a.VolumeMounts, b.VolumeMounts) &&
		samePtr(a.AllocatedResourcesStatus, b.AllocatedResourcesStatus) {
		return true
	}
	return jsonEqual(a, b)
}

// samePtr says whether two maps or two slices are the very same (both
// nil, or the same data and length).
func samePtr(a, b any) bool {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	if va.IsNil() || vb.IsNil() {
		return va.IsNil() && vb.IsNil()
	}
	if va.Kind() == reflect.Slice && va.Len() != vb.Len() {
		return false
	}
	return va.UnsafePointer() == vb.UnsafePointer()
}

func jsonEqual(a, b any) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(ja, jb)
}

// editOf is the edit that makes from into to: what lies between their
// common beginning and end, in code points.
func editOf(from, to string) TextEdit {
	p := 0
	for p < len(from) && p < len(to) {
		r1, n1 := utf8.DecodeRuneInString(from[p:])
		r2, n2 := utf8.DecodeRuneInString(to[p:])
		if r1 != r2 || n1 != n2 {
			break
		}
		p += n1
	}
	s := 0
	for s < len(from)-p && s < len(to)-p {
		r1, n1 := utf8.DecodeLastRuneInString(from[:len(from)-s])
		r2, n2 := utf8.DecodeLastRuneInString(to[:len(to)-s])
		if r1 != r2 || n1 != n2 || n1 > len(from)-p-s || n2 > len(to)-p-s {
			break
		}
		s += n1
	}
	return TextEdit{At: utf8.RuneCountInString(from[:p]), Cut: utf8.RuneCountInString(from[p : len(from)-s]), Put: to[p : len(to)-s]}
}

// apply is the text with e applied; ok is false when e does not fit it.
func (e TextEdit) apply(text string) (string, bool) {
	runes := []rune(text)
	if e.At < 0 || e.Cut < 0 || e.At > len(runes) || e.Cut > len(runes)-e.At {
		return "", false
	}
	return string(runes[:e.At]) + e.Put + string(runes[e.At+e.Cut:]), true
}

// Apply returns the pod after d, given the pod before (not changed: the
// statuses d leaves alone are shared with it). An error says what in d
// does not fit prev (a container or condition it names without giving it).
func (d *PodDelta) Apply(prev *PodJSON) (*PodJSON, error) {
	out := &PodJSON{Phase: d.Phase, Display: d.Display, Ready: d.Ready, Restarts: d.Restarts}
	st := rest(prev.Status)
	if d.Status != nil {
		st = rest(*d.Status)
	}
	// Conditions.
	byType := map[corev1.PodConditionType]ConditionDelta{}
	for _, c := range d.Conditions {
		byType[c.Type] = c
	}
	types := make([]corev1.PodConditionType, len(prev.Status.Conditions))
	for i, c := range prev.Status.Conditions {
		types[i] = c.Type
	}
	if d.ConditionTypes != nil {
		types = *d.ConditionTypes
	}
	for _, t := range types {
		old := conditionOf(prev.Status.Conditions, t)
		cd, changed := byType[t]
		switch {
		case !changed && old == nil:
			return nil, fmt.Errorf("pod_delta: condition %q is neither in the delta nor in the pod before", t)
		case !changed:
			st.Conditions = append(st.Conditions, *old)
			continue
		}
		c := cd.PodCondition
		if cd.MessageEdit != nil {
			if old == nil {
				return nil, fmt.Errorf("pod_delta: condition %q edits a message the pod before has no condition for", t)
			}
			msg, ok := cd.MessageEdit.apply(old.Message)
			if !ok {
				return nil, fmt.Errorf("pod_delta: condition %q's message_edit (at %d, cut %d) does not fit the message before (%d characters)",
					t, cd.MessageEdit.At, cd.MessageEdit.Cut, utf8.RuneCountInString(old.Message))
			}
			c.Message = msg
		}
		st.Conditions = append(st.Conditions, c)
		delete(byType, t)
	}
	for t := range byType {
		return nil, fmt.Errorf("pod_delta: condition %q is not in the pod's list of conditions", t)
	}
	// Container statuses.
	changed := map[string]map[string]*corev1.ContainerStatus{}
	for i := range d.Containers {
		c := &d.Containers[i]
		if !slices.Contains(kinds, c.Kind) {
			return nil, fmt.Errorf("pod_delta: container %q of kind %q (expected init, regular or ephemeral)", c.Name, c.Kind)
		}
		if changed[c.Kind] == nil {
			changed[c.Kind] = map[string]*corev1.ContainerStatus{}
		}
		changed[c.Kind][c.Name] = &c.ContainerStatus
	}
	for kind := range d.ContainerLists {
		if !slices.Contains(kinds, kind) {
			return nil, fmt.Errorf("pod_delta: container_lists of kind %q (expected init, regular or ephemeral)", kind)
		}
	}
	for _, kind := range kinds {
		was := *statusLists(&prev.Status, kind)
		now := statusLists(&st, kind)
		news := changed[kind]
		names, relisted := d.ContainerLists[kind]
		if !relisted {
			if len(news) == 0 {
				*now = was
				continue
			}
			list := slices.Clone(was)
			for i := range list {
				if c := news[list[i].Name]; c != nil {
					list[i] = *c
					delete(news, list[i].Name)
				}
			}
			for name := range news {
				return nil, fmt.Errorf("pod_delta: %s container %q is not in the pod's list of %s container statuses", kind, name, kind)
			}
			*now = list
			continue
		}
		if len(names) == 0 {
			continue
		}
		byName := make(map[string]*corev1.ContainerStatus, len(was))
		for i := range was {
			byName[was[i].Name] = &was[i]
		}
		list := make([]corev1.ContainerStatus, len(names))
		for i, name := range names {
			switch c, old := news[name], byName[name]; {
			case c != nil:
				list[i] = *c
			case old != nil:
				list[i] = *old
			default:
				return nil, fmt.Errorf("pod_delta: %s container %q is neither in the delta nor in the pod before", kind, name)
			}
		}
		*now = list
	}
	out.Status = st
	return out, nil
}

func conditionOf(cs []corev1.PodCondition, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range cs {
		if cs[i].Type == t {
			return &cs[i]
		}
	}
	return nil
}

// PodFolder rebuilds the whole pod after every step from step lines whose
// pod comes whole ("pod") or as a change ("pod_delta"): what a consumer
// of -o json or of a recording that wants the pod after each step does.
// Its zero value is ready.
type PodFolder struct {
	pod *PodJSON
}

// Fold sets s.Pod to the whole pod after s: s.Pod if the line has it,
// else the pod before with s.PodDelta applied. A step line with neither
// leaves the pod as it was (and s.Pod nil). An error says why a
// pod_delta does not fit (none came before it, or it names what the pod
// before lacks).
func (f *PodFolder) Fold(s *StepJSON) error {
	switch {
	case s.Pod != nil:
		f.pod = s.Pod
	case s.PodDelta != nil:
		if f.pod == nil {
			return fmt.Errorf("pod_delta comes before any step line with the whole pod")
		}
		pod, err := s.PodDelta.Apply(f.pod)
		if err != nil {
			return err
		}
		s.Pod, f.pod = pod, pod
	}
	return nil
}

// Pod is the pod after the last step folded (nil before any).
func (f *PodFolder) Pod() *PodJSON { return f.pod }

// resyncEvery is how many times the bytes of the last whole pod a JSON
// printer writes in pod_deltas before it writes the whole pod again: the
// whole pods then add at most a quarter to the deltas' bytes (plus the
// first), and a consumer that starts reading in the middle (a live page
// that joined after its history was cut, `tail -f`) has the whole pod
// again within as many bytes.
const resyncEvery = 4

// podLines is a JSON printer's choice, step line by step line, between
// the whole pod and a pod_delta.
type podLines struct {
	full      bool     // every step line has the whole pod (SetFullPod)
	prev      *PodJSON // the pod of the last step line that had one
	fullSize  int      // bytes of the last whole pod written
	sinceFull int      // bytes of pod_delta written since
}

// line returns s as the printer writes it: with the whole pod (s.Pod, the
// pod after the step, as every caller gives it) on the first step line
// that has one, every line with SetFullPod, and again once the deltas
// since the last whole pod outweigh it resyncEvery times; else with
// PodDelta instead. The choice depends on the pods alone, so a replay
// of a recording writes its step lines again byte for byte.
func (l *podLines) line(s StepJSON) StepJSON {
	s.PodDelta = nil
	if s.Pod == nil {
		return s
	}
	prev := l.prev
	l.prev = s.Pod
	if l.full {
		return s
	}
	if prev != nil {
		d := DiffPod(prev, s.Pod)
		if b, err := json.Marshal(d); err == nil && l.sinceFull+len(b) <= resyncEvery*l.fullSize {
			l.sinceFull += len(b)
			s.Pod, s.PodDelta = nil, d
			return s
		}
	}
	b, _ := json.Marshal(s.Pod)
	l.fullSize, l.sinceFull = len(b), 0
	return s
}

// SetFullPod makes a JSON printer write the whole pod on every step line
// (`--json-full-pod`), as podstep did before recording format version 2,
// instead of pod_delta lines.
func (p *Printer) SetFullPod(full bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pods.full = full
}

// ApplyAll returns the pod after ds, applied in order to prev: what
// applying each with Apply gives, with prev's lists copied once and each
// delta written into the copy (a nil delta changes nothing). A replay
// that keeps a whole pod now and then, and the deltas between, rebuilds
// any position with it in time linear in the pod.
func ApplyAll(prev *PodJSON, ds []*PodDelta) (*PodJSON, error) {
	cur := own(prev)
	var index map[string]map[string]int // kind → name → index, built at need
	for _, d := range ds {
		if d == nil {
			continue
		}
		if d.ContainerLists != nil || d.ConditionTypes != nil {
			// A list that changed its names: Apply, then own the result.
			next, err := d.Apply(cur)
			if err != nil {
				return nil, err
			}
			cur, index = own(next), nil
			continue
		}
		cur.Phase, cur.Display, cur.Ready, cur.Restarts = d.Phase, d.Display, d.Ready, d.Restarts
		if d.Status != nil {
			st := rest(*d.Status)
			st.Conditions, st.InitContainerStatuses = cur.Status.Conditions, cur.Status.InitContainerStatuses
			st.ContainerStatuses, st.EphemeralContainerStatuses = cur.Status.ContainerStatuses, cur.Status.EphemeralContainerStatuses
			cur.Status = st
		}
		for _, cd := range d.Conditions {
			old := conditionOf(cur.Status.Conditions, cd.Type)
			if old == nil {
				return nil, fmt.Errorf("pod_delta: condition %q is not in the pod's list of conditions", cd.Type)
			}
			c := cd.PodCondition
			if cd.MessageEdit != nil {
				msg, ok := cd.MessageEdit.apply(old.Message)
				if !ok {
					return nil, fmt.Errorf("pod_delta: condition %q's message_edit (at %d, cut %d) does not fit the message before (%d characters)",
						cd.Type, cd.MessageEdit.At, cd.MessageEdit.Cut, utf8.RuneCountInString(old.Message))
				}
				c.Message = msg
			}
			*old = c
		}
		if len(d.Containers) > 0 && index == nil {
			index = map[string]map[string]int{}
			for _, kind := range kinds {
				list := *statusLists(&cur.Status, kind)
				index[kind] = make(map[string]int, len(list))
				for i := range list {
					if _, dup := index[kind][list[i].Name]; !dup {
						index[kind][list[i].Name] = i
					}
				}
			}
		}
		for _, c := range d.Containers {
			i, ok := index[c.Kind][c.Name]
			if !ok {
				if !slices.Contains(kinds, c.Kind) {
					return nil, fmt.Errorf("pod_delta: container %q of kind %q (expected init, regular or ephemeral)", c.Name, c.Kind)
				}
				return nil, fmt.Errorf("pod_delta: %s container %q is not in the pod's list of %s container statuses", c.Kind, c.Name, c.Kind)
			}
			(*statusLists(&cur.Status, c.Kind))[i] = c.ContainerStatus
		}
	}
	return cur, nil
}

// own is a copy of pod whose lists (conditions, container statuses) are
// its own, to write into.
func own(pod *PodJSON) *PodJSON {
	c := *pod
	c.Status.Conditions = slices.Clone(pod.Status.Conditions)
	for _, kind := range kinds {
		l := statusLists(&c.Status, kind)
		*l = slices.Clone(*l)
	}
	return &c
}
