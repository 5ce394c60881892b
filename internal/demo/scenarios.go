// Package demo stages the pull path on loopback (a registry, a token realm, a blob host and a DNS
// server from registrytest), healthy and with each fault, and diagnoses each with the real probe.
package demo

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/types"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/pullpath/pullpath/internal/creds"
	"github.com/pullpath/pullpath/internal/probe"
	"github.com/pullpath/pullpath/internal/registrytest"
	"github.com/pullpath/pullpath/internal/report"
	"github.com/pullpath/pullpath/internal/resolver"
)

// Demo user of the lab's token realm.
const (
	User     = "puller"
	Password = "s3cret-demo-password"
	Platform = "linux/amd64"
)

// Scenario is one staged state of the pull path and the diagnosis it must get.
type Scenario struct {
	Name   string
	Expect report.Class
	Role   report.Role     // failing role; empty for ok
	Step   report.StepName // failing layer
	Code   report.Code
	// Stage sets the lab's faults and returns the probe options for this scenario.
	Stage func(env *Env) probe.Options
}

// Env is a running lab with the demo images pushed.
type Env struct {
	Lab *registrytest.Lab
}

// Setup starts the lab and pushes the demo images: team/app:1.4 (3 layers) and team/multi:1
// (an index for s390x and ppc64le only).
func Setup(ctx context.Context, layerBytes int64) (*Env, error) {
	lab, err := registrytest.Start(registrytest.Options{Domain: "pullpath.test", Users: map[string]string{User: Password}})
	if err != nil {
		return nil, err
	}
	img, err := image(layerBytes, 3, "amd64")
	if err == nil {
		err = lab.Push(ctx, "team/app:1.4", img)
	}
	if err == nil {
		var idx v1.ImageIndex = empty.Index
		for _, arch := range []string{"s390x", "ppc64le"} {
			var im v1.Image
			if im, err = image(1024, 1, arch); err != nil {
				break
			}
			idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: im, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: arch}}})
		}
		if err == nil {
			idx = mutate.IndexMediaType(idx, types.OCIImageIndex)
			err = lab.PushIndex(ctx, "team/multi:1", idx)
		}
	}
	if err != nil {
		lab.Close()
		return nil, fmt.Errorf("demo images: %w", err)
	}
	return &Env{Lab: lab}, nil
}

// Close stops the lab.
func (e *Env) Close() { e.Lab.Close() }

func image(layerBytes, layers int64, arch string) (v1.Image, error) {
	img, err := random.Image(layerBytes, layers)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", arch
	return mutate.ConfigFile(img, cf)
}

// Options returns probe options that reach the lab: its DNS server, its CA, the demo user.
func (e *Env) Options(image string) probe.Options {
	return probe.Options{
		Image:    image,
		Platform: Platform,
		Resolver: resolver.Config{Source: "pullpath demo DNS server", Nameservers: []string{e.Lab.DNS.Addr},
			Ndots: 1, Timeout: 2 * time.Second, Attempts: 1},
		CAFiles:        []string{e.Lab.CAFile},
		Credential:     creds.Credential{Username: User, Password: Password, Source: "demo credentials"},
		ConnectTimeout: 2 * time.Second,
		HeaderTimeout:  5 * time.Second,
		StallTimeout:   time.Second,
		Timeout:        time.Minute,
		Node:           "demo-node",
	}
}

func (e *Env) healthy() probe.Options {
	e.Lab.SetFaults(registrytest.Faults{})
	return e.Options(e.Lab.Ref("team/app:1.4"))
}

func (e *Env) withFaults(f registrytest.Faults) probe.Options {
	o := e.healthy()
	e.Lab.SetFaults(f)
	return o
}

func closedAddr(host string) string { return net.JoinHostPort(host, registrytest.ClosedPort()) }

