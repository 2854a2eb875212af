package machine

import (
	"bytes"
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/credits"
	"github.com/faxhub/faxhub/core/documents"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/payments"
	"github.com/faxhub/faxhub/core/seal"
)

const (
	// machineChallengeSecret names the server secret challenges are bound
	// under (HMAC): every replica verifies what another offered.
	machineChallengeSecret = "mpp-challenge"
	// machineCredentialSecret seals a claim's credential while it settles.
	machineCredentialSecret  = "mpp-credential"
	machineCredentialPurpose = "faxhub machine payment credentials v1"
	// maxRequestIDLen bounds request_id: 1-200 printable ASCII.
	maxRequestIDLen = 200
	// machineIntent is the only MPP intent offered.
	machineIntent = "charge"
	// notMinedRetryAfter is the Retry-After of a transfer the node has
	// not seen mined yet.
	notMinedRetryAfter = 2
	// paymentInProgressRetryAfter is the Retry-After of a retry racing
	// the one that settles.
	paymentInProgressRetryAfter = 1
)

// errChargeReferenceUsed ends a settlement transaction whose charge was
// refused because the method's reference (a transaction hash) paid for
// another charge already.
var errChargeReferenceUsed = errors.New("core: the payment reference paid for another charge already")

// errChargeRecorded ends a settlement transaction that found the charge
// recorded by a concurrent winner.
var errChargeRecorded = errors.New("core: the charge was recorded concurrently")

// machineOn refuses machine calls while --machine-payments is off or no
// method is configured.
func (s *Service) machineOn() error {
	if !s.cfg.Enabled {
		return core.Errorf(core.KindUnavailable, CodeMachinePaymentsOff, "machine payments are disabled on this server; use an API key with prepaid credits")
	}
	if len(s.machineOffers()) == 0 {
		return core.Errorf(core.KindUnavailable, CodeMachinePaymentsMissing, "machine payments are enabled but no payment method is configured on this server")
	}
	return nil
}

// machineOffers are the methods on offer now: a method is offered only
// while a fax provider of its mode is configured (no money for faxes
// nobody can send).
func (s *Service) machineOffers() []Method {
	var out []Method
	for _, m := range s.d.Machine {
		if m.Method != nil && s.d.Providers[m.Mode] != nil {
			out = append(out, m)
		}
	}
	return out
}

// Offers lists the methods on offer now, in offer order, as
// discovery (/openapi.json's x-payment-info, /llms.txt) names them.
func (s *Service) Offers() []Offer {
	var out []Offer
	for _, m := range s.machineOffers() {
		out = append(out, Offer{Method: m.Method.Name(), Intent: m.intent(), Currency: m.Currency})
	}
	return out
}

func (s *Service) machineMethod(name string) (Method, bool) {
	for _, m := range s.machineOffers() {
		if m.Method.Name() == name {
			return m, true
		}
	}
	return Method{}, false
}

func (m Method) intent() string {
	if m.Intent == "" {
		return machineIntent
	}
	return m.Intent
}

// amount converts a price into the method's base units, rounded up to a
// whole unit and raised to the method's minimum.
func (m Method) amount(priceMicros int64) (units int64, minimum bool) {
	per := max(m.UnitsPerUSD, 1)
	units = (priceMicros*per + core.MicrosPerDollar - 1) / core.MicrosPerDollar
	if units < m.MinAmount {
		return m.MinAmount, true
	}
	return max(units, 1), false
}

func (m Method) offer(priceMicros int64) OfferView {
	units, minimum := m.amount(priceMicros)
	return OfferView{
		Method: m.Method.Name(), Intent: m.intent(), Amount: strconv.FormatInt(units, 10), Currency: m.Currency,
		Mode: m.Mode, Minimum: minimum, Refunds: m.Refunds,
	}
}

// Quote prices a machine fax without side effects (validate).
func (s *Service) Quote(ctx context.Context, r QuoteRequest) (*Quote, error) {
	if err := s.machineOn(); err != nil {
		return nil, err
	}
	if err := checkMachineOptions(r.Options); err != nil {
		return nil, err
	}
	opts, err := s.faxes.PrepareOptions(ctx, core.Principal{OwnerID: core.MachineOwnerID}, faxes.SendRequest{To: r.To, Cover: r.Cover, Options: r.Options})
	if err != nil {
		return nil, err
	}
	pages := r.Pages
	if r.PDF != nil {
		n, err := s.machinePages(ctx, r.PDF, r.ClientIP)
		if err != nil {
			return nil, err
		}
		pages = n
	}
	if pages < 1 {
		return nil, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "give the document (base64) or its page count (pages ≥ 1)")
	}
	q, err := s.faxes.Price(r.To, pages, opts.HasCover())
	if err != nil {
		return nil, err
	}
	out := &Quote{Quote: q, Offers: []OfferView{}}
	for _, m := range s.machineOffers() {
		out.Offers = append(out.Offers, m.offer(q.AmountMicros))
	}
	return out, nil
}

