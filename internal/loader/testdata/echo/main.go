// Command echo stands in for the probe in the loader's tests: it prints argv[0], its arguments,
// one variable of its environment and the names of those not named PULLPATH_*, one per line, and
// exits 7.
package main

import (
	"fmt"
	"os"
	"strings"
)

func main() {
	fmt.Println("argv0=" + os.Args[0])
	for _, a := range os.Args[1:] {
		fmt.Println("arg=" + a)
	}
	fmt.Println("env=" + os.Getenv("PULLPATH_LOADER_TEST_ENV"))
	var others []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); !strings.HasPrefix(k, "PULLPATH_") {
			others = append(others, k)
		}
	}
	fmt.Println("others=" + strings.Join(others, ","))
	os.Exit(7)
}
