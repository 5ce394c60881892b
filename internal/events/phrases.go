package events

import (
	"fmt"
	"slices"
	"strings"

	"github.com/pullpath/pullpath/internal/report"
)

// Some wordings do not name their cause: Docker Hub says "pull access denied" for a missing
// repository and for a private one, quay.io answers 401 for a repository that does not exist, a
// bare EOF or deadline says nothing of which hop failed. For these, the classes behind the
// phrase are not guessed by hand: phrasetable.go counts, from the dev third of the corpus only,
// which labelled class stood behind each phrase on each registry family, and the finding takes
// the most frequent class first and the others as alternatives. TestPhraseTable regenerates the
// table from dev and fails when the checked-in one differs, so it cannot carry held-out labels.

// phraseGroup says which rule codes a phrase may stand for: the phrase is looked up only among
// the entries of the group of the code the rules matched.
type phraseGroup int

const (
	groupNone phraseGroup = iota
	groupDenial
	groupStatus
	groupEOF
	groupDeadline
	groupCanceled
	groupNoCause
)

// phrase is one wording of the vocabulary: its stable key in the table and how to find it.
type phrase struct {
	key   string
	group phraseGroup
	re    *lazyRegexp
}

// phrases are tried in order within a group, the more specific wording first.
var phrases = []phrase{
	{"no basic auth credentials", groupDenial, lazyRE(`no basic auth credentials|there are no credentials on this request`)},
	{"invalid username/password", groupDenial, lazyRE(`(?i)invalid username/password|incorrect username or password|invalid username or password|invalid credentials|HTTP Basic: Access denied|password or token is incorrect`)},
	{"token expired", groupDenial, lazyRE(`(?i)authorization token has expired|\btoken (?:has|is) expired|token used before issued`)},
	{"auth token", groupDenial, lazyRE(`unable to retrieve auth token`)},
	{"credential provider", groupDenial, lazyRE(`(?i)credential provider|credential helper|docker-credential-|error getting credentials`)},
	{"pull access denied", groupDenial, lazyRE(`pull access denied|repository does not exist or may require|does not exist or no pull access`)},
	{"requested access to the resource is denied", groupDenial, lazyRE(`requested access to the resource is denied`)},
	{"insufficient_scope", groupDenial, lazyRE(`insufficient_scope|does not match bearer token resource`)},
	{"unauthorized to access repository", groupDenial, lazyRE(`unauthorized to access repository`)},
	{"access to the requested resource is not authorized", groupDenial, lazyRE(`access to the requested resource is not authorized`)},
	{"authentication required", groupDenial, lazyRE(`(?i)authentication required`)},
	{"access forbidden", groupDenial, lazyRE(`(?i)access forbidden`)},
	{"permission_denied", groupDenial, lazyRE(`(?i)permission_denied|AccessDenied`)},
	{"denied", groupDenial, lazyRE(`(?i)\bdenied\b`)},
	{"403", groupDenial, lazyRE(`\b403\b|Forbidden`)},
	{"401", groupDenial, lazyRE(`(?i)\b401\b|unauthorized|not authorized`)},
	{"manifest unknown", groupDenial, lazyRE(`(?i)manifest unknown|manifest for \S+ not found`)},
	{"name unknown", groupDenial, lazyRE(`(?i)name unknown|repository \S+ not found`)},
	{"not found", groupDenial, lazyRE(`(?i)not found`)},
	{"5xx", groupStatus, lazyRE(`\b5\d\d\b|Internal Server Error|Bad Gateway|Service Unavailable|Gateway Time-?out`)},
	{"http status", groupStatus, lazyRE(`\b\d{3}\b`)},
	{"unexpected EOF", groupEOF, lazyRE(`unexpected EOF`)},
	{"EOF", groupEOF, lazyRE(`EOF`)},
	{"context deadline exceeded", groupDeadline, lazyRE(`context deadline exceeded|DeadlineExceeded`)},
	{"context canceled", groupCanceled, lazyRE(`context canceled|code = Canceled`)},
	{"cut off", groupNoCause, reTruncatedCause},
	{"no cause", groupNoCause, lazyRE(``)},
}

// reTruncatedCause is a request or wrapper whose cause was cut off: it ends with the URL, a colon
// or an ellipsis.
var reTruncatedCause = lazyRE(`(?:failed to do request: \w+ "?https?://\S+|[:(\[,"]|…|\.\.\.)\s*$`)

