package events

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/pullpath/pullpath/internal/redact"
	"github.com/pullpath/pullpath/internal/report"

	"sigs.k8s.io/yaml"
)

// Message is one failure text found in the input, with where it came from.
type Message struct {
	Text   string
	Source string // "line 12", "event Failed on Pod/web-1", "pod web-1 container app"
	Count  int    // how many times the event was seen (event count, "(x4 over 2m)")
	Image  string // the container's image, when the input says
}

// Format names the detected input format.
type Format string

// Input formats.
const (
	FormatText     Format = "text"
	FormatDescribe Format = "kubectl describe"
	FormatJSON     Format = "json"
	FormatYAML     Format = "yaml"
	FormatTable    Format = "kubectl get events"
)

// MaxInput caps what is read: a describe of a whole namespace is a few MB.
const MaxInput = 32 << 20

// Parse reads failure messages from r, detecting raw text, `kubectl describe pod` output, or
// Kubernetes objects (Event, Pod, their lists, events.k8s.io) as JSON or YAML. Input that is not
// text is an error (ErrNotText); control characters in what is read are made printable.
func Parse(r io.Reader) ([]Message, Format, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxInput+1))
	if err != nil {
		return nil, "", fmt.Errorf("read input: %w", err)
	}
	if len(b) > MaxInput {
		return nil, "", fmt.Errorf("input is larger than %d MiB", MaxInput>>20)
	}
	if b, err = asText(b); err != nil {
		return nil, "", err
	}
	msgs, format, err := parse(b)
	if err != nil {
		return nil, format, errors.New(redact.Clean(err.Error())) // a YAML error quotes the input
	}
	for i := range msgs {
		m := &msgs[i]
		m.Text, m.Source, m.Image = redact.Clean(m.Text), redact.Clean(m.Source), redact.Clean(m.Image)
	}
	return msgs, format, err
}

func parse(b []byte) ([]Message, Format, error) {
	trimmed := bytes.TrimSpace(b)
	if len(trimmed) == 0 {
		return nil, FormatText, nil
	}
	switch {
	case trimmed[0] == '{' || trimmed[0] == '[':
		var v any
		if err := json.Unmarshal(trimmed, &v); err == nil {
			if m, ok := v.(map[string]any); ok && !isKubeObject(m) {
				// docker's {"message":"…"} and a registry's {"errors":[…]} bodies: read as text
				return fromText(string(b)), FormatText, nil
			}
			return fromObjects(v), FormatJSON, nil
		} else if !bytes.Contains(trimmed, []byte("\n")) && trimmed[0] == '[' {
			break // "[ERROR ImagePull]: …" is text, not JSON
		} else if trimmed[0] == '{' && jsonObjectStart(trimmed) {
			return nil, FormatJSON, fmt.Errorf("input looks like JSON but does not parse: %v", err)
		} else if trimmed[0] == '{' {
			break // "{kubelet node-1} Failed: …", as e2e logs print an event's source: text
		}
	case looksLikeYAMLObject(trimmed):
		msgs, err := fromYAML(trimmed)
		if err != nil {
			return nil, FormatYAML, err
		}
		return msgs, FormatYAML, nil
	case reEventsHeader.Match(trimmed):
		return fromDescribe(string(b), false), FormatDescribe, nil
	case reDescribeRowStart.Match(trimmed):
		// describe's event rows pasted without the Events: header
		return fromDescribe(string(b), true), FormatDescribe, nil
	case reTableHeader.Match(trimmed):
		return fromTable(string(b)), FormatTable, nil
	}
	return fromText(string(b)), FormatText, nil
}

var (
	reYAMLKind      = lazyRE(`(?m)^kind:\s*\S+`)
	reYAMLAPI       = lazyRE(`(?m)^apiVersion:\s*\S+`)
	reEventsHeader  = lazyRE(`(?m)^Events:\s*$|^\s*Type\s+Reason\s+Age\s+From\s+Message\s*$`)
	reYAMLSeparator = lazyRE(`(?m)^---\s*$`)
	reBlankLine     = lazyRE(`\n\s*\n`)
)

// jsonObjectStart says b opens a JSON object: "{" then a quoted key or "}".
func jsonObjectStart(b []byte) bool {
	rest := bytes.TrimLeft(b[1:], " \t\r\n")
	return len(rest) == 0 || rest[0] == '"' || rest[0] == '}'
}

// isKubeObject reports a decoded JSON object that is a Kubernetes object or list.
func isKubeObject(m map[string]any) bool {
	for _, k := range []string{"kind", "apiVersion", "items", "involvedObject", "regarding", "metadata", "spec", "status"} {
		if _, ok := m[k]; ok {
			return true
		}
	}
	return false
}

