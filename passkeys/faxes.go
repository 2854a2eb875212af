package passkeys

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/faxes"
)

// The owner's sent faxes: /console/faxes lists them (status, period,
// paging by cursor) with the door each came in by; /console/faxes/{id}
// shows one with its attempts, its pages as faxed, its transmission
// report and signed receipt, and cancels or resends it. Everything is
// core's (faxes.Service); the pages only read and post forms.

// faxesPageSize is how many faxes a page of the list shows.
const faxesPageSize = 25

type faxesBody struct {
	Mode  core.Mode
	Faxes []faxes.Fax
	// The filters as given, kept in the form and the paging link.
	Status, From, To string
	Statuses         []faxes.Status
	Next             string
	// NextQuery is the query of the next page's link.
	NextQuery string
	Filtered  bool
}

func (c *Console) faxesPage(w http.ResponseWriter, r *http.Request, s *signedIn) {
	mode, err := queryMode(r)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	q := r.URL.Query()
	b := faxesBody{Mode: mode, Status: q.Get("status"), From: q.Get("from"), To: q.Get("to"), Statuses: faxes.Statuses}
	b.Filtered = b.Status != "" || b.From != "" || b.To != ""
	page, err := c.svc.Faxes.List(r.Context(), core.OwnerPrincipal(s.owner.ID, mode), faxes.ListRequest{
		Status: b.Status, CreatedFrom: b.From, CreatedTo: b.To, StartingAfter: q.Get("after"), Limit: faxesPageSize})
	if err != nil {
		if core.ErrorKind(err) == core.KindInvalid {
			// A filter the owner typed: the page again, with why.
			d := c.page(s, "Faxes", "faxes", b)
			d.Error = core.AsError(err).Message
			c.render(w, r, http.StatusBadRequest, "faxes", d)
			return
		}
		c.fail(w, r, err)
		return
	}
	b.Faxes, b.Next = page.Data, page.Next
	if page.HasMore {
		next := url.Values{"mode": {string(mode)}, "after": {page.Next}}
		for k, v := range map[string]string{"status": b.Status, "from": b.From, "to": b.To} {
			if v != "" {
				next.Set(k, v)
			}
		}
		b.NextQuery = next.Encode()
	}
	c.render(w, r, http.StatusOK, "faxes", c.page(s, "Faxes", "faxes", b))
}

// pageImage is one page of a document shown as an image.
type pageImage struct {
	URL, Alt string
}

// pagesView is a document's pages as images and its PDF, or why they
// cannot be shown.
type pagesView struct {
	PDF    string
	SHA256 string
	Pages  []pageImage
	Note   string
}

// pagesOf shows files, or why not (err's message: a purged document, a
// preview limit used up, a conversion that failed), so a page that shows
// them never fails or hides the decision because of them.
func pagesOf(files *faxes.Files, err error) *pagesView {
	if err != nil {
		return &pagesView{Note: core.AsError(err).Message}
	}
	v := &pagesView{PDF: files.URL, SHA256: files.SHA256}
	for i, u := range files.PageImages {
		v.Pages = append(v.Pages, pageImage{URL: u, Alt: fmt.Sprintf("Page %d of %d", i+1, len(files.PageImages))})
	}
	return v
}

// previewPages shows a preview's pages, or why there are none.
func previewPages(pv *faxes.Preview, err error) *pagesView {
	if err != nil {
		return pagesOf(nil, err)
	}
	return pagesOf(&pv.Files, nil)
}

type faxBody struct {
	Fax      *faxes.Fax
	Attempts []faxes.Attempt
	Faxed    *pagesView
	// Report is the report's signed link; Receipt the signed receipt;
	// each Note says why there is none yet.
	Report, ReportNote   string
	Receipt              *faxes.SignedReceipt
	ReceiptNote          string
	Cancelable, Sendable bool
	// ResendKey makes the resend form idempotent per render.
	ResendKey string
}

func (c *Console) faxPage(w http.ResponseWriter, r *http.Request, s *signedIn) {
	f, err := inOwnerModes(r, s, c.svc.Faxes.Get)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	c.showFax(w, r, s, f, http.StatusOK, faxNotice(r.URL.Query().Get("done")), "")
}

func faxNotice(done string) string {
	switch done {
	case "canceled":
		return "Canceled: what was held for it is released."
	case "cancel-requested":
		return "The provider was asked to call this fax back; its outcome follows."
	case "resent":
		return "Sent again: this is the new fax."
	}
	return ""
}