// machinePages checks that pdf is a PDF within the limits and counts its
// pages, where it is in memory: a 402 writes no file (issue 32).
func (s *Service) machinePages(ctx context.Context, pdf []byte, clientIP string) (int, error) {
	if len(pdf) == 0 {
		return 0, core.Errorf(core.KindInvalid, documents.CodeEmptyFile, "the document is empty")
	}
	if int64(len(pdf)) > s.cfg.MaxPDFBytes {
		return 0, core.Errorf(core.KindTooLarge, documents.CodeFileTooLarge, "the document may be at most %d bytes", s.cfg.MaxPDFBytes).
			With("limit", s.cfg.MaxPDFBytes)
	}
	pages, err := s.d.Converter.CountPDF(ctx, documents.CountRequest{PDF: pdf, OwnerID: "machine:" + clientIP, MaxPages: s.documents.MaxPages()})
	if core.ErrorCode(err) == documents.CodeUnsupportedType {
		return 0, core.Errorf(core.KindUnsupportedMedia, documents.CodeUnsupportedType, "the machine endpoint takes a PDF").With("supported", []documents.FileKind{documents.FilePDF})
	}
	if err != nil {
		return 0, err
	}
	switch {
	case pages > s.documents.MaxPages():
		return 0, core.Errorf(core.KindUnprocessable, documents.CodeTooManyPages, "the document has %d pages; the limit is %d", pages, s.documents.MaxPages()).
			With("pages", pages).With("limit", s.documents.MaxPages())
	case pages < 1:
		return 0, core.Errorf(core.KindUnprocessable, documents.CodeCorruptDocument, "the document has no pages")
	}
	return pages, nil
}

// validRequestID: 1-200 printable ASCII characters.
func validRequestID(id string) bool {
	if id == "" || len(id) > maxRequestIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] < 0x21 || id[i] > 0x7e {
			return false
		}
	}
	return true
}

// Fax answers one POST /api/v1/machine/faxes. Client mistakes are
// *Error (400 invalid, 409 request_id_conflict, 400
// multiple_payment_credentials, 413/415/422 document, 429, 503 disabled or
// payment_processor_unavailable); everything the payer can pay or retry is
// a FaxResult.
func (s *Service) Fax(ctx context.Context, r FaxRequest) (*FaxResult, error) {
	if err := s.machineOn(); err != nil {
		return nil, err
	}
	// Every request counts against its address's limit, refused or not,
	// and the limit's refusal comes before any other answer. A request
	// without a credential (nearly always a request_id's first) is charged
	// in the transaction that records its request_id, one write instead of
	// two (issue 32); an address refused already is refused here, before
	// its document is read. Whatever stops it before that transaction, it
	// is charged on the way out.
	c := &rateCharge{deferred: r.Credential == nil && r.Unreadable == nil}
	check := s.kernel.Allow
	if c.deferred {
		check = s.kernel.Peek
	}
	if err := check(ctx, core.LimitMachineFax, r.ClientIP); err != nil {
		return nil, err
	}
	res, err := s.fax(ctx, r, c)
	if c.deferred && !c.charged {
		if lerr := s.kernel.Allow(ctx, core.LimitMachineFax, r.ClientIP); lerr != nil {
			return nil, lerr
		}
	}
	return res, err
}

// rateCharge tracks a request's charge to LimitMachineFax when it is
// deferred to the transaction that records the request_id.
type rateCharge struct {
	deferred bool
	// charged: that transaction decided the charge (admitted and
	// committed, or refused).
	charged bool
}

func (s *Service) fax(ctx context.Context, r FaxRequest, c *rateCharge) (*FaxResult, error) {
	if !validRequestID(r.RequestID) {
		return nil, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "request_id must be 1-%d printable ASCII characters without spaces", maxRequestIDLen)
	}
	if r.BodyDigest == "" {
		return nil, errors.New("machine fax: the adapter gave no body digest")
	}
	if r.MultipleCredentials {
		return nil, core.Errorf(core.KindInvalid, CodeMultipleCredentials, "send exactly one Authorization: Payment credential")
	}
	if err := checkMachineOptions(r.Options); err != nil {
		return nil, err
	}
	secret, err := s.d.Store.Secret(ctx, machineChallengeSecret)
	if err != nil {
		return nil, fmt.Errorf("challenge secret: %w", err)
	}

	req, err := s.machineRequest(ctx, r, secret, c)
	if err != nil {
		return nil, err
	}
	if req.Status == RequestPaid {
		return s.storedOrder(ctx, req)
	}
	switch {
	case r.Unreadable != nil:
		return s.challengeResult(ctx, req, *r.Unreadable, 0)
	case r.Credential == nil:
		return s.challengeResult(ctx, req, Refusal{PaymentRequired, "this fax costs " + core.FormatUSD(req.PriceMicros) + " USD; pay with one of the offered methods"}, 0)
	}
	ch := r.Credential.Challenge
	m, refusal := s.checkCredential(ch, r, secret)
	if refusal != nil && refusal.Kind == PaymentExpired {
		// A challenge claimed while it was live is finished however late
		// its payer comes back: the payment may have been taken.
		if _, err := s.d.Store.GetMachineClaim(ctx, ch.ID); err == nil {
			refusal = nil
		} else if !errors.Is(err, core.ErrNoRows) {
			return nil, err
		}
	}
	if refusal != nil {
		return s.challengeResult(ctx, req, *refusal, 0)
	}
	return s.payMachine(ctx, r, req, r.Credential, m)
}

