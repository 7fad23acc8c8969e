package manifest

import (
	"fmt"
	"path"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

// The rules below are the API server's, from
// pkg/apis/core/validation/validation.go (validateVolumeSource and the
// functions it calls); the messages quote its wording.

const (
	expectItemPath  = `expected a relative path inside the volume, such as "app.conf" or "conf/app.conf"`
	fileModeMsg     = "must be a number between 0 and 0777 (octal), both inclusive"
	emptyDirModeMsg = "must be a number between 0 and 01777 (octal), both inclusive"
)

// hostPathTypes are the hostPath types the API server supports
// (supportedHostPathTypes).
var hostPathTypes = []corev1.HostPathType{
	corev1.HostPathUnset, corev1.HostPathDirectoryOrCreate, corev1.HostPathDirectory,
	corev1.HostPathFileOrCreate, corev1.HostPathFile, corev1.HostPathSocket,
	corev1.HostPathCharDev, corev1.HostPathBlockDev,
}

// volumeFieldPaths are the fieldRef paths of downwardAPI volume items
// (validVolumeDownwardAPIFieldPathExpressions), besides
// metadata.labels['KEY'] and metadata.annotations['KEY'].
var volumeFieldPaths = []string{"metadata.name", "metadata.namespace", "metadata.labels", "metadata.annotations", "metadata.uid"}

// hasBackstep reports whether p has a ".." element (validatePathNoBacksteps).
func hasBackstep(p string) bool {
	return slices.Contains(strings.Split(p, "/"), "..")
}

// localPathProblem mirrors validateLocalDescendingPath (a relative path
// without "..") and, with nonReserved, ValidateLocalNonReservedPath (nor
// starting with "..": the kubelet's atomic writer keeps its ..data link and
// ..<timestamp> directories there). It returns the API server's message, or
// "".
func localPathProblem(p string, nonReserved bool) string {
	switch {
	case path.IsAbs(p):
		return "must be a relative path"
	case hasBackstep(p):
		return "must not contain '..'"
	case nonReserved && strings.HasPrefix(p, ".."):
		return "must not start with '..' (such names are the kubelet's own: ..data and ..<timestamp>)"
	}
	return ""
}

// validateItemPath checks the path an item of a configMap, secret,
// downwardAPI or projected volume is written to.
func validateItemPath(f, p string) *fieldErr {
	if p == "" {
		return fe(f, "required value; %s", expectItemPath)
	}
	if msg := localPathProblem(p, true); msg != "" {
		return fe(f, "invalid value %q: %s; %s", p, msg, expectItemPath)
	}
	return nil
}

func validateMode(f string, mode *int32, max int32, msg string) *fieldErr {
	if mode != nil && (*mode < 0 || *mode > max) {
		return fe(f, "invalid value %d (%#o): %s", *mode, *mode, msg)
	}
	return nil
}

// validateKeyToPath mirrors validateKeyToPath.
func validateKeyToPath(kp *corev1.KeyToPath, f string) *fieldErr {
	if kp.Key == "" {
		return fe(f+".key", "required value; expected the key of the item to write")
	}
	if e := validateItemPath(f+".path", kp.Path); e != nil {
		return e
	}
	return validateMode(f+".mode", kp.Mode, 0o777, fileModeMsg)
}

// validateDownwardAPIFile mirrors validateDownwardAPIVolumeFile.
func validateDownwardAPIFile(file *corev1.DownwardAPIVolumeFile, f string) *fieldErr {
	if e := validateItemPath(f+".path", file.Path); e != nil {
		return e
	}
	switch {
	case file.FieldRef != nil && file.ResourceFieldRef != nil:
		return fe(f, "fieldRef and resourceFieldRef can not be specified simultaneously; expected one of them")
	case file.FieldRef != nil:
		fp := file.FieldRef.FieldPath
		if file.FieldRef.APIVersion != "v1" {
			return fe(f+".fieldRef.apiVersion", "unsupported value %q; expected \"v1\"", file.FieldRef.APIVersion)
		}
		if !slices.Contains(volumeFieldPaths, fp) && !subscripted(fp, "metadata.labels") && !subscripted(fp, "metadata.annotations") {
			return fe(f+".fieldRef.fieldPath", "unsupported value %q; expected %s, metadata.labels['KEY'] or metadata.annotations['KEY']", fp, quoteAll(volumeFieldPaths...))
		}
	case file.ResourceFieldRef != nil:
		r := file.ResourceFieldRef
		if r.ContainerName == "" {
			return fe(f+".resourceFieldRef.containerName", "required value; expected the name of a container of the pod")
		}
		if !slices.Contains(resourceFieldNames, r.Resource) && !strings.HasPrefix(r.Resource, "limits.hugepages-") && !strings.HasPrefix(r.Resource, "requests.hugepages-") {
			return fe(f+".resourceFieldRef.resource", "unsupported value %q; expected %s", r.Resource, quoteAll(resourceFieldNames...))
		}
	default:
		return fe(f, "one of fieldRef and resourceFieldRef is required")
	}
	return validateMode(f+".mode", file.Mode, 0o777, fileModeMsg)
}

// validateVolumeDetails checks the one source of volume v at f, after
// validateVolume checked its name and that it has one source.
func validateVolumeDetails(v *corev1.Volume, f string) *fieldErr {
	switch s := &v.VolumeSource; {
	case s.HostPath != nil:
		// validateHostPathVolumeSource
		if hasBackstep(s.HostPath.Path) {
			return fe(f+".hostPath.path", "invalid value %q: must not contain '..'; expected an absolute path on the node without '..', such as \"/var/log\"", s.HostPath.Path)
		}
		if t := s.HostPath.Type; t != nil {
			return oneOf(f+".hostPath.type", *t, hostPathTypes...)
		}
	case s.EmptyDir != nil:
		if l := s.EmptyDir.SizeLimit; l != nil && l.Sign() < 0 {
			return fe(f+".emptyDir.sizeLimit", "invalid value %s: SizeLimit field must be a valid resource quantity; expected a quantity of 0 or more, such as \"1Gi\"", l.String())
		}
		return validateMode(f+".emptyDir.mode", s.EmptyDir.Mode, 0o1777, emptyDirModeMsg)
	case s.ConfigMap != nil:
		if e := validateMode(f+".configMap.defaultMode", s.ConfigMap.DefaultMode, 0o777, fileModeMsg); e != nil {
			return e
		}
		for i := range s.ConfigMap.Items {
			if e := validateKeyToPath(&s.ConfigMap.Items[i], fmt.Sprintf("%s.configMap.items[%d]", f, i)); e != nil {
				return e
			}
		}
	case s.Secret != nil:
		if e := validateMode(f+".secret.defaultMode", s.Secret.DefaultMode, 0o777, fileModeMsg); e != nil {
			return e
		}
		for i := range s.Secret.Items {
			if e := validateKeyToPath(&s.Secret.Items[i], fmt.Sprintf("%s.secret.items[%d]", f, i)); e != nil {
				return e
			}
		}
	case s.DownwardAPI != nil:
		if e := validateMode(f+".downwardAPI.defaultMode", s.DownwardAPI.DefaultMode, 0o777, fileModeMsg); e != nil {
			return e
		}
		for i := range s.DownwardAPI.Items {
			if e := validateDownwardAPIFile(&s.DownwardAPI.Items[i], fmt.Sprintf("%s.downwardAPI.items[%d]", f, i)); e != nil {
				return e
			}
		}
	case s.Projected != nil:
		return validateProjected(s.Projected, f+".projected")
	case s.Image != nil:
		return validateImageVolume(s.Image, f+".image")
	}
	return nil
}

// validateProjected mirrors validateProjectedVolumeSource and
// validateProjectionSources: one source per entry, and no path written by
// two items (of any sources).
func validateProjected(p *corev1.ProjectedVolumeSource, f string) *fieldErr {
	if e := validateMode(f+".defaultMode", p.DefaultMode, 0o777, fileModeMsg); e != nil {
		return e
	}
	paths := map[string]string{} // path written → the field that writes it
	claim := func(field, p string) *fieldErr {
		if other, ok := paths[p]; ok {
			return fe(field, "invalid value %q: conflicting duplicate paths (also %s); expected each path once across the sources of a projected volume", p, other)
		}
		paths[p] = field
		return nil
	}
	for i := range p.Sources {
		src := &p.Sources[i]
		sf := fmt.Sprintf("%s.sources[%d]", f, i)
		if n := countPointers(src); n > 1 {
			return fe(sf, "may not specify more than 1 volume type per source; expected one of secret, configMap, downwardAPI, serviceAccountToken, clusterTrustBundle or podCertificate per entry of sources")
		}
		switch {
		case src.Secret != nil, src.ConfigMap != nil:
			kind, name, items := "secret", "", []corev1.KeyToPath(nil)
			if src.Secret != nil {
				name, items = src.Secret.Name, src.Secret.Items
			} else {
				kind, name, items = "configMap", src.ConfigMap.Name, src.ConfigMap.Items
			}
			if name == "" {
				return fe(sf+"."+kind+".name", "required value; expected the name of a %s", map[string]string{"secret": "Secret", "configMap": "ConfigMap"}[kind])
			}
			for j := range items {
				itf := fmt.Sprintf("%s.%s.items[%d]", sf, kind, j)
				if e := validateKeyToPath(&items[j], itf); e != nil {
					return e
				}
				if e := claim(itf+".path", items[j].Path); e != nil {
					return e
				}
			}
		case src.DownwardAPI != nil:
			for j := range src.DownwardAPI.Items {
				itf := fmt.Sprintf("%s.downwardAPI.items[%d]", sf, j)
				if e := validateDownwardAPIFile(&src.DownwardAPI.Items[j], itf); e != nil {
					return e
				}
				if e := claim(itf+".path", src.DownwardAPI.Items[j].Path); e != nil {
					return e
				}
			}
		case src.ServiceAccountToken != nil:
			t := src.ServiceAccountToken
			tf := sf + ".serviceAccountToken"
			switch exp := t.ExpirationSeconds; {
			case exp != nil && *exp < 10*60:
				return fe(tf+".expirationSeconds", "invalid value %d: may not specify a duration less than 10 minutes; expected 600 or more seconds", *exp)
			case exp != nil && *exp > 1<<32:
				return fe(tf+".expirationSeconds", "invalid value %d: may not specify a duration larger than 2^32 seconds", *exp)
			}
			// The API server does not count the token's path among the
			// paths that may not collide.
			if e := validateItemPath(tf+".path", t.Path); e != nil {
				return e
			}
		case src.ClusterTrustBundle != nil:
			cf := sf + ".clusterTrustBundle.path"
			if e := validateItemPath(cf, src.ClusterTrustBundle.Path); e != nil {
				return e
			}
			if e := claim(cf, src.ClusterTrustBundle.Path); e != nil {
				return e
			}
		case src.PodCertificate != nil:
			pc := src.PodCertificate
			for _, x := range []struct{ name, path string }{{"credentialBundlePath", pc.CredentialBundlePath}, {"keyPath", pc.KeyPath}, {"certificateChainPath", pc.CertificateChainPath}} {
				if x.path == "" {
					continue
				}
				pf := sf + ".podCertificate." + x.name
				if msg := localPathProblem(x.path, true); msg != "" {
					return fe(pf, "invalid value %q: %s; %s", x.path, msg, expectItemPath)
				}
				if e := claim(pf, x.path); e != nil {
					return e
				}
			}
		}
	}
	return nil
}

// mountPropagations are the supported mountPropagation values
// (validateMountPropagation).
var mountPropagations = sets.New(corev1.MountPropagationBidirectional, corev1.MountPropagationHostToContainer, corev1.MountPropagationNone)

// validateMountPaths checks the subPath, subPathExpr and mountPropagation of
// mount m at mf, as ValidateVolumeMounts does. A subPathExpr that expands to
// a path with ".." is the kubelet's to refuse, at run time.
func validateMountPaths(m *corev1.VolumeMount, mf string) *fieldErr {
	const expect = `expected a relative path inside the volume, such as "conf"`
	if m.SubPath != "" {
		if msg := localPathProblem(m.SubPath, false); msg != "" {
			return fe(mf+".subPath", "invalid value %q: %s; %s", m.SubPath, msg, expect)
		}
	}
	if m.SubPathExpr != "" {
		if m.SubPath != "" {
			return fe(mf+".subPathExpr", "invalid value %q: subPathExpr and subPath are mutually exclusive; expected only one of them", m.SubPathExpr)
		}
		if msg := localPathProblem(m.SubPathExpr, false); msg != "" {
			return fe(mf+".subPathExpr", "invalid value %q: %s; %s, such as \"$(POD_NAME)\"", m.SubPathExpr, msg, strings.TrimSuffix(expect, `, such as "conf"`))
		}
	}
	if mp := m.MountPropagation; mp != nil && !mountPropagations.Has(*mp) {
		return oneOf(mf+".mountPropagation", *mp, sets.List(mountPropagations)...)
	}
	return nil
}
