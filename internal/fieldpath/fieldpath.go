// Package fieldpath resolves the downward API for a pod: object field paths
// (metadata.name, metadata.labels['k'], …) and container resource values
// (limits.memory, requests.cpu, …), for env vars (internal/podcfg) and
// downwardAPI volume items (internal/volume) alike.
//
// It mirrors, under their names:
//   - k8s.io/kubernetes/pkg/fieldpath: ExtractFieldPathAsString,
//     SplitMaybeSubscriptedPath, FormatMap;
//   - pkg/apis/core/pods ConvertDownwardAPIFieldLabel (which paths a pod
//     field selector may name);
//   - pkg/api/v1/resource: ExtractContainerResourceValue,
//     ExtractResourceValueByContainerName,
//     ExtractResourceValueByContainerNameAndNodeAllocatable,
//     MergeContainerResourceLimits.
//
// What the kubelet adds around them (spec.nodeName, status.podIP, the
// defaults from node allocatable and pod-level limits for env vars) stays in
// the packages that mirror those kubelet functions.
package fieldpath

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// ExtractFieldPathAsString returns the value of a metadata field path of
// obj: metadata.name, metadata.namespace, metadata.uid, metadata.labels and
// metadata.annotations (as FormatMap), or one key of the last two
// ("metadata.labels['app']"; a missing key is ""). Any other path is the
// error "unsupported fieldPath: <path>".
func ExtractFieldPathAsString(obj metav1.Object, fieldPath string) (string, error) {
	if path, key, ok := SplitMaybeSubscriptedPath(fieldPath); ok {
		switch path {
		case "metadata.annotations":
			if errs := validation.IsQualifiedName(strings.ToLower(key)); len(errs) != 0 {
				return "", fmt.Errorf("invalid key subscript in %s: %s", fieldPath, strings.Join(errs, ";"))
			}
			return obj.GetAnnotations()[key], nil
		case "metadata.labels":
			if errs := validation.IsQualifiedName(key); len(errs) != 0 {
				return "", fmt.Errorf("invalid key subscript in %s: %s", fieldPath, strings.Join(errs, ";"))
			}
			return obj.GetLabels()[key], nil
		}
		return "", fmt.Errorf("fieldPath %q does not support subscript", fieldPath)
	}
	switch fieldPath {
	case "metadata.annotations":
		return FormatMap(obj.GetAnnotations()), nil
	case "metadata.labels":
		return FormatMap(obj.GetLabels()), nil
	case "metadata.name":
		return obj.GetName(), nil
	case "metadata.namespace":
		return obj.GetNamespace(), nil
	case "metadata.uid":
		return string(obj.GetUID()), nil
	}
	return "", fmt.Errorf("unsupported fieldPath: %v", fieldPath)
}

// SplitMaybeSubscriptedPath splits "a.b['key']" into "a.b" and "key"; ok is
// false for a path without a subscript (or with an empty path before it).
func SplitMaybeSubscriptedPath(fieldPath string) (path, key string, ok bool) {
	s, found := strings.CutSuffix(fieldPath, "']")
	if !found {
		return fieldPath, "", false
	}
	path, key, found = strings.Cut(s, "['")
	if !found || path == "" {
		return fieldPath, "", false
	}
	return path, key, true
}

// FormatMap formats m as `key="value"` lines (the value quoted as Go
// quotes it), sorted by key, without a trailing newline.
func FormatMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b []byte
	for _, k := range keys {
		if len(b) > 0 {
			b = append(b, '\n')
		}
		b = append(b, k...)
		b = append(b, '=')
		b = strconv.AppendQuote(b, m[k])
	}
	return string(b)
}

// ConvertDownwardAPIFieldLabel checks a pod field selector as the kubelet
// does before resolving it: apiVersion must be v1, and the path one the
// downward API knows for env vars (a subscript only on metadata.labels and
// metadata.annotations). The legacy "spec.host" is "spec.nodeName".
func ConvertDownwardAPIFieldLabel(version, label string) (string, error) {
	if version != "v1" {
		return "", fmt.Errorf("unsupported pod version: %s", version)
	}
	if path, _, ok := SplitMaybeSubscriptedPath(label); ok {
		if path == "metadata.annotations" || path == "metadata.labels" {
			return label, nil
		}
		return "", fmt.Errorf("field label does not support subscript: %s", label)
	}
	switch label {
	case "metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace", "metadata.uid",
		"spec.nodeName", "spec.restartPolicy", "spec.serviceAccountName", "spec.schedulerName",
		"status.phase", "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs":
		return label, nil
	case "spec.host":
		return "spec.nodeName", nil
	}
	return "", fmt.Errorf("field label not supported: %s", label)
}
