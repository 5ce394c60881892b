package probe

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/pullpath/pullpath/internal/hoptrace"
	"github.com/pullpath/pullpath/internal/report"
)

// hopFailure turns a failed round trip into a failure at the layer the hop reached, by error
// type, never by message text.
func (w *walk) hopFailure(ep *endpoint, hop *hoptrace.Hop, err error) *failure {
	snap := hop.Snapshot()
	dials := hop.Dials()
	_, hopTLSErr := hop.TLS()
	f := &failure{ep: ep}
	var (
		cve *tls.CertificateVerificationError
		rhe tls.RecordHeaderError
		uae x509.UnknownAuthorityError
		hne x509.HostnameError
		cie x509.CertificateInvalidError
		ne  net.Error
	)
	tlsErr := hopTLSErr
	if tlsErr == nil {
		tlsErr = err
	}
	switch {
	case w.ctx.Err() != nil:
		f.step, f.code, f.cut = snap.Phase, report.CodeCanceled, true
		f.summary = fmt.Sprintf("cut during %s to %s", snap.Phase, ep.hostport)
	case errors.As(err, &rhe) && string(rhe.RecordHeader[:]) == "HTTP/":
		f.step, f.code = report.StepTLS, report.CodeTLSPlainHTTP
		f.summary = fmt.Sprintf("%s answers plain HTTP on a port the runtime speaks HTTPS to", ep.hostport)
		f.evidence = []string{"the TLS ClientHello was answered with an HTTP/1.x response (" + err.Error() + ")",
			"containerd only speaks plain HTTP to a host marked so in hosts.toml (server = \"http://…\") or in the legacy insecure-registries list"}
	case errors.As(tlsErr, &cve) || errors.As(tlsErr, &uae) || errors.As(tlsErr, &hne) || errors.As(tlsErr, &cie):
		f.step = report.StepTLS
		f.ev.TLS = tlsEvidence(ep.host, hop, tlsErr)
		switch {
		case errors.As(tlsErr, &hne):
			f.code = report.CodeTLSNameMismatch
			f.summary = fmt.Sprintf("the certificate of %s is not valid for the name %s", ep.hostport, ep.host)
		case errors.As(tlsErr, &cie) && cie.Reason == x509.Expired:
			f.code = report.CodeTLSExpired
			f.summary = fmt.Sprintf("the certificate of %s has expired or is not yet valid", ep.hostport)
		case errors.As(tlsErr, &uae):
			f.code = report.CodeTLSUnknownAuthority
			f.summary = fmt.Sprintf("the certificate of %s is signed by an authority this node does not trust", ep.hostport)
		default:
			f.code = report.CodeTLSInvalid
			f.summary = fmt.Sprintf("the certificate of %s failed verification", ep.hostport)
		}
		f.evidence = append([]string{tlsErr.Error()}, certLines(f.ev.TLS)...)
		f.evidence = append(f.evidence, w.trustLine())
	case clientCertAlert(err):
		// In TLS 1.3 the server judges the client certificate after the client's side of the
		// handshake completed, so its refusal arrives as an alert during the HTTP exchange.
		f.step, f.code = report.StepTLS, report.CodeTLSClientCert
		f.ev.TLS = tlsEvidence(ep.host, hop, nil)
		f.summary = fmt.Sprintf("%s refused the TLS session: it requires a client certificate it trusts (%v)", ep.hostport, err)
		f.evidence = []string{err.Error(), "client certificates presented: " + w.clientCertLine()}
	case snap.Phase == report.StepTCP || (len(snap.Addr) == 0 && len(dials) > 0):
		f.step = report.StepTCP
		f.code = dialCode(err)
		f.ev.Dials = dials
		f.summary = fmt.Sprintf("cannot open a TCP connection to %s: %s", ep.hostport, dialWord(err))
		for _, d := range dials {
			line := "dial " + d.Addr
			if d.Route != "" {
				line += " [" + d.Route + "]"
			}
			if d.Error != "" {
				line += ": " + d.Error
			} else {
				line += ": ok"
			}
			f.evidence = append(f.evidence, line+fmt.Sprintf(" after %s", d.Duration.Std().Round(10*time.Microsecond)))
		}
		if f.code == report.CodeTCPTimeout {
			f.evidence = append(f.evidence, "no answer at all within --connect-timeout: packets are dropped (a firewall, NSG or security group, or a missing return route)")
		}
	case snap.Phase == report.StepTLS:
		f.step = report.StepTLS
		f.ev.TLS = tlsEvidence(ep.host, hop, tlsErr)
		if errors.As(err, &ne) && ne.Timeout() {
			f.code = report.CodeTLSHandshakeTimeout
			f.summary = fmt.Sprintf("%s accepted TCP but never completed the TLS handshake within %s", ep.hostport, w.opts.TLSTimeout)
		} else {
			f.code = report.CodeTLSHandshake
			f.summary = fmt.Sprintf("the TLS handshake with %s failed", ep.hostport)
			if errors.Is(tlsErr, io.EOF) || errors.Is(tlsErr, syscall.ECONNRESET) {
				f.summary += ": the connection was closed during the handshake (a TLS-inspecting firewall, or not a TLS service)"
			}
		}
		f.evidence = []string{tlsErr.Error(), "connected to " + snap.Addr}
	default:
		f.step = report.StepHTTP
		if errors.As(err, &ne) && ne.Timeout() {
			f.code = report.CodeHTTPTimeout
			f.summary = fmt.Sprintf("%s accepted the request but sent no response headers within %s", ep.hostport, w.opts.HeaderTimeout)
		} else {
			f.code = report.CodeHTTPFailed
			f.summary = fmt.Sprintf("the HTTP exchange with %s failed", ep.hostport)
		}
		f.evidence = []string{snap.Method + " " + snap.URL + ": " + err.Error()}
	}
	return f
}