// machineRequest finds or records the request_id: the same body gets its
// row (with challenges re-issued when they expired), another body a 409,
// a new id a quote and fresh challenges.
func (s *Service) machineRequest(ctx context.Context, r FaxRequest, secret []byte, c *rateCharge) (*Request, error) {
	// A request without a credential is nearly always a request_id's first
	// one, so it is recorded without reading the row first (issue 32). What
	// it answers stays what reading first answers: when it cannot be
	// recorded, for whatever reason, the row is read, and a row that is
	// there is answered as before (409 for another body, its challenges or
	// stored 200 for this one) ahead of the error that stopped the
	// recording; only with no row is that error the answer, as it was.
	var freshErr error
	if r.Credential == nil && r.Unreadable == nil {
		req, err := s.newMachineRequest(ctx, r, secret, c)
		switch {
		case err == nil:
			return req, nil
		case core.ErrorKind(err) == core.KindRateLimited:
			return nil, err // the limit's refusal comes first
		case !errors.Is(err, core.ErrExists):
			freshErr = err
		}
	}
	for range 3 {
		req, err := s.d.Store.GetMachineRequest(ctx, r.RequestID)
		switch {
		case errors.Is(err, core.ErrNoRows) && freshErr != nil:
			return nil, freshErr
		case errors.Is(err, core.ErrNoRows):
			req, err = s.newMachineRequest(ctx, r, secret, c)
			if errors.Is(err, core.ErrExists) {
				continue // a concurrent request recorded it: read it
			}
			return req, err
		case err != nil:
			return nil, err
		}
		if req.BodyDigest != r.BodyDigest {
			return nil, core.Errorf(core.KindConflict, CodeRequestIDConflict, "this request_id was used with a different body; use a fresh request_id per fax")
		}
		// Live challenges an earlier version stored as rendered headers are
		// issued again when they are answered (offered).
		if req.Status == RequestPaid || s.now().Before(req.ChallengesExpireAt) {
			return req, nil
		}
		req, err = s.reissueChallenges(ctx, req, secret)
		if errors.Is(err, core.ErrConflict) {
			continue // a concurrent request re-issued them: read them
		}
		return req, err
	}
	return nil, fmt.Errorf("machine request %q: changed concurrently three times", r.RequestID)
}

// checkMachineOptions refuses what a machine fax cannot have: a sendAt.
// A machine pays when it asks and has no account: nothing can be held
// until the fax goes out, and it has no way to cancel a fax before then
// (its status link only reads), so a scheduled machine fax would be money
// taken now for a fax that cannot be called back, and a push transfer
// (tempo) cannot even be refunded. Machine faxes go out when paid.
func checkMachineOptions(o faxes.Options) error {
	if o.SendAt != nil {
		return core.Errorf(core.KindInvalid, core.CodeInvalidRequest,
			"sendAt is not offered to machine payments: a machine fax is paid when asked and goes out then (there is no account to hold the price, and no way to cancel it before a later time); send the request when the fax should go").
			With("field", "sendAt")
	}
	return nil
}

// newMachineRequest records a new request_id, charging c's deferred
// event in the same transaction; ErrExists when the request_id is taken
// (the charge then stands).
func (s *Service) newMachineRequest(ctx context.Context, r FaxRequest, secret []byte, c *rateCharge) (*Request, error) {
	e164, country, err := s.d.Destination.Check(r.To)
	if err != nil {
		return nil, err
	}
	// The options are core's to check (faxes.PrepareOptions), before the
	// document is read; a machine has no fax settings of its own, so empty
	// sender fields stay empty.
	opts, err := s.faxes.PrepareOptions(ctx, core.Principal{OwnerID: core.MachineOwnerID}, faxes.SendRequest{To: r.To, Cover: r.Cover, Options: r.Options})
	if err != nil {
		return nil, err
	}
	pages, err := s.machinePages(ctx, r.PDF, r.ClientIP)
	if err != nil {
		return nil, err
	}
	// A cover page (cover or coverPage) is priced: it is in the amount of
	// every challenge.
	q, err := s.faxes.Price(e164, pages, opts.HasCover())
	if err != nil {
		return nil, err
	}
	now := s.now()
	req := &Request{
		RequestID: r.RequestID, BodyDigest: r.BodyDigest, Destination: e164, Country: country, Pages: pages, Cover: opts.HasCover(),
		Options: opts, PriceMicros: q.AmountMicros, Status: RequestOpen, CreatedAt: now, UpdatedAt: now,
	}
	if _, err := s.issueChallenges(req, secret); err != nil {
		return nil, err
	}
	if !c.deferred || c.charged {
		if err := s.d.Store.CreateMachineRequest(ctx, req); err != nil {
			return nil, err
		}
		return req, nil
	}
	var exists bool
	err = s.inTx(ctx, func(tx Tx) error {
		if err := s.kernel.AllowIn(ctx, tx, core.LimitMachineFax, r.ClientIP); err != nil {
			return err
		}
		err := tx.CreateMachineRequest(ctx, req)
		if exists = errors.Is(err, core.ErrExists); exists {
			return nil // the charge stands; the request_id's row answers
		}
		return err
	})
	c.charged = err == nil || core.ErrorKind(err) == core.KindRateLimited
	switch {
	case err != nil:
		return nil, err
	case exists:
		return nil, core.ErrExists
	}
	return req, nil
}

func (s *Service) reissueChallenges(ctx context.Context, req *Request, secret []byte) (*Request, error) {
	next := *req
	next.Generation++
	next.UpdatedAt = s.now()
	if _, err := s.issueChallenges(&next, secret); err != nil {
		return nil, err
	}
	if err := s.d.Store.ReissueMachineChallenges(ctx, &next); err != nil {
		return nil, err
	}
	return &next, nil
}

