package passkeys

import (
	"crypto/rand"
	"encoding/base64"
	"net/http"
	"strings"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/credits"
	"github.com/faxhub/faxhub/core/documents"
	"github.com/faxhub/faxhub/core/faxes"
)

// The Send a fax page: the owner faxes from the console through the same
// core calls as every other door (faxes.Service.Preview, Send), as the
// owner-session principal of the mode the page shows. The flow works
// without JavaScript: upload (PRG back to the form with the document),
// preview (the pages as faxed and the price, rendered into the form),
// send (an idempotency key made when the form was first rendered, so a
// double submit is one fax). send.js adds upload progress, drag and drop
// and the number check as it is typed. See docs/console.md, "Sending from
// the console".

// sendForm is the form as typed; every step renders it back.
type sendForm struct {
	Mode core.Mode
	// Idem is the idempotency key of the send, made when the form was
	// first shown and kept through previews.
	Idem string
	// Previewed is the fingerprint (core.HashRequest) of the request the
	// owner last saw previewed: a send of anything else shows the preview
	// again instead.
	Previewed  string
	DocumentID string
	To         string
	Cover      bool
	// The cover page's fields; the sender's are the owner's fax settings
	// when left empty.
	RecipientName, RecipientCompany, Subject, Message string
	SenderName, SenderCompany, SenderPhone, SenderFax string
	Header                                            string
	Resolution                                        string
	// Later schedules the fax at SendAt, a datetime-local value read in
	// the owner's fax settings time zone.
	Later  bool
	SendAt string
}

// datetimeLocal is the value format of <input type="datetime-local">
// (browsers add seconds only when they were set).
const (
	datetimeLocal        = "2006-01-02T15:04"
	datetimeLocalSeconds = "2006-01-02T15:04:05"
)

// maxSendField bounds every single-line field read from the form before
// core checks it (core's own limits are smaller): a hostile form costs no
// more than this a field.
const maxSendField = 4 * faxes.MaxCoverText

// readSendForm reads the posted form.
func readSendForm(r *http.Request, mode core.Mode) sendForm {
	v := func(name string) string {
		s := r.PostFormValue(name)
		if len(s) > maxSendField {
			s = s[:maxSendField]
		}
		return s
	}
	t := func(name string) string { return strings.TrimSpace(v(name)) }
	return sendForm{
		Mode: mode, Idem: t("idem"), Previewed: t("previewed"), DocumentID: t("document"), To: t("to"),
		Cover:         v("cover") != "",
		RecipientName: t("recipientName"), RecipientCompany: t("recipientCompany"), Subject: t("subject"),
		Message:    strings.TrimRight(v("message"), " \t\r\n"),
		SenderName: t("senderName"), SenderCompany: t("senderCompany"), SenderPhone: t("senderPhone"), SenderFax: t("senderFax"),
		Header: t("header"), Resolution: t("resolution"), Later: v("when") == "later", SendAt: t("sendAt"),
	}
}

// request is the core request of the form; loc is the owner's time zone
// for SendAt.
func (f sendForm) request(loc *time.Location) (faxes.SendRequest, error) {
	r := faxes.SendRequest{To: f.To, DocumentID: f.DocumentID}
	r.Header = f.Header
	r.Resolution = faxes.Resolution(f.Resolution)
	if f.Cover {
		r.CoverPage = &faxes.CoverPage{
			RecipientName: f.RecipientName, RecipientCompany: f.RecipientCompany, Subject: f.Subject, Message: f.Message,
			SenderName: f.SenderName, SenderCompany: f.SenderCompany, SenderPhone: f.SenderPhone, SenderFax: f.SenderFax,
		}
	}
	if f.Later {
		at, err := parseLocal(f.SendAt, loc)
		if err != nil {
			return r, err
		}
		r.SendAt = &at
	}
	return r, nil
}

// parseLocal reads a datetime-local value in loc.
func parseLocal(v string, loc *time.Location) (time.Time, error) {
	if v == "" {
		return time.Time{}, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "choose the date and time to send at").With("field", "sendAt")
	}
	for _, layout := range []string{datetimeLocal, datetimeLocalSeconds} {
		if at, err := time.ParseInLocation(layout, v, loc); err == nil {
			return at, nil
		}
	}
	return time.Time{}, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "%q is not a date and time such as 2026-03-01T09:30", v).With("field", "sendAt")
}

// newIdempotencyKey is a fresh key for one fax sent from the page.
func newIdempotencyKey() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return "console-" + base64.RawURLEncoding.EncodeToString(b)
}