func looksLikeYAMLObject(b []byte) bool { return reYAMLKind.Match(b) && reYAMLAPI.Match(b) }

func fromYAML(b []byte) ([]Message, error) {
	var out []Message
	for i, doc := range reYAMLSeparator.Split(string(b), -1) {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		j, err := yaml.YAMLToJSON([]byte(doc))
		if err != nil {
			return nil, fmt.Errorf("YAML document %d: %v", i+1, err)
		}
		var v any
		if err := json.Unmarshal(j, &v); err != nil {
			return nil, fmt.Errorf("YAML document %d: %v", i+1, err)
		}
		out = append(out, fromObjects(v)...)
	}
	return out, nil
}

// fromObjects walks decoded Kubernetes objects. Unknown shapes yield nothing rather than an error:
// a List may hold objects that carry no pull failure at all.
func fromObjects(v any) []Message {
	switch x := v.(type) {
	case []any:
		var out []Message
		for _, it := range x {
			out = append(out, fromObjects(it)...)
		}
		return out
	case map[string]any:
		kind, _ := x["kind"].(string)
		if items, ok := x["items"].([]any); ok {
			return fromObjects(items)
		}
		switch {
		case kind == "Event" || (kind == "" && x["involvedObject"] != nil) || (kind == "" && x["regarding"] != nil):
			return fromEvent(x)
		case kind == "Pod" || (kind == "" && x["status"] != nil && x["spec"] != nil):
			return fromPod(x)
		}
	}
	return nil
}

// pullReasons are the kubelet's event reasons that can carry a pull failure (pkg/kubelet/events):
// FailedToPullImage and BackOffPullImage are "Failed" and "BackOff", which the kubelet also gives to
// crash loops and container errors, so the message must still be about a pull.
var pullReasons = map[string]bool{"Failed": true, "BackOff": true, "ErrImagePull": true, "ImagePullBackOff": true,
	"FailedCreatePodSandBox": true, "InspectFailed": true, "ErrImageNeverPull": true, "InvalidImageName": true, "FailedSync": true}

// pullWaiting are the container waiting reasons of a pull that failed (kubelet images.Err*).
var pullWaiting = map[string]bool{"ErrImagePull": true, "ImagePullBackOff": true, "InvalidImageName": true, "ErrImageNeverPull": true,
	"ImageInspectError": true, "RegistryUnavailable": true, "SignatureValidationFailed": true}

var (
	// rePullShape is a message about pulling an image: the kubelet's, the runtimes' and the registry
	// clients' own words, or a registry API URL. "dial tcp" or "BackOff" alone say nothing about a pull.
	rePullShape = mustLit(`(?i)failed to pull (?:and unpack )?image|failed to inspect image|failed pulling image|error pulling image|pulling image failed|back-?off pulling image|\bpulling image\b|failed to resolve (?:reference|image|ref)|\bErrImagePull\b|ImagePullBackOff|ErrImageNeverPull|pull access denied|failed to get sandbox image|pull policy|couldn't parse image reference|invalid reference format|InvalidImageName|manifest unknown|toomanyrequests|error reading manifest|reading manifest \S+ in|httpReadSeeker|error pinging (?:docker|container) registry|CannotPullContainerError|https?://[^\s"/]+/v2/|https?://[^\s"/]+/v1/(?:_ping|repositories|images)`)
	// reStrongPull is a message that can only be a pull failure, whatever reason the event carries.
	reStrongPull = mustLit(`(?i)failed to pull (?:and unpack )?image|failed pulling image|error pulling image|back-?off pulling image|\bErrImagePull\b|pull access denied|failed to get sandbox image|CannotPullContainerError`)
	// reNotPull is what the kubelet and controllers say about other failures that share words with
	// pulls (dial tcp, BackOff, rpc error, context deadline exceeded).
	reNotPull        = mustLit(`(?i)^\s*(?:(?:Readiness|Liveness|Startup) probe (?:failed|errored|warning)|Back-off restarting failed container|back-off \S+ restarting failed|MountVolume\.|AttachVolume\.|Unable to attach or mount volumes|\d+/\d+ nodes are available|Memory cgroup out of memory|System OOM encountered|Node \S+ status is now|failed to setup network for sandbox|Failed to create pod sandbox: rpc error: code = \w+ desc = failed to (?:setup|create) network)`)
	reContainerField = lazyRE(`^spec\.(?:initContainers|containers|ephemeralContainers)\{`)
	// notPullReasons are event reasons that are never about a pull, whatever their text.
	notPullReasons = map[string]bool{"Unhealthy": true, "ProbeWarning": true, "FailedMount": true, "FailedAttachVolume": true,
		"FailedScheduling": true, "OOMKilling": true, "SystemOOM": true, "NodeNotReady": true, "FailedKillPod": true,
		"FailedPreStopHook": true, "FailedPostStartHook": true, "Evicted": true, "ImageGCFailed": true, "FreeDiskSpaceFailed": true,
		"Pulling": true, "Pulled": true, "Created": true, "Started": true, "Killing": true}
)

