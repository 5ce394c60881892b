package events

import (
	"fmt"
	"net"
	"slices"
	"strings"

	"github.com/pullpath/pullpath/internal/report"
)

// The words of a finding: its reason, its next steps and the one command that decides it. The
// judgement (class, alternatives, decided) is made in classify.go; nothing here changes it.

func reason(fd report.Finding, f facts) string {
	h := fd.Host
	if h == "" {
		h = "the host"
	}
	on := ""
	if f.resolver != "" {
		on = " (asked " + f.resolver + ")"
	}
	switch fd.Code {
	case report.CodeProxyFailed:
		target := "the registry"
		if f.url != nil {
			target = f.url.Host
		}
		if reProxyConnectRefused.MatchString(f.text) {
			return "the HTTP proxy in the runtime's environment refused to open a tunnel to " + target + " (a bare status after \"failed to do request\" is the proxy's CONNECT answer, not the registry's)"
		}
		if m := reBareStatus.FindStringSubmatch(f.text); m != nil {
			return fmt.Sprintf("the answer to %s is a bare %q: Go's client words a proxy's refused CONNECT so, and some clients a body-less refusal of the registry itself", target, m[1])
		}
		if fd.Host == "" {
			return "the runtime sends the pull through an HTTP proxy that it cannot use"
		}
		return fmt.Sprintf("the runtime sends the pull through an HTTP proxy (%s) that it cannot use", h)
	case report.CodeRegistryBlocked:
		return fmt.Sprintf("the runtime's registries.conf blocks %s (blocked = true) and no mirror served the pull: it refuses the pull without contacting anything", h)
	case report.CodeHostsTomlInvalid:
		return "containerd rejected a hosts.toml and silently ignored its settings (its ca among them), so TLS then fails with an unknown authority"
	case report.CodeDNSPublicForPrivate:
		return fmt.Sprintf("the node's resolver%s answered an address nothing can be reached at (0.0.0.0 or ::) for %s: a DNS blocklist or sinkhole (Pi-hole, a filtering resolver)", on, hostName(h))
	case report.CodeDNSNXDomain:
		return fmt.Sprintf("the node's resolver%s says the name %s does not exist (NXDOMAIN)", on, hostName(h))
	case report.CodeDNSServFail:
		return fmt.Sprintf("the node's resolver%s failed to resolve %s (SERVFAIL: a broken forwarder or zone)", on, hostName(h))
	case report.CodeDNSUnreachable:
		return fmt.Sprintf("the node cannot reach its resolver%s: the DNS query to port 53 failed before any answer", on)
	case report.CodeDNSTimeout:
		return fmt.Sprintf("the node's resolver%s did not answer for %s in time", on, hostName(h))
	case report.CodeTLSPlainHTTP:
		return fmt.Sprintf("%s answered plain HTTP where the runtime speaks HTTPS", h)
	case report.CodeTLSRequired:
		return fmt.Sprintf("%s speaks only TLS and the runtime sends it plain HTTP (containerd before 1.6.25 and 1.7.8 does so for a localhost registry with no server configured)", h)
	case report.CodeTLSNameMismatch:
		if reLegacyCN.MatchString(f.text) {
			return fmt.Sprintf("the certificate %s presents names the host only in its legacy Common Name; Go-based clients (containerd, docker, CRI-O) accept only a subjectAltName (SAN) since Go 1.15", h)
		}
		if names, foreign := foreignCertNames(f.text); foreign {
			return fmt.Sprintf("the certificate %s presents is another domain's (%s): the name reached another server (a DNS answer or /etc/hosts entry pointing elsewhere, an interception box, a load balancer's default certificate)", h, report.Clip(names, 60))
		}
		return fmt.Sprintf("the certificate %s presents is not valid for that name", h)
	case report.CodeTLSExpired:
		return fmt.Sprintf("the certificate %s presents has expired (or the node's clock is wrong)", h)
	case report.CodeTLSUnknownAuthority:
		return fmt.Sprintf("the certificate %s presents is signed by an authority the runtime does not trust (a private CA, or a TLS-inspecting proxy)", h)
	case report.CodeTLSClientCert:
		return fmt.Sprintf("%s refused the TLS session over the client certificate: it requires one it trusts (mTLS), and the runtime presented none or another", h)
	case report.CodeTLSHandshakeTimeout:
		return fmt.Sprintf("TCP to %s connected but the TLS handshake never completed: MTU, a DPI firewall or a proxy in the way", h)
	case report.CodeTCPRefused:
		return fmt.Sprintf("the connection to %s was refused: nothing listens there, or a firewall rejects", addrOr(fd.Address, h))
	case report.CodeTCPHostUnreachable, report.CodeTCPNetUnreachable:
		return fmt.Sprintf("the node has no working route to %s", addrOr(fd.Address, h))
	case report.CodeTCPTimeout:
		return fmt.Sprintf("the connection to %s timed out: packets are dropped (firewall, security group, missing route or return path)", addrOr(fd.Address, h))
	case report.CodeTCPReset:
		return fmt.Sprintf("the connection to %s was reset mid-way (a firewall or proxy cutting it)", addrOr(fd.Address, h))
	case report.CodeRateLimited:
		return fmt.Sprintf("%s throttles this client (429)", h)
	case report.CodePlatformMismatch:
		return "the image has no manifest for the node's OS/architecture"
	case report.CodeAuth401:
		return fmt.Sprintf("%s requires credentials that were not presented or not accepted (401)", h)
	case report.CodeAuthInsufficientScope:
		return "the token the registry issued does not cover pulling this repository (insufficient scope)"
	case report.CodeAuth403:
		return fmt.Sprintf("%s denied the request (403): the identity lacks rights, or a network rule blocks this client", h)
	case report.CodeBlobForbidden:
		if reExpiredSignature.MatchString(f.text) {
			return fmt.Sprintf("the blob host (%s) refused the download because the signed URL had expired (403): the node's clock, or a download delayed past the URL's lifetime", h)
		}
		return fmt.Sprintf("the manifest was served, then the blob host (%s) refused the download (403): a storage firewall, private endpoint or VPC endpoint policy, or a rewritten/expired signed URL", h)
	case report.CodeBlobStalled:
		return fmt.Sprintf("the blob download from %s started and then stopped delivering bytes (a read timed out mid-stream)", h)
	case report.CodeDigestMismatch:
		return "the downloaded bytes do not match the digest the manifest names: altered or truncated on the way (a caching proxy or mirror, a TLS-inspecting middlebox) or corrupt in storage"
	case report.CodeSizeMismatch:
		return "the downloaded blob has another size than the manifest says: truncated or altered on the way, or corrupt in storage"
	case report.CodeManifestUnknown, report.CodeNameUnknown:
		return "the repository, tag or digest does not exist in the registry"
	case report.CodeBlobUnknown:
		return "the registry lists a blob it cannot serve"
	case report.CodeDiskFull:
		return "the node ran out of disk space while unpacking the image (the runtime's root, e.g. /var/lib/containerd)"
	case report.CodeDiskIO:
		return "the node's disk failed while writing the image"
	case report.CodeUnpackFailed:
		return "the download worked; unpacking a layer on the node failed"
	case report.CodeHTTPStatus:
		return fmt.Sprintf("%s answered an unexpected HTTP status", h)
	case report.CodeTimeout:
		return "the pull ran out of time (the client's or kubelet's deadline): a silent network drop or a stalled download"
	case report.CodeCanceled:
		return "the pull was cancelled before it finished, usually by the kubelet's runtime request timeout while a large or slow download was running"
	case report.CodeBlobFailed:
		return "the download broke off mid-way"
	case report.CodeNeverPull:
		return "imagePullPolicy is Never and the image is not on the node"
	case report.CodeInvalidReference:
		if reShortName.MatchString(f.text) {
			return "the image is a short name (no registry) and the runtime's short-name policy resolved it to none: no registry was asked"
		}
		return "the image reference in the pod spec is malformed"
	case report.CodeManifestUnsupported:
		return "the image is stored as a Docker manifest schema 1, a format the runtime no longer pulls (Docker 26 and later refuse it by default)"
	case report.CodeKubeletPullQPS:
		return "the kubelet throttled its own image pulls (its registryPullQPS and registryBurst): no registry was asked, nothing on the pull path failed"
	case report.CodeBackoffNoCause:
		return "the kubelet is backing off after earlier failures; this event does not carry the cause: read the earlier \"Failed to pull image\" event, or probe"
	}
	if fd.Code == report.CodeUnknown && (f.image != "" || f.url != nil) {
		return "the text says a pull failed but names no cause pullpath knows (a wrapper may have dropped the runtime's own error: look for it in the kubelet's or the runtime's log)"
	}
	return "pullpath does not recognise this message"
}

