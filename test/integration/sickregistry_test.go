//go:build integration

package integration

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"math/big"
	"net"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	ggcr "github.com/google/go-containerregistry/pkg/registry"

	"github.com/podstep/podstep/internal/imageconfig/imageconfigtest"
)

// Registries that fail a pull for real: an image index with only another
// architecture's image (go-containerregistry's registry in process, on
// loopback), and a TLS registry whose certificate no CA containerd trusts
// signed.

// otherArch is an architecture this machine is not.
func otherArch() string {
	if runtime.GOARCH == "arm64" {
		return "amd64"
	}
	return "arm64"
}

// foreignImage pushes an index holding only an image for otherArch to an
// in-process registry and returns its reference.
func foreignImage(t *testing.T) string {
	r := imageconfigtest.New(t, "", "")
	cfg := []byte(`{"architecture":"` + otherArch() + `","os":"linux","config":{"Cmd":["/app"]},"rootfs":{"type":"layers","diff_ids":[]}}`)
	r.PushIndex(t, "podstep/foreign", "1.0", imageconfigtest.Platform{OS: "linux", Arch: otherArch(), Config: cfg})
	return r.Ref("podstep/foreign:1.0")
}

// bigImage pushes an image of one layer, a file of 3 MiB of random bytes
// (no compression shrinks it; no other image shares it), to an in-process
// registry and returns its reference: a small disk with less free cannot
// take its pull, whatever other images the node has.
func bigImage(t *testing.T) string {
	data := make([]byte, 3<<20)
	if _, err := rand.Read(data); err != nil {
		t.Fatal(err)
	}
	var layer bytes.Buffer
	tw := tar.NewWriter(&layer)
	if err := tw.WriteHeader(&tar.Header{Name: "data", Mode: 0o644, Size: int64(len(data)), ModTime: time.Unix(0, 0)}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	if _, err := zw.Write(layer.Bytes()); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	r := imageconfigtest.New(t, "", "")
	const repo = "podstep/big"
	layerDigest := r.PushBlob(t, repo, gz.Bytes())
	cfg := []byte(`{"architecture":"` + runtime.GOARCH + `","os":"linux","config":{"Cmd":["/data"]},"rootfs":{"type":"layers","diff_ids":["` +
		imageconfigtest.Digest(layer.Bytes()) + `"]}}`)
	cfgDigest := r.PushBlob(t, repo, cfg)
	manifest, err := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": imageconfigtest.OCIManifest,
		"config": map[string]any{"mediaType": imageconfigtest.OCIConfig, "digest": cfgDigest, "size": len(cfg)},
		"layers": []any{map[string]any{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": layerDigest, "size": gz.Len()}}})
	if err != nil {
		t.Fatal(err)
	}
	r.PushManifest(t, repo, "1.0", manifest, imageconfigtest.OCIManifest)
	return r.Ref(repo + ":1.0")
}

// untrustedRegistry starts a registry on HTTPS whose certificate a CA of
// its own signed (none containerd trusts), on a non-loopback address of
// this host (containerd speaks plain HTTP to loopback registries), and
// returns an image reference on it.
func untrustedRegistry(t *testing.T) string {
	ip := hostIP(t)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "podstep test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: ip.String()},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{ip}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, KeyUsage: x509.KeyUsageDigitalSignature}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", net.JoinHostPort(ip.String(), "0"))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(ggcr.New())
	srv.Listener.Close()
	srv.Listener = l
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{leafDER, caDER}, PrivateKey: key}}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	// Nothing needs to be in it: the pull fails at the TLS handshake.
	return strings.TrimPrefix(srv.URL, "https://") + "/podstep/busybox:1.0"
}

// hostIP is a non-loopback IPv4 address of this host.
func hostIP(t *testing.T) net.IP {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP.To4()
		}
	}
	t.Skip("no non-loopback IPv4 address on this host for the TLS registry")
	return nil
}