// isPullFailure keeps an event, describe row or text block only when it is about pulling an image:
// its reason (when known) can carry a pull failure, the involved field (when known) is a container,
// and the message has the shape of a pull error. A Normal event counts only with a pull reason
// (the kubelet's "Back-off pulling image" is Normal).
func isPullFailure(typ, reason, fieldPath, msg string) bool {
	if fieldPath != "" && !reContainerField.MatchString(fieldPath) {
		return false
	}
	if notPullReasons[reason] {
		return false
	}
	low := strings.ToLower(msg)
	strong := reStrongPull.match(msg, low)
	if !strong && reNotPull.match(msg, low) {
		return false
	}
	switch {
	case reason == "":
		return typ != "Normal" && rePullShape.match(msg, low)
	case pullReasons[reason]:
		return rePullShape.match(msg, low)
	}
	return typ != "Normal" && strong
}

func fromEvent(e map[string]any) []Message {
	reason := str(e, "reason")
	msg := str(e, "message")
	if msg == "" {
		msg = str(e, "note") // events.k8s.io/v1
	}
	typ := str(e, "type")
	obj, _ := e["involvedObject"].(map[string]any)
	if obj == nil {
		obj, _ = e["regarding"].(map[string]any)
	}
	if msg == "" || !isPullFailure(typ, reason, str(obj, "fieldPath"), msg) {
		return nil
	}
	count := 1
	if c, ok := e["count"].(float64); ok && c > 1 {
		count = int(c)
	} else if c, ok := e["deprecatedCount"].(float64); ok && c > 1 {
		count = int(c)
	} else if s, ok := e["series"].(map[string]any); ok {
		if c, ok := s["count"].(float64); ok && c > 1 {
			count = int(c)
		}
	}
	src := "event " + reason
	if obj != nil {
		src += " on " + str(obj, "kind") + "/" + str(obj, "name")
		if ns := str(obj, "namespace"); ns != "" {
			src = "event " + reason + " on " + str(obj, "kind") + "/" + ns + "/" + str(obj, "name")
		}
	}
	return []Message{{Text: msg, Source: src, Count: count}}
}

func fromPod(p map[string]any) []Message {
	name := ""
	if md, ok := p["metadata"].(map[string]any); ok {
		name = str(md, "name")
	}
	images := map[string]string{}
	if spec, ok := p["spec"].(map[string]any); ok {
		for _, key := range []string{"initContainers", "containers", "ephemeralContainers"} {
			cs, _ := spec[key].([]any)
			for _, c := range cs {
				if cm, ok := c.(map[string]any); ok {
					images[str(cm, "name")] = str(cm, "image")
				}
			}
		}
	}
	var out []Message
	status, _ := p["status"].(map[string]any)
	for _, key := range []string{"initContainerStatuses", "containerStatuses", "ephemeralContainerStatuses"} {
		cs, _ := status[key].([]any)
		for _, c := range cs {
			cm, ok := c.(map[string]any)
			if !ok {
				continue
			}
			state, _ := cm["state"].(map[string]any)
			w, _ := state["waiting"].(map[string]any)
			if w == nil {
				continue
			}
			reason, msg := str(w, "reason"), str(w, "message")
			if !pullWaiting[reason] {
				continue // CrashLoopBackOff, CreateContainerConfigError, ContainerCreating: not a pull
			}
			if msg == "" {
				msg = reason
			}
			cname := str(cm, "name")
			out = append(out, Message{Text: msg, Source: fmt.Sprintf("pod %s container %s (%s)", name, cname, reason), Count: 1, Image: images[cname]})
		}
	}
	return out
}

func str(m map[string]any, k string) string {
	s, _ := m[k].(string)
	return s
}

