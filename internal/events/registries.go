package events

import (
	"strings"

	"github.com/pullpath/pullpath/internal/report"
)

// Registries do not word a denial alike, and many answer a repository that does not exist
// exactly like one the caller may not read, so as not to reveal which repositories exist. What
// each one's answer can mean is taken from its own documentation or code (one source a row), not
// from corpus messages: where the vendor gives one answer to a missing repository, to an
// anonymous pull of a private one and to an identity without rights, the finding stays undecided
// with those causes as alternatives, in the order the registry's access model makes likely
// (a registry private by default refuses a credential-less pull first; one that serves public
// images anonymously refuses a missing or mistyped name first), and the probe with the pull
// secret settles it.

// denialRow is one documented answer of one registry family.
type denialRow struct {
	family  string
	literal string         // lower-case text the wording needs (cheap test before the regexp)
	wording *lazyRegexp    // the registry's words
	anyCode bool           // the words decide even where the rules read no denial
	classes []report.Class // the causes the answer covers, the likeliest first (at most 3)
	source  string         // where the vendor says so
	why     string
}

// The Artifactory, Nexus and Quay tag-expiry pages below were cited from what those vendors
// document, not re-read through this workplace's search tools: check them before relying on a row.
const (
	srcMoby        = "https://github.com/moby/moby/blob/master/distribution/errors.go"
	srcGHCR        = "https://docs.github.com/en/packages/working-with-a-github-packages-registry/working-with-the-container-registry#authenticating-to-the-container-registry"
	srcGHCRActions = "https://docs.github.com/en/packages/learn-github-packages/configuring-a-packages-access-control-and-visibility#ensuring-workflow-access-to-your-package"
	srcGitLab      = "https://docs.gitlab.com/user/packages/container_registry/troubleshoot_container_registry/"
	srcQuay        = "https://github.com/quay/quay/pull/1054"
	srcQuayExpiry  = "https://docs.projectquay.io/use_quay.html#tag-expiration"
	srcHarbor      = "https://github.com/goharbor/harbor/blob/main/src/server/middleware/v2auth/auth.go"
	srcArtifactory = "https://jfrog.com/help/r/jfrog-platform-administration-documentation/general-security-settings"
	srcNexus       = "https://help.sonatype.com/en/docker-authentication.html"
	srcACRAuth     = "https://learn.microsoft.com/troubleshoot/azure/azure-container-registry/authentication-required"
	srcACRFirewall = "https://learn.microsoft.com/azure/container-registry/container-registry-access-selected-networks"
	srcECRDocker   = "https://docs.aws.amazon.com/AmazonECR/latest/userguide/common-errors-docker.html"
	srcECRIAM      = "https://docs.aws.amazon.com/AmazonECR/latest/userguide/common-errors.html"
	srcECRPublic   = "https://docs.aws.amazon.com/AmazonECR/latest/public/docker-pull-ecr-image.html"
	srcGAR         = "https://cloud.google.com/artifact-registry/docs/docker/troubleshoot"
	srcGCR         = "https://cloud.google.com/container-registry/docs/troubleshooting"
	srcGCRShutdown = "https://cloud.google.com/artifact-registry/docs/transition/prepare-gcr-shutdown"
	srcGCPDelete   = "https://cloud.google.com/resource-manager/docs/creating-managing-projects#shutting_down_projects"
	srcDistrib     = "https://github.com/distribution/distribution/blob/main/registry/api/errcode/register.go"
)

var (
	nf, au, fb = report.ClassNotFound, report.ClassAuth, report.ClassForbidden
)

