// A multi-threaded Go guest: goroutines on several OS threads doing
// syscalls the sandbox traps (open, fstat, close) and computing a result.
package main

import (
	"fmt"
	"os"
	"runtime"
	"sync"
)

func main() {
	runtime.GOMAXPROCS(4)
	var wg sync.WaitGroup
	sums := make([]int, 16)
	for i := range sums {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			runtime.LockOSThread()
			for j := 0; j < 50; j++ {
				data, err := os.ReadFile("/etc/passwd")
				if err != nil {
					panic(err)
				}
				sums[i] += len(data) % 7
			}
		}(i)
	}
	wg.Wait()
	total := 0
	for _, s := range sums {
		total += s
	}
	fmt.Println("total", total)
}
