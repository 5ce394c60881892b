package lab

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
)

// helperRole runs this test binary as a lab service when PULLPATH_LAB_ROLE is set, and reports
// whether it did: the blob host (an HTTPS file server over the registry's storage, which is what a
// redirect target is) and a corporate CONNECT proxy that refuses internal destinations.
func helperRole() bool {
	switch os.Getenv("PULLPATH_LAB_ROLE") {
	case "blobs":
		srv := &http.Server{Addr: os.Getenv("PULLPATH_LAB_ADDR"), Handler: http.FileServer(http.Dir(os.Getenv("PULLPATH_LAB_DIR"))),
			TLSConfig: &tls.Config{MinVersion: tls.VersionTLS12}}
		err := srv.ListenAndServeTLS(os.Getenv("PULLPATH_LAB_CERT"), os.Getenv("PULLPATH_LAB_KEY"))
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	case "proxy":
		// a proxy outside the private network: it cannot reach *.lab.test and says so (403)
		err := http.ListenAndServe(os.Getenv("PULLPATH_LAB_ADDR"), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(os.Stderr, "%s %s refused\n", r.Method, r.Host)
			http.Error(w, "destination not allowed by policy", http.StatusForbidden)
		}))
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	return false
}
