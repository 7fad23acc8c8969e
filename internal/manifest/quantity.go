package manifest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	inf "gopkg.in/inf.v0"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Bounds on the text of a quantity, checked before resource.ParseQuantity
// sees it. ParseQuantity accepts any length and any exponent, but it is slow
// on long numbers (String() of a 100000-digit quantity takes seconds), slow
// on large negative exponents ("1e-10000000" takes a second) and wraps
// exponents beyond 32 bits ("1e9223372036854775807" parses as 0.1). The
// API server has no such bounds; no quantity that fits in 64 bits (see
// quantityValueProblem) needs more.
const (
	maxQuantityLen      = 64
	maxQuantityExponent = 100
)

// quantityTextProblem says what is wrong with the text of a quantity of
// resource name, or "" when it is within the bounds above. Syntax errors are
// left to resource.ParseQuantity.
func quantityTextProblem(name corev1.ResourceName, s string) string {
	if len(s) > maxQuantityLen {
		return fmt.Sprintf("%d characters long; expected at most %d characters, such as \"64Mi\" or \"500m\"", len(s), maxQuantityLen)
	}
	i := strings.LastIndexAny(s, "eE")
	if i <= 0 || i == len(s)-1 || strings.Trim(s[i+1:], "+-0123456789") != "" {
		return "" // no exponent (the suffix "E" is exa), or a syntax error
	}
	exp, err := strconv.ParseInt(s[i+1:], 10, 64)
	switch {
	case err != nil && strings.HasPrefix(s[i+1:], "-"), err == nil && exp < -maxQuantityExponent:
		return fmt.Sprintf("exponent %s out of range; expected an exponent between -%d and %d, such as \"1e9\"", s[i+1:], maxQuantityExponent, maxQuantityExponent)
	case err != nil, exp > maxQuantityExponent:
		return tooLarge(name)
	}
	return ""
}

// quantityTypes records which types hold a resource.Quantity somewhere.
var quantityTypes = struct {
	sync.Mutex
	m map[reflect.Type]bool
}{m: map[reflect.Type]bool{}}

// hasQuantity reports whether a value of type t can hold a
// resource.Quantity.
func hasQuantity(t reflect.Type) bool {
	quantityTypes.Lock()
	defer quantityTypes.Unlock()
	return hasQuantityLocked(t, map[reflect.Type]bool{})
}

func hasQuantityLocked(t reflect.Type, visiting map[reflect.Type]bool) bool {
	t = derefType(t)
	if v, ok := quantityTypes.m[t]; ok {
		return v
	}
	if t == quantityType {
		return true
	}
	if visiting[t] {
		return false
	}
	visiting[t] = true
	has := false
	switch t.Kind() {
	case reflect.Struct:
		for _, ft := range jsonFields(t) {
			if hasQuantityLocked(ft, visiting) {
				has = true
				break
			}
		}
	case reflect.Slice, reflect.Map, reflect.Array:
		has = hasQuantityLocked(t.Elem(), visiting)
	}
	quantityTypes.m[t] = has
	return has
}

// checkQuantities walks raw, the JSON of a value of type t, and checks every
// value that will decode into a resource.Quantity, before it is decoded:
// its text with quantityTextProblem, then its value with quantityValueProblem.
// name is the map key of the value (the resource name in a ResourceList).
// It returns every problem, each with its field path (as locate writes
// it), in the order of the fields. Syntax errors are left to the decoder.
func checkQuantities(raw []byte, t reflect.Type, name string) []fieldErr {
	if !hasQuantity(t) {
		return nil
	}
	bt := derefType(t)
	if bt == quantityType {
		var s string
		raw = bytes.TrimSpace(raw)
		if len(raw) > 0 && raw[0] == '"' {
			if json.Unmarshal(raw, &s) != nil {
				return nil
			}
		} else {
			s = string(raw) // a number
		}
		// As Quantity.UnmarshalJSON, which trims white space before parsing:
		// "1e18 " is the quantity 1e18, and must be checked as one.
		s = strings.TrimSpace(s)
		msg := quantityTextProblem(corev1.ResourceName(name), s)
		if msg == "" {
			q, err := resource.ParseQuantity(s)
			if err != nil {
				// As the decoder explains it, but with the other
				// quantities' errors (the decoder stops at the first).
				return []fieldErr{{msg: decodeMessage(quantityType, raw, err)}}
			}
			msg = quantityValueProblem(corev1.ResourceName(name), q)
		}
		if msg != "" {
			return []fieldErr{{msg: fmt.Sprintf("invalid quantity %q: %s", shorten(s, 24), msg)}}
		}
		return nil
	}
	var out []fieldErr
	under := func(prefix string, errs []fieldErr) {
		for _, e := range errs {
			out = append(out, fieldErr{field: prefix + e.field, msg: e.msg})
		}
	}
	switch bt.Kind() {
	case reflect.Struct:
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) != nil {
			return nil
		}
		fields := jsonFields(bt)
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if ft, ok := fields[k]; ok {
				under("."+k, checkQuantities(m[k], ft, ""))
			}
		}
	case reflect.Slice:
		var a []json.RawMessage
		if json.Unmarshal(raw, &a) != nil {
			return nil
		}
		for i, e := range a {
			under("["+strconv.Itoa(i)+"]", checkQuantities(e, bt.Elem(), ""))
		}
	case reflect.Map:
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) != nil {
			return nil
		}
		for _, k := range slices.Sorted(maps.Keys(m)) {
			under("["+k+"]", checkQuantities(m[k], bt.Elem(), k))
		}
	}
	return out
}

var (
	maxInt64Dec = inf.NewDec(math.MaxInt64, 0)
	thousandDec = inf.NewDec(1000, 0)
)

// quantityValueProblem checks that q fits in the 64-bit integer the kubelet
// (and podstep) read it as: millicores for cpu (Quantity.MilliValue), whole
// units (bytes) for everything else (Quantity.Value). A larger value is
// silently wrong there: "1e1000" reads as 0, so a memory limit of 1e1000
// would be no limit at all, and "9223372036854775808" reads as a negative
// number. The API server accepts such values; podstep refuses them.
func quantityValueProblem(name corev1.ResourceName, q resource.Quantity) string {
	d := new(inf.Dec).Abs(q.AsDec())
	if name == corev1.ResourceCPU {
		d.Mul(d, thousandDec)
	}
	if d.Cmp(maxInt64Dec) > 0 {
		return tooLarge(name)
	}
	return ""
}

func tooLarge(name corev1.ResourceName) string {
	unit := "bytes (or units)"
	if name == corev1.ResourceCPU {
		unit = "millicores"
	}
	return fmt.Sprintf("too large to represent: the kubelet reads it as a 64-bit integer of %s; expected at most %d %s", unit, int64(math.MaxInt64), unit)
}