// sendBody is what the page shows.
type sendBody struct {
	Form     sendForm
	Document *documents.Document
	// Errors are core's refusals by form field (to, sendAt, header, …).
	Errors map[string]string
	// Check is the destination's facts, after a preview or a refused send.
	Check *faxes.DestinationCheck
	// CheckText says Check, or the destination's refusal, in a sentence.
	CheckText string
	Preview   *sendPreview
	Balance   *credits.Balance
	// Short is set when the previewed price is more than the balance.
	Short      bool
	BuyCredits string
	Settings   faxes.Settings
	// Zone names the time zone SendAt is read in; MinSendAt and MaxSendAt
	// bound the datetime-local field (now to 30 days ahead, in Zone).
	Zone, MinSendAt, MaxSendAt string
	Accept, MaxSize            string
	MaxPages                   int
	// DefaultHeader is the header text a fax without its own gets.
	DefaultHeader string
}

// sendPreview is a preview as the page shows it: page images through the
// console's own route (the console's CSP allows images of its origin
// only), the PDF by its signed link.
type sendPreview struct {
	Pages *pagesView
	Quote *core.Quote
}

// sendTextField is one single-line field of the cover page as the
// "sendfield" template draws it.
type sendTextField struct {
	Name, Label, Value, Error, Placeholder string
	Max                                    int
}

// textField builds a sendTextField in a template.
func textField(name, label, value, errMsg, placeholder string) sendTextField {
	return sendTextField{Name: name, Label: label, Value: value, Error: errMsg, Placeholder: placeholder, Max: faxes.MaxCoverField}
}

// sendPrincipal is the owner in the console, in mode.
func sendPrincipal(s *signedIn, mode core.Mode) core.Principal {
	return core.OwnerPrincipal(s.owner.ID, mode)
}

// pageMode is the ?mode= of a console page (test by default).
func pageMode(r *http.Request) (core.Mode, error) {
	m := r.URL.Query().Get("mode")
	if m == "" {
		m = r.PostFormValue("mode")
	}
	if m == "" {
		return core.ModeTest, nil
	}
	return core.ParseMode(m)
}

// sendPage shows the form, with the document just uploaded (?document=).
func (c *Console) sendPage(w http.ResponseWriter, r *http.Request, s *signedIn) {
	mode, err := pageMode(r)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	f := sendForm{Mode: mode, Idem: newIdempotencyKey(), DocumentID: r.URL.Query().Get("document"), Resolution: string(faxes.ResolutionStandard)}
	notice := ""
	if f.DocumentID != "" {
		notice = "Document uploaded. Enter the fax number, then preview the pages and the price."
	}
	c.showSend(w, r, s, http.StatusOK, f, nil, notice)
}

// previewSend renders the pages the form would fax and its price, or
// what core refuses, with the form as typed.
func (c *Console) previewSend(w http.ResponseWriter, r *http.Request, s *signedIn) {
	mode, err := pageMode(r)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	c.preview(w, r, s, readSendForm(r, mode), "")
}

// formRequest is the core request of the form, its sendAt read in the
// owner's time zone.
func (c *Console) formRequest(r *http.Request, s *signedIn, f sendForm) (faxes.SendRequest, error) {
	st, err := c.svc.Faxes.GetSettings(r.Context(), sendPrincipal(s, f.Mode))
	if err != nil {
		return faxes.SendRequest{}, err
	}
	return f.request(st.Location())
}

func (c *Console) preview(w http.ResponseWriter, r *http.Request, s *signedIn, f sendForm, why string) {
	if f.Idem == "" {
		f.Idem = newIdempotencyKey()
	}
	req, err := c.formRequest(r, s, f)
	if err == nil && f.DocumentID == "" {
		err = core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "upload the document to fax first").With("field", "document")
	}
	var pv *faxes.Preview
	if err == nil {
		pv, err = c.svc.Faxes.Preview(r.Context(), sendPrincipal(s, f.Mode), req)
	}
	if err != nil {
		c.showSend(w, r, s, statusOf(core.AsError(err).Kind), f, err, "")
		return
	}
	f.Previewed = core.HashRequest(req)
	c.showSendPreview(w, r, s, f, pv, why)
}

// sendFax sends the form's fax with credits. A form not previewed as it
// is (changed since, or never previewed) is previewed instead: the owner
// sends only what they saw. Its idempotency key makes a double submit one
// fax and one charge.
func (c *Console) sendFax(w http.ResponseWriter, r *http.Request, s *signedIn) {
	mode, err := pageMode(r)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	f := readSendForm(r, mode)
	req, err := c.formRequest(r, s, f)
	if err != nil && core.ErrorKind(err) == core.KindInternal {
		c.fail(w, r, err)
		return
	}
	if err != nil || f.Idem == "" || f.Previewed != core.HashRequest(req) {
		c.preview(w, r, s, f, "The fax changed since its preview, or was not previewed: check its pages and price below, then send.")
		return
	}
	fax, _, err := c.svc.Faxes.Send(r.Context(), sendPrincipal(s, mode), f.Idem, req)
	if err != nil {
		if core.AsError(err).Code == core.CodeIdempotencyConflict {
			// This form sent a different fax already: a fresh form sends
			// another one.
			f.Idem, f.Previewed = newIdempotencyKey(), ""
			err = core.Errorf(core.KindConflict, core.CodeIdempotencyConflict, "this form has sent a fax already; preview again to send another")
		}
		c.showSend(w, r, s, statusOf(core.AsError(err).Kind), f, err, "")
		return
	}
	http.Redirect(w, r, faxPath(fax), http.StatusSeeOther)
}

