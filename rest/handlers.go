package rest

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/documents"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/machine"
	"github.com/faxhub/faxhub/core/web"
)

func (a *api) createUpload(w http.ResponseWriter, r *http.Request, p core.Principal) error {
	var body struct {
		ContentType string `json:"contentType"`
		MaxBytes    int64  `json:"maxBytes"`
	}
	if err := web.DecodeJSON(w, r, &body, true); err != nil {
		return err
	}
	capability, err := a.svc.Documents.CreateUpload(r.Context(), p, body.ContentType, body.MaxBytes)
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, capability)
	return nil
}

// uploadResult is the response of the upload PUT. It repeats only the
// token the client sent (so it can go straight on to sendFax) and the
// document's public fields; blob keys and the owner stay inside.
type uploadResult struct {
	Stored      bool                `json:"stored"`
	UploadToken string              `json:"uploadToken"`
	Document    *documents.Document `json:"document"`
}

// putUpload needs no Authorization header: the HMAC token in the path is
// the capability. Any Content-Type is accepted because the service detects
// the file type from its bytes.
func (a *api) putUpload(w http.ResponseWriter, r *http.Request) error {
	token := r.PathValue("token")
	// Refusing a declared oversize body before reading it spares both sides
	// the transfer; bodies of unknown length are bounded by the service
	// (the token's maxBytes) while it streams them to disk.
	if limit := a.svc.Config().Documents.MaxUploadBytes; r.ContentLength > limit {
		return core.Errorf(core.KindTooLarge, documents.CodeFileTooLarge,
			"the body is %d bytes; this server accepts at most %d", r.ContentLength, limit).With("limit", limit)
	}
	doc, err := a.svc.Documents.ReceiveUpload(r.Context(), token, r.Body)
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, uploadResult{Stored: true, UploadToken: token, Document: doc})
	return nil
}

func (a *api) sendFax(w http.ResponseWriter, r *http.Request, p core.Principal) error {
	return idempotent(w, r, false, func(key string, req faxes.SendRequest) (*faxes.Fax, bool, error) {
		return a.svc.Faxes.Send(r.Context(), p, key, req)
	})
}

// idempotent answers a creation that takes an Idempotency-Key (a send, a
// broadcast, a resend): the header once, the body strictly (optional when
// emptyOK), and Idempotent-Replayed on the answer of a key used before.
func idempotent[Req, Resp any](w http.ResponseWriter, r *http.Request, emptyOK bool, create func(key string, req Req) (Resp, bool, error)) error {
	key, err := web.SingleHeader(r, "Idempotency-Key")
	if err != nil {
		return err
	}
	var req Req
	if err := web.DecodeJSON(w, r, &req, emptyOK); err != nil {
		return err
	}
	out, replayed, err := create(key, req)
	if err != nil {
		return err
	}
	if replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	web.WriteJSON(w, http.StatusOK, out)
	return nil
}

func (a *api) listFaxes(w http.ResponseWriter, r *http.Request, p core.Principal) error {
	q, limit, err := listQuery(r, "status", "created_from", "created_to")
	if err != nil {
		return err
	}
	page, err := a.svc.Faxes.List(r.Context(), p, faxes.ListRequest{Status: q.Get("status"), CreatedFrom: q.Get("created_from"),
		CreatedTo: q.Get("created_to"), StartingAfter: q.Get("starting_after"), Limit: limit})
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, page)
	return nil
}

func (a *api) getFax(w http.ResponseWriter, r *http.Request, p core.Principal) error {
	fax, err := a.svc.Faxes.Get(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, fax)
	return nil
}

// listData wraps an unpaginated list, so that every list response has the
// same `data` member and pagination could be added without breaking it.
type listData[T any] struct {
	Data []T `json:"data"`
}

