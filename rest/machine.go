package rest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/documents"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/machine"
	"github.com/faxhub/faxhub/core/web"
	"github.com/faxhub/faxhub/rest/mpp"
)

// Machine payments (docs/payments.md): a machine without an account pays
// for one fax per request over HTTP 402. Core decides the price, the
// challenges, the credential's verdict and the order, on typed values;
// this file reads the body and the payment headers into them (the wire
// format is rest/mpp) and writes core's answer as HTTP: refusals as the
// protocol's problems, challenges as WWW-Authenticate values ordered by
// Accept-Payment, receipts as Payment-Receipt.

// CodeInvalidBase64 is the problem code of a machine request whose base64
// member does not decode: a property of this adapter's JSON encoding of
// the document, so it is named here rather than in core.
const CodeInvalidBase64 = "invalid_base64"

// MachineOffer is a payment method on offer, for the x-payment-info of
// /openapi.json (the amount is priced per destination, so it is null
// there; the 402 challenge carries the authoritative amount).
type MachineOffer struct {
	Method   string // "stripe", "tempo"
	Intent   string // "charge"
	Currency string // "usd", or a token address
}

// machineFaxBody is the JSON body of POST /api/v1/machine/faxes. The send
// options carry REST's names (docs/api.md) and are core's to check; the
// body's digest, which the challenges bind, covers them.
type machineFaxBody struct {
	To        string `json:"to"`
	Base64    string `json:"base64"`
	RequestID string `json:"request_id"`
	Cover     bool   `json:"cover"`
	machineOptions
}

// machineOptions are the send options of a machine body. SendAt is read
// only to be refused by core by name (machine faxes go out when paid).
type machineOptions struct {
	CoverPage  *faxes.CoverPage   `json:"coverPage"`
	Header     string             `json:"header"`
	Resolution faxes.Resolution   `json:"resolution"`
	Retry      *faxes.RetryPolicy `json:"retry"`
	SendAt     *string            `json:"sendAt"`
}

func (m machineOptions) options() (faxes.Options, error) {
	o := faxes.Options{CoverPage: m.CoverPage, Header: m.Header, Resolution: m.Resolution, Retry: m.Retry}
	if m.SendAt != nil {
		at, err := time.Parse(time.RFC3339, *m.SendAt)
		if err != nil {
			return faxes.Options{}, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "sendAt must be an RFC 3339 time").With("field", "sendAt")
		}
		o.SendAt = &at
	}
	return o, nil
}

// machineValidateBody is the JSON body of the validate endpoint: the
// document itself (base64) or just its page count (pages), and the send
// options a fax request would carry (a coverPage is priced).
type machineValidateBody struct {
	To     string  `json:"to"`
	Base64 *string `json:"base64"`
	Pages  *int    `json:"pages"`
	Cover  bool    `json:"cover"`
	machineOptions
}

// readMachineBody reads the raw body of a machine request, bounded by the
// service's limit for a base64 document (a declared oversize body is
// refused before a byte is read), and decodes it strictly into v. The raw
// bytes are returned because the challenge binds their digest.
//
// A body over smallMachineBody is spooled to a file as it arrives, so a
// slow client holds a file, not memory; only then is room reserved for
// decoding it
// (machine.Service.ReserveDocumentRead), which bounds the memory every
// request's decoding holds at once. The caller calls release once the
// request is answered (the decoded document lives until then).
func (a *api) readMachineBody(w http.ResponseWriter, r *http.Request, v any) (body []byte, release func(), err error) {
	limit := a.svc.Machine.MaxBodyBytes()
	tooLarge := func() error {
		return core.Errorf(core.KindTooLarge, documents.CodeFileTooLarge,
			"the body is larger than %d bytes, the most this server accepts for a base64 document of %d bytes",
			limit, a.svc.Config().Machine.MaxPDFBytes).With("limit", limit)
	}
	if r.ContentLength > limit {
		// Closing the connection after the answer spares reading the body
		// at all: otherwise net/http drains up to 256 KiB of it before it
		// writes the 413, and a client sending its body first waits.
		w.Header().Set("Connection", "close")
		return nil, nil, tooLarge()
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			return nil, nil, core.Errorf(core.KindUnsupportedMedia, core.CodeUnsupportedContentType, "send the body as application/json")
		}
	}
	readErr := func(err error) error {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return tooLarge()
		}
		if web.IsBodyTimeout(err) {
			return web.BodyTimeoutError(err)
		}
		if _, ok := errors.AsType[*core.Error](err); ok {
			return err
		}
		if _, ok := errors.AsType[*os.PathError](err); ok {
			return fmt.Errorf("spool machine body: %w", err)
		}
		return core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "the JSON body could not be read: %v", err)
	}
	in := http.MaxBytesReader(w, r.Body, limit)
	// A small body (a page count, a short PDF) is read into memory: what
	// it holds is small beside the decoding room, and it spares a file.
	// A declared length sizes the buffer (net/http delivers no more than
	// it declares): a 402's body of a few KiB should not cost a zeroed
	// 64 KiB allocation per request.
	size := smallMachineBody + 1
	if r.ContentLength >= 0 && r.ContentLength < int64(size) {
		size = int(r.ContentLength) + 1
	}
	head := make([]byte, size)
	hn, err := io.ReadFull(in, head)
	switch {
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		if release, err = a.svc.Machine.ReserveDocumentRead(r.Context(), int64(hn)); err != nil {
			return nil, nil, err
		}
		body = head[:hn]
	case err != nil:
		return nil, nil, readErr(err)
	default:
		if body, release, err = a.spoolMachineBody(r, head, in); err != nil {
			return nil, nil, readErr(err)
		}
	}
	if len(bytes.TrimSpace(body)) == 0 {
		release()
		return nil, nil, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "a JSON body is required")
	}
	if err := web.DecodeStrictJSON(body, v); err != nil {
		release()
		return nil, nil, err
	}
	return body, release, nil
}