// denialRows are tried in order; a family's own rows before the distribution registry's.
var denialRows = []denialRow{
	// Docker Hub: the daemon turns a 401 or 404 for a repository into one sentence
	{"hub", "", lazyRE(`pull access denied|repository does not exist or may require|does not exist or no pull access`), false,
		[]report.Class{nf, au}, srcMoby,
		"Docker Hub answers a repository that does not exist like a private one, and the daemon words both \"repository does not exist or may require 'docker login'\""},

	{"ghcr", "not allowed to read", lazyRE(`(?i)installation not allowed to Read|not allowed to read (?:organization )?package`), true, []report.Class{fb}, srcGHCRActions,
		"GitHub says the workflow's token (the Actions installation) may not read the package: the package's access settings must grant the repository read access"},
	{"ghcr", "", lazyRE(`(?i)\bdenied\b|\b403\b`), false, []report.Class{au, nf, fb}, srcGHCR,
		"ghcr.io refuses every request that carries an invalid or expired token, even for a public package, and answers a package that does not exist like a private one"},

	{"gitlab", "access forbidden", lazyRE(`(?i)access forbidden`), false, []report.Class{nf, fb, au}, srcGitLab,
		"GitLab's registry answers 403 \"access forbidden\" for a project or image path that does not exist as for one the identity may not read"},

	{"quay", "", lazyRE(`TAG_EXPIRED|was deleted or has expired`), true, []report.Class{nf}, srcQuayExpiry,
		"Quay says the tag expired or was deleted: it is no longer in the repository"},
	{"quay", "", lazyRE(`(?i)access to the requested resource is not authorized|\bunauthorized\b|\b401\b`), false, []report.Class{nf, au, fb}, srcQuay,
		"quay.io answers 401 both to a repository that does not exist and to one the caller may not read"},

	{"harbor", "unauthorized to access repository", lazyRE(`unauthorized to access repository`), false, []report.Class{au, fb, nf}, srcHarbor,
		"Harbor says \"unauthorized to access repository\" to an anonymous pull of a private project (401), to a member without pull rights (403) and to a project that does not exist; projects are private unless made public"},

	{"artifactory", "", lazyRE(`does not have permission for manifest|Upstream repository is not configured properly`), true, []report.Class{nf, au, fb}, srcArtifactory,
		"Artifactory answers a manifest its repository cannot serve (a tag missing upstream) with a permission error unless it is set to say 404"},
	{"artifactory", "", lazyRE(`(?i)\bunauthorized\b|authentication required|\b401\b`), false, []report.Class{au, nf, fb}, srcArtifactory,
		"Artifactory protects repositories by default: an anonymous request gets 401 whether or not the image is there"},

	{"nexus", "", lazyRE(`(?i)\bunauthorized\b|authentication required|not authorized|\b401\b`), false, []report.Class{au, nf}, srcNexus,
		"Nexus answers 401 to every request without accepted credentials when anonymous access is off, whatever the image"},

	{"acr", "not allowed access", lazyRE(`(?i)client with IP \S+ is not allowed access`), true, []report.Class{fb}, srcACRFirewall,
		"the registry's firewall (selected networks) does not admit the client's address"},
	{"acr", "", lazyRE(`(?i)authentication required|\bunauthorized\b|\b401\b`), false, []report.Class{au, fb, nf}, srcACRAuth,
		"Azure Container Registry is private: it answers \"authentication required\" to a pull without accepted credentials (and, per Microsoft, to an identity without the pull permission) before it looks the repository up"},

	{"ecr", "", lazyRE(`(?i)authorization token has expired|security token included in the request is invalid`), true, []report.Class{au}, srcECRDocker,
		"ECR says the login token (valid 12 hours) has expired"},
	{"ecr", "not authorized to perform", lazyRE(`is not authorized to perform: ecr:`), true, []report.Class{fb, nf}, srcECRIAM,
		"ECR names the IAM action the identity may not perform; IAM is evaluated before the repository is looked up, so a policy scoped to existing repositories refuses a mistyped one the same way"},
	{"ecr", "", lazyRE(`pull access denied|repository does not exist or may require|does not exist or no pull access`), false, []report.Class{au, nf, fb}, srcECRDocker,
		"ECR is private: a pull with missing or expired credentials fails like one of a repository that does not exist"},
	{"ecr", "", lazyRE(`(?i)403 forbidden|\bdenied\b`), false, []report.Class{fb, au}, srcECRDocker,
		"ECR answers 403 to an identity without pull rights and to an expired token"},

	{"ecr-public", "", lazyRE(`(?i)403 forbidden|\bdenied\b|\b403\b`), false, []report.Class{au, nf, fb}, srcECRPublic,
		"ECR Public needs no login for public images but refuses an expired stored token with 403; `docker logout public.ecr.aws` is AWS's own advice"},

	{"google", "has been deleted", lazyRE(`Project \S+ has been deleted`), true, []report.Class{nf, report.ClassOther}, srcGCPDelete,
		"the Google Cloud project that held the repository was shut down: its images are gone, unless its owner restores it within 30 days"},
	{"google", "container registry is deprecated", lazyRE(`Container Registry is deprecated and shutting down`), true, []report.Class{nf}, srcGCRShutdown,
		"Container Registry has shut down: images of projects that were not migrated to Artifact Registry are no longer served"},
	{"google", "unauthenticated request", lazyRE(`(?i)unauthenticated requests? (?:do|does) not have permission`), true, []report.Class{au, nf, fb}, srcGAR,
		"Artifact Registry refuses an anonymous pull of a repository that is not public, and says \"(or it may not exist)\""},
	{"google", "", lazyRE(`Permission "?artifactregistry\.[a-zA-Z.]+"? denied|PERMISSION_DENIED`), true, []report.Class{fb, nf, au}, srcGAR,
		"Artifact Registry answers 403 \"permission denied on resource (or it may not exist)\" alike to an identity without the reader role and to a repository that does not exist"},
	{"google", "", lazyRE(`You don't have the needed permissions`), false, []report.Class{fb, au, nf}, srcGCR,
		"gcr.io answers a missing permission, invalid credentials and a repository it cannot find with the same sentence"},

	// the distribution registry (and every registry built on it) speaks errcode
	{"*", "", lazyRE(`NAME_UNKNOWN|repository name not known to registry`), true, []report.Class{nf}, srcDistrib,
		"errcode NAME_UNKNOWN: the registry does not know the repository"},
}

