package faxes

import (
	"context"
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/faxhub/faxhub/core"
)

// Options are how a fax is sent beyond its destination and document: the
// cover page, the header line, the resolution, when it goes out and how
// busy and unanswered calls are retried. Every door takes the same
// options (SendRequest embeds them), and a fax and a draft keep them as
// sent, defaults filled in, in one JSON column.
type Options struct {
	// CoverPage is the cover page's fields; set when the fax has a cover
	// page (the sender fields filled from the owner's defaults).
	CoverPage *CoverPage `json:"coverPage,omitempty"`
	// Header is the header line's text; empty prints the line with the
	// date, the sending number and the page count only.
	Header string `json:"header,omitempty"`
	// Resolution is standard (the default) or fine.
	Resolution Resolution `json:"resolution,omitempty"`
	// SendAt, when set, is when a scheduled fax goes out.
	SendAt *time.Time `json:"sendAt,omitempty"`
	// Retry overrides the default retry of busy and unanswered calls.
	Retry *RetryPolicy `json:"retry,omitempty"`
	// ResendOf names the fax this one resends the document of.
	ResendOf string `json:"resendOf,omitempty"`
}

// RetryPolicy is how often and how far apart a fax's busy and unanswered
// calls are tried again.
type RetryPolicy struct {
	// Attempts is the calls in all, the first included (1 to 5).
	Attempts int `json:"attempts"`
	// DelayMinutes is the wait before each retry (1 to 30).
	DelayMinutes int `json:"delayMinutes"`
}

// Bounds of the options.
const (
	MaxScheduleAhead = 30 * 24 * time.Hour
	MaxCoverField    = 100 // characters, every cover field but the message
	MinRetryAttempts = 1
	MaxRetryAttempts = 5
	MinRetryDelay    = 1  // minutes
	MaxRetryDelay    = 30 // minutes
)

// Value stores Options as JSON.
func (o Options) Value() (driver.Value, error) {
	b, err := json.Marshal(o)
	if err != nil {
		return nil, fmt.Errorf("encode fax options: %w", err)
	}
	return string(b), nil
}

// Scan reads Options stored as JSON.
func (o *Options) Scan(src any) error {
	var b []byte
	switch v := src.(type) {
	case nil:
		*o = Options{}
		return nil
	case string:
		b = []byte(v)
	case []byte:
		b = v
	default:
		return fmt.Errorf("fax options: cannot scan %T", src)
	}
	*o = Options{}
	if err := json.Unmarshal(b, o); err != nil {
		return fmt.Errorf("decode fax options: %w", err)
	}
	return nil
}

// resolution is o's resolution, standard when none was given.
func (o Options) resolution() Resolution {
	if o.Resolution == "" {
		return ResolutionStandard
	}
	return o.Resolution
}

// Settings are an owner's defaults for the faxes they send: the time zone
// the header line and the cover page show times in, the header text, and
// the sender fields of the cover page.
type Settings struct {
	TimeZone string `json:"timeZone"`
	Header   string `json:"header"`
	Sender   Sender `json:"sender"`
	// ApproveChatSends: every send_fax of a chat app (an OAuth grant),
	// even one holding fax:send, waits for the owner's passkey approval
	// (chatsend.go).
	ApproveChatSends bool `json:"approveChatSends"`
}

// Sender is the sender block of a cover page.
type Sender struct {
	Name    string `json:"name"`
	Company string `json:"company"`
	Phone   string `json:"phone"`
	Fax     string `json:"fax"`
}

// Value stores Settings as JSON.
func (st Settings) Value() (driver.Value, error) {
	b, err := json.Marshal(st)
	if err != nil {
		return nil, fmt.Errorf("encode fax settings: %w", err)
	}
	return string(b), nil
}

// Scan reads Settings stored as JSON.
func (st *Settings) Scan(src any) error {
	var b []byte
	switch v := src.(type) {
	case string:
		b = []byte(v)
	case []byte:
		b = v
	default:
		return fmt.Errorf("fax settings: cannot scan %T", src)
	}
	*st = Settings{}
	if err := json.Unmarshal(b, st); err != nil {
		return fmt.Errorf("decode fax settings: %w", err)
	}
	return nil
}

// Location is the settings' time zone, UTC when none is set.
func (st Settings) Location() *time.Location {
	if st.TimeZone == "" {
		return time.UTC
	}
	loc, err := time.LoadLocation(st.TimeZone)
	if err != nil {
		return time.UTC // checked when stored; a zone removed from tzdata since falls back
	}
	return loc
}

// textRules are what a field of the cover page or the header may hold.
type textRules struct {
	field     string
	max       int  // characters
	multiline bool // newlines and tabs allowed (the message)
}