// addrOr names a host with the address the text gives for it: "r.example:443 (1.2.3.4:443)".
func addrOr(addr, h string) string {
	if addr != "" && h != "the host" && h != "" {
		return h + " (" + addr + ")"
	}
	if addr != "" {
		return addr
	}
	return h
}

// reLegacyCN is Go's refusal of a certificate that names its host only in the Common Name.
var reLegacyCN = lazyRE(`legacy Common Name field`)

// otherOwners say who fixes what fails off the pull path (class other has no owner token).
var otherOwners = map[report.Code]string{
	report.CodeDiskFull:         "the node's operator (its disk: the runtime's root, e.g. /var/lib/containerd)",
	report.CodeDiskIO:           "the node's operator (its disk and filesystem)",
	report.CodeInvalidReference: "application (the image reference in the pod spec)",
	report.CodeNeverPull:        "application (the pod's imagePullPolicy), or the node's operator (pre-loaded images)",
	report.CodeKubeletPullQPS:   "the node's operator (the kubelet's configuration)",
}

// ownerText is who fixes it, in prose: the class's owner, or for class other the owner of a
// failure on the node or in the pod spec.
func ownerText(fd report.Finding) string {
	if fd.Class == report.ClassOther {
		return otherOwners[fd.Code]
	}
	return fd.Class.OwnerText()
}

