package bench

import (
	"context"
	"sync"
)

// RunPods runs n pods, at most k at once, as the kubelet's pod workers
// run pods (one goroutine per pod, all sharing one runtime client): run
// is called with the indexes first … first+n-1, each from its own
// worker, and the pods come back in index order. A worker starts no new
// pod once ctx is done or a run said stop; the pods it did not start are
// left out.
func RunPods(ctx context.Context, n, k, first int, run func(i int) (p Pod, stop bool)) []Pod {
	if k < 1 {
		k = 1
	}
	out := make([]*Pod, n)
	next := make(chan int)
	var stopped sync.Once
	quit := make(chan struct{})
	var wg sync.WaitGroup
	for range min(k, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				// The feeder may have handed i over just as a run said stop.
				select {
				case <-quit:
					continue
				case <-ctx.Done():
					continue
				default:
				}
				p, stop := run(first + i)
				out[i] = &p
				if stop {
					stopped.Do(func() { close(quit) })
				}
			}
		}()
	}
feed:
	for i := range n {
		select {
		case <-ctx.Done():
			break feed
		case <-quit:
			break feed
		default:
		}
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		case <-quit:
			break feed
		}
	}
	close(next)
	wg.Wait()
	var pods []Pod
	for _, p := range out {
		if p != nil {
			pods = append(pods, *p)
		}
	}
	return pods
}