// checkText refuses text too long, with control characters, or with a
// character the composer's font cannot draw (a blank box on the page
// would be worse than a clear refusal).
func (s *Service) checkText(r textRules, v string) error {
	if !utf8.ValidString(v) {
		return invalidField(r.field, "%s is not valid UTF-8", r.field)
	}
	if n := utf8.RuneCountInString(v); n > r.max {
		return invalidField(r.field, "%s is longer than %d characters", r.field, r.max).With("limit", r.max)
	}
	for _, c := range v {
		if unicode.IsControl(c) && !(r.multiline && (c == '\n' || c == '\r' || c == '\t')) {
			return invalidField(r.field, "%s holds a control character (U+%04X)", r.field, c)
		}
	}
	if s.d.Composer != nil {
		if c, bad := s.d.Composer.Undrawable(v); bad {
			return core.Errorf(core.KindInvalid, CodeUndrawableCharacter, "%s holds %q (U+%04X), a character the fax font cannot draw", r.field, c, c).
				With("field", r.field).With("character", string(c))
		}
	}
	return nil
}

func invalidField(field, format string, args ...any) *core.Error {
	return core.Errorf(core.KindInvalid, core.CodeInvalidRequest, format, args...).With("field", field)
}

// PrepareOptions checks a send's options and fills in the owner's
// defaults: the cover page (cover: true, a coverText, or coverPage fields)
// gets the owner's sender fields where the request left them empty. An
// empty header is left empty and takes the owner's header text when the
// fax is composed, so a send without a cover page reads no settings.
// Every door's options go through it: Send and CreateDraft, and the doors
// that create a fax through another path (core/hosts, core/machine).
func (s *Service) PrepareOptions(ctx context.Context, p core.Principal, r SendRequest) (Options, error) {
	o, cover, err := s.checkOptions(r)
	if err != nil || !cover {
		return o, err
	}
	st, err := s.Settings(ctx, p.OwnerID)
	if err != nil {
		return Options{}, err
	}
	cp := o.CoverPage
	cp.SenderName = cmpText(cp.SenderName, st.Sender.Name)
	cp.SenderCompany = cmpText(cp.SenderCompany, st.Sender.Company)
	cp.SenderPhone = cmpText(cp.SenderPhone, st.Sender.Phone)
	cp.SenderFax = cmpText(cp.SenderFax, st.Sender.Fax)
	return o, s.checkCoverPage(cp)
}

// HasCover reports whether the options have a cover page (it is priced).
func (o Options) HasCover() bool { return o.CoverPage != nil }

// CoverMessage is the cover page's message, what a fax's coverText shows.
func (o Options) CoverMessage() string {
	if o.CoverPage == nil {
		return ""
	}
	return o.CoverPage.Message
}

// checkOptions checks a request's options as given; cover reports whether
// the fax has a cover page.
func (s *Service) checkOptions(r SendRequest) (o Options, cover bool, err error) {
	o = r.Options
	o.ResendOf = "" // set by Resend only
	now := s.now()
	switch o.Resolution {
	case "":
		o.Resolution = ResolutionStandard
	case ResolutionStandard, ResolutionFine:
	default:
		return Options{}, false, invalidField("resolution", "resolution must be standard or fine")
	}
	if o.SendAt != nil {
		at := o.SendAt.UTC().Truncate(time.Microsecond) // as stored
		switch {
		case at.Before(now):
			return Options{}, false, invalidField("sendAt", "sendAt %s is in the past", at.Format(time.RFC3339))
		case at.After(now.Add(MaxScheduleAhead)):
			return Options{}, false, invalidField("sendAt", "sendAt may be at most 30 days ahead")
		}
		o.SendAt = &at
	}
	if p := o.Retry; p != nil {
		if p.Attempts < MinRetryAttempts || p.Attempts > MaxRetryAttempts {
			return Options{}, false, invalidField("retry.attempts", "retry.attempts must be %d to %d", MinRetryAttempts, MaxRetryAttempts)
		}
		if p.DelayMinutes < MinRetryDelay || p.DelayMinutes > MaxRetryDelay {
			return Options{}, false, invalidField("retry.delayMinutes", "retry.delayMinutes must be %d to %d", MinRetryDelay, MaxRetryDelay)
		}
	}
	if err := CheckCover(r.Cover, r.CoverText); err != nil {
		return Options{}, false, err
	}
	cover = r.Cover || o.CoverPage != nil
	if cover {
		cp := CoverPage{}
		if o.CoverPage != nil {
			cp = *o.CoverPage
		}
		if r.CoverText != "" {
			if cp.Message != "" {
				return Options{}, false, invalidField("coverText", "give coverText or coverPage.message, not both")
			}
			cp.Message = r.CoverText
		}
		if err := s.checkCoverPage(&cp); err != nil {
			return Options{}, false, err
		}
		o.CoverPage = &cp
	}
	if err := s.checkText(textRules{field: "header", max: MaxHeader}, o.Header); err != nil {
		return Options{}, false, err
	}
	return o, cover, nil
}