// describe: "  Warning  Failed     7m40s (x4 over 9m8s)   kubelet, node-1  Failed to pull image …"
var (
	reDescribeEvent = lazyRE(`^\s*(Normal|Warning)\s+(\S+)\s+(.+?)\s{2,}(\S.*?)\s{2,}(\S.*)$`)
	// the same row with kubectl's alignment lost (a chat tool collapsed the spaces, or turned them
	// into tabs): the age is read by its shape ("24m", "8m52s (x4 over 25m)", "<unknown>") and the
	// source is one word, or two joined by a comma ("kubelet, node-1")
	reDescribeEventLoose = lazyRE(`^\s*(Normal|Warning)\s+(\S+)\s+((?:\d+[smhdy][0-9smhdy]*|<unknown>|<invalid>)(?:\s+\(x\d+\s+over\s+[^)]*\))?)\s+(\S+(?:,\s*\S+)?)\s+(\S.*)$`)
	reDescribeHeader     = lazyRE(`^\s*Type\s+Reason\s+Age\s+From\s+Message\s*$`)
	reDescribeCount      = lazyRE(`\(x(\d+) over`)
	reDescribeImage      = lazyRE(`^\s+Image:\s+(\S+)\s*$`)
)

// reDescribeRowStart is input that starts with one of describe's event rows.
var reDescribeRowStart = lazyRE(`^(?:Normal|Warning)\s+\S+\s+(?:\d+[smhdy][0-9smhdy]*|<unknown>|<invalid>)[\s(]`)

// fromDescribe reads the event rows of kubectl describe output: those after its Events: header or
// the header row, or every row when rows says the input is the rows alone.
func fromDescribe(s string, rows bool) []Message {
	var out []Message
	inEvents := rows
	var image string
	var cur *Message
	flush := func() {
		if cur != nil {
			cur.Text = strings.TrimSpace(cur.Text)
			out = append(out, *cur)
			cur = nil
		}
	}
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if m := reDescribeImage.FindStringSubmatch(line); m != nil && image == "" {
			image = m[1]
		}
		if strings.HasPrefix(strings.TrimSpace(line), "Events:") || reDescribeHeader.MatchString(line) {
			inEvents = true
			continue
		}
		if !inEvents {
			continue
		}
		m := reDescribeEvent.FindStringSubmatch(line)
		if m == nil {
			m = reDescribeEventLoose.FindStringSubmatch(line)
		}
		if m != nil {
			flush()
			typ, reason, age, msg := m[1], m[2], m[3], m[5]
			if !isPullFailure(typ, reason, "", msg) {
				continue
			}
			count := 1
			if c := reDescribeCount.FindStringSubmatch(age); c != nil {
				count, _ = strconv.Atoi(c[1])
			}
			cur = &Message{Text: msg, Source: fmt.Sprintf("line %d, event %s", n, reason), Count: max(count, 1), Image: image}
			continue
		}
		// kubectl wraps long messages onto indented continuation lines
		// (rows pasted alone may have lost the indentation too)
		if cur != nil && (rows || strings.HasPrefix(line, " ") || strings.HasPrefix(line, "\t")) && strings.TrimSpace(line) != "" && !strings.Contains(line, "----") {
			cur.Text += " " + strings.TrimSpace(line)
			continue
		}
		flush()
	}
	flush()
	return out
}

// reStrongStart marks a line that starts a failure report on its own.
var reStrongStart = lazyRE(`(?i)^\s*(?:E\d{4} |time="|level=|FATA|ERRO|Warning\s|Failed to pull image|Error response from daemon|Error:|ctr:|error pulling|failed to |\[ERROR|docker: |pulling image|rpc error|Back-off pulling)`)

// notAPull reports raw text that is plainly another failure (a probe, a crash loop, a mount), a
// kubelet's progress line, or no failure at all (no word of an error): it is dropped. Anything else
// pasted as text is read, since bare network errors carry no pull words.
func notAPull(text string) bool {
	if reStrongPull.MatchString(text) {
		return false
	}
	return reNotPull.MatchString(text) || reProgress.MatchString(text) || !reErrorWord.MatchString(text) && !namesCause(text)
}

// namesCause reports text in which a rule of classify finds a cause ("server gave HTTP response to
// HTTPS client", "toomanyrequests").
func namesCause(text string) bool {
	low := strings.ToLower(text)
	for i, r := range rules {
		if r.code != report.CodeUnknown && rulePrefilters()[i].mayMatch(low) && r.re.MatchString(text) {
			return true
		}
	}
	return false
}