// reExpiredSignature is object storage saying the signed URL is no longer valid.
var reExpiredSignature = lazyRE(`(?i)request has expired|signature (?:not valid in the specified time|expired)|url signature expired|ExpiredToken|token is expired`)

// nextSteps lists what to check for this finding's code first (a refused connection, a stall and
// a digest mismatch do not share a fix), with the names and the port from the message.
func nextSteps(fd report.Finding, f facts) []string {
	h := fd.Host
	if h == "" {
		h = "the failing host"
	}
	port := f.port(fd.Host)
	where := addrOr(fd.Address, h)
	allow := ""
	if fd.Role == report.RoleBlob || fd.Role == report.RoleToken || fd.Role == report.RoleMirror {
		allow = fmt.Sprintf("%s is a %s endpoint of this pull: allow it like the registry itself (firewall, proxy allowlist, private DNS); list every host with: pullpath probe --allowlist %s", h, roleWord(fd.Role), imageOr(fd))
	}
	steps := func(s ...string) []string {
		if allow != "" {
			s = append(s, allow)
		}
		return s
	}
	switch fd.Code {
	case report.CodeRegistryBlocked:
		return []string{"remove blocked = true from the [[registry]] entry for this prefix (/etc/containers/registries.conf or a registries.conf.d drop-in), or give it a mirror that serves the image; pullpath runtime --host-root shows the entry"}
	case report.CodeTCPRefused:
		return steps(fmt.Sprintf("nothing accepts TCP %s at %s: check that the service listens on port %s (the registry, its load balancer or ingress), and that the port in the image reference or mirror is right", port, where, port),
			fmt.Sprintf("or a firewall actively rejects TCP %s (a REJECT rule, a host firewall on the registry)", port))
	case report.CodeTCPTimeout:
		return steps(fmt.Sprintf("packets to %s on TCP %s are dropped: check the security rules / firewall for TCP %s at both ends and the node's effective route", where, port, port),
			"check the return path (asymmetric routing through a firewall drops the replies)")
	case report.CodeTCPHostUnreachable, report.CodeTCPNetUnreachable:
		return steps(fmt.Sprintf("the node has no working route to %s: check its route table (UDR, VPN, peering, gateway); for an IPv6 address, that the node has IPv6 connectivity at all", where))
	case report.CodeTCPReset:
		return steps(fmt.Sprintf("a middlebox resets TCP %s to %s (firewall, IPS, proxy): check its logs and rules for this destination", port, where),
			"a TLS-inspecting or SNI-filtering firewall resets connections to names it does not allow")
	case report.CodeTLSHandshakeTimeout:
		return steps(fmt.Sprintf("TCP %s to %s connects but TLS never completes: check the path MTU (VPN, overlay: large handshake packets dropped), a DPI firewall, or a proxy the runtime should be using", port, h))
	case report.CodeBlobForbidden:
		if reExpiredSignature.MatchString(f.text) {
			return []string{"check the node's clock (timedatectl, chrony/NTP): signed blob URLs are valid for minutes",
				"check for a proxy or scanner that holds the download until the URL expires"}
		}
		return steps(fmt.Sprintf("check the storage account / bucket network rules (firewall, private endpoint, VPC endpoint policy) for the node's egress address towards %s", h),
			"check that no proxy rewrites the signed URL (a stripped or re-encoded query is refused with 403)",
			"only if storage allows the node: the pull identity's rights (the registry signs URLs only for identities it authorised)")
	case report.CodeBlobStalled:
		return steps(fmt.Sprintf("the download from %s stopped mid-way: check proxy/firewall idle timeouts and the link's throughput (pullpath probe measures both)", h),
			"a large image on a slow link also hits the kubelet's runtime-request-timeout (2m by default): raise it only once the path is known good")
	case report.CodeDigestMismatch, report.CodeSizeMismatch:
		return []string{"purge this blob from any pull-through cache or mirror on the path and pull again",
			"pull once bypassing proxies and TLS-inspecting middleboxes to see which one alters the bytes; if it persists, the blob is corrupt in the registry: push the image again"}
	case report.CodeDiskFull:
		return []string{"free space on the node under the runtime's root (df -h /var/lib/containerd or /var/lib/docker; crictl rmi --prune removes unused images)",
			"check the kubelet's image garbage collection (imageGCHighThresholdPercent) and what else fills that filesystem (logs, emptyDir volumes)"}
	case report.CodeDiskIO:
		return []string{"check the node's disk and filesystem (dmesg for I/O errors, a read-only remount); drain and replace the node if the disk is failing"}
	case report.CodeInvalidReference:
		if reShortName.MatchString(f.text) {
			return []string{"name the registry in the image (docker.io/library/busybox, not busybox)",
				"or give the node's /etc/containers/registries.conf an unqualified-search-registries list (one registry, since CRI-O 1.34 and podman in enforcing short-name mode refuse a choice they cannot prompt for)"}
		}
		return []string{"fix the image reference in the pod spec: lowercase registry and repository, at most one :tag, a digest as @sha256: and 64 hex digits, no scheme (https://) and no spaces"}
	case report.CodeKubeletPullQPS:
		return []string{"raise registryPullQPS and registryBurst in the kubelet's configuration (default 5 and 10; 0 turns the throttle off), or start fewer pulls at once (a slower rollout)",
			"the kubelet retries by itself: the registry and the pull path are not in question"}
	case report.CodeTLSNameMismatch:
		if reLegacyCN.MatchString(f.text) {
			return []string{fmt.Sprintf("reissue the certificate of %s with its name in subjectAltName (a SAN): Go-based runtimes ignore the Common Name, so trusting its CA does not help", h),
				"no node-side setting brings Common Name matching back (GODEBUG x509ignoreCN=0 was removed in Go 1.17)"}
		}
		if _, foreign := foreignCertNames(f.text); foreign {
			return []string{fmt.Sprintf("resolve %s from the node (getent hosts %s: /etc/hosts first, then the resolver) and compare the address with the registry's: a wrong answer is the DNS owner's, a right one the certificate's", hostName(h), hostName(h)),
				"if the address is right, the server behind it presents another name's certificate: fix its certificate (an ingress or load balancer's default one) or the interception box in the path"}
		}
		return []string{fmt.Sprintf("compare the names the certificate of %s is valid for with the name the node uses: reissue it with that name in subjectAltName, or pull by a name it is valid for", h),
			"if it is another server's certificate (a TLS-inspecting proxy, a DNS answer pointing elsewhere), fix the path, not the certificate"}
	case report.CodeManifestUnsupported:
		return []string{"re-push the image as a manifest schema 2 or OCI image (any current docker buildx or crane copy does), or use a newer tag"}
	case report.CodeRateLimited:
		return []string{"authenticate pulls (imagePullSecrets: authenticated quotas are higher) or use a pull-through mirror",
			"check for a shared egress address (NAT) that pools many nodes' anonymous quota"}
	}
	switch fd.Class {
	case report.ClassDNS:
		s := []string{fmt.Sprintf("from the node (not a pod): resolve %s with the node's resolver%s", hostName(h), orEmpty(" "+f.resolver)),
			"check the DNS servers the node uses (VNet/VPC DNS settings), private zone links and conditional forwarders"}
		if fd.Code == report.CodeDNSUnreachable || fd.Code == report.CodeDNSTimeout {
			s[0] = fmt.Sprintf("check that the resolver%s is up (it answers other names, asked from another host) and that 53/udp and 53/tcp reach it from the node (routes, security rules, the node's own firewall)", orEmpty(" "+f.resolver))
		}
		return s
	case report.ClassRoute:
		return []string{fmt.Sprintf("check the node's effective route to %s and the security rules for TCP %s at both ends", where, port),
			"check the return path (asymmetric routing through a firewall drops the replies)"}
	case report.ClassEndpoint:
		if fd.Code == report.CodeDNSNXDomain || resolverFailure[fd.Code] {
			return steps(fmt.Sprintf("resolve %s from the node: a private DNS zone or split-horizon view must hold it too", hostName(h)))
		}
		return steps(fmt.Sprintf("check what %s answers from the node (pullpath probe shows each step)", h))
	case report.ClassTLS:
		if fd.Code == report.CodeTLSPlainHTTP {
			return []string{fmt.Sprintf("serve TLS on %s, or declare it plain HTTP for the runtime (containerd: certs.d/%s/hosts.toml server = \"http://%s\")", h, certsDir(h), h)}
		}
		if fd.Code == report.CodeTLSRequired {
			return []string{fmt.Sprintf("have the runtime speak HTTPS to %s (containerd: certs.d/%s/hosts.toml server = \"https://%s\" with its ca, or skip_verify), or upgrade containerd to 1.6.25+/1.7.8+, which tries HTTPS first for localhost", h, certsDir(h), h)}
		}
		if fd.Code == report.CodeHostsTomlInvalid {
			return []string{"fix the hosts.toml containerd rejected (containerd 1.6 needs a [host.\"…\"] table or an empty [host]); see pullpath runtime"}
		}
		if fd.Code == report.CodeTLSClientCert {
			return []string{fmt.Sprintf("give the runtime the client certificate %s expects: containerd certs.d/%s/hosts.toml client = [\"cert\", \"key\"]", h, certsDir(h))}
		}
		if fd.Code == report.CodeTLSExpired {
			return []string{fmt.Sprintf("check the validity dates of the certificate %s serves, and the node's clock (timedatectl)", h),
				"a TLS-inspecting proxy with an expired certificate of its own shows the same error"}
		}
		return []string{fmt.Sprintf("inspect the certificate %s serves: names, issuer, validity", h),
			fmt.Sprintf("trust its CA for the runtime: containerd certs.d/%s/hosts.toml ca = \"…\", or the node's CA bundle, then restart the runtime", certsDir(h))}
	case report.ClassAuth:
		return []string{"check the pod's imagePullSecrets (namespace, registry key, expiry) or the kubelet credential provider / node identity",
			"confirm the repository name: some registries answer 401 for a repository that does not exist"}
	case report.ClassForbidden:
		return []string{"grant the identity pull rights on this repository (e.g. AcrPull, ECR repository policy, GAR Artifact Registry Reader)", "check the registry's network rules for the node's egress address"}
	case report.ClassNotFound:
		steps := []string{fmt.Sprintf("check the image reference %s: registry, repository, tag or digest", orPodSpec(fd.Image)), "check that the release pipeline pushed it"}
		if pullThroughCache(f) != "" {
			steps = append(steps, "check the cache's upstream: the image exists there, and the cache's upstream endpoint, credentials and rate limit (its logs name the failed fetch)")
		}
		return steps
	case report.ClassPlatform:
		return []string{"publish a manifest for the node's platform (multi-arch build), or schedule the pod on matching nodes"}
	case report.ClassProxy:
		proxy := "the proxy"
		if fd.Host != "" {
			proxy += " " + fd.Host
		}
		return []string{fmt.Sprintf("check the runtime's proxy environment (HTTP(S)_PROXY in its systemd unit): %s must resolve, accept connections and allow CONNECT to the registry", proxy),
			"add private registries to NO_PROXY"}
	}
	return nil
}

