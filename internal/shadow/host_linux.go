package shadow

import (
	"fmt"
	"net"
	"os/exec"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// startInMountNS starts cmd in the mount namespace of process pid, as
// `nsenter -t PID -m` does: a Go process has many threads, and setns into
// a mount namespace is allowed only to a thread that shares its
// filesystem attributes with no other (unshare CLONE_FS first), so one
// locked thread enters it and forks cmd (a child is in its parent
// thread's namespaces). The thread is never given back to other
// goroutines: Go ends it with its goroutine.
func startInMountNS(cmd *exec.Cmd, pid int) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // no Unlock: the thread goes with the goroutine
		fd, err := unix.Open(fmt.Sprintf("/proc/%d/ns/mnt", pid), unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			errc <- fmt.Errorf("open its mount namespace: %w", err)
			return
		}
		defer unix.Close(fd)
		if err := unix.Unshare(unix.CLONE_FS); err != nil {
			errc <- fmt.Errorf("unshare CLONE_FS: %w", err)
			return
		}
		if err := unix.Setns(fd, unix.CLONE_NEWNS); err != nil {
			errc <- fmt.Errorf("setns into its mount namespace: %w", err)
			return
		}
		errc <- cmd.Start()
	}()
	return <-errc
}

// peerPID is the pid of the process listening on the unix socket at path,
// as the kernel recorded it at listen (SO_PEERCRED on a connection): 0
// when it is in another PID namespace.
func peerPID(path string) (int, error) {
	c, err := net.DialTimeout("unix", path, 5*time.Second)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	raw, err := c.(*net.UnixConn).SyscallConn()
	if err != nil {
		return 0, err
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return 0, err
	}
	if cerr != nil {
		return 0, cerr
	}
	return int(cred.Pid), nil
}