// smallMachineBody is the most of a machine body read into memory before
// room is reserved for it; a larger one is spooled to a file first.
const smallMachineBody = 64 << 10

// spoolMachineBody writes head and the rest of in to a temporary file as
// they arrive, so a slow client holds a file, not memory, then reserves
// room for decoding the body and reads it back.
func (a *api) spoolMachineBody(r *http.Request, head []byte, in io.Reader) (body []byte, release func(), err error) {
	spool, err := os.CreateTemp(a.svc.Config().TempDir, "faxhub-machine-body-")
	if err != nil {
		return nil, nil, fmt.Errorf("spool machine body: %w", err)
	}
	defer func() {
		spool.Close()
		os.Remove(spool.Name())
	}()
	if _, err := spool.Write(head); err != nil {
		return nil, nil, fmt.Errorf("spool machine body: %w", err)
	}
	rest, err := io.Copy(spool, in)
	if err != nil {
		return nil, nil, err
	}
	n := int64(len(head)) + rest
	if release, err = a.svc.Machine.ReserveDocumentRead(r.Context(), n); err != nil {
		return nil, nil, err
	}
	body = make([]byte, n)
	if _, err := spool.ReadAt(body, 0); err != nil {
		release()
		return nil, nil, fmt.Errorf("read spooled machine body: %w", err)
	}
	return body, release, nil
}

// decodeDocument decodes the base64 member: standard base64 (RFC 4648
// section 4) with or without its "=" padding; line breaks are ignored, as
// wrapping encoders (base64(1)) insert them. The URL-safe alphabet and data:
// URIs are refused with a message saying so.
func decodeDocument(s string) ([]byte, error) {
	if strings.TrimSpace(s) == "" {
		return nil, core.Errorf(core.KindInvalid, documents.CodeEmptyFile, "base64 is empty; put the PDF's bytes in it, base64-encoded").With("field", "base64")
	}
	if strings.HasPrefix(s, "data:") {
		return nil, core.Errorf(core.KindInvalid, CodeInvalidBase64, "base64 must be the bare base64 of the PDF, not a data: URI; drop everything up to and including the comma").With("field", "base64")
	}
	pdf, err := base64.StdEncoding.DecodeString(s)
	if err != nil && !strings.Contains(s, "=") {
		pdf, err = base64.RawStdEncoding.DecodeString(s)
	}
	if err != nil {
		hint := ""
		if strings.ContainsAny(s, "-_") {
			hint = " (it contains - or _: that is the URL-safe alphabet; use standard base64 with + and /)"
		}
		return nil, core.Errorf(core.KindInvalid, CodeInvalidBase64, "base64 is not valid standard base64%s", hint).With("field", "base64")
	}
	if len(pdf) == 0 {
		return nil, core.Errorf(core.KindInvalid, documents.CodeEmptyFile, "base64 decodes to no bytes; put the PDF's bytes in it").With("field", "base64")
	}
	return pdf, nil
}

func required(name, value string) error {
	if value == "" {
		return core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "%s is required", name).With("field", name)
	}
	return nil
}

