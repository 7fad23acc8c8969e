package probe

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestTCPSocket(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	open := l.Addr().(*net.TCPAddr).Port
	dead := closedPort(t)
	container := &corev1.Container{Ports: []corev1.ContainerPort{{Name: "db", ContainerPort: int32(open)}}}

	tests := []struct {
		name    string
		action  corev1.TCPSocketAction
		podIP   string
		outcome Outcome
		output  string
		target  string
		err     string
	}{
		{name: "open", action: corev1.TCPSocketAction{Port: intstr.FromInt(open)}, podIP: "127.0.0.1",
			outcome: Success, target: "127.0.0.1:" + strconv.Itoa(open)},
		{name: "named port", action: corev1.TCPSocketAction{Port: intstr.FromString("db")}, podIP: "127.0.0.1",
			outcome: Success, target: "127.0.0.1:" + strconv.Itoa(open)},
		{name: "host overrides pod IP", action: corev1.TCPSocketAction{Host: "127.0.0.1", Port: intstr.FromInt(open)}, podIP: "192.0.2.1",
			outcome: Success, target: "127.0.0.1:" + strconv.Itoa(open)},
		{name: "closed", action: corev1.TCPSocketAction{Port: intstr.FromInt(dead)}, podIP: "127.0.0.1",
			outcome: Failure, output: fmt.Sprintf("dial tcp 127.0.0.1:%d: connect: connection refused", dead),
			target: "127.0.0.1:" + strconv.Itoa(dead)},
		{name: "unknown named port", action: corev1.TCPSocketAction{Port: intstr.FromString("redis")}, podIP: "127.0.0.1",
			outcome: Unknown, err: `strconv.Atoi: parsing "redis": invalid syntax`, target: "127.0.0.1:redis"},
		{name: "port out of range", action: corev1.TCPSocketAction{Port: intstr.FromInt(65536)}, podIP: "127.0.0.1",
			outcome: Unknown, err: "invalid port number: 65536", target: "127.0.0.1:65536"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := tc.action
			r := TCPSocket(context.Background(), &a, tc.podIP, container, time.Second)
			gotErr := ""
			if r.Err != nil {
				gotErr = r.Err.Error()
			}
			if r.Outcome != tc.outcome || r.Output != tc.output || r.Target != tc.target || gotErr != tc.err {
				t.Errorf("got %q %q %q err %q, want %q %q %q err %q",
					r.Outcome, r.Output, r.Target, gotErr, tc.outcome, tc.output, tc.target, tc.err)
			}
		})
	}
}