// issueChallenges binds one challenge per method on offer for req, expiring
// ChallengeTTL from now, and sets them as req's.
func (s *Service) issueChallenges(req *Request, secret []byte) ([]Challenge, error) {
	if s.d.Binder == nil {
		return nil, errors.New("machine payments: no challenge binder is configured")
	}
	now := s.now()
	expires := now.Add(s.cfg.ChallengeTTL).Truncate(time.Second)
	realm := s.machineRealm()
	opaque := map[string]string{"request_id": req.RequestID}
	if req.Generation > 0 {
		opaque["generation"] = strconv.Itoa(req.Generation)
	}
	var out []Challenge
	rendered := map[string]string{}
	for _, m := range s.machineOffers() {
		units, _ := m.amount(req.PriceMicros)
		request := map[string]any{
			"amount": strconv.FormatInt(units, 10), "currency": m.Currency,
			"description": fmt.Sprintf("fax of %d page(s) to %s", req.Pages, req.Destination), "externalId": req.RequestID,
		}
		if m.Recipient != "" {
			request["recipient"] = m.Recipient
		}
		if len(m.MethodDetails) > 0 {
			request["methodDetails"] = m.MethodDetails
		}
		raw, err := json.Marshal(request)
		if err != nil {
			return nil, fmt.Errorf("encode challenge request: %w", err)
		}
		c := Challenge{
			Realm: realm, Method: m.Method.Name(), Intent: m.intent(), Request: raw, Expires: expires,
			Digest: req.BodyDigest, Opaque: opaque,
		}
		var wire string
		if c.ID, wire, err = s.d.Binder.Issue(secret, c); err != nil {
			return nil, fmt.Errorf("bind %s challenge: %w", m.Method.Name(), err)
		}
		if wire != "" {
			rendered[c.ID] = wire
		}
		out = append(out, c)
	}
	raw, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("encode challenges: %w", err)
	}
	req.Challenges, req.ChallengesExpireAt, req.issued, req.rendered = raw, expires, out, rendered
	return out, nil
}

// storedChallenge is an entry of a request's stored challenges: a
// Challenge or, in a row written by an earlier version, {id, method,
// intent, header} with the rendered WWW-Authenticate value and no realm.
type storedChallenge struct {
	Challenge
	Header string `json:"header,omitempty"`
}

// decodeChallenges reads a request's stored challenges. legacy reports a
// row of an earlier version, whose challenges core cannot read back: they
// are issued again (a payer who pays one of them still verifies, by its
// binding).
func decodeChallenges(raw []byte) (chs []Challenge, legacy bool, err error) {
	var stored []storedChallenge
	if err := json.Unmarshal(raw, &stored); err != nil {
		return nil, false, fmt.Errorf("decode stored challenges: %w", err)
	}
	for _, c := range stored {
		if c.Realm == "" {
			return nil, true, nil
		}
		chs = append(chs, c.Challenge)
	}
	return chs, false, nil
}

// offered returns req's challenges. Those of a row of an earlier version
// are issued again, as if they had expired: stored while the request is
// open (a compare-and-set, as machineRequest's re-issue), for this answer
// only once it is paid. Nothing else reads them: a credential is checked
// by its binding, so an old challenge is still paid.
func (s *Service) offered(ctx context.Context, req *Request) ([]Challenge, error) {
	for range 3 {
		chs, legacy, err := decodeChallenges(req.Challenges)
		if err != nil || !legacy {
			return chs, err
		}
		secret, err := s.d.Store.Secret(ctx, machineChallengeSecret)
		if err != nil {
			return nil, fmt.Errorf("challenge secret: %w", err)
		}
		if req.Status == RequestPaid {
			next := *req
			return s.issueChallenges(&next, secret)
		}
		next, err := s.reissueChallenges(ctx, req, secret)
		if errors.Is(err, core.ErrConflict) {
			if req, err = s.d.Store.GetMachineRequest(ctx, req.RequestID); err != nil {
				return nil, err
			}
			continue // re-issued concurrently: read them
		}
		if err != nil {
			return nil, err
		}
		req = next
	}
	return nil, fmt.Errorf("machine request %q: challenges changed concurrently three times", req.RequestID)
}

// machineRealm is the host name of the API origin, without a port: MPP
// clients (mppx validate) compare the realm with the server's host name.
func (s *Service) machineRealm() string {
	if u, err := url.Parse(s.kc.APIURL); err == nil && u.Hostname() != "" {
		return u.Hostname()
	}
	return s.kc.APIURL
}

// challengeResult refuses with why and req's challenges, every one on
// offer in the server's order.
func (s *Service) challengeResult(ctx context.Context, req *Request, why Refusal, retryAfter int) (*FaxResult, error) {
	if why.Kind == 0 {
		why.Kind = MalformedCredential
	}
	if req.issued != nil {
		return &FaxResult{Refusal: &why, Challenges: req.issued, Rendered: req.rendered, RetryAfter: retryAfter}, nil
	}
	chs, err := s.offered(ctx, req)
	if err != nil {
		return nil, err
	}
	return &FaxResult{Refusal: &why, Challenges: chs, RetryAfter: retryAfter}, nil
}

// checkCredential verifies what a credential's challenge claims: our
// binding, our realm, a method on offer, not expired, this body and this
// request_id. The amount and currency are the echoed request's: the
// binding proves we offered them.
func (s *Service) checkCredential(ch Challenge, r FaxRequest, secret []byte) (Method, *Refusal) {
	if !s.bound(ch, secret) {
		return Method{}, &Refusal{InvalidChallenge, "the challenge was not issued by this server (or was altered)"}
	}
	if ch.Realm != s.machineRealm() {
		return Method{}, &Refusal{InvalidChallenge, "the challenge is for another realm"}
	}
	m, ok := s.machineMethod(ch.Method)
	if !ok || ch.Intent != m.intent() {
		return Method{}, &Refusal{MethodUnsupported, fmt.Sprintf("the method %q is not offered here", ch.Method)}
	}
	// A challenge issued for another request_id is not one outstanding for
	// this request: invalid-challenge, as the MPP draft names an unknown or
	// used challenge (docs/payments.md). Checked before the digest, which
	// differs too whenever the request_id does (it is in the body).
	if ch.Opaque["request_id"] != r.RequestID {
		return m, &Refusal{InvalidChallenge, "the challenge was issued for another request_id; pay one of this request's challenges"}
	}
	if ch.Digest != r.BodyDigest {
		return m, &Refusal{VerificationFailed, "the body differs from the one the challenge was issued for"}
	}
	// Last, so that a caller may let an expired but claimed challenge
	// through knowing everything else holds.
	if ch.Expired(s.now()) {
		return m, &Refusal{PaymentExpired, "the challenge expired; pay one of the fresh challenges"}
	}
	return m, nil
}

