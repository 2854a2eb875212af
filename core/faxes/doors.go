package faxes

import (
	"strings"
	"unicode"
)

// What the agent doors (MCP, A2A, the delegated agents' send_fax) and the
// machine payment door need of the send options beyond Send and
// CreateDraft: the one check of options for a fax made elsewhere (a
// delegated send the owner approves later, a machine's paid request), the
// options beside the agent view of a fax or draft, and the JSON Schema of
// the options with their bounds, so every door's input schema says what
// core enforces and none re-states a bound of its own.

// FaxView is a fax as the agent doors show it: the View and, beside it at
// the top level, the options it is sent with (as Fax's JSON shows them).
type FaxView struct {
	View
	Options
}

// PresentFax is f as the agent doors show it, with its options.
func PresentFax(f *Fax) FaxView {
	o := f.Options
	o.Resolution = o.resolution()
	return FaxView{View: Present(f), Options: o}
}

// DraftOptionsView is a draft as the agent doors show it, with its
// options.
type DraftOptionsView struct {
	DraftPresentation
	Options
}

// PresentDraftOptions is d as the agent doors show it, with its options.
func PresentDraftOptions(d *DraftView, checkoutURL string) DraftOptionsView {
	o := d.Options
	o.Resolution = o.resolution()
	return DraftOptionsView{DraftPresentation: PresentDraft(d, checkoutURL), Options: o}
}

// OptionsSchema is the JSON Schema of the send options as properties of a
// door's input schema, their bounds from this package's constants.
// snake names them as the delegated agents' door does (cover_page,
// send_at, delay_minutes); otherwise camelCase, as REST, MCP and A2A.
func OptionsSchema(snake bool) map[string]any {
	name := func(s string) string {
		if !snake {
			return s
		}
		var b strings.Builder
		for _, r := range s {
			if unicode.IsUpper(r) {
				b.WriteByte('_')
				r = unicode.ToLower(r)
			}
			b.WriteRune(r)
		}
		return b.String()
	}
	text := func(desc string, max int) map[string]any {
		return map[string]any{"type": "string", "maxLength": max, "description": desc}
	}
	cover := map[string]any{}
	for _, f := range []struct{ name, desc string }{
		{"recipientName", "the recipient's name"}, {"recipientCompany", "the recipient's company"},
		{"senderName", "the sender's name (default: the owner's fax settings)"}, {"senderCompany", "the sender's company (default: the owner's)"},
		{"senderPhone", "the sender's phone (default: the owner's)"}, {"senderFax", "the sender's fax number (default: the owner's)"},
		{"subject", "the subject line"},
	} {
		cover[name(f.name)] = text(f.desc, MaxCoverField)
	}
	cover["message"] = text("the message, paragraphs kept (coverText is the same field)", MaxCoverText)
	return map[string]any{
		name("coverPage"): map[string]any{"type": "object", "additionalProperties": false, "properties": cover,
			"description": "a cover page as page 1 (priced as one more page), with these fields; every field is optional UTF-8 text; the sender fields default to the owner's fax settings and the page count is filled in. A character the fax font cannot draw (CJK, emoji) is refused with undrawable_character naming the field. Implies cover."},
		"header": text("the header line's text, printed at the top of every page with the date and time (the owner's time zone), the sending number and page n/N; default the owner's header text, else their sender name", MaxHeader),
		"resolution": map[string]any{"type": "string", "enum": []string{string(ResolutionStandard), string(ResolutionFine)}, "default": string(ResolutionStandard),
			"description": "standard (204×98 dpi) or fine (204×196 dpi, about twice the line time); both cost the same"},
		name("sendAt"): map[string]any{"type": "string", "format": "date-time",
			"description": "RFC 3339 time to send it, not in the past, at most 30 days ahead; the fax is scheduled (the price held) until then, can be canceled before (the hold is released), and goes out on time from any replica, after restarts too"},
		"retry": map[string]any{"type": "object", "additionalProperties": false, "required": []string{"attempts", name("delayMinutes")},
			"description": "how busy and unanswered calls are retried (other retryable failures, and faxes without a policy, follow the default: 3 attempts, backoff from 30 s)",
			"properties": map[string]any{
				"attempts":           map[string]any{"type": "integer", "minimum": MinRetryAttempts, "maximum": MaxRetryAttempts, "description": "calls in all, the first included"},
				name("delayMinutes"): map[string]any{"type": "integer", "minimum": MinRetryDelay, "maximum": MaxRetryDelay, "description": "minutes between calls"},
			}},
	}
}