func (c *Console) showFax(w http.ResponseWriter, r *http.Request, s *signedIn, f *faxes.Fax, status int, notice, errMsg string) {
	ctx := r.Context()
	p := core.OwnerPrincipal(s.owner.ID, f.Mode)
	attempts, err := c.svc.Faxes.Attempts(ctx, p, f.ID)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	b := faxBody{Fax: f, Attempts: attempts, Cancelable: !f.Status.Terminal(), Sendable: f.Status.Terminal(), ResendKey: newIdempotencyKey()}
	if f.FaxedSHA256 != "" {
		b.Faxed = pagesOf(c.svc.Faxes.FaxedDocument(ctx, p, f.ID))
	}
	if f.Status.Terminal() {
		if rep, err := c.svc.Faxes.Report(ctx, p, f.ID); err != nil {
			b.ReportNote = core.AsError(err).Message
		} else {
			b.Report = rep.URL
		}
		if f.Status != faxes.Canceled || f.Attempts > 0 {
			if rc, err := c.svc.Faxes.Receipt(ctx, p, f.ID); err != nil {
				b.ReceiptNote = core.AsError(err).Message
			} else {
				b.Receipt = rc
			}
		}
	}
	d := c.page(s, "Fax to "+f.To, "faxes", b)
	d.Notice, d.Error = notice, errMsg
	c.render(w, r, status, "fax", d)
}

// faxPath is the console page of a fax.
func faxPath(f *faxes.Fax) string {
	return "/console/faxes/" + url.PathEscape(f.ID) + "?mode=" + string(f.Mode)
}

func (c *Console) cancelFax(w http.ResponseWriter, r *http.Request, s *signedIn) {
	f, err := inOwnerModes(r, s, c.svc.Faxes.Get)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	got, err := c.svc.Faxes.Cancel(r.Context(), core.OwnerPrincipal(s.owner.ID, f.Mode), f.ID)
	if err != nil {
		c.refused(w, r, s, f, err)
		return
	}
	done := "canceled"
	if got.Status != faxes.Canceled {
		done = "cancel-requested"
	}
	http.Redirect(w, r, faxPath(got)+"&done="+done, http.StatusSeeOther)
}

// refused shows f's page again with why core refused what the owner
// asked (too late to cancel, too few credits, a purged document); an
// internal failure is the error page.
func (c *Console) refused(w http.ResponseWriter, r *http.Request, s *signedIn, f *faxes.Fax, err error) {
	e := core.AsError(err)
	if e.Kind == core.KindInternal {
		c.fail(w, r, err)
		return
	}
	c.showFax(w, r, s, f, statusOf(e.Kind), "", e.Message)
}

// maxFormKey bounds the resend form's key.
const maxFormKey = 64

func (c *Console) resendFax(w http.ResponseWriter, r *http.Request, s *signedIn) {
	f, err := inOwnerModes(r, s, c.svc.Faxes.Get)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	key := strings.TrimSpace(r.PostFormValue("key"))
	if key == "" || len(key) > maxFormKey {
		c.showFax(w, r, s, f, http.StatusBadRequest, "", "The form is out of date; send it again from this page.")
		return
	}
	nf, _, err := c.svc.Faxes.Resend(r.Context(), core.OwnerPrincipal(s.owner.ID, f.Mode), "console-resend:"+key, f.ID, faxes.ResendRequest{})
	if err != nil {
		c.refused(w, r, s, f, err)
		return
	}
	http.Redirect(w, r, faxPath(nf)+"&done=resent", http.StatusSeeOther)
}

// receiptDownload answers the signed receipt of a finished fax as a file
// (a compact JWS: verify it with faxhub's JWKS, docs/receipts.md).
func (c *Console) receiptDownload(w http.ResponseWriter, r *http.Request, s *signedIn) {
	f, err := inOwnerModes(r, s, c.svc.Faxes.Get)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	rc, err := c.svc.Faxes.Receipt(r.Context(), core.OwnerPrincipal(s.owner.ID, f.Mode), f.ID)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/jose")
	h.Set("Content-Disposition", `attachment; filename="`+f.ID+`-receipt.jws"`)
	h.Set("Cache-Control", "no-store")
	_, _ = w.Write([]byte(rc.Receipt))
}

// doorLabel is how the console names the door a fax came in by.
func doorLabel(s faxes.SentBy) string {
	switch s.Kind {
	case core.PrincipalAPIKey:
		return "API key"
	case core.PrincipalOAuthGrant:
		return "Chat app"
	case core.PrincipalAgent:
		return "Agent"
	case core.PrincipalDelegated:
		return "Delegated agent"
	case core.PrincipalMachinePayer:
		return "Machine payment"
	case core.PrincipalOwnerSession:
		return "Console"
	}
	return "Unknown"
}