// bound reports whether ch's id is its binding under secret: the Binder
// computes it again and the ids are compared in constant time.
func (s *Service) bound(ch Challenge, secret []byte) bool {
	if len(secret) == 0 || ch.ID == "" || s.d.Binder == nil {
		return false
	}
	id, err := s.d.Binder.Bind(secret, ch)
	return err == nil && hmac.Equal([]byte(id), []byte(ch.ID))
}

// chargeRequest is the part of a challenge's request a charge needs.
type chargeRequest struct {
	Amount   string `json:"amount"`
	Currency string `json:"currency"`
}

// machineIdempotencyKey is what a method settles a claim under: the
// challenge and a hash of the credential (never the credential), so a
// retry with the same credential replays and another credential is
// another charge.
func machineIdempotencyKey(challengeID string, payload []byte) string {
	sum := sha256.Sum256(payload)
	return core.PrefixMachineSettlement + challengeID + "_" + hex.EncodeToString(sum[:])[:32]
}

// payMachine claims the challenge, settles it with the method and, if it
// pays, records charge, fax, job and answer in one transaction.
func (s *Service) payMachine(ctx context.Context, r FaxRequest, req *Request, cred *Credential, m Method) (*FaxResult, error) {
	ch := cred.Challenge
	var cr chargeRequest
	if err := json.Unmarshal(ch.Request, &cr); err != nil {
		return s.challengeResult(ctx, req, Refusal{InvalidChallenge, "the challenge request is not a charge request"}, 0)
	}
	amount, err := strconv.ParseInt(cr.Amount, 10, 64)
	if err != nil || amount <= 0 || cr.Currency == "" {
		return s.challengeResult(ctx, req, Refusal{InvalidChallenge, "the challenge request has no valid amount and currency"}, 0)
	}
	claim, res, err := s.claimChallenge(ctx, r, req, cred, ch, m, amount, cr.Currency)
	if err != nil || res != nil {
		return res, err
	}
	payload := cred.Payload
	if claim.IdempotencyKey != machineIdempotencyKey(ch.ID, cred.Payload) {
		// Taken over from an interrupted settlement of another
		// credential: finish that one, under its own key.
		if payload, err = s.openMachineCredential(ctx, claim.ChallengeID, claim.Credential); err != nil {
			return nil, err
		}
	}
	return s.settleClaim(ctx, claim, payload)
}

// claimChallenge stores the document and claims the challenge in one
// transaction. It answers res (and no claim) where the claim is not this
// request's to settle.
func (s *Service) claimChallenge(ctx context.Context, r FaxRequest, req *Request, cred *Credential, ch Challenge, m Method, amount int64, currency string) (*Claim, *FaxResult, error) {
	key := machineIdempotencyKey(ch.ID, cred.Payload)
	sealed, err := s.sealMachineCredential(ctx, ch.ID, cred.Payload)
	if err != nil {
		return nil, nil, err
	}
	// A claim that exists already is answered without storing the
	// document again.
	if prev, err := s.d.Store.GetMachineClaim(ctx, ch.ID); err == nil {
		if res, err := s.existingClaim(ctx, prev, r, req, key); res != nil || err != nil {
			return nil, res, err
		}
	} else if !errors.Is(err, core.ErrNoRows) {
		return nil, nil, err
	}
	doc, err := s.machineDocument(ctx, r, m.Mode, req.Pages)
	if err != nil {
		return nil, nil, err
	}
	now := s.now()
	claim := &Claim{
		ChallengeID: ch.ID, RequestID: r.RequestID, Method: m.Method.Name(), Mode: m.Mode, IdempotencyKey: key,
		Amount: amount, Currency: currency, Credential: sealed, State: ClaimSettling,
		LeaseUntil: now.Add(s.cfg.SettleLease), DocumentID: doc.ID, CreatedAt: now, UpdatedAt: now,
	}
	err = s.inTx(ctx, func(tx Tx) error {
		err := tx.InsertMachineClaim(ctx, claim)
		if errors.Is(err, core.ErrExists) {
			if err = tx.TakeOverMachineClaim(ctx, claim, now); err != nil {
				return err
			}
			cur, err := tx.GetMachineClaim(ctx, ch.ID)
			if err != nil {
				return err
			}
			claim = cur
		} else if err != nil {
			return err
		}
		if claim.DocumentID != doc.ID {
			return nil // an interrupted settlement's own document stays
		}
		if err := tx.CreateDocument(ctx, doc); err != nil {
			return fmt.Errorf("create document: %w", err)
		}
		return nil
	})
	if err == nil && claim.DocumentID == doc.ID {
		return claim, nil, nil
	}
	if derr := s.documents.DeleteBlobs(context.WithoutCancel(ctx), doc); derr != nil {
		s.d.Logger.WarnContext(ctx, "delete blobs of a machine document that was not stored", "err", derr)
	}
	if err == nil {
		return claim, nil, nil
	}
	if !errors.Is(err, core.ErrConflict) {
		return nil, nil, err
	}
	// Lost the race for the claim: answer as its state says.
	prev, gerr := s.d.Store.GetMachineClaim(ctx, ch.ID)
	if gerr != nil {
		return nil, nil, gerr
	}
	res, err := s.existingClaim(ctx, prev, r, req, key)
	if res == nil && err == nil {
		err = paymentInProgress()
	}
	return nil, res, err
}

