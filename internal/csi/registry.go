package csi

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// DefaultRegistryDir is the registration directory of a kubelet with the
// default --root-dir, /var/lib/kubelet (podstep's own root dir is another).
const DefaultRegistryDir = "/var/lib/kubelet/plugins_registry"

// RegistryDir is the kubelet's plugin registration directory under its
// root dir (the plugin manager's socket dir: getPluginsRegistrationDir,
// pkg/kubelet/kubelet_getters.go: <root-dir>/plugins_registry).
func RegistryDir(rootDir string) string { return filepath.Join(rootDir, "plugins_registry") }

// Registered is one CSI driver found in the registration directory.
type Registered struct {
	Name     string
	Endpoint string // unix://PATH
	Versions []string
	Socket   string // the registration socket it answered on
}

// Discover asks every socket in dir as the kubelet's plugin watcher and
// operation executor do (pluginwatcher, operation_generator.go
// GenerateRegisterPluginFunc: GetInfo on the registration socket), and
// returns the CSI plugins (type CSIPlugin) by name. Sockets that do not
// answer within timeout, or answer another type, are skipped; notes say
// why. A missing dir is no driver.
func Discover(ctx context.Context, dir string, timeout time.Duration) (map[string]Registered, []string) {
	out := map[string]Registered{}
	var notes []string
	if why := untrusted(dir, true); why != "" {
		// A socket planted there would get NodePublishVolume's secrets.
		return out, []string{fmt.Sprintf("%s not searched: %s (the kubelet's is root's, mode 0750 or stricter)", dir, why)}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		if !os.IsNotExist(err) {
			notes = append(notes, fmt.Sprintf("%s: %v", dir, err))
		}
		return out, notes
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		if e.Type()&os.ModeSocket != 0 {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	for _, n := range names {
		sock := filepath.Join(dir, n)
		if why := untrusted(sock, false); why != "" {
			notes = append(notes, fmt.Sprintf("%s skipped: %s", sock, why))
			continue
		}
		info, err := getInfo(ctx, sock, timeout)
		if err != nil {
			notes = append(notes, fmt.Sprintf("%s: GetInfo: %v", sock, err))
			continue
		}
		if info.Type != registerapi.CSIPlugin {
			continue
		}
		ep := info.Endpoint
		if ep == "" {
			// The kubelet uses the registration socket itself then
			// (pluginwatcher: an empty endpoint is the socket path).
			ep = sock
		}
		out[info.Name] = Registered{Name: info.Name, Endpoint: "unix://" + strings.TrimPrefix(ep, "unix://"), Versions: info.SupportedVersions, Socket: sock}
	}
	return out, notes
}

func getInfo(ctx context.Context, sock string, timeout time.Duration) (*registerapi.PluginInfo, error) {
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	defer func() { _ = conn.Close() }()
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return registerapi.NewRegistrationClient(conn).GetInfo(cctx, &registerapi.InfoRequest{})
}

// untrusted says why path must not be trusted to lead to a CSI driver
// (podstep sends it secrets): owned by another user than root and podstep's,
// or (a dir) writable by group or others. "" when it may be.
func untrusted(path string, dir bool) string {
	fi, err := os.Lstat(path)
	if err != nil {
		if os.IsNotExist(err) {
			return ""
		}
		return err.Error()
	}
	if uid, ok := ownerOf(fi); ok && uid != 0 && uid != os.Geteuid() {
		return fmt.Sprintf("owned by uid %d, neither root nor podstep's user", uid)
	}
	if dir && fi.Mode().Perm()&0o022 != 0 {
		return fmt.Sprintf("writable by group or others (mode %04o)", fi.Mode().Perm())
	}
	return ""
}
