package core

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode"
)

// How often one owner may ask a provider for numbers: a search is a call
// to the provider's API.
const (
	numberSearchInterval = 500 * time.Millisecond
	numberSearchBurst    = 10
)

var (
	countryCode = regexp.MustCompile(`^[A-Z]{2}$`)
	areaCode    = regexp.MustCompile(`^[0-9]{1,6}$`)
)

// numberProvider is the provider that rents mode's numbers.
func (s *Service) numberProvider(m Mode) (NumberProvider, error) {
	if np := s.d.Numbers[m]; np != nil {
		return np, nil
	}
	return nil, Errorf(KindUnavailable, CodeNumbersNotConfigured, "%s-mode fax numbers are not configured on this server (docs/providers.md)", m)
}

// present fills the price and the checkout link of a number for responses.
func (s *Service) PresentNumber(n *Number) *Number {
	n.MonthlyPrice, n.MonthlyCents, n.Currency = FormatUSD(n.MonthlyMicros), CentsUp(n.MonthlyMicros), Currency
	n.CheckoutURL = ""
	if n.Status == NumberAwaitingPayment {
		n.CheckoutURL = s.NumberCheckoutURL(n)
	}
	return n
}

// NumberCheckoutURL is the page where the owner reviews and pays the first
// month of an awaiting_payment number.
func (s *Service) NumberCheckoutURL(n *Number) string {
	return s.cfg.BaseURL + "/console/numbers/" + n.ID + "?mode=" + string(n.Mode)
}

// checkNumberSearch validates and normalises a search.
func (s *Service) checkNumberSearch(q NumberSearch) (NumberSearch, error) {
	q.Country = strings.ToUpper(strings.TrimSpace(q.Country))
	if q.Country == "" {
		q.Country = "US"
	}
	if !countryCode.MatchString(q.Country) {
		return q, Errorf(KindInvalid, CodeInvalidRequest, "country must be an ISO 3166-1 alpha-2 code such as US")
	}
	q.AreaCode = strings.TrimSpace(q.AreaCode)
	if q.AreaCode != "" && !areaCode.MatchString(q.AreaCode) {
		return q, Errorf(KindInvalid, CodeInvalidRequest, "areaCode must be 1 to %d digits", MaxAreaCode)
	}
	q.Locality = strings.TrimSpace(q.Locality)
	if len(q.Locality) > MaxLocality || strings.IndexFunc(q.Locality, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
		return q, Errorf(KindInvalid, CodeInvalidRequest, "locality must be at most %d printable characters", MaxLocality)
	}
	switch {
	case q.Limit < 0 || q.Limit > MaxNumberSearchLimit:
		return q, Errorf(KindInvalid, CodeInvalidRequest, "limit must be between 1 and %d", MaxNumberSearchLimit)
	case q.Limit == 0:
		q.Limit = s.cfg.Numbers.SearchLimit
	}
	return q, nil
}

// SearchNumbers lists numbers that can be rented in p's mode, with their
// monthly price; numbers someone here holds are left out.
func (s *Service) SearchNumbers(ctx context.Context, p Principal, q NumberSearch) ([]AvailableNumber, error) {
	if err := Authorize(p, OpSearchNumbers); err != nil {
		return nil, err
	}
	q, err := s.checkNumberSearch(q)
	if err != nil {
		return nil, err
	}
	q.Number = ""
	monthly, found, err := s.askProvider(ctx, p, q, "search numbers")
	if err != nil {
		return nil, err
	}
	e164s := make([]string, 0, len(found))
	for _, n := range found {
		e164s = append(e164s, n.E164)
	}
	held, err := s.d.Store.HeldNumbers(ctx, p.Mode, e164s)
	if err != nil {
		return nil, err
	}
	out := make([]AvailableNumber, 0, len(found))
	for _, n := range found {
		if held[n.E164] || len(out) == q.Limit {
			continue
		}
		n.MonthlyPrice, n.MonthlyCents, n.Currency = FormatUSD(monthly), CentsUp(monthly), Currency
		out = append(out, n)
	}
	return out, nil
}