func paymentInProgress() error {
	return core.Errorf(core.KindConflict, CodePaymentInProgress, "a request with this credential is settling it; retry shortly for its answer").
		WithRetryAfter(paymentInProgressRetryAfter)
}

// existingClaim answers a retry whose challenge was claimed before: the
// stored 200 when it paid this request, a refusal when it paid another,
// payment_in_progress while another request settles it. It returns
// nothing when the caller may take the claim over (a lapsed lease, or a
// failed claim and another credential).
func (s *Service) existingClaim(ctx context.Context, prev *Claim, r FaxRequest, req *Request, key string) (*FaxResult, error) {
	switch prev.State {
	case ClaimPaid:
		if prev.RequestID == r.RequestID {
			paid, err := s.d.Store.GetMachineRequest(ctx, r.RequestID)
			if err != nil {
				return nil, err
			}
			return s.storedOrder(ctx, paid)
		}
		return s.challengeResult(ctx, req, Refusal{InvalidChallenge, "this challenge was already used"}, 0)
	case ClaimFailed:
		if prev.IdempotencyKey == key {
			kind, msg := failureRefusal(prev.Failure)
			return s.challengeResult(ctx, req, Refusal{kind, cmp.Or(msg, "this credential was refused")}, 0)
		}
		return nil, nil
	}
	if s.now().Before(prev.LeaseUntil) {
		return nil, paymentInProgress()
	}
	return nil, nil
}

// machineDocument stores the PDF's blob and returns its document row, for
// the claim's transaction to insert. The PDF is in memory (the body was
// read whole): it is written to the blob store from there.
func (s *Service) machineDocument(ctx context.Context, r FaxRequest, mode core.Mode, pages int) (*documents.Document, error) {
	sum := sha256.Sum256(r.PDF)
	doc := &documents.Document{
		ID: core.NewID(core.PrefixDocument), OwnerID: core.MachineOwnerID, Mode: mode, SourceType: string(documents.FilePDF),
		SourceBytes: int64(len(r.PDF)), Pages: pages, SHA256: hex.EncodeToString(sum[:]), CreatedAt: s.now(),
	}
	doc.SourceKey = fmt.Sprintf("%s/%s/%s/source", core.MachineOwnerID, mode, doc.ID)
	doc.PDFKey = doc.SourceKey
	var err error
	if doc.PDFBytes, err = s.documents.Put(ctx, doc.SourceKey, bytes.NewReader(r.PDF), string(documents.FilePDF)); err != nil {
		return nil, err
	}
	return doc, nil
}

func (s *Service) sealMachineCredential(ctx context.Context, challengeID string, payload []byte) ([]byte, error) {
	key, err := s.d.Store.Secret(ctx, machineCredentialSecret)
	if err != nil {
		return nil, fmt.Errorf("credential key: %w", err)
	}
	return seal.Seal(key, machineCredentialPurpose, []byte(challengeID), payload)
}

func (s *Service) openMachineCredential(ctx context.Context, challengeID string, sealed []byte) ([]byte, error) {
	key, err := s.d.Store.Secret(ctx, machineCredentialSecret)
	if err != nil {
		return nil, fmt.Errorf("credential key: %w", err)
	}
	plain, err := seal.Open(key, machineCredentialPurpose, []byte(challengeID), sealed)
	if err != nil {
		return nil, fmt.Errorf("open machine credential: %w", err)
	}
	return plain, nil
}

// settleClaim asks the method to settle a claim this process holds and
// finishes it as the verdict says. The sweeper calls it too, for claims
// whose settlement was interrupted.
func (s *Service) settleClaim(ctx context.Context, claim *Claim, payload json.RawMessage) (*FaxResult, error) {
	m, ok := s.machineMethod(claim.Method)
	if !ok {
		return nil, core.Errorf(core.KindUnavailable, CodePaymentProcessorUnavailable, "the payment method %q is no longer configured", claim.Method)
	}
	res, err := m.Method.Charge(ctx, payments.ChargeRequest{
		IdempotencyKey: claim.IdempotencyKey, Amount: claim.Amount, Currency: claim.Currency, Credential: payload,
		Description: "faxhub fax, request " + claim.RequestID,
		Metadata:    map[string]string{"challenge_id": claim.ChallengeID, "request_id": claim.RequestID},
	})
	bg := context.WithoutCancel(ctx)
	if err != nil {
		if rerr := s.d.Store.ReleaseMachineClaim(bg, claim.ChallengeID, s.now()); rerr != nil {
			s.d.Logger.WarnContext(ctx, "release machine claim", "challenge_id", claim.ChallengeID, "err", rerr)
		}
		if errors.Is(err, payments.ErrPending) {
			req, gerr := s.d.Store.GetMachineRequest(bg, claim.RequestID)
			if gerr != nil {
				return nil, gerr
			}
			return s.challengeResult(bg, req, Refusal{VerificationFailed,
				"the payment is not settled yet (the transaction is not mined); retry the same credential shortly"}, notMinedRetryAfter)
		}
		s.d.Logger.WarnContext(ctx, "machine payment: no verdict", "challenge_id", claim.ChallengeID, "method", claim.Method, "err", err)
		return nil, core.Errorf(core.KindUnavailable, CodePaymentProcessorUnavailable, "the payment processor could not be reached; retry the same credential").
			WithRetryAfter(paymentInProgressRetryAfter)
	}
	if res.Status != payments.StatusSucceeded {
		return s.refuseClaim(bg, claim, res)
	}
	return s.finishPaid(bg, claim, m, res)
}