// Scenarios lists every fault the demo stages, the healthy paths first.
func Scenarios() []Scenario {
	return []Scenario{
		{Name: "healthy, blobs redirected to a blob host", Expect: report.ClassOK, Code: report.CodeOK,
			Stage: func(e *Env) probe.Options { return e.healthy() }},
		{Name: "healthy, blobs served by the registry", Expect: report.ClassOK, Code: report.CodeOK,
			Stage: func(e *Env) probe.Options { return e.withFaults(registrytest.Faults{NoRedirect: true}) }},
		{Name: "registry name unknown to the node's resolver", Expect: report.ClassDNS, Role: report.RoleRegistry, Step: report.StepDNS, Code: report.CodeDNSNXDomain,
			Stage: func(e *Env) probe.Options {
				o := e.healthy()
				o.Image = "nosuch." + e.Lab.Domain + ":443/team/app:1.4"
				return o
			}},
		{Name: "the node's resolver does not answer", Expect: report.ClassDNS, Role: report.RoleRegistry, Step: report.StepDNS, Code: report.CodeDNSUnreachable,
			Stage: func(e *Env) probe.Options {
				o := e.healthy()
				o.Resolver.Nameservers = []string{closedAddr("127.0.0.1")}
				return o
			}},
		{Name: "registry port closed", Expect: report.ClassRoute, Role: report.RoleRegistry, Step: report.StepTCP, Code: report.CodeTCPRefused,
			Stage: func(e *Env) probe.Options {
				o := e.healthy()
				o.Image = closedAddr(e.Lab.RegistryHost) + "/team/app:1.4"
				return o
			}},
		{Name: "certificate from an untrusted CA", Expect: report.ClassTLS, Role: report.RoleRegistry, Step: report.StepTLS, Code: report.CodeTLSUnknownAuthority,
			Stage: func(e *Env) probe.Options { return e.withFaults(registrytest.Faults{Cert: registrytest.CertRogue}) }},
		{Name: "certificate for another name", Expect: report.ClassTLS, Role: report.RoleRegistry, Step: report.StepTLS, Code: report.CodeTLSNameMismatch,
			Stage: func(e *Env) probe.Options { return e.withFaults(registrytest.Faults{Cert: registrytest.CertWrongName}) }},
		{Name: "expired certificate", Expect: report.ClassTLS, Role: report.RoleRegistry, Step: report.StepTLS, Code: report.CodeTLSExpired,
			Stage: func(e *Env) probe.Options { return e.withFaults(registrytest.Faults{Cert: registrytest.CertExpired}) }},
		{Name: "plain HTTP where HTTPS is expected", Expect: report.ClassTLS, Role: report.RoleRegistry, Step: report.StepTLS, Code: report.CodeTLSPlainHTTP,
			Stage: func(e *Env) probe.Options {
				o := e.healthy()
				o.Image = e.Lab.PlainAddr() + "/team/app:1.4"
				return o
			}},
		{Name: "no credentials (401)", Expect: report.ClassAuth, Role: report.RoleToken, Step: report.StepAuth, Code: report.CodeAuth401,
			Stage: func(e *Env) probe.Options {
				o := e.healthy()
				o.Credential = creds.Credential{Source: "nothing"}
				return o
			}},
		{Name: "wrong password (401)", Expect: report.ClassAuth, Role: report.RoleToken, Step: report.StepAuth, Code: report.CodeAuth401,
			Stage: func(e *Env) probe.Options {
				o := e.healthy()
				o.Credential.Password = "wrong-password"
				return o
			}},
		{Name: "identity lacks pull rights (403)", Expect: report.ClassForbidden, Role: report.RoleRegistry, Step: report.StepManifest, Code: report.CodeAuth403,
			Stage: func(e *Env) probe.Options { return e.withFaults(registrytest.Faults{Forbid: true}) }},
		{Name: "token without the repository's scope", Expect: report.ClassForbidden, Role: report.RoleRegistry, Step: report.StepManifest, Code: report.CodeAuthInsufficientScope,
			Stage: func(e *Env) probe.Options { return e.withFaults(registrytest.Faults{InsufficientScope: true}) }},
		{Name: "tag missing", Expect: report.ClassNotFound, Role: report.RoleRegistry, Step: report.StepManifest, Code: report.CodeManifestUnknown,
			Stage: func(e *Env) probe.Options {
				o := e.healthy()
				o.Image = e.Lab.Ref("team/app:nope")
				return o
			}},
		{Name: "no manifest for the node's platform", Expect: report.ClassPlatform, Role: report.RoleRegistry, Step: report.StepManifest, Code: report.CodePlatformMismatch,
			Stage: func(e *Env) probe.Options {
				o := e.healthy()
				o.Image = e.Lab.Ref("team/multi:1")
				return o
			}},
		{Name: "registry throttles (429)", Expect: report.ClassRateLimit, Role: report.RoleRegistry, Step: report.StepManifest, Code: report.CodeRateLimited,
			Stage: func(e *Env) probe.Options { return e.withFaults(registrytest.Faults{RateLimit: true}) }},
		{Name: "token realm unreachable", Expect: report.ClassEndpoint, Role: report.RoleToken, Step: report.StepTCP, Code: report.CodeTCPRefused,
			Stage: func(e *Env) probe.Options {
				return e.withFaults(registrytest.Faults{Realm: "https://" + closedAddr(e.Lab.AuthHost) + "/token"})
			}},
		{Name: "blob host name not resolvable", Expect: report.ClassEndpoint, Role: report.RoleBlob, Step: report.StepDNS, Code: report.CodeDNSNXDomain,
			Stage: func(e *Env) probe.Options {
				return e.withFaults(registrytest.Faults{BlobHost: "cdn." + e.Lab.Domain + ":443"})
			}},
		{Name: "blob host unreachable", Expect: report.ClassEndpoint, Role: report.RoleBlob, Step: report.StepTCP, Code: report.CodeTCPRefused,
			Stage: func(e *Env) probe.Options {
				return e.withFaults(registrytest.Faults{BlobHost: closedAddr(e.Lab.BlobHost)})
			}},
		{Name: "blob host stalls mid-download", Expect: report.ClassEndpoint, Role: report.RoleBlob, Step: report.StepBlob, Code: report.CodeBlobStalled,
			Stage: func(e *Env) probe.Options { return e.withFaults(registrytest.Faults{BlobStall: true}) }},
		{Name: "blob host refuses the signed URL (403)", Expect: report.ClassEndpoint, Role: report.RoleBlob, Step: report.StepBlob, Code: report.CodeBlobForbidden,
			Stage: func(e *Env) probe.Options { return e.withFaults(registrytest.Faults{BlobForbidden: true}) }},
		{Name: "blob bytes altered (digest mismatch)", Expect: report.ClassOther, Role: report.RoleBlob, Step: report.StepBlob, Code: report.CodeDigestMismatch,
			Stage: func(e *Env) probe.Options { return e.withFaults(registrytest.Faults{BlobCorrupt: true}) }},
	}
}
