package lab

import "runtime"

func goarch() string { return runtime.GOARCH }
