//go:build race

package main

// raceDetector: this test binary (and the podstep it builds) runs under the
// race detector, whose shadow memory multiplies a process's RSS (1,443 MB
// measured for TestRunPodSizeMemory's run against 150 MB without it).
const raceDetector = true