// clientCertAlert reports whether the server sent a TLS alert about our client certificate. Over TCP
// crypto/tls reports a received alert as a *net.OpError with Op "remote error" around its unexported
// alert type, whose only exposed identity is its text: certificate_required (116), bad_certificate
// (42), unknown_ca (48), certificate_expired (45).
func clientCertAlert(err error) bool {
	var oe *net.OpError
	if !errors.As(err, &oe) || oe.Op != "remote error" || oe.Err == nil {
		return false
	}
	switch oe.Err.Error() {
	case "tls: certificate required", "tls: bad certificate", "tls: unknown certificate authority", "tls: expired certificate":
		return true
	}
	return false
}

func (w *walk) clientCertLine() string {
	if w.tgt.tls == nil || len(w.tgt.tls.Certificates) == 0 {
		return "none (hosts.toml client = [cert, key] gives the runtime one)"
	}
	return fmt.Sprintf("%d", len(w.tgt.tls.Certificates))
}

func dialCode(err error) report.Code {
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return report.CodeTCPRefused
	case errors.Is(err, syscall.EHOSTUNREACH):
		return report.CodeTCPHostUnreachable
	case errors.Is(err, syscall.ENETUNREACH):
		return report.CodeTCPNetUnreachable
	case errors.Is(err, syscall.ECONNRESET):
		return report.CodeTCPReset
	case errors.As(err, &ne) && ne.Timeout():
		return report.CodeTCPTimeout
	}
	return report.CodeTCPFailed
}

func dialWord(err error) string {
	switch dialCode(err) {
	case report.CodeTCPRefused:
		return "connection refused (the host answers, nothing listens on the port, or a firewall rejects)"
	case report.CodeTCPHostUnreachable:
		return "no route to host (the address does not answer on its network)"
	case report.CodeTCPNetUnreachable:
		return "network is unreachable (no route in the node's table)"
	case report.CodeTCPReset:
		return "connection reset"
	case report.CodeTCPTimeout:
		return "timeout (packets dropped)"
	}
	return err.Error()
}

func tlsEvidence(serverName string, hop *hoptrace.Hop, err error) *report.TLS {
	t := &report.TLS{ServerName: serverName}
	var certs []*x509.Certificate
	if hop != nil {
		if st, _ := hop.TLS(); st != nil {
			t.Version = tls.VersionName(st.Version)
			certs = st.PeerCertificates
			t.Verified = len(st.VerifiedChains) > 0
		}
	}
	var cve *tls.CertificateVerificationError
	if errors.As(err, &cve) && len(cve.UnverifiedCertificates) > 0 {
		certs = cve.UnverifiedCertificates
	}
	for _, c := range certs {
		ce := report.Certificate{Subject: c.Subject.String(), Issuer: c.Issuer.String(), DNSNames: c.DNSNames,
			NotBefore: c.NotBefore.UTC(), NotAfter: c.NotAfter.UTC()}
		for _, ip := range c.IPAddresses {
			ce.IPs = append(ce.IPs, ip.String())
		}
		t.Chain = append(t.Chain, ce)
	}
	if err != nil {
		t.Error = err.Error()
	}
	return t
}

func certLines(t *report.TLS) []string {
	if t == nil {
		return nil
	}
	var out []string
	for i, c := range t.Chain {
		names := strings.Join(append(append([]string{}, c.DNSNames...), c.IPs...), ", ")
		if names == "" {
			names = "none"
		}
		out = append(out, fmt.Sprintf("chain[%d]: subject %q, issuer %q, names [%s], valid %s to %s", i, c.Subject, c.Issuer, names,
			c.NotBefore.Format(time.RFC3339), c.NotAfter.Format(time.RFC3339)))
	}
	return out
}

func (w *walk) trustLine() string {
	if w.tgt.trust == "" {
		return "trusted here: the system roots"
	}
	return "trusted here: " + w.tgt.trust
}