// checkCoverPage checks every field of a cover page.
func (s *Service) checkCoverPage(cp *CoverPage) error {
	for _, f := range []struct{ name, v string }{
		{"recipientName", cp.RecipientName}, {"recipientCompany", cp.RecipientCompany},
		{"senderName", cp.SenderName}, {"senderCompany", cp.SenderCompany},
		{"senderPhone", cp.SenderPhone}, {"senderFax", cp.SenderFax}, {"subject", cp.Subject},
	} {
		if err := s.checkText(textRules{field: "coverPage." + f.name, max: MaxCoverField}, f.v); err != nil {
			return err
		}
	}
	return s.checkText(textRules{field: "coverPage.message", max: MaxCoverText, multiline: true}, cp.Message)
}

func cmpText(v, def string) string {
	if strings.TrimSpace(v) == "" {
		return def
	}
	return v
}

// CheckSettings checks an owner's defaults before they are stored.
func (s *Service) CheckSettings(st Settings) error {
	if st.TimeZone != "" {
		if _, err := time.LoadLocation(st.TimeZone); err != nil || st.TimeZone == "Local" {
			return invalidField("timeZone", "timeZone %q is not an IANA time zone (such as America/New_York)", st.TimeZone)
		}
	}
	if err := s.checkText(textRules{field: "header", max: MaxHeader}, st.Header); err != nil {
		return err
	}
	for _, f := range []struct{ name, v string }{
		{"sender.name", st.Sender.Name}, {"sender.company", st.Sender.Company},
		{"sender.phone", st.Sender.Phone}, {"sender.fax", st.Sender.Fax},
	} {
		if err := s.checkText(textRules{field: f.name, max: MaxCoverField}, f.v); err != nil {
			return err
		}
	}
	return nil
}

// retryDelay is when a fax's failed attempt is tried again, and whether it
// is: a busy or unanswered call under the fax's own retry policy follows
// it; any other retryable failure, and every failure of a fax without a
// policy, follows the service's rule (Config.MaxAttempts, RetryBackoff).
func (s *Service) retryDelay(o *Fax, a *Attempt) (time.Duration, bool) {
	if !a.Retryable || a.FailureCode == FailureCanceled {
		return 0, false
	}
	if p := o.Options.Retry; p != nil && (a.FailureCode == FailureBusy || a.FailureCode == FailureNoAnswer) {
		return time.Duration(p.DelayMinutes) * time.Minute, o.Attempts < p.Attempts
	}
	return s.backoff(o.Attempts), o.Attempts < s.fc.MaxAttempts
}

// maxAttempts is the most attempts o may make: its policy's count when
// that is higher than the service's (a policy of 5 busy retries is not
// cut at 3).
func (s *Service) maxAttempts(o *Fax) int {
	if o.Options.Retry != nil {
		return max(o.Options.Retry.Attempts, s.fc.MaxAttempts)
	}
	return s.fc.MaxAttempts
}

// A fax and a draft keep their options in one column (a named field, which
// sqlx maps to it) and show them at the top level of their JSON, as a send
// request gives them: these marshal the struct beside its options.

func (f Fax) MarshalJSON() ([]byte, error) {
	type plain Fax
	return json.Marshal(struct {
		plain
		Options
	}{plain(f), f.Options})
}

func (f *Fax) UnmarshalJSON(b []byte) error {
	type plain Fax
	v := struct {
		*plain
		*Options
	}{(*plain)(f), &f.Options}
	return json.Unmarshal(b, &v)
}

func (d Draft) MarshalJSON() ([]byte, error) {
	type plain Draft
	return json.Marshal(struct {
		plain
		Options
	}{plain(d), d.Options})
}

func (d *Draft) UnmarshalJSON(b []byte) error {
	type plain Draft
	v := struct {
		*plain
		*Options
	}{(*plain)(d), &d.Options}
	return json.Unmarshal(b, &v)
}

// MarshalJSON shows the draft and its quote (Draft's own MarshalJSON would
// otherwise be promoted and drop the quote).
func (v DraftView) MarshalJSON() ([]byte, error) {
	type plain Draft
	return json.Marshal(struct {
		plain
		Options
		Quote core.Quote `json:"quote"`
	}{plain(v.Draft), v.Draft.Options, v.Quote})
}
