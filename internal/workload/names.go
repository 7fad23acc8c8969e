package workload

import (
	"crypto/md5"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/dump"
)

// The API server's generateName (k8s.io/apiserver/pkg/storage/names
// simpleNameGenerator.GenerateName): the prefix cut to 58 characters, then
// 5 characters of utilrand's alphabet.
const (
	maxGeneratedNameLength = 63 - 5
	randomLength           = 5
	alphanums              = "bcdfghjklmnpqrstvwxz2456789" // k8s.io/apimachinery/pkg/util/rand
)

// generateName returns the name the API server gives a pod with
// metadata.generateName prefix. The suffix is not random: it is drawn with
// a generator seeded from the prefix, so the same workload always plans
// the same name (the API server's is random).
func generateName(prefix string) string {
	if len(prefix) > maxGeneratedNameLength {
		prefix = prefix[:maxGeneratedNameLength]
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(prefix))
	r := rand.New(rand.NewPCG(h.Sum64(), 0x706f6473746570)) // "podstep"
	b := make([]byte, randomLength)
	for i := range b {
		b[i] = alphanums[r.IntN(len(alphanums))]
	}
	return prefix + string(b)
}

// podsPrefix is getPodsPrefix (pkg/controller/controller_utils.go): NAME-
// when that is a valid generateName, else NAME.
func podsPrefix(controllerName string) string {
	prefix := controllerName + "-"
	// ValidatePodName(prefix, true): a DNS-1123 subdomain once the
	// trailing dash is masked (NameIsDNSSubdomain with prefix).
	if len(validation.IsDNS1123Subdomain(prefix[:len(prefix)-1]+"a")) != 0 {
		return controllerName
	}
	return prefix
}

// uidFor returns a workload's UID: its metadata.uid if set, else one
// derived from kind, namespace and name, shaped as a UUID (the API server
// assigns a random UUID on create).
func uidFor(m *metav1.ObjectMeta, kind string) types.UID {
	if m.UID != "" {
		return m.UID
	}
	sum := md5.Sum([]byte(kind + "/" + m.Namespace + "/" + m.Name))
	s := hex.EncodeToString(sum[:])
	return types.UID(s[0:8] + "-" + s[8:12] + "-" + s[12:16] + "-" + s[16:20] + "-" + s[20:32])
}

// controllerRef is metav1.NewControllerRef: the owner reference with
// controller and blockOwnerDeletion true.
func controllerRef(m *metav1.ObjectMeta, gvk schema.GroupVersionKind) metav1.OwnerReference {
	t := true
	return metav1.OwnerReference{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Name: m.Name,
		UID: m.UID, Controller: &t, BlockOwnerDeletion: &t}
}

// computeHash is ComputeHash (pkg/controller/controller_utils.go): FNV-32a
// of the template as DeepHashObject (pkg/util/hash/hash.go) prints it
// (k8s.io/utils/dump.ForHash, spew), then the collision count as 8 bytes
// (little-endian uint32 in the first 4), rendered with SafeEncodeString.
// It equals the controller's when the template is the one the API server
// stored; podstep's defaults of the template are the manifest's, so a
// template the API server defaults further (or whose quantities it
// re-encodes) hashes differently.
func computeHash(template *corev1.PodTemplateSpec, collisionCount *int32) string {
	h := fnv.New32a()
	_, _ = fmt.Fprintf(h, "%v", dump.ForHash(*template))
	if collisionCount != nil {
		b := make([]byte, 8)
		binary.LittleEndian.PutUint32(b, uint32(*collisionCount))
		_, _ = h.Write(b)
	}
	return utilrand.SafeEncodeString(fmt.Sprint(h.Sum32()))
}

// revisionHash is HashControllerRevision (pkg/controller/history/
// controller_history.go) of the revision a StatefulSet's controller makes
// (newRevision, getPatch in pkg/controller/statefulset/stateful_set_utils.go):
// FNV-32 of the patch {"spec":{"template":{...,"$patch":"replace"}}} with
// sorted keys, then the collision count in decimal.
func revisionHash(obj any, collisionCount int32) (string, error) {
	data, err := json.Marshal(obj)
	if err != nil {
		return "", fmt.Errorf("encode the workload: %w", err)
	}
	var raw map[string]any
	if err := json.Unmarshal(data, &raw); err != nil {
		return "", fmt.Errorf("decode the workload: %w", err)
	}
	spec, _ := raw["spec"].(map[string]any)
	template, _ := spec["template"].(map[string]any)
	if template == nil {
		template = map[string]any{}
	}
	template["$patch"] = "replace"
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"template": template}})
	if err != nil {
		return "", fmt.Errorf("encode the revision: %w", err)
	}
	h := fnv.New32()
	_, _ = h.Write(patch)
	_, _ = h.Write([]byte(strconv.FormatInt(int64(collisionCount), 10)))
	return utilrand.SafeEncodeString(fmt.Sprint(h.Sum32())), nil
}

// copyMap returns a copy of m, never nil.
func copyMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m)+2)
	for k, v := range m {
		out[k] = v
	}
	return out
}
