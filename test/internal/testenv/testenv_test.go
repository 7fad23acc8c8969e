package testenv

import (
	"reflect"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tt := range []struct {
		name, in string
		want     []Mount
	}{
		{"plain", "27 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n", []Mount{{"/", "ext4"}}},
		{"optional fields", "42 27 254:0 /x /var/lib/x rw shared:3 master:1 - ext4 /dev/vda rw", []Mount{{"/var/lib/x", "ext4"}}},
		{"escaped", `50 27 0:40 / /tmp/a\040b\134c rw - tmpfs tmpfs rw`, []Mount{{`/tmp/a b\c`, "tmpfs"}}},
		{"short line", "1 2 3\n\n", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := parse(tt.in); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("parse = %+v, want %+v", got, tt.want)
			}
		})
	}
}