// askProvider prices numbers in q.Country and asks p's provider for
// them, within the owner's search rate (each ask is a call to the
// provider's API); what names the ask in errors.
func (s *Service) askProvider(ctx context.Context, p Principal, q NumberSearch, what string) (int64, []AvailableNumber, error) {
	monthly, err := s.d.Prices.NumberMonthly(q.Country)
	if err != nil {
		return 0, nil, err
	}
	np, err := s.numberProvider(p.Mode)
	if err != nil {
		return 0, nil, err
	}
	if err := s.AllowIn(ctx, s.d.Store, "number-search:"+p.OwnerID+":"+string(p.Mode), numberSearchInterval, numberSearchBurst); err != nil {
		return 0, nil, err
	}
	found, err := np.SearchNumbers(ctx, q)
	if err != nil {
		return 0, nil, providerErr(what, err)
	}
	return monthly, found, nil
}

// providerErr reports a provider that failed a request as unavailable
// (502-like): the caller may retry; the cause goes to the log, not to the
// client.
func providerErr(what string, err error) error {
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	return &Error{Kind: KindUnavailable, Code: CodeProviderFailed, Message: "the fax provider could not " + what + " just now; try again shortly", Err: err}
}

// BuyNumberRequest names the number to rent (from a search).
type BuyNumberRequest struct {
	Number string `json:"number"`
	// PayWithCredits pays the first month from the account's credits at
	// once (needs fax:send, like any spending) instead of at a checkout.
	PayWithCredits bool `json:"payWithCredits,omitempty"`
}

// BuyNumber reserves a number for p and returns it awaiting payment, with
// the checkoutUrl where the owner pays its first month (the number is
// reserved for CheckoutTTL). With PayWithCredits the month is paid from
// credits in the same transaction and the number is pending (ordered).
func (s *Service) BuyNumber(ctx context.Context, p Principal, r BuyNumberRequest) (*Number, error) {
	if err := Authorize(p, OpBuyNumber); err != nil {
		return nil, err
	}
	if r.PayWithCredits {
		if err := Authorize(p, OpBuyNumberWithCredits); err != nil {
			return nil, err
		}
	}
	n, err := s.reserveNumber(ctx, p, r)
	if err != nil {
		return nil, err
	}
	return s.PresentNumber(n), nil
}

func (s *Service) reserveNumber(ctx context.Context, p Principal, r BuyNumberRequest) (*Number, error) {
	if strings.TrimSpace(r.Number) == "" {
		return nil, Errorf(KindInvalid, CodeInvalidRequest, "number is required (an E.164 number from search_numbers)")
	}
	e164, country, err := s.d.Destination.Check(r.Number)
	if err != nil {
		return nil, err
	}
	monthly, found, err := s.askProvider(ctx, p, NumberSearch{Country: country, Number: e164, Limit: 1}, "check the number")
	if err != nil {
		return nil, err
	}
	var offer *AvailableNumber
	for i := range found {
		if found[i].E164 == e164 {
			offer = &found[i]
		}
	}
	if offer == nil {
		return nil, Errorf(KindConflict, CodeNumberUnavailable, "%s is not available; search again", e164)
	}
	np, err := s.numberProvider(p.Mode)
	if err != nil {
		return nil, err
	}
	now := s.now()
	until := now.Add(s.cfg.CheckoutTTL)
	n := &Number{
		ID: NewID(PrefixNumber), OwnerID: p.OwnerID, Mode: p.Mode, E164: e164, Country: country,
		Region: CutUTF8(offer.Region, 100), Locality: CutUTF8(offer.Locality, 100), Status: NumberAwaitingPayment,
		Provider: np.Name(), MonthlyMicros: monthly, ReservedUntil: &until, CreatedAt: now, UpdatedAt: now,
	}
	err = s.d.Store.InTx(ctx, func(tx Tx) error {
		counts, err := tx.CountNumbers(ctx, p.OwnerID, p.Mode)
		if err != nil {
			return err
		}
		total := 0
		for _, c := range counts {
			total += c
		}
		if total >= s.cfg.Numbers.MaxPerOwner {
			return Errorf(KindConflict, CodeTooManyNumbers, "this account holds %d numbers, the most it can", total)
		}
		if counts[NumberAwaitingPayment] >= s.cfg.Numbers.MaxUnpaid {
			return Errorf(KindConflict, CodeTooManyNumbers, "this account has %d numbers waiting for payment; pay or cancel one first", counts[NumberAwaitingPayment])
		}
		if err := tx.CreateNumber(ctx, n); errors.Is(err, ErrExists) {
			return Errorf(KindConflict, CodeNumberUnavailable, "%s is taken; search again", e164)
		} else if err != nil {
			return err
		}
		if !r.PayWithCredits {
			return nil
		}
		return s.payNumberWithCredits(ctx, tx, n)
	})
	if IsInsufficient(err) {
		return nil, numberCostsTooMuch(monthly, p.Mode)
	}
	if err != nil {
		return nil, err
	}
	s.d.Logger.InfoContext(ctx, "number reserved", "number_id", n.ID, "owner_id", n.OwnerID, "mode", n.Mode)
	return n, nil
}