func (a *api) listAttempts(w http.ResponseWriter, r *http.Request, p core.Principal) error {
	attempts, err := a.svc.Faxes.Attempts(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	if attempts == nil {
		attempts = []faxes.Attempt{}
	}
	web.WriteJSON(w, http.StatusOK, listData[faxes.Attempt]{Data: attempts})
	return nil
}

func (a *api) cancelFax(w http.ResponseWriter, r *http.Request, p core.Principal) error {
	fax, err := a.svc.Faxes.Cancel(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, fax)
	return nil
}

func (a *api) getCredits(w http.ResponseWriter, r *http.Request, p core.Principal) error {
	q, limit, err := listQuery(r)
	if err != nil {
		return err
	}
	credits, err := a.svc.Credits.Get(r.Context(), p, q.Get("starting_after"), limit)
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, credits)
	return nil
}

// listPacks is gated like getCredits: core has no operation of its own for
// reading the price list.
func (a *api) listPacks(w http.ResponseWriter, r *http.Request, p core.Principal) error {
	if err := core.Authorize(p, core.OpGetCredits); err != nil {
		return err
	}
	packs := a.svc.Credits.Packs()
	if packs == nil {
		packs = []core.CreditPack{}
	}
	web.WriteJSON(w, http.StatusOK, listData[core.CreditPack]{Data: packs})
	return nil
}

func (a *api) createCheckout(w http.ResponseWriter, r *http.Request, p core.Principal) error {
	var body struct {
		PackID string `json:"packId"`
	}
	if err := web.DecodeJSON(w, r, &body, false); err != nil {
		return err
	}
	session, err := a.svc.Checkout.StartCreditPack(r.Context(), p, body.PackID)
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, session)
	return nil
}

// quoteBody is the JSON form of faxes.QuoteRequest, which has no JSON
// tags. Pages stays a pointer: core tells an absent count from a 0.
type quoteBody struct {
	To    string `json:"to"`
	Pages *int   `json:"pages"`
	Cover bool   `json:"cover"`
}

// quote is the authenticated twin of the machine validate endpoint; core
// checks the scope and the pages.
func (a *api) quote(w http.ResponseWriter, r *http.Request, p core.Principal) error {
	var body quoteBody
	if err := web.DecodeJSON(w, r, &body, false); err != nil {
		return err
	}
	q, err := a.svc.Faxes.Quote(r.Context(), p, faxes.QuoteRequest{To: body.To, Pages: body.Pages, Cover: body.Cover})
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, q)
	return nil
}

func (a *api) machinePaymentsOff() error {
	return core.Errorf(core.KindUnavailable, machine.CodeMachinePaymentsOff,
		"machine payments are disabled on this server; use an API key with prepaid credits (see %s/llms.txt)", a.opts.BaseURL)
}

// listQuery reads the pagination parameters (limit, starting_after) and
// the extra ones named. Unknown or repeated parameters are refused so that
// a misspelt filter fails loudly instead of silently listing everything.
func listQuery(r *http.Request, extra ...string) (url.Values, int, error) {
	q, err := strictQuery(r, append([]string{"limit", "starting_after"}, extra...)...)
	if err != nil {
		return nil, 0, err
	}
	limit := 0 // the service's default
	if q.Has("limit") {
		n, err := strconv.Atoi(q.Get("limit"))
		if err != nil || n < 1 || n > core.MaxListLimit {
			return nil, 0, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "limit must be an integer from 1 to %d", core.MaxListLimit).With("parameter", "limit")
		}
		limit = n
	}
	return q, limit, nil
}

// strictQuery parses the query string and refuses parameters other than
// allowed, and any given twice.
func strictQuery(r *http.Request, allowed ...string) (url.Values, error) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "the query string is malformed")
	}
	for name, values := range q {
		if !slices.Contains(allowed, name) {
			return nil, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "unknown query parameter %q; this endpoint takes %v", name, allowed).With("parameter", name)
		}
		if len(values) > 1 {
			return nil, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "query parameter %q is given more than once", name).With("parameter", name)
		}
	}
	return q, nil
}