// actionRequiredPrefix marks a stored claim failure whose credential needs
// its holder's action, so a replay answers the same refusal.
const actionRequiredPrefix = "action required: "

// failureRefusal reads a stored claim failure back into its refusal.
func failureRefusal(failure string) (RefusalKind, string) {
	if msg, ok := strings.CutPrefix(failure, actionRequiredPrefix); ok {
		return PaymentActionRequired, msg
	}
	return VerificationFailed, failure
}

// refuseClaim records a method's refusal and answers a fresh 402.
func (s *Service) refuseClaim(ctx context.Context, claim *Claim, res payments.Result) (*FaxResult, error) {
	kind := VerificationFailed
	msg := cmp.Or(core.CutUTF8(res.Message, 300), "the payment method refused the credential ("+string(res.Status)+")")
	stored := msg
	if res.Status == payments.StatusRequiresAction {
		kind, stored = PaymentActionRequired, actionRequiredPrefix+msg
	}
	if err := s.d.Store.FinishMachineClaim(ctx, claim.ChallengeID, ClaimFailed, nil, stored, s.now()); err != nil && !errors.Is(err, core.ErrConflict) {
		return nil, err
	}
	s.d.Logger.InfoContext(ctx, "machine payment refused", "challenge_id", claim.ChallengeID, "method", claim.Method, "status", res.Status)
	req, err := s.d.Store.GetMachineRequest(ctx, claim.RequestID)
	if err != nil {
		return nil, err
	}
	if req.Status == RequestPaid {
		return s.storedOrder(ctx, req)
	}
	return s.challengeResult(ctx, req, Refusal{kind, msg}, 0)
}

// finishPaid records a settled claim: the charge, the fax and its
// delivery job, the claim paid and the request's stored answer, in one
// transaction. A concurrent finisher of the same claim wins quietly; a
// reference that paid for another charge (a reused transaction hash)
// fails the claim.
func (s *Service) finishPaid(ctx context.Context, claim *Claim, m Method, res payments.Result) (*FaxResult, error) {
	var (
		stored *Request
		double bool
	)
	err := s.inTx(ctx, func(tx Tx) error {
		stored, double = nil, false
		cur, err := tx.GetMachineClaim(ctx, claim.ChallengeID)
		if err != nil {
			return err
		}
		if cur.State != ClaimSettling || cur.IdempotencyKey != claim.IdempotencyKey {
			return errChargeRecorded
		}
		req, err := tx.GetMachineRequest(ctx, claim.RequestID)
		if err != nil {
			return err
		}
		if req.Status == RequestPaid {
			// Another challenge of this request paid first (the payer paid
			// twice): this charge is recorded and refunded in whole.
			double = true
			return s.recordDoublePayment(ctx, tx, claim, m, res, req)
		}
		now := s.now()
		f := &faxes.Fax{
			ID: core.NewID(core.PrefixFax), OwnerID: core.MachineOwnerID, Mode: claim.Mode, Status: faxes.Queued, To: req.Destination,
			DocumentID: claim.DocumentID, Pages: req.Pages, Cover: req.Cover, CoverText: req.Options.CoverMessage(), Options: req.Options,
			PriceMicros: req.PriceMicros, Currency: core.Currency,
			PaymentMethod: faxes.PayMachine, CreatedAt: now, UpdatedAt: now, SentBy: faxes.SentByMachine(string(claim.Method)),
		}
		if err := s.faxes.CreateFax(ctx, tx, faxes.NewFax{Fax: f}); err != nil {
			return err
		}
		c := &credits.Charge{
			ID: core.NewID(core.PrefixCharge), Mode: claim.Mode, Method: claim.Method, Purpose: credits.ChargeMachineFax,
			IdempotencyKey: claim.IdempotencyKey, AmountMicros: max(req.PriceMicros, 1), Currency: claim.Currency,
			Reference: res.Reference, Status: credits.ChargeSucceeded, FaxID: &f.ID, Subject: claim.ChallengeID, CreatedAt: now,
			RequestID: claim.RequestID, AmountUnits: claim.Amount,
		}
		if err := recordMachineCharge(ctx, tx, c); err != nil {
			return err
		}
		if err := tx.FinishMachineClaim(ctx, claim.ChallengeID, ClaimPaid, &f.ID, "", now); err != nil {
			return err
		}
		s.faxes.Present(f, nil)
		order := s.machineOrder(f, req, c, claim.Method)
		resp, err := json.Marshal(order)
		if err != nil {
			return fmt.Errorf("encode machine order: %w", err)
		}
		// No receipt is stored: every answer derives it from this charge
		// (storedOrder).
		if err := tx.MarkMachineRequestPaid(ctx, req.RequestID, f.ID, resp, "", now); err != nil {
			return err
		}
		req.Status, req.FaxID, req.Response, req.Receipt = RequestPaid, &f.ID, resp, ""
		stored = req
		return nil
	})
	switch {
	case err == nil && double:
		req, gerr := s.d.Store.GetMachineRequest(ctx, claim.RequestID)
		if gerr != nil {
			return nil, gerr
		}
		return s.storedOrder(ctx, req)
	case err == nil:
		s.d.Logger.InfoContext(ctx, "machine fax paid", "fax_id", *stored.FaxID, "request_id", claim.RequestID, "method", claim.Method, "mode", claim.Mode)
		return s.storedOrder(ctx, stored)
	case errors.Is(err, errChargeRecorded):
		req, gerr := s.d.Store.GetMachineRequest(ctx, claim.RequestID)
		if gerr != nil {
			return nil, gerr
		}
		if req.Status == RequestPaid {
			return s.storedOrder(ctx, req)
		}
		return nil, paymentInProgress()
	case errors.Is(err, errChargeReferenceUsed):
		return s.refuseClaim(ctx, claim, payments.Result{Status: payments.StatusInvalid, Message: "this payment (" + res.Reference + ") paid for something already"})
	}
	return nil, err
}