// ListNumbers lists p's numbers in its mode: those it holds, or every one
// it ever had when all is set.
func (s *Service) ListNumbers(ctx context.Context, p Principal, all bool) ([]Number, error) {
	if err := Authorize(p, OpListNumbers); err != nil {
		return nil, err
	}
	ns, err := s.d.Store.ListNumbers(ctx, p.OwnerID, p.Mode, all)
	if err != nil {
		return nil, err
	}
	if ns == nil {
		ns = []Number{} // an empty list, never null
	}
	for i := range ns {
		s.PresentNumber(&ns[i])
	}
	return ns, nil
}

// GetNumber reads one of p's numbers; another owner's is not found.
func (s *Service) GetNumber(ctx context.Context, p Principal, id string) (*Number, error) {
	if err := Authorize(p, OpListNumbers); err != nil {
		return nil, err
	}
	n, err := OwnNumber(ctx, s.d.Store, p, id)
	if err != nil {
		return nil, StoreErr(err, "number")
	}
	return s.PresentNumber(n), nil
}

// PayNumberWithCredits pays the first month of one of p's awaiting_payment
// numbers from the balance (fax:send, like any spending) and orders it: the
// owner's alternative to the checkout. Too little credit is
// insufficient_credits and changes nothing.
func (s *Service) PayNumberWithCredits(ctx context.Context, p Principal, id string) (*Number, error) {
	if err := Authorize(p, OpBuyNumberWithCredits); err != nil {
		return nil, err
	}
	var out *Number
	err := s.d.Store.InTx(ctx, func(tx Tx) error {
		n, err := OwnNumber(ctx, tx, p, id)
		if err != nil {
			return StoreErr(err, "number")
		}
		if err := s.NumberPayable(n); err != nil {
			return err
		}
		out = n
		return s.payNumberWithCredits(ctx, tx, n)
	})
	if IsInsufficient(err) {
		return nil, numberCostsTooMuch(out.MonthlyMicros, p.Mode)
	}
	if err != nil {
		return nil, err
	}
	return s.PresentNumber(out), nil
}

// ownNumber reads one of p's numbers in its mode; an id that cannot be
// one of ours is not found without a query.
func OwnNumber(ctx context.Context, q Queries, p Principal, id string) (*Number, error) {
	if !WellFormedID(id) {
		return nil, ErrNoRows
	}
	return q.GetNumber(ctx, p.OwnerID, p.Mode, id)
}

// ReserveUntil keeps an awaiting_payment number reserved at least until
// until (the end of the checkout that pays it).
func (s *Service) ReserveUntil(ctx context.Context, n *Number, until time.Time) error {
	if n.ReservedUntil != nil && !n.ReservedUntil.Before(until) {
		return nil
	}
	n.ReservedUntil, n.UpdatedAt = &until, s.now()
	if err := s.d.Store.UpdateNumber(ctx, n, NumberAwaitingPayment); err != nil {
		return fmt.Errorf("extend reservation of %s: %w", n.ID, err)
	}
	return nil
}