// codeGroup is the group of phrases that may explain a rule's code.
func codeGroup(code report.Code, matched string) phraseGroup {
	switch code {
	case report.CodeAuth401, report.CodeAuth403, codeAmbiguousDenied, codeHubDenied, report.CodeAuthInsufficientScope,
		report.CodeManifestUnknown, report.CodeNameUnknown:
		return groupDenial
	case report.CodeHTTPStatus:
		return groupStatus
	case report.CodeBlobFailed:
		return groupEOF
	case report.CodeTCPReset:
		if strings.HasSuffix(matched, "EOF") {
			return groupEOF
		}
	case report.CodeTimeout:
		return groupDeadline
	case report.CodeCanceled:
		return groupCanceled
	case report.CodeUnknown, report.CodeBackoffNoCause:
		return groupNoCause
	}
	return groupNone
}

// phraseKey is one row of the learned table: a phrase on a family of registries ("*": any).
type phraseKey struct {
	phrase, family string
}

// classCount is how many dev messages with the phrase were labelled class.
type classCount struct {
	class report.Class
	n     int
}

// findPhrase names the phrase behind a finding's code, or "" when the code is not ambiguous.
func findPhrase(code report.Code, matched string, f facts) string {
	g := codeGroup(code, matched)
	if g == groupNone {
		return ""
	}
	for i, p := range phrases {
		if p.group == g && phrasePrefilters[i].mayMatch(f.proseLow) && p.re.MatchString(f.prose) {
			return p.key
		}
	}
	return ""
}

// phrasePrefilters hold each phrase's literal precondition, in the order of phrases.
var phrasePrefilters = prefiltersOf(phrases, func(p phrase) *lazyRegexp { return p.re })

// learnedFor says whether the table speaks for a finding on this role: wordings of the
// registry's answer (denials, statuses) on any host but a blob host, transport wordings only on
// the registry itself (elsewhere the taxonomy's endpoint holds, class follows what broke).
func learnedFor(phrase string, role report.Role) bool {
	if role == report.RoleRegistry || role == "" {
		return true
	}
	if role == report.RoleToken {
		for _, p := range phrases {
			if p.key == phrase {
				return p.group == groupDenial
			}
		}
	}
	return false
}

// registryFamily folds a registry host into the families whose wording and denial semantics
// differ. It keys both the learned table and the registries' documented answers (registries.go),
// so both name a registry the same way; which host they ask it of still differs: the learned key
// takes the image's registry, denialFamily the host that answered (a mirror) and words only one
// registry uses.
func registryFamily(reg string) string {
	h := strings.ToLower(hostName(reg))
	switch {
	case h == "":
		return "none"
	case h == "docker.io":
		return "hub"
	case h == "ghcr.io":
		return "ghcr"
	case strings.Contains(h, "gitlab"):
		return "gitlab"
	case h == "quay.io" || strings.HasSuffix(h, ".quay.io"):
		return "quay"
	case h == "public.ecr.aws":
		return "ecr-public"
	case strings.HasSuffix(h, ".amazonaws.com") || strings.Contains(h, ".dkr.ecr."):
		return "ecr"
	case strings.Contains(h, ".azurecr."):
		return "acr"
	case h == "gcr.io" || strings.HasSuffix(h, ".gcr.io") || strings.HasSuffix(h, ".pkg.dev") || h == "registry.k8s.io":
		return "google"
	case strings.Contains(h, "harbor"):
		return "harbor"
	case strings.Contains(h, "jfrog") || strings.Contains(h, "artifactory"):
		return "artifactory"
	case strings.Contains(h, "nexus"):
		return "nexus"
	}
	return "other"
}

// Support a row needs before it is trusted: a family's own row, else the phrase on any registry.
// The thresholds were chosen on dev alone by TestPhraseTableCrossValidated (three folds by
// source): looser ones let sparse rows override the rules and lost accuracy on unseen folds.
var (
	minFamilySupport = 2
	minPhraseSupport = 3
	maxAlternatives  = 3
	minOverride      = 5 // messages that must stand behind a class before it overrides the text's literal reading
	minDecide        = 3 // messages that must all agree before the table alone decides
)

// lookupLearned returns the learned classes behind a phrase on a family, most frequent first.
func lookupLearned(k phraseKey, ownOnly bool) ([]classCount, phraseKey) {
	if c := phraseTable[k]; total(c) >= minFamilySupport {
		return c, k
	}
	if ownOnly {
		return nil, k
	}
	if namedNotHub(k.family) {
		// Docker Hub's wording dominates the rows of any registry: a named other registry backs off
		// to the registries that are not Hub, and to all only where every registry agreed
		if c := phraseTable[phraseKey{k.phrase, notHub}]; total(c) >= minPhraseSupport {
			return c, phraseKey{k.phrase, notHub}
		}
		if c := phraseTable[phraseKey{k.phrase, "*"}]; len(c) != 1 {
			return nil, k
		}
	}
	any := phraseKey{k.phrase, "*"}
	if c := phraseTable[any]; total(c) >= minPhraseSupport {
		return c, any
	}
	return nil, k
}

