package main

import (
	"crypto/x509"
	"runtime"
)

// x509Pool is the system roots plus the bench CA: what crane trusts with SSL_CERT_DIR pointing at it.
func x509Pool(pem []byte) *x509.CertPool {
	p, err := x509.SystemCertPool()
	if err != nil {
		p = x509.NewCertPool()
	}
	p.AppendCertsFromPEM(pem)
	return p
}

func goos() string   { return runtime.GOOS }
func goarch() string { return runtime.GOARCH }
func nproc() int     { return runtime.GOMAXPROCS(0) }
