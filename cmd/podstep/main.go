// Command podstep replays how the kubelet creates a pod, one real CRI call
// at a time. See README.md for usage.
package main

import (
	"os"
)

func main() {
	os.Exit(Execute(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