// certsDir is containerd's certs.d directory name for a host: the name alone on 443, host:port otherwise.
func certsDir(h string) string {
	if name, p, err := net.SplitHostPort(h); err == nil && p == "443" {
		return name
	}
	return h
}

// hostName is a host without its port.
func hostName(h string) string {
	if name, _, err := net.SplitHostPort(h); err == nil {
		return name
	}
	return h
}

func imageOr(fd report.Finding) string {
	if fd.Image == "" {
		return "IMAGE"
	}
	return fd.Image
}

func roleWord(r report.Role) string {
	switch r {
	case report.RoleToken:
		return "token (auth realm)"
	case report.RoleBlob:
		return "blob download (redirect)"
	case report.RoleMirror:
		return "mirror"
	}
	return string(r)
}

// decide is the one command that settles the diagnosis from the node.
func decide(fd report.Finding, f facts) string {
	if fd.Decided && fd.Class == report.ClassOther && len(fd.Alternatives) == 0 && fd.Code != report.CodeBackoffNoCause && fd.Code != report.CodeTimeout && fd.Code != report.CodeCanceled {
		return "" // on the node or in the pod spec: the pull path is not in question
	}
	img := fd.Image
	where := decideWhere
	if img == "" && pathClass[fd.Class] && f.onHub() {
		// the text names no image, but the path to Docker Hub failed: any public image walks it
		img, where = hubProbeImage, "   # any public Docker Hub image walks the same path;"+strings.TrimPrefix(decideWhere, "   #")
	}
	if img == "" {
		img = "IMAGE"
	}
	cmd := "pullpath probe " + img + where
	if len(fd.Alternatives) > 0 && (fd.Class == report.ClassNotFound || fd.Class == report.ClassAuth ||
		fd.Class == report.ClassForbidden && (slices.Contains(fd.Alternatives, report.ClassAuth) || slices.Contains(fd.Alternatives, report.ClassNotFound))) {
		// anonymous first: then again with the pod's own secret tells a missing repository from a private one
		cmd += "; then again with --pull-secret and the pod's pull secret (kubectl get secret -o yaml)"
	}
	return cmd
}

