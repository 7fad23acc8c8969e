package bundle

import (
	"fmt"
	"strings"
	"syscall"
)

// maskText replaces a masked value.
const maskText = "<redacted>"

// nofollow opens no link.
const nofollow = syscall.O_NOFOLLOW

// secretKey says a JSON key names a secret: a password, an auth (a
// registry's "auth" and "auths", containerd's "identitytoken"), a token or a
// secret, in any case.
func secretKey(k string) bool {
	k = strings.ToLower(k)
	for _, w := range []string{"password", "passwd", "auth", "token", "secret", "credential", "privatekey", "private_key"} {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}

// mask replaces, in place, every value under a secret key (secretKey)
// with maskText, whatever it holds (a map of hosts under "auths" too). It
// returns how many it masked. Empty values are kept: "no password" is
// worth knowing.
func mask(v any) int {
	n := 0
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			if secretKey(k) && !empty(val) {
				x[k] = maskText
				n++
				continue
			}
			n += mask(val)
		}
	case []any:
		for _, val := range x {
			n += mask(val)
		}
	}
	return n
}

func empty(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return x == ""
	case map[string]any:
		return len(x) == 0
	case []any:
		return len(x) == 0
	case bool:
		return true // "disableAuth": false is no secret
	case float64:
		return true
	}
	return false
}

// diskFree is the free space of the runtime's dirs and of the dirs runtimes
// and kubelets keep their state in (those that exist).
func diskFree(runtimeDirs []string) string {
	var sb strings.Builder
	sb.WriteString("== free space\n")
	for _, d := range append(runtimeDirs, "/var/lib/containerd", "/run/containerd", "/var/lib/kubelet", "/var/log/pods") {
		var st syscall.Statfs_t
		if syscall.Statfs(d, &st) != nil {
			continue
		}
		total := st.Blocks * uint64(st.Bsize)
		free := st.Bavail * uint64(st.Bsize)
		fmt.Fprintf(&sb, "%s: %s free of %s, %d of %d inodes free\n", d, size(free), size(total), st.Ffree, st.Files)
	}
	return sb.String()
}

func size(b uint64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
	}
	return fmt.Sprintf("%d KiB", b>>10)
}