// denialPrefilters hold each row's literal precondition.
var denialPrefilters = prefiltersOf(denialRows, func(r denialRow) *lazyRegexp { return r.wording })

// useRegistrySemantics turns the table off for TestRegistrySemanticsOnDev.
var useRegistrySemantics = true

// denialFamily recognises the registry that answered: by host where the text names one (the
// families of the learned table), else by words only that registry uses.
func denialFamily(f facts, fd report.Finding, hub bool) string {
	lower := f.lower
	// the host that answered, when the text names it as a registry (a mirror the runtime was sent
	// to answers in its own words), else the image's registry
	reg := f.registry
	if fd.Host != "" && fd.Role == report.RoleRegistry || reg == "" && (fd.Role == report.RoleToken || fd.Role == "") {
		reg = fd.Host
	}
	if reg == "" && f.url != nil {
		reg = f.url.Hostname()
	}
	if fam := registryFamily(reg); fam != "other" && fam != "none" && fam != "hub" {
		return fam
	}
	switch {
	case strings.Contains(lower, "ecr:batchgetimage") || strings.Contains(lower, "aws ecr get-login"):
		return "ecr"
	case strings.Contains(lower, "aka.ms/acr"):
		return "acr"
	case strings.Contains(lower, "tag_expired"):
		return "quay"
	case strings.Contains(lower, "artifactregistry") || strings.Contains(lower, "container registry is deprecated"):
		return "google"
	case strings.Contains(lower, "harbor") || strings.Contains(lower, "/api/v2.0/") || strings.Contains(lower, "unauthorized to access repository"):
		return "harbor"
	case strings.Contains(lower, "artifactory") || strings.Contains(lower, "upstream repository is not configured properly"):
		return "artifactory"
	case strings.Contains(lower, "nexus"):
		return "nexus"
	case hub:
		return "hub"
	}
	return "*"
}

// denialCodes are the readings a registry's answer can refine.
var denialCodes = map[report.Code]bool{report.CodeAuth401: true, report.CodeAuth403: true, codeAmbiguousDenied: true,
	codeHubDenied: true, report.CodeAuthInsufficientScope: true, report.CodeNameUnknown: true}

// registryMeaning finds the documented reading of the registry's answer, or nil.
func registryMeaning(f facts, fd report.Finding, code report.Code, hub bool) *denialRow {
	if !useRegistrySemantics || fd.Role == report.RoleBlob || fd.Role == report.RoleProxy || fd.Role == report.RoleMirror {
		return nil
	}
	fam := ""
	for i := range denialRows {
		r := &denialRows[i]
		if !r.anyCode && !denialCodes[code] {
			continue
		}
		if r.literal != "" && !strings.Contains(f.proseLow, r.literal) || !denialPrefilters[i].mayMatch(f.proseLow) {
			continue
		}
		if fam == "" {
			fam = denialFamily(f, fd, hub)
		}
		if (r.family == fam || r.family == "*") && r.wording.MatchString(f.prose) {
			return r
		}
	}
	return nil
}