// validateMachineFax prices a fax for a paying machine without side effects;
// it needs no credential because it spends nothing.
func (a *api) validateMachineFax(w http.ResponseWriter, r *http.Request) error {
	if !a.svc.Machine.Enabled() {
		return a.machinePaymentsOff()
	}
	// Before the body is read: a page count of a base64 PDF is work, and
	// anyone may ask for it.
	if err := a.svc.Kernel.Allow(r.Context(), core.LimitMachineValidate, web.ClientIP(r)); err != nil {
		return err
	}
	var body machineValidateBody
	_, release, err := a.readMachineBody(w, r, &body)
	if err != nil {
		return err
	}
	defer release()
	if err := required("to", body.To); err != nil {
		return err
	}
	opts, err := body.options()
	if err != nil {
		return err
	}
	req := machine.QuoteRequest{To: body.To, Cover: body.Cover, Options: opts, ClientIP: web.ClientIP(r)}
	switch {
	case (body.Base64 == nil) == (body.Pages == nil):
		return core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "give exactly one of base64 (the PDF) and pages (its page count)")
	case body.Base64 != nil:
		pdf, err := decodeDocument(*body.Base64)
		if err != nil {
			return err
		}
		req.PDF = pdf
	default:
		if *body.Pages < 1 {
			return core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "pages must be at least 1").With("field", "pages")
		}
		req.Pages = *body.Pages
	}
	q, err := a.svc.Machine.Quote(r.Context(), req)
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, q)
	return nil
}

// createMachineFax is POST /api/v1/machine/faxes: unpaid, a 402 with the
// challenges; paid, the order with its receipt.
func (a *api) createMachineFax(w http.ResponseWriter, r *http.Request) error {
	if !a.svc.Machine.Enabled() {
		return a.machinePaymentsOff()
	}
	var body machineFaxBody
	raw, release, err := a.readMachineBody(w, r, &body)
	if err != nil {
		return err
	}
	defer release()
	for _, f := range [...]struct{ name, value string }{{"to", body.To}, {"request_id", body.RequestID}} {
		if err := required(f.name, f.value); err != nil {
			return err
		}
	}
	pdf, err := decodeDocument(body.Base64)
	if err != nil {
		return err
	}
	opts, err := body.options()
	if err != nil {
		return err
	}
	req := machine.FaxRequest{
		To: body.To, PDF: pdf, RequestID: body.RequestID, Cover: body.Cover, Options: opts,
		BodyDigest: mpp.ContentDigest(raw), ClientIP: web.ClientIP(r),
	}
	readCredential(r.Header.Values("Authorization"), &req)
	res, err := a.svc.Machine.Fax(r.Context(), req)
	if err != nil {
		return err
	}
	return writeMachineResult(w, r, res)
}

// readCredential reads the request's Payment credential into req: the one
// credential, or that there were several, or why it cannot be read. Core
// decides when each is answered.
func readCredential(authorization []string, req *machine.FaxRequest) {
	cred, err := mpp.ParseAuthorization(authorization)
	switch {
	case errors.Is(err, mpp.ErrNoCredential):
	case errors.Is(err, mpp.ErrMultipleCredentials):
		req.MultipleCredentials = true
	case err != nil:
		req.Unreadable = credentialRefusal(err, machine.MalformedCredential)
	default:
		if req.Credential, err = cred.Machine(); err != nil {
			req.Unreadable = credentialRefusal(err, machine.InvalidChallenge)
		}
	}
}

// credentialRefusal is the refusal of a credential the wire format could
// not read: the kind of its problem type (def when it has none) and its
// detail, which never contains the credential.
func credentialRefusal(err error, def machine.RefusalKind) *machine.Refusal {
	ref := &machine.Refusal{Kind: def, Detail: "the credential could not be read"}
	if k, ok := refusalKind(mpp.ProblemOf(err)); ok {
		ref.Kind = k
	}
	if e, ok := errors.AsType[*mpp.Error](err); ok {
		ref.Detail = e.Detail
	}
	return ref
}

// refusalProblems is how each refusal core decides is answered: the
// protocol's problem type, whose HTTP status is 402 (the payer gets the
// challenges and can pay) but for method-unsupported, 400
// (mpp.ProblemType.Status). It is the one mapping between the two.
var refusalProblems = map[machine.RefusalKind]mpp.ProblemType{
	machine.PaymentRequired:       mpp.ProblemPaymentRequired,
	machine.MalformedCredential:   mpp.ProblemMalformedCredential,
	machine.InvalidChallenge:      mpp.ProblemInvalidChallenge,
	machine.MethodUnsupported:     mpp.ProblemMethodUnsupported,
	machine.PaymentExpired:        mpp.ProblemPaymentExpired,
	machine.VerificationFailed:    mpp.ProblemVerificationFailed,
	machine.PaymentActionRequired: mpp.ProblemPaymentActionRequired,
}