// numberPayable tells whether n's first month can still be paid.
func (s *Service) NumberPayable(n *Number) error {
	if n.Status != NumberAwaitingPayment {
		return Errorf(KindConflict, CodeNumberState, "this number is %s; its first month cannot be paid now", n.Status)
	}
	if n.ReservedUntil != nil && !s.now().Before(*n.ReservedUntil) {
		return Errorf(KindGone, CodeNumberState, "the reservation of this number lapsed; buy it again")
	}
	return nil
}

// PayNumberAtCheckout moves the number of a paid checkout to pending and
// enqueues its order, inside tx.
func (s *Service) PayNumberAtCheckout(ctx context.Context, tx Tx, ownerID string, mode Mode, numberID string) error {
	n, err := tx.GetNumber(ctx, ownerID, mode, numberID)
	if err != nil {
		return StoreErr(err, "number")
	}
	if n.Status != NumberAwaitingPayment {
		return Errorf(KindConflict, CodeNumberState, "this number is %s; nothing more is charged", n.Status)
	}
	if err := s.orderPaid(ctx, tx, n); errors.Is(err, ErrConflict) {
		return Errorf(KindConflict, CodeNumberState, "this number was paid already; nothing more is charged")
	} else if err != nil {
		return err
	}
	return nil
}

// orderPaid moves an awaiting_payment number whose first month was just
// paid to pending, paid for a month from now, and enqueues its order,
// inside tx. ErrConflict when it no longer awaits payment.
func (s *Service) orderPaid(ctx context.Context, tx Tx, n *Number) error {
	now := s.now()
	through := now.AddDate(0, 1, 0)
	n.Status, n.ReservedUntil, n.PaidThrough, n.UpdatedAt = NumberPending, nil, &through, now
	if err := tx.UpdateNumber(ctx, n, NumberAwaitingPayment); err != nil {
		return err
	}
	return s.d.Queue.EnqueueNumberOrder(ctx, tx, n.ID)
}

// chargeMonth takes one month of n from its owner's credits in n's mode:
// a hold captured at once, so the balance check is the ledger's own
// atomic one (ErrInsufficientFunds when it does not cover the month).
func (s *Service) chargeMonth(ctx context.Context, tx Tx, n *Number, holdReason, captureReason string) error {
	now := s.now()
	hold := &LedgerEntry{
		ID: NewID(PrefixLedger), OwnerID: n.OwnerID, Mode: n.Mode, Kind: LedgerHold, AmountMicros: -n.MonthlyMicros,
		Reason: holdReason, CreatedAt: now,
	}
	if err := tx.PlaceHold(ctx, hold); err != nil {
		return err
	}
	return tx.AppendLedger(ctx, &LedgerEntry{
		ID: NewID(PrefixLedger), OwnerID: n.OwnerID, Mode: n.Mode, Kind: LedgerCapture, HoldID: &hold.ID,
		Reason: captureReason, CreatedAt: now,
	})
}

// numberCostsTooMuch is the insufficient_credits answer of paying a
// number's month from a balance that does not cover it.
func numberCostsTooMuch(monthlyMicros int64, m Mode) *Error {
	return Errorf(KindPaymentRequired, CodeInsufficientCredits, "this number costs %s USD a month; the %s balance does not cover it", FormatUSD(monthlyMicros), m).
		With("price", FormatUSD(monthlyMicros)).With("checkoutPath", "/api/v1/credits/checkout")
}

// payNumberWithCredits pays the first month of the just-reserved n from
// its owner's credits (a hold captured at once) and orders it, inside tx.
func (s *Service) payNumberWithCredits(ctx context.Context, tx Tx, n *Number) error {
	if err := s.chargeMonth(ctx, tx, n, "fax number "+n.E164+", first month", "first month of fax number "+n.E164); err != nil {
		return err
	}
	return s.orderPaid(ctx, tx, n)
}

