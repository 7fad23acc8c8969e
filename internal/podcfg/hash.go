package podcfg

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// ContainerHash is the io.kubernetes.container.hash annotation as the kubelet
// computes it (pkg/kubelet/container/helpers.go HashContainer, v1.31+): the
// JSON of {"image": ..., "name": ...} (pickFieldsToHash) printed the way
// hashutil.DeepHashObject prints a []byte with go-spew's "%#v"
// ("([]uint8)[123 34 ...]"), hashed with FNV-32a, in hex.
func ContainerHash(c *corev1.Container) string {
	js, _ := json.Marshal(map[string]string{"name": c.Name, "image": c.Image})
	var b strings.Builder
	b.WriteString("([]uint8)[")
	for i, x := range js {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.Itoa(int(x)))
	}
	b.WriteByte(']')
	h := fnv.New32a()
	h.Write([]byte(b.String()))
	return strconv.FormatUint(uint64(h.Sum32()), 16)
}

// TerminationLogName is a fresh name for the container's termination-log file
// under <root>/pods/<uid>/containers/<name>/: 8 random hex chars, like
// kuberuntime_container.go makeUID (fmt.Sprintf("%08x", rand.Uint32())).
func TerminationLogName() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%08x", binary.BigEndian.Uint32(b[:]))
}