// notHub is the family of every named registry but Docker Hub.
const notHub = "!hub"

func namedNotHub(family string) bool {
	return family != "hub" && family != "none" && family != "*" && family != notHub
}

func total(c []classCount) int {
	n := 0
	for _, x := range c {
		n += x.n
	}
	return n
}

// applyLearned sets a finding's class and alternatives from the learned table; the rules'
// literal reading stays an alternative. With ownOnly, only the family's own row may weigh in: a
// registry's documented answer is not reordered by what other registries' messages meant. It
// reports whether the table had a row for the phrase, and whether that row decides alone (enough
// dev messages, all one class).
func applyLearned(fd *report.Finding, k phraseKey, ownOnly bool) (found, decides bool) {
	counts, row := lookupLearned(k, ownOnly)
	if counts == nil {
		return false, false
	}
	literal := append([]report.Class{fd.Class}, fd.Alternatives...)
	var order []report.Class
	// the taxonomy's class for a blob or mirror host stays first; elsewhere a class the text does
	// not literally say needs a strict majority of at least minOverride messages of the registry
	// family's own row: equal or thin evidence, or other registries' (a backed-off row), goes to
	// what the text says, and the learned classes are only alternatives. Cross-validated on dev's
	// folds, backed-off rows that overrode the text never gained a message and lost one.
	n := total(counts)
	if !learnedFor(k.phrase, fd.Role) || counts[0].n < minOverride || 2*counts[0].n <= n || row != k {
		order = append(order, fd.Class)
	}
	for _, c := range counts {
		if !slices.Contains(order, c.class) {
			order = append(order, c.class)
		}
	}
	// the rules' own reading stays an alternative unless enough dev messages all agreed
	unanimous := len(counts) == 1 && n >= minDecide
	if !unanimous {
		for _, c := range literal {
			if c != report.ClassOther && !slices.Contains(order, c) {
				order = append(order, c)
			}
		}
	}
	fd.DecidedBecause = learnedBecause(k.phrase, row, counts)
	if order[0] != fd.Class {
		fd.Reason += "; but " + fd.DecidedBecause
	}
	fd.Class = order[0]
	fd.Alternatives = nil
	if rest := order[1:]; len(rest) > 0 {
		fd.Alternatives = slices.Clone(rest[:min(len(rest), maxAlternatives)])
	}
	return true, unanimous && fd.Class == counts[0].class
}

// learnedBecause is the one-line reason a learned row gives: what the phrase meant in the corpus.
func learnedBecause(ph string, row phraseKey, counts []classCount) string {
	where := "on any registry"
	switch row.family {
	case "*":
	case notHub:
		where = "on registries other than Docker Hub"
	case "none":
		where = "where the text names no registry"
	case "other":
		where = "on registries of no known family"
	default:
		where = "on " + row.family + " registries"
	}
	parts := make([]string, len(counts))
	for i, c := range counts {
		parts[i] = fmt.Sprintf("%s %d", c.class, c.n)
	}
	return fmt.Sprintf("%q %s stood behind %s of %d messages in pullpath's corpus", ph, where, strings.Join(parts, ", "), total(counts))
}

// codeKey is one row of the learned confusion table: what the rules read (code) and where (role).
type codeKey struct {
	code report.Code
	role report.Role
}

// anyCode keys a role's base rate in codeTable: the labels of every dev message read with that role.
const anyCode report.Code = "*"

// addBaseRate gives a text that names no cause the classes that most often stood behind a pull
// failure on a host of that role, most frequent first: with no evidence, the base rate is the
// honest order of the alternatives.
func addBaseRate(fd *report.Finding) {
	for _, c := range codeTable[codeKey{anyCode, fd.Role}] {
		addAlternative(fd, c.class)
	}
}

// minConfusion is how many dev messages must have carried another label behind a reading before
// that label is offered as an alternative. 2 since the 2026-12-03 corpus: on dev's three folds it
// finds as many right answers among the alternatives as 1 did (97.6 %), with fewer alternatives;
// 3 loses some.
var minConfusion = 2

// addConfused appends, as alternatives, the other labels dev messages read this way carried,
// most frequent first: the alternatives say how often this reading was wrong, not every class.
func addConfused(fd *report.Finding) {
	for _, c := range codeTable[codeKey{fd.Code, fd.Role}] {
		if c.n >= minConfusion {
			addAlternative(fd, c.class)
		}
	}
}

// addAlternative appends c to a finding's alternatives unless it is the class, is there already,
// or the list is full.
func addAlternative(fd *report.Finding, c report.Class) {
	if c != fd.Class && !slices.Contains(fd.Alternatives, c) && len(fd.Alternatives) < maxAlternatives {
		fd.Alternatives = append(fd.Alternatives, c)
	}
}