// recordDoublePayment records a charge for a request another challenge
// paid already, owed back in whole, and closes its claim; the caller
// answers the request's stored 200.
func (s *Service) recordDoublePayment(ctx context.Context, tx Tx, claim *Claim, m Method, res payments.Result, req *Request) error {
	now := s.now()
	state, due := RefundDue, claim.Amount
	if !m.Refunds {
		state, due = RefundNotRefundable, 0
	}
	c := &credits.Charge{
		ID: core.NewID(core.PrefixCharge), Mode: claim.Mode, Method: claim.Method, Purpose: credits.ChargeMachineFax,
		IdempotencyKey: claim.IdempotencyKey, AmountMicros: max(req.PriceMicros, 1), Currency: claim.Currency,
		Reference: res.Reference, Status: credits.ChargeSucceeded, Subject: claim.ChallengeID, CreatedAt: now,
		RequestID: claim.RequestID, AmountUnits: claim.Amount, RefundState: state, RefundDueUnits: due,
	}
	if err := recordMachineCharge(ctx, tx, c); err != nil {
		return err
	}
	if err := tx.FinishMachineClaim(ctx, claim.ChallengeID, ClaimFailed, nil, "the request was paid by another challenge; this payment is refunded where the method can", now); err != nil {
		return err
	}
	s.d.Logger.WarnContext(ctx, "machine request paid twice", "request_id", claim.RequestID, "challenge_id", claim.ChallengeID, "refund", state)
	return nil
}

// recordMachineCharge records c in tx. A clash is errChargeRecorded when a
// concurrent finisher recorded this very charge (its idempotency key), and
// errChargeReferenceUsed when the method's reference paid for another.
func recordMachineCharge(ctx context.Context, tx Tx, c *credits.Charge) error {
	err := tx.CreateCharge(ctx, c)
	if !errors.Is(err, core.ErrExists) {
		return err
	}
	if _, kerr := tx.GetChargeByKey(ctx, c.IdempotencyKey); kerr == nil {
		return errChargeRecorded
	}
	return errChargeReferenceUsed
}

// machineOrder is the payer's view of a paid machine fax.
func (s *Service) machineOrder(f *faxes.Fax, req *Request, c *credits.Charge, method string) Order {
	return Order{
		ID: f.ID, Status: f.Status, To: f.To, Pages: f.Pages, Cover: f.Cover, Mode: f.Mode, Options: f.Options,
		Amount: strconv.FormatInt(c.AmountUnits, 10), Currency: c.Currency, Price: core.FormatUSD(f.PriceMicros), Method: method,
		RequestID: req.RequestID, StatusURL: "", PagesSent: f.PagesSent, FailureCode: f.FailureCode, FailureReason: f.FailureReason,
		Refund: c.RefundState, CreatedAt: f.CreatedAt, CompletedAt: f.CompletedAt,
	}
}

// storedOrder answers a paid request's stored 200, with the fax's current
// status and refund, a fresh status link, and the receipt of the charge
// that paid it.
func (s *Service) storedOrder(ctx context.Context, req *Request) (*FaxResult, error) {
	var o Order
	if err := json.Unmarshal(req.Response, &o); err != nil {
		return nil, fmt.Errorf("decode stored machine order: %w", err)
	}
	c, err := s.refreshOrder(ctx, &o)
	if err != nil {
		return nil, err
	}
	if c == nil {
		return nil, fmt.Errorf("machine fax %s of request %q has no charge", o.ID, req.RequestID)
	}
	return &FaxResult{Order: &o, Receipt: receiptOf(c)}, nil
}

// receiptOf is the receipt of the charge that paid a machine fax: what
// settled it, when it was recorded, and for which challenge and request.
// It is the receipt the paid answer carried when it was first given (the
// charge is written in the same transaction, at the same instant, and
// never changes in these fields), so a replay carries the same one.
func receiptOf(c *credits.Charge) *Receipt {
	return &Receipt{
		Status: "success", Method: c.Method, Timestamp: c.CreatedAt, Reference: cmp.Or(c.Reference, c.ID),
		ChallengeID: c.Subject, ExternalID: c.RequestID,
	}
}

// refreshOrder brings an order's status fields up to date and links its
// status URL. It returns the charge that paid the fax (nil when there is
// none).
func (s *Service) refreshOrder(ctx context.Context, o *Order) (*credits.Charge, error) {
	f, err := s.d.Store.GetFaxByID(ctx, o.ID)
	if err != nil {
		return nil, core.StoreErr(err, "fax")
	}
	o.Status, o.PagesSent, o.FailureCode, o.FailureReason, o.CompletedAt = f.Status, f.PagesSent, f.FailureCode, f.FailureReason, f.CompletedAt
	c, err := s.d.Store.GetChargeByFax(ctx, f.ID)
	switch {
	case err == nil:
		o.Refund = c.RefundState
	case errors.Is(err, core.ErrNoRows):
		c = nil
	default:
		return nil, err
	}
	url, err := s.machineStatusURL(ctx, f.ID)
	if err != nil {
		return nil, err
	}
	o.StatusURL = url
	return c, nil
}