// OrderNumber orders a paid (pending) number at its provider; the
// order_number job runs it. Run again after a crash it orders under the
// same number id, the provider's idempotency key.
func (s *Service) OrderNumber(ctx context.Context, numberID string) error {
	n, err := s.d.Store.GetNumberByID(ctx, numberID)
	if err != nil {
		return fmt.Errorf("load number %s: %w", numberID, err)
	}
	if n.Status != NumberPending || n.OrderRef != "" {
		return nil // ordered already; its outcome arrives separately
	}
	np, err := s.numberProvider(n.Mode)
	if err != nil {
		return err
	}
	res, err := np.OrderNumber(ctx, NumberOrder{NumberID: n.ID, E164: n.E164})
	if err != nil {
		return fmt.Errorf("order number %s: %w", n.ID, err)
	}
	if res.Status == NumberPending {
		if res.OrderRef == "" {
			return fmt.Errorf("order number %s: the provider accepted it without an order reference", n.ID)
		}
		n.OrderRef, n.UpdatedAt = res.OrderRef, s.now()
		if err := s.d.Store.UpdateNumber(ctx, n, NumberPending); err != nil && !errors.Is(err, ErrConflict) {
			return fmt.Errorf("record order of %s: %w", n.ID, err)
		}
		return nil
	}
	return s.applyNumberOrder(ctx, n.ID, res)
}

// GiveUpNumberOrder ends the order of a pending number whose provider never
// accepted it (the order_number job's last attempt failed): the number
// fails and its month returns as credits, as for a failed order.
func (s *Service) GiveUpNumberOrder(ctx context.Context, numberID string, cause error) error {
	s.d.Logger.ErrorContext(ctx, "number order given up", "number_id", numberID, "error", cause)
	return s.applyNumberOrder(ctx, numberID, NumberOrderResult{Status: NumberFailed, FailureReason: "the provider did not accept the order; try another number later"})
}

// RecordNumberOrder records a provider's answer to a number order that
// arrived later (a webhook, the simulator's scheduled outcome). A
// duplicate or a late answer for a number no longer pending changes
// nothing. An order this server has not recorded yet (the answer raced
// the order's own commit) is an error, so the provider retries it.
func (s *Service) RecordNumberOrder(ctx context.Context, provider, orderRef string, res NumberOrderResult) error {
	n, err := s.d.Store.GetNumberByOrderRef(ctx, provider, orderRef)
	if err != nil {
		return fmt.Errorf("number order %s of %s: %w", orderRef, provider, err)
	}
	return s.applyNumberOrder(ctx, n.ID, res)
}

