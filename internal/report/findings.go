package report

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// NewFindings wraps findings in the explain JSON document.
func NewFindings(f []Finding) Findings {
	if f == nil {
		f = []Finding{}
	}
	return Findings{APIVersion: APIVersion, Kind: "ExplainReport", Findings: f}
}

// WriteFindingsText renders one block per failure, the repeated ones once with a count.
func WriteFindingsText(w io.Writer, fs []Finding) error {
	b := &strings.Builder{}
	if len(fs) == 0 {
		b.WriteString("no image pull failure found in the input\n")
	}
	for i, f := range fs {
		if i > 0 {
			b.WriteString("\n")
		}
		where := f.Host
		if where == "" {
			where = "host not named"
		}
		if f.Role != "" {
			where += " (" + string(f.Role) + ")"
		}
		fmt.Fprintf(b, "[%d] class %s · %s · %s", i+1, f.Class, where, f.Code)
		if f.Count > 1 {
			fmt.Fprintf(b, " · seen %d×", f.Count)
		}
		if !f.Decided {
			b.WriteString(" · undecided")
		}
		b.WriteString("\n")
		fmt.Fprintf(b, "    %s\n", f.Reason)
		row := func(k, v string) {
			if v != "" {
				fmt.Fprintf(b, "    %-10s %s\n", k, v)
			}
		}
		if !f.Decided {
			row("undecided", f.DecidedBecause)
		}
		row("owner", ownerLine(f.Owner, f.OwnerText))
		row("image", f.Image)
		row("operation", f.Operation)
		row("url", f.URL)
		row("address", f.Address)
		row("resolver", f.Resolver)
		if len(f.Alternatives) > 0 {
			alts := make([]string, len(f.Alternatives))
			for j, a := range f.Alternatives {
				alts[j] = string(a)
			}
			row("or", strings.Join(alts, ", ")+" (most likely first)")
		}
		for j, s := range f.NextSteps {
			k := ""
			if j == 0 {
				k = "next"
			}
			fmt.Fprintf(b, "    %-10s %d. %s\n", k, j+1, s)
		}
		row("decide", f.Decide)
		row("message", clipMessage(f.Message, maxMessageText))
		if len(f.Sources) > 0 {
			from := strings.Join(f.Sources, "; ")
			if f.SourcesOmitted > 0 {
				from += fmt.Sprintf("; and %d more", f.SourcesOmitted)
			}
			row("from", from)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// maxMessageText is how much of a message the text output shows; JSON has it whole.
const maxMessageText = 600

// clipMessage joins the message's lines and cuts it at max bytes (on a character boundary),
// saying how many bytes were left out.
func clipMessage(msg string, max int) string {
	msg = strings.Join(strings.Fields(msg), " ")
	if len(msg) <= max {
		return msg
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return fmt.Sprintf("%s … (%d more bytes; -o json has the whole message)", msg[:cut], len(msg)-cut)
}
