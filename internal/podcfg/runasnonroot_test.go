package podcfg

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestVerifyRunAsNonRoot checks the rule of the kubelet v1.37's
// verifyRunAsNonRoot (pkg/kubelet/kuberuntime/security_context_others.go)
// on the image's user as getImageUser gives it: runAsUser decides alone;
// no USER is root; a name cannot be verified; a number outside 0 to
// MaxInt32 (validation.IsValidUserID) is an invalid user id.
func TestVerifyRunAsNonRoot(t *testing.T) {
	for _, tc := range []struct {
		name, imageUser string
		runAsUser       *int64
		want            string // a part of the error; "" for none
	}{
		{name: "numeric non-root", imageUser: "1000"},
		{name: "the largest uid", imageUser: "2147483647"},
		{name: "no USER is root", imageUser: "", want: "image will run as root"},
		{name: "uid 0", imageUser: "0", want: "image will run as root"},
		{name: "a name", imageUser: "nonroot", want: "image has non-numeric user (nonroot), cannot verify user is non-root"},
		{name: "past MaxInt32", imageUser: "2147483648",
			want: "image has an invalid user id (2147483648). (Must be 1-(2147483647)): must be between 0 and 2147483647, inclusive (pod: "},
		{name: "negative", imageUser: "-1", want: "image has an invalid user id (-1)."},
		{name: "past int64 is a name", imageUser: "99999999999999999999", want: "non-numeric user (99999999999999999999)"},
		{name: "runAsUser decides alone", imageUser: "-1", runAsUser: ptrTo(int64(1000))},
		{name: "runAsUser 0", imageUser: "1000", runAsUser: ptrTo(int64(0)), want: "container's runAsUser breaks non-root policy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := podWith(corev1.Container{Name: "a", SecurityContext: &corev1.SecurityContext{RunAsNonRoot: ptrTo(true), RunAsUser: tc.runAsUser}})
			uid, username := imageUser(tc.imageUser)
			err := verifyRunAsNonRoot(pod, &pod.Spec.Containers[0], uid, username)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("error %v, want none", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want one with %q", err, tc.want)
			}
		})
	}
}
