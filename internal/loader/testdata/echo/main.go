// Command echo stands in for the probe in the loader's tests: it prints argv[0], its arguments
// and one variable of its environment, one per line, and exits 7.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Println("argv0=" + os.Args[0])
	for _, a := range os.Args[1:] {
		fmt.Println("arg=" + a)
	}
	fmt.Println("env=" + os.Getenv("LOADER_TEST_ENV"))
	os.Exit(7)
}