// refusalKind is the refusal kind answered with problem type t.
func refusalKind(t mpp.ProblemType) (machine.RefusalKind, bool) {
	for k, pt := range refusalProblems {
		if pt == t {
			return k, true
		}
	}
	return 0, false
}

// orderChallenges filters and orders core's challenges by the client's
// Accept-Payment values; when it accepts none of them, all of them in the
// server's order (a 402 always carries a challenge).
func orderChallenges(chs []machine.Challenge, accept []string) []machine.Challenge {
	offers := make([]mpp.Offer, len(chs))
	for i, c := range chs {
		offers[i] = mpp.Offer{Method: c.Method, Intent: c.Intent}
	}
	ordered := mpp.ParseAcceptPayment(accept).Order(offers)
	if len(ordered) == 0 {
		return chs
	}
	out := make([]machine.Challenge, 0, len(ordered))
	for _, o := range ordered {
		for _, c := range chs {
			if c.Method == o.Method && c.Intent == o.Intent {
				out = append(out, c)
				break
			}
		}
	}
	return out
}

// paymentProblem is the problem+json body of a payment answer: the
// protocol's members (type, title, status, detail, challengeId) plus the
// house code, the last segment of the type, so a REST client switches on
// code here as everywhere else.
type paymentProblem struct {
	mpp.Problem
	Code     string `json:"code"`
	Instance string `json:"instance,omitempty"`
}

// paymentCode is the code of a protocol problem type
// ("…/problems/payment-expired" → "payment-expired").
func paymentCode(t mpp.ProblemType) string { return path.Base(string(t)) }

// writeMachineResult writes core's answer: the order with its receipt, or
// the refusal as a problem with the challenges the client accepts, the
// first of them named by the problem's challengeId.
func writeMachineResult(w http.ResponseWriter, r *http.Request, res *machine.FaxResult) error {
	h := w.Header()
	switch {
	case res.Order != nil:
		if res.Receipt != nil {
			v, err := mpp.ReceiptOf(*res.Receipt).Encode()
			if err != nil {
				return err
			}
			h.Set(mpp.ReceiptHeader, v)
		}
		// A receipt is the payer's own: no shared cache may keep it.
		h.Set("Cache-Control", "private")
		web.WriteJSON(w, http.StatusOK, res.Order)
		return nil
	case res.Refusal != nil:
		t, ok := refusalProblems[res.Refusal.Kind]
		if !ok {
			return fmt.Errorf("rest: no problem type for the machine payment refusal %q", res.Refusal.Kind)
		}
		chs := orderChallenges(res.Challenges, r.Header.Values(mpp.AcceptHeader))
		values := make([]string, len(chs))
		for i, c := range chs {
			if v, ok := res.Rendered[c.ID]; ok {
				// Rendered by mpp.Binder as core bound it.
				values[i] = v
				continue
			}
			wc := mpp.FromMachine(c)
			v, err := wc.Header()
			if err != nil {
				return fmt.Errorf("rest: render the %s challenge: %w", c.Method, err)
			}
			values[i] = v
		}
		first := ""
		if len(chs) > 0 {
			first = chs[0].ID
		}
		for _, v := range values {
			h.Add("WWW-Authenticate", v)
		}
		if res.RetryAfter > 0 {
			h.Set("Retry-After", strconv.Itoa(res.RetryAfter))
		}
		p := mpp.NewProblem(t, res.Refusal.Detail, first)
		h.Set("Content-Type", "application/problem+json")
		h.Set("Cache-Control", "no-store")
		w.WriteHeader(p.Status)
		_ = json.NewEncoder(w).Encode(paymentProblem{Problem: p, Code: paymentCode(p.Type), Instance: web.LogPath(r.URL.Path)})
		return nil
	}
	return errors.New("rest: machine payment answered neither an order nor a refusal")
}

// getMachineFaxStatus is the status URL of a paid order: the token in the
// path is its capability, so it needs no credential.
func (a *api) getMachineFaxStatus(w http.ResponseWriter, r *http.Request) error {
	if !a.svc.Machine.Enabled() {
		return a.machinePaymentsOff()
	}
	o, err := a.svc.Machine.FaxStatus(r.Context(), r.PathValue("token"))
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, o)
	return nil
}