func (s *Service) applyNumberOrder(ctx context.Context, numberID string, res NumberOrderResult) error {
	if res.Status != NumberActive && res.Status != NumberFailed {
		return nil // still provisioning
	}
	return s.d.Store.InTx(ctx, func(tx Tx) error {
		n, err := tx.GetNumberByID(ctx, numberID)
		if err != nil {
			return fmt.Errorf("load number %s: %w", numberID, err)
		}
		if n.Status != NumberPending {
			return nil
		}
		now := s.now()
		n.UpdatedAt = now
		if res.OrderRef != "" && n.OrderRef == "" {
			n.OrderRef = res.OrderRef
		}
		if res.Status == NumberActive {
			n.Status, n.ActivatedAt = NumberActive, &now
			if res.ProviderRef != "" {
				n.ProviderRef = res.ProviderRef
			}
			s.d.Logger.InfoContext(ctx, "number active", "number_id", n.ID, "owner_id", n.OwnerID, "mode", n.Mode)
			return tx.UpdateNumber(ctx, n, NumberPending)
		}
		n.Status, n.PaidThrough = NumberFailed, nil
		n.FailureCode, n.FailureReason = "provisioning_failed", CutUTF8(cmpOr(res.FailureReason, "the provider could not provision the number"), 500)
		if err := tx.UpdateNumber(ctx, n, NumberPending); err != nil {
			return err
		}
		s.d.Logger.WarnContext(ctx, "number provisioning failed; the month returns as credits", "number_id", n.ID, "owner_id", n.OwnerID)
		return tx.AppendLedger(ctx, &LedgerEntry{
			ID: NewID(PrefixLedger), OwnerID: n.OwnerID, Mode: n.Mode, Kind: LedgerRefund, AmountMicros: n.MonthlyMicros,
			Reason: "number " + n.E164 + " could not be provisioned: its first month is credited here", CreatedAt: now,
		})
	})
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// ReleaseNumber gives one of p's numbers back to its provider. An unpaid
// reservation is canceled instead. The rest of a paid month is not
// refunded. A number being provisioned cannot be released until it is
// active.
func (s *Service) ReleaseNumber(ctx context.Context, p Principal, id string) (*Number, error) {
	if err := Authorize(p, OpReleaseNumber); err != nil {
		return nil, err
	}
	n, err := OwnNumber(ctx, s.d.Store, p, id)
	if err != nil {
		return nil, StoreErr(err, "number")
	}
	switch n.Status {
	case NumberAwaitingPayment:
		return s.CancelNumber(ctx, n, "canceled", "canceled before it was paid")
	case NumberActive, NumberPastDue:
		return s.releaseNumber(ctx, n, "", "")
	case NumberPending:
		return nil, Errorf(KindConflict, CodeNumberState, "this number is still being provisioned; release it once it is active")
	}
	return nil, Errorf(KindConflict, CodeNumberState, "this number is %s already", n.Status)
}

func (s *Service) CancelNumber(ctx context.Context, n *Number, code, reason string) (*Number, error) {
	n.Status, n.ReservedUntil, n.UpdatedAt = NumberCanceled, nil, s.now()
	n.FailureCode, n.FailureReason = code, reason
	if err := s.d.Store.UpdateNumber(ctx, n, NumberAwaitingPayment); err != nil {
		if errors.Is(err, ErrConflict) {
			return nil, Errorf(KindConflict, CodeNumberState, "this number was paid meanwhile; release it once it is active")
		}
		return nil, err
	}
	return s.PresentNumber(n), nil
}

// releaseNumber releases n at its provider, then records it. The provider
// call comes first: a crash in between leaves the number active here, and
// releasing it again is harmless at the provider.
func (s *Service) releaseNumber(ctx context.Context, n *Number, code, reason string) (*Number, error) {
	np, err := s.numberProvider(n.Mode)
	if err != nil {
		return nil, err
	}
	if err := np.ReleaseNumber(ctx, n); err != nil {
		return nil, providerErr("release the number", err)
	}
	now := s.now()
	from := n.Status
	n.Status, n.ReleasedAt, n.UpdatedAt = NumberReleased, &now, now
	n.FailureCode, n.FailureReason = code, reason
	if err := s.d.Store.UpdateNumber(ctx, n, from); err != nil {
		if errors.Is(err, ErrConflict) {
			return nil, Errorf(KindConflict, CodeNumberState, "this number changed meanwhile; read it again")
		}
		return nil, err
	}
	s.d.Logger.InfoContext(ctx, "number released", "number_id", n.ID, "owner_id", n.OwnerID, "code", code)
	return s.PresentNumber(n), nil
}

// numberSweepPage is how many due numbers one query of the sweep reads.
const numberSweepPage = 100

// stalePendingAfter: a pending number whose order's answer has not come
// for this long is asked about again (a webhook lost while faxhub was
// down longer than the provider's retries).
const stalePendingAfter = 15 * time.Minute

// SweepNumbers acts on every number due at now: a lapsed reservation is
// canceled; a month that ended is paid from the owner's credits (active),
// or the number goes past_due; a past_due number whose grace ended is
// released. It runs on one replica at a time (a River periodic job) and is
// safe to run concurrently all the same: each change is a compare-and-set.
func (s *Service) SweepNumbers(ctx context.Context) error {
	after := ""
	for {
		now := s.now()
		due, err := s.d.Store.DueNumbers(ctx, now, now.Add(-stalePendingAfter), after, numberSweepPage)
		if err != nil {
			return err
		}
		for i := range due {
			n := &due[i]
			after = n.ID
			if err := s.sweepNumber(ctx, n); err != nil {
				s.d.Logger.ErrorContext(ctx, "number sweep", "number_id", n.ID, "error", err)
			}
		}
		if len(due) < numberSweepPage {
			return nil
		}
	}
}

func (s *Service) sweepNumber(ctx context.Context, n *Number) error {
	now := s.now()
	switch n.Status {
	case NumberAwaitingPayment:
		_, err := s.CancelNumber(ctx, n, "reservation_lapsed", "the first month was not paid before the reservation lapsed")
		var e *Error
		if errors.As(err, &e) && e.Code == CodeNumberState {
			return nil
		}
		return err
	case NumberPending:
		return s.recheckOrder(ctx, n)
	case NumberActive, NumberPastDue:
		renewed, err := s.renewNumber(ctx, n)
		if err != nil || renewed {
			return err
		}
		if n.Status == NumberPastDue && n.PaidThrough != nil && !now.Before(n.PaidThrough.Add(s.cfg.Numbers.Grace)) {
			_, err := s.releaseNumber(ctx, n, CodeRenewalInsufficientCredits,
				"released: the month from "+n.PaidThrough.Format(time.DateOnly)+" was never paid")
			return err
		}
	}
	return nil
}

// recheckOrder asks the provider again about the order of a number that
// stayed pending: OrderNumber is idempotent by number id (the provider
// answers the order already placed under it, never a second one), so its
// answer is the order's current state. Still pending, the number is
// touched so the next sweeps wait stalePendingAfter again.
func (s *Service) recheckOrder(ctx context.Context, n *Number) error {
	if n.OrderRef == "" {
		return nil // never accepted: the order_number job retries or gives up
	}
	np, err := s.numberProvider(n.Mode)
	if err != nil {
		return err
	}
	res, err := np.OrderNumber(ctx, NumberOrder{NumberID: n.ID, E164: n.E164})
	if err != nil {
		return fmt.Errorf("recheck the order of %s: %w", n.ID, err)
	}
	if res.Status == NumberActive || res.Status == NumberFailed {
		return s.applyNumberOrder(ctx, n.ID, res)
	}
	n.UpdatedAt = s.now()
	if err := s.d.Store.UpdateNumber(ctx, n, NumberPending); err != nil && !errors.Is(err, ErrConflict) {
		return err
	}
	return nil
}

// renewNumber pays n's next month from its owner's credits (a hold
// captured at once, so the balance check is the ledger's own atomic one).
// Without enough credits an active number goes past_due. It reports
// whether the month was paid.
func (s *Service) renewNumber(ctx context.Context, n *Number) (bool, error) {
	paid := false
	err := s.d.Store.InTx(ctx, func(tx Tx) error {
		cur, err := tx.GetNumberByID(ctx, n.ID)
		if err != nil {
			return err
		}
		if !cur.Status.Receives() || cur.PaidThrough == nil || s.now().Before(*cur.PaidThrough) {
			*n = *cur
			return nil // renewed or released meanwhile
		}
		*n = *cur
		now := s.now()
		through := n.PaidThrough.AddDate(0, 1, 0)
		err = s.chargeMonth(ctx, tx, n, fmt.Sprintf("fax number %s, month from %s", n.E164, n.PaidThrough.Format(time.DateOnly)),
			"renewal of fax number "+n.E164)
		if errors.Is(err, ErrInsufficientFunds) {
			if n.Status == NumberPastDue {
				return nil
			}
			n.Status, n.UpdatedAt = NumberPastDue, now
			n.FailureCode = CodeRenewalInsufficientCredits
			n.FailureReason = fmt.Sprintf("the month from %s (%s) could not be paid: the %s balance is too low; add credits before %s or the number is released",
				n.PaidThrough.Format(time.DateOnly), FormatUSD(n.MonthlyMicros), n.Mode, n.PaidThrough.Add(s.cfg.Numbers.Grace).Format(time.DateOnly))
			s.d.Logger.WarnContext(ctx, "number renewal failed: insufficient credits", "number_id", n.ID, "owner_id", n.OwnerID)
			return tx.UpdateNumber(ctx, n, NumberActive)
		}
		if err != nil {
			return err
		}
		from := n.Status
		n.Status, n.PaidThrough, n.UpdatedAt, n.FailureCode, n.FailureReason = NumberActive, &through, now, "", ""
		paid = true
		return tx.UpdateNumber(ctx, n, from)
	})
	return paid, err
}