// showSendPreview shows the form with pv's pages and price.
func (c *Console) showSendPreview(w http.ResponseWriter, r *http.Request, s *signedIn, f sendForm, pv *faxes.Preview, why string) {
	sp := &sendPreview{Pages: previewPages(pv, nil), Quote: pv.Quote}
	c.renderSend(w, r, s, http.StatusOK, f, nil, sp, why)
}

// showSend shows the form with refused's message beside the field it
// names (or above the form).
func (c *Console) showSend(w http.ResponseWriter, r *http.Request, s *signedIn, status int, f sendForm, refused error, notice string) {
	c.renderSend(w, r, s, status, f, refused, nil, notice)
}

func (c *Console) renderSend(w http.ResponseWriter, r *http.Request, s *signedIn, status int, f sendForm, refused error, pv *sendPreview, notice string) {
	ctx := r.Context()
	p := sendPrincipal(s, f.Mode)
	st, err := c.svc.Faxes.GetSettings(ctx, p)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	bal, err := c.svc.Credits.Balance(ctx, s.owner.ID, f.Mode)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	loc := st.Location()
	now := c.now().In(loc)
	b := sendBody{
		Form: f, Errors: map[string]string{}, Preview: pv, Balance: bal, BuyCredits: buyCreditsPath(string(f.Mode)), Settings: st,
		Zone: loc.String(), MinSendAt: now.Format(datetimeLocal), MaxSendAt: now.Add(faxes.MaxScheduleAhead).Format(datetimeLocal),
		Accept: uploadAccept, MaxSize: humanBytes(c.svc.Documents.MaxUploadBytes()), MaxPages: c.svc.Documents.MaxPages(),
		DefaultHeader: strings.TrimSpace(cmpStr(st.Header, st.Sender.Name)),
	}
	if f.DocumentID != "" {
		doc, err := c.svc.Documents.Get(ctx, p, f.DocumentID)
		switch {
		case err == nil:
			b.Document = doc
		case refused == nil:
			// Another owner's, another mode's, or no such document.
			refused, status = core.Errorf(core.KindNotFound, core.CodeNotFound, "there is no document %s in %s mode; upload the document again", f.DocumentID, f.Mode).With("field", "document"), http.StatusNotFound
		}
	}
	if f.To != "" {
		c.checkInto(r, p, f.To, &b)
	}
	if pv != nil && pv.Quote != nil && pv.Quote.AmountMicros > bal.AvailableMicros {
		b.Short = true
	}
	d := c.page(s, "Send a fax", "send", nil)
	d.Notice = notice
	if refused != nil {
		e := core.AsError(refused)
		if e.Kind == core.KindInternal {
			c.fail(w, r, refused)
			return
		}
		field := sendField(e)
		msg := e.Message
		if h, _ := e.Fields["hint"].(string); h != "" {
			msg += " (" + h + ")"
		}
		if isDestinationRefusal(e.Code) {
			msg = destinationRefusal(e)
		}
		if e.Code == credits.CodeInsufficientCredits {
			b.Short = true
		}
		if field != "" {
			b.Errors[field] = msg
			d.ErrorTitle, d.Error = "Nothing was sent", "correct the field marked below and try again."
		} else {
			d.ErrorTitle, d.Error = "Nothing was sent", msg
		}
	}
	d.Body = b
	c.render(w, r, status, "send", d)
}

// checkInto fills the destination's facts (or its refusal, unless a
// refusal of the field is shown already). A rate-limited check says
// nothing: the preview or the send checks again.
func (c *Console) checkInto(r *http.Request, p core.Principal, to string, b *sendBody) {
	chk, err := c.svc.Faxes.CheckDestination(r.Context(), p, to)
	if err != nil {
		if e := core.AsError(err); isDestinationRefusal(e.Code) && b.Errors["to"] == "" {
			b.CheckText = destinationRefusal(e)
		}
		return
	}
	b.Check, b.CheckText = chk, checkSentence(chk)
}

// sendField is the form field a refusal is about: core's field, or "to"
// for a refused destination.
func sendField(e *core.Error) string {
	if isDestinationRefusal(e.Code) {
		return "to"
	}
	field, _ := e.Fields["field"].(string)
	switch {
	case field == "sendAt", field == "header", field == "resolution", field == "document":
		return field
	case field == "coverText":
		return "message"
	case strings.HasPrefix(field, "coverPage."):
		return strings.TrimPrefix(field, "coverPage.")
	}
	return ""
}

func isDestinationRefusal(code string) bool {
	return code == core.CodeInvalidDestination || code == core.CodePremiumDestination || code == core.CodeUnsupportedDestination
}

func cmpStr(a, b string) string {
	if strings.TrimSpace(a) != "" {
		return a
	}
	return b
}
