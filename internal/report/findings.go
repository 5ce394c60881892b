package report

import (
	"fmt"
	"io"
	"strings"
)

// NewFindings wraps findings in the explain JSON document.
func NewFindings(f []Finding) Findings {
	if f == nil {
		f = []Finding{}
	}
	return Findings{APIVersion: APIVersion, Kind: "ExplainReport", Findings: f}
}

// WriteFindingsText renders one block per failure, the repeated ones once with a count, at the
// default width without colour.
func WriteFindingsText(w io.Writer, fs []Finding) error {
	return WriteFindingsTextWith(w, fs, TextOptions{})
}

// WriteFindingsTextWith renders the findings to o's width (prose wraps with a hanging indent) and,
// with o.Color, the class of each finding in red.
func WriteFindingsTextWith(w io.Writer, fs []Finding, o TextOptions) error {
	b := &strings.Builder{}
	width := o.width()
	if len(fs) == 0 {
		b.WriteString("no image pull failure found in the input\n")
	}
	const indent = "               " // the column the values start at
	for i, f := range fs {
		if i > 0 {
			b.WriteString("\n")
		}
		where := f.Host
		if where == "" {
			where = "no registry host in the text"
		}
		if f.Role != "" {
			where += " (" + string(f.Role) + ")"
		}
		head := fmt.Sprintf("[%d] ", i+1)
		line := fmt.Sprintf("· %s · %s", where, f.Code)
		if f.Count > 1 {
			line += fmt.Sprintf(" · seen %d×", f.Count)
		}
		if !f.Decided {
			line += " · undecided"
		}
		Wrap(b, head+"class "+paint(o.Color, styleBold, string(f.Class))+" ", "    ", line, width)
		Wrap(b, "    ", "    ", f.Reason, width)
		row := func(k, v string) {
			if v != "" {
				Wrap(b, fmt.Sprintf("    %-10s ", k), indent, v, width)
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
			num := fmt.Sprintf("%d. ", j+1)
			Wrap(b, fmt.Sprintf("    %-10s %s", k, num), indent+strings.Repeat(" ", len(num)), s, width)
		}
		if f.Decide != "" {
			// a command is copied whole: never wrapped; its trailing comment wraps below it
			// a decided finding's command proves the verdict from the node; an undecided one's settles it
			label := "decide"
			if f.Decided {
				label = "confirm"
			}
			cmd, comment, _ := strings.Cut(f.Decide, "#")
			fmt.Fprintf(b, "    %-10s %s\n", label, strings.TrimSpace(cmd))
			if comment = strings.TrimSpace(comment); comment != "" {
				Wrap(b, indent+"# ", indent+"  ", comment, width)
			}
		}
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
	head := clipHead(msg, max) // Clip's rule, with the count instead of the bare "…"
	return fmt.Sprintf("%s … (%d more bytes; -o json has the whole message)", head, len(msg)-len(head))
}