var (
	// reProgress is the kubelet's and a client's report of a pull going well, alone in a block
	reProgress = lazyRE(`(?i)^\s*(?:Successfully pulled image \S+(?: in [^\n]*)?|Container image \S+ already present on machine[^\n]*|(?:Created|Started) container \S+|Pulling image \S+|Pulled image \S+[^\n]*|Status: (?:Downloaded newer image|Image is up to date) for \S+)\s*$`)
	// reErrorWord is any word an error, a refusal or a failed step is written with, in the runtimes'
	// and Go's wording and the status codes they print: text with none of them reports no failure
	reErrorWord = lazyRE(`(?i)err|fail|fata|denied|permission|unauthenticated|unsupported|exhausted|quota|unauthori[sz]ed|forbidden|refused|reset|timeout|timed out|deadline|EOF|not found|unknown|no such|cannot|can't|could not|couldn't|unable|invalid|x509|tls|certificate|lookup|dial|unreachable|too many|\b[45]\d\d\b|exceeded|back-?off|canceled|cancelled|no match|not present|mismatch|expired|blocked|required|limit|does not|doesn't|not (?:allowed|authori[sz]ed|accessible)|abort|panic|wrong|bad|missing|no route|refus`)
)

// fromText splits raw text into messages: blank lines separate blocks, and a block whose lines each
// start a failure of their own ("E1202 …", "Failed to pull image …") is split into lines.
func fromText(s string) []Message {
	all := splitText(s)
	out := all[:0]
	for _, m := range all {
		if !notAPull(m.Text) {
			out = append(out, m)
		}
	}
	return out
}

func splitText(s string) []Message {
	var out []Message
	blocks := reBlankLine.Split(strings.ReplaceAll(s, "\r\n", "\n"), -1)
	lineNo := 1
	for _, b := range blocks {
		lines := strings.Split(b, "\n")
		strong := 0
		for _, l := range lines {
			if reStrongStart.MatchString(l) {
				strong++
			}
		}
		start := lineNo
		lineNo += len(lines) + 1
		if strings.TrimSpace(b) == "" {
			continue
		}
		if strong >= 2 {
			var cur *Message
			for i, l := range lines {
				if strings.TrimSpace(l) == "" {
					continue
				}
				if reStrongStart.MatchString(l) || cur == nil {
					if cur != nil {
						out = append(out, *cur)
					}
					cur = &Message{Text: strings.TrimSpace(l), Source: fmt.Sprintf("line %d", start+i), Count: 1}
					continue
				}
				cur.Text += "\n" + strings.TrimSpace(l)
			}
			if cur != nil {
				out = append(out, *cur)
			}
			continue
		}
		out = append(out, Message{Text: strings.TrimSpace(b), Source: fmt.Sprintf("line %d", start), Count: 1})
	}
	return out
}

// `kubectl get events [-A]`: "NAMESPACE  LAST SEEN  TYPE  REASON  OBJECT  MESSAGE", columns
// padded to the widest cell, so the header gives each column's offset.
var reTableHeader = lazyRE(`(?m)^(?:NAMESPACE\s+)?LAST SEEN\s+TYPE\s+REASON\s+OBJECT\s+MESSAGE\s*$`)

func fromTable(s string) []Message {
	var out []Message
	col := map[string]int{}
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	cell := func(line, name, next string) string {
		from, to := col[name], len(line)
		if n, ok := col[next]; ok && n < len(line) {
			to = n
		}
		if from >= len(line) || from > to {
			return ""
		}
		return strings.TrimSpace(line[from:to])
	}
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if reTableHeader.MatchString(line) {
			for _, c := range []string{"NAMESPACE", "LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"} {
				if i := strings.Index(line, c); i >= 0 {
					col[c] = i
				}
			}
			continue
		}
		if len(col) == 0 || strings.TrimSpace(line) == "" {
			continue
		}
		typ, reason, obj, msg := cell(line, "TYPE", "REASON"), cell(line, "REASON", "OBJECT"), cell(line, "OBJECT", "MESSAGE"), cell(line, "MESSAGE", "")
		if msg == "" || !isPullFailure(typ, reason, "", msg) {
			continue
		}
		count := 1
		if c := reDescribeCount.FindStringSubmatch(cell(line, "LAST SEEN", "TYPE")); c != nil {
			count, _ = strconv.Atoi(c[1])
		}
		src := fmt.Sprintf("line %d, event %s on %s", n, reason, obj)
		if ns := cell(line, "NAMESPACE", "LAST SEEN"); ns != "" {
			src = fmt.Sprintf("line %d, event %s on %s/%s", n, reason, ns, obj)
		}
		out = append(out, Message{Text: msg, Source: src, Count: max(count, 1)})
	}
	return out
}