// podDecide settles a finding whose input names no image: pod reads the failing pod (its image,
// its events, its node and pool) and names the verify command that probes that node's pool.
const podDecide = "pullpath pod POD -n NAMESPACE   # the failing pod: its image, node and pool, and the verify command that settles it"

// pathClass are the classes of the path to a registry, whatever the image: a probe of any image
// of that registry settles them.
var pathClass = map[report.Class]bool{report.ClassDNS: true, report.ClassRoute: true, report.ClassTLS: true,
	report.ClassProxy: true, report.ClassEndpoint: true}

// hubProbeImage is a small public image on Docker Hub, for a failure on the path to Hub that names no image.
const hubProbeImage = "docker.io/library/busybox:latest"

// onHub says the failing request went to Docker Hub (its API, token or CDN hosts).
func (f facts) onHub() bool {
	if f.registry != "" {
		return f.registry == "docker.io"
	}
	if f.url == nil {
		return false
	}
	h := strings.ToLower(f.url.Hostname())
	return hubAlias(h) == "docker.io" || h == "auth.docker.io" || strings.HasSuffix(h, ".docker.com") || strings.HasSuffix(h, ".docker.io")
}

// decideWhere says where the probe pulls the way the runtime does: on the node it reads the
// runtime's configuration by itself; in a pod it needs the host mounted.
const decideWhere = "   # on the node (reads the runtime's config), or in a hostNetwork pod with dnsPolicy: Default and the host mounted: --host-root /host"

func orEmpty(s string) string {
	if strings.TrimSpace(s) == "" {
		return ""
	}
	return s
}

// orPodSpec is s, or "in the pod spec" for an image the message does not name.
func orPodSpec(s string) string {
	if s == "" {
		return "in the pod spec"
	}
	return s
}

// reShortName is containers/image's refusal of a short name it cannot resolve to one registry.
var reShortName = lazyRE(`short-name resolution enforced but cannot prompt without a TTY|did not resolve to an alias and no (?:containers-registries\.conf\(5\) )?unqualified-search registries are defined|short-name "[^"]+" did not resolve to an alias|short name mode is enforcing, but image name \S+ returns`)
