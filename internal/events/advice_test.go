package events

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/pullpath/pullpath/internal/report"
)

// The advice issue 23 found wrong or thin, and its wording bugs.
func TestAdviceIssue23(t *testing.T) {
	has := func(ss []string, sub string) bool {
		return slices.ContainsFunc(ss, func(s string) bool { return strings.Contains(s, sub) })
	}
	t.Run("legacy Common Name: reissue with SANs", func(t *testing.T) {
		fd := Classify(`Failed to pull image "r.example/a:1": failed to do request: Head "https://r.example/v2/a/manifests/1": x509: certificate relies on legacy Common Name field, use SANs instead`)
		if fd.Class != report.ClassTLS || !has(fd.NextSteps, "reissue") || !has(fd.NextSteps, "subjectAltName") || has(fd.NextSteps, "trust its CA for the runtime") {
			t.Errorf("%s: next %q", fd.Class, fd.NextSteps)
		}
	})
	t.Run("the kubelet's pull QPS", func(t *testing.T) {
		for _, msg := range []string{`Error: ErrImagePull: pull QPS exceeded`, `Failed to pull image "nginx": pull QPS exceeded`} {
			fd := Classify(msg)
			if fd.Code != report.CodeKubeletPullQPS || fd.Class != report.ClassOther || len(fd.Alternatives) > 0 || !fd.Decided ||
				fd.Host != "" || !has(fd.NextSteps, "registryPullQPS") || fd.OwnerText == "" {
				t.Errorf("%q: %s/%s alt %v decided %v host %q owner %q next %q", msg, fd.Class, fd.Code, fd.Alternatives, fd.Decided, fd.Host, fd.OwnerText, fd.NextSteps)
			}
		}
	})
	t.Run("INVALID_REFERENCE and DISK_FULL: an owner and a next step; no registry host for the disk", func(t *testing.T) {
		for _, msg := range []string{
			`Failed to apply default image tag "Nginx:Latest": couldn't parse image reference "Nginx:Latest": invalid reference format: repository name must be lowercase`,
			`Failed to pull image "nginx": rpc error: code = Unknown desc = failed to pull and unpack image "docker.io/library/nginx:latest": failed to extract layer sha256:abc: write /var/lib/containerd/x: no space left on device: unknown`,
		} {
			fd := Classify(msg)
			if fd.OwnerText == "" || len(fd.NextSteps) == 0 || fd.Code == report.CodeDiskFull && (fd.Host != "" || fd.Role != "") {
				t.Errorf("%s: owner %q next %q host %q role %q", fd.Code, fd.OwnerText, fd.NextSteps, fd.Host, fd.Role)
			}
		}
	})
	t.Run("a resolver that does not answer: is it up, 53/udp and 53/tcp", func(t *testing.T) {
		for _, msg := range []string{
			`failed to do request: Head "https://r.example/v2/a/manifests/1": dial tcp: lookup r.example on 10.0.0.10:53: read udp 10.0.0.4:4444->10.0.0.10:53: i/o timeout`,
			`failed to do request: Head "https://r.example/v2/a/manifests/1": dial tcp: lookup r.example on 10.0.0.10:53: dial udp 10.0.0.10:53: connect: network is unreachable`,
		} {
			fd := Classify(msg)
			if !resolverFailure[fd.Code] || !strings.Contains(fd.NextSteps[0], "10.0.0.10:53 is up") || !strings.Contains(fd.NextSteps[0], "53/udp and 53/tcp") {
				t.Errorf("%s: next %q", fd.Code, fd.NextSteps)
			}
		}
	})
	t.Run("a reset names the peer", func(t *testing.T) {
		fd := Classify(`failed to do request: Head "https://r.example/v2/a/manifests/1": read tcp 10.0.0.1:5555->1.2.3.4:443: read: connection reset by peer`)
		if fd.Code != report.CodeTCPReset || fd.Address != "1.2.3.4:443" || !strings.Contains(fd.Reason, "1.2.3.4:443") || !has(fd.NextSteps, "1.2.3.4:443") {
			t.Errorf("%s: address %q reason %q next %q", fd.Code, fd.Address, fd.Reason, fd.NextSteps)
		}
	})
	t.Run("a name that does not exist is a name, not host:port", func(t *testing.T) {
		fd := Classify(`Error response from daemon: Get "https://myacr.azurecr.io/v2/": dial tcp: lookup myacr.azurecr.io on 10.0.0.10:53: no such host`)
		if !strings.Contains(fd.Reason, "myacr.azurecr.io does not exist") || strings.Contains(fd.Reason, ":443 does not exist") {
			t.Errorf("reason %q", fd.Reason)
		}
	})
	t.Run("Docker Hub's pull access denied says each thing once", func(t *testing.T) {
		fd := Classify(`Error response from daemon: pull access denied for nosuchuser/app, repository does not exist or may require 'docker login': denied: requested access to the resource is denied`)
		if n := strings.Count(fd.Reason, "answers a repository that does not exist"); n != 1 {
			t.Errorf("said %d times: %q", n, fd.Reason)
		}
	})
}

// reRepeatedClause is a clause said twice in a row of "; "-joined clauses.
func repeatedClause(s string) string {
	seen := map[string]bool{}
	for _, c := range strings.Split(s, "; ") {
		if seen[c] {
			return c
		}
		seen[c] = true
	}
	return ""
}

// No finding of the dev corpus says "none registries", a name with its port where a name is
// meant, or one clause twice.
func TestWordingOnDev(t *testing.T) {
	reNamePort := regexp.MustCompile(`[\w.-]+:\d+ does not exist`)
	for _, file := range corpusFiles {
		for _, s := range loadCorpus(t, file) {
			if heldOut(s.source) {
				continue
			}
			fd := Classify(s.message)
			text := fd.Reason + " | " + fd.DecidedBecause + " | " + strings.Join(fd.NextSteps, " | ")
			if strings.Contains(text, "none registries") || reNamePort.MatchString(text) {
				t.Errorf("%s: %q", s.source, text)
			}
			if c := repeatedClause(fd.Reason); c != "" {
				t.Errorf("%s: %q said twice in %q", s.source, c, fd.Reason)
			}
		}
	}
}
