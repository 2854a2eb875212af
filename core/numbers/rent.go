package numbers

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"
	"unicode"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/credits"
	"github.com/faxhub/faxhub/core/events"
)

var (
	countryCode = regexp.MustCompile(`^[A-Z]{2}$`)
	areaCode    = regexp.MustCompile(`^[0-9]{1,6}$`)
)

// numberProvider is the provider that rents mode's numbers.
func (s *Service) numberProvider(m core.Mode) (Provider, error) {
	if np := s.d.Providers[m]; np != nil {
		return np, nil
	}
	return nil, core.Errorf(core.KindUnavailable, CodeNumbersNotConfigured, "%s-mode fax numbers are not configured on this server (docs/providers.md)", m)
}

// present fills the price and the checkout link of a number for responses.
func (s *Service) Present(n *Number) *Number {
	n.MonthlyPrice, n.MonthlyCents, n.Currency = core.FormatUSD(n.MonthlyMicros), core.CentsUp(n.MonthlyMicros), core.Currency
	n.CheckoutURL = ""
	if n.Status == AwaitingPayment {
		n.CheckoutURL = s.CheckoutURL(n)
	}
	return n
}

// CheckoutURL is the page where the owner reviews and pays the first
// month of an awaiting_payment number.
func (s *Service) CheckoutURL(n *Number) string {
	return s.kernel.URL(core.LinkNumberPage, url.Values{"mode": {string(n.Mode)}}, "id", n.ID)
}

// checkNumberSearch validates and normalises a search.
func (s *Service) checkNumberSearch(q Search) (Search, error) {
	q.Country = strings.ToUpper(strings.TrimSpace(q.Country))
	if q.Country == "" {
		q.Country = "US"
	}
	if !countryCode.MatchString(q.Country) {
		return q, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "country must be an ISO 3166-1 alpha-2 code such as US")
	}
	q.AreaCode = strings.TrimSpace(q.AreaCode)
	if q.AreaCode != "" && !areaCode.MatchString(q.AreaCode) {
		return q, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "areaCode must be 1 to %d digits", MaxAreaCode)
	}
	q.Locality = strings.TrimSpace(q.Locality)
	if len(q.Locality) > MaxLocality || strings.IndexFunc(q.Locality, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
		return q, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "locality must be at most %d printable characters", MaxLocality)
	}
	switch {
	case q.Limit < 0 || q.Limit > MaxSearchLimit:
		return q, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "limit must be between 1 and %d", MaxSearchLimit)
	case q.Limit == 0:
		q.Limit = s.nc.SearchLimit
	}
	return q, nil
}

// Search lists numbers that can be rented in p's mode, with their
// monthly price; numbers someone here holds are left out.
func (s *Service) Search(ctx context.Context, p core.Principal, q Search) ([]AvailableNumber, error) {
	if err := core.Authorize(p, core.OpSearchNumbers); err != nil {
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
		n.MonthlyPrice, n.MonthlyCents, n.Currency = core.FormatUSD(monthly), core.CentsUp(monthly), core.Currency
		out = append(out, n)
	}
	return out, nil
}

// askProvider prices numbers in q.Country and asks p's provider for
// them, within the owner's search rate (each ask is a call to the
// provider's API); what names the ask in errors.
func (s *Service) askProvider(ctx context.Context, p core.Principal, q Search, what string) (int64, []AvailableNumber, error) {
	monthly, err := s.d.Prices.NumberMonthly(q.Country)
	if err != nil {
		return 0, nil, err
	}
	np, err := s.numberProvider(p.Mode)
	if err != nil {
		return 0, nil, err
	}
	if err := s.kernel.Allow(ctx, core.LimitNumberSearch, p.OwnerID+":"+string(p.Mode)); err != nil {
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
	var e *core.Error
	if errors.As(err, &e) {
		return err
	}
	return &core.Error{Kind: core.KindUnavailable, Code: CodeProviderFailed, Message: "the fax provider could not " + what + " just now; try again shortly", Err: err}
}

// BuyRequest names the number to rent (from a search).
type BuyRequest struct {
	Number string `json:"number"`
	// PayWithCredits pays the first month from the account's credits at
	// once (needs fax:send, like any spending) instead of at a checkout.
	PayWithCredits bool `json:"payWithCredits,omitempty"`
}

// Buy reserves a number for p and returns it awaiting payment, with
// the checkoutUrl where the owner pays its first month (the number is
// reserved for CheckoutTTL). With PayWithCredits the month is paid from
// credits in the same transaction and the number is pending (ordered).
func (s *Service) Buy(ctx context.Context, p core.Principal, r BuyRequest) (*Number, error) {
	if err := core.Authorize(p, core.OpBuyNumber); err != nil {
		return nil, err
	}
	if r.PayWithCredits {
		if err := core.Authorize(p, core.OpBuyNumberWithCredits); err != nil {
			return nil, err
		}
	}
	n, err := s.reserveNumber(ctx, p, r)
	if err != nil {
		return nil, err
	}
	return s.Present(n), nil
}

func (s *Service) reserveNumber(ctx context.Context, p core.Principal, r BuyRequest) (*Number, error) {
	if strings.TrimSpace(r.Number) == "" {
		return nil, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "number is required (an E.164 number from search_numbers)")
	}
	e164, country, err := s.d.Destination.Check(r.Number)
	if err != nil {
		return nil, err
	}
	monthly, found, err := s.askProvider(ctx, p, Search{Country: country, Number: e164, Limit: 1}, "check the number")
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
		return nil, core.Errorf(core.KindConflict, CodeNumberUnavailable, "%s is not available; search again", e164)
	}
	np, err := s.numberProvider(p.Mode)
	if err != nil {
		return nil, err
	}
	now := s.now()
	until := now.Add(s.nc.ReservationTTL)
	n := &Number{
		ID: core.NewID(core.PrefixNumber), OwnerID: p.OwnerID, Mode: p.Mode, E164: e164, Country: country,
		Region: core.CutUTF8(offer.Region, 100), Locality: core.CutUTF8(offer.Locality, 100), Status: AwaitingPayment,
		Provider: np.Name(), MonthlyMicros: monthly, ReservedUntil: &until, CreatedAt: now, UpdatedAt: now,
	}
	err = s.inTx(ctx, func(tx Tx) error {
		counts, err := tx.CountNumbers(ctx, p.OwnerID, p.Mode)
		if err != nil {
			return err
		}
		total := 0
		for _, c := range counts {
			total += c
		}
		if total >= s.nc.MaxPerOwner {
			return core.Errorf(core.KindConflict, CodeTooManyNumbers, "this account holds %d numbers, the most it can", total)
		}
		if counts[AwaitingPayment] >= s.nc.MaxUnpaid {
			return core.Errorf(core.KindConflict, CodeTooManyNumbers, "this account has %d numbers waiting for payment; pay or cancel one first", counts[AwaitingPayment])
		}
		if err := tx.CreateNumber(ctx, n); errors.Is(err, core.ErrExists) {
			return core.Errorf(core.KindConflict, CodeNumberUnavailable, "%s is taken; search again", e164)
		} else if err != nil {
			return err
		}
		if !r.PayWithCredits {
			return nil
		}
		return s.payNumberWithCredits(ctx, tx, n)
	})
	if credits.IsInsufficient(err) {
		return nil, numberCostsTooMuch(monthly, p.Mode)
	}
	if err != nil {
		return nil, err
	}
	s.d.Logger.InfoContext(ctx, "number reserved", "number_id", n.ID, "owner_id", n.OwnerID, "mode", n.Mode)
	return n, nil
}

// List lists p's numbers in its mode: those it holds, or every one
// it ever had when all is set.
func (s *Service) List(ctx context.Context, p core.Principal, all bool) ([]Number, error) {
	if err := core.Authorize(p, core.OpListNumbers); err != nil {
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
		s.Present(&ns[i])
	}
	return ns, nil
}

// Get reads one of p's numbers; another owner's is not found.
func (s *Service) Get(ctx context.Context, p core.Principal, id string) (*Number, error) {
	if err := core.Authorize(p, core.OpListNumbers); err != nil {
		return nil, err
	}
	n, err := ownNumber(ctx, s.d.Store, p, id)
	if err != nil {
		return nil, core.StoreErr(err, "number")
	}
	return s.Present(n), nil
}

// PayWithCredits pays the first month of one of p's awaiting_payment
// numbers from the balance (fax:send, like any spending) and orders it: the
// owner's alternative to the checkout. Too little credit is
// insufficient_credits and changes nothing.
func (s *Service) PayWithCredits(ctx context.Context, p core.Principal, id string) (*Number, error) {
	if err := core.Authorize(p, core.OpBuyNumberWithCredits); err != nil {
		return nil, err
	}
	var out *Number
	err := s.inTx(ctx, func(tx Tx) error {
		n, err := ownNumber(ctx, tx, p, id)
		if err != nil {
			return core.StoreErr(err, "number")
		}
		if err := s.Payable(n); err != nil {
			return err
		}
		out = n
		return s.payNumberWithCredits(ctx, tx, n)
	})
	if credits.IsInsufficient(err) {
		return nil, numberCostsTooMuch(out.MonthlyMicros, p.Mode)
	}
	if err != nil {
		return nil, err
	}
	return s.Present(out), nil
}

// ownNumber reads one of p's numbers in its mode; an id that cannot be
// one of ours is not found without a query.
func ownNumber(ctx context.Context, q Queries, p core.Principal, id string) (*Number, error) {
	if !core.WellFormedID(id) {
		return nil, core.ErrNoRows
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
	if err := s.d.Store.UpdateNumber(ctx, n, AwaitingPayment); err != nil {
		return fmt.Errorf("extend reservation of %s: %w", n.ID, err)
	}
	return nil
}

// numberPayable tells whether n's first month can still be paid.
func (s *Service) Payable(n *Number) error {
	if n.Status != AwaitingPayment {
		return core.Errorf(core.KindConflict, CodeNumberState, "this number is %s; its first month cannot be paid now", n.Status)
	}
	if n.ReservedUntil != nil && !s.now().Before(*n.ReservedUntil) {
		return core.Errorf(core.KindGone, CodeNumberState, "the reservation of this number lapsed; buy it again")
	}
	return nil
}

// PayAtCheckout moves the number of a paid checkout to pending and
// enqueues its order, inside tx.
func (s *Service) PayAtCheckout(ctx context.Context, tx Tx, ownerID string, mode core.Mode, numberID string) error {
	n, err := tx.GetNumber(ctx, ownerID, mode, numberID)
	if err != nil {
		return core.StoreErr(err, "number")
	}
	if n.Status != AwaitingPayment {
		return core.Errorf(core.KindConflict, CodeNumberState, "this number is %s; nothing more is charged", n.Status)
	}
	if err := s.orderPaid(ctx, tx, n); errors.Is(err, core.ErrConflict) {
		return core.Errorf(core.KindConflict, CodeNumberState, "this number was paid already; nothing more is charged")
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
	n.Status, n.ReservedUntil, n.PaidThrough, n.UpdatedAt = Pending, nil, &through, now
	if err := tx.UpdateNumber(ctx, n, AwaitingPayment); err != nil {
		return err
	}
	return s.d.Queue.EnqueueNumberOrder(ctx, tx, n.ID)
}

// chargeMonth takes one month of n from its owner's credits in n's mode:
// a hold captured at once, so the balance check is the ledger's own
// atomic one (ErrInsufficientFunds when it does not cover the month).
func (s *Service) chargeMonth(ctx context.Context, tx Tx, n *Number, holdReason, captureReason string) error {
	now := s.now()
	hold := &credits.LedgerEntry{
		ID: core.NewID(core.PrefixLedger), OwnerID: n.OwnerID, Mode: n.Mode, Kind: credits.LedgerHold, AmountMicros: -n.MonthlyMicros,
		Reason: holdReason, CreatedAt: now,
	}
	if err := credits.PlaceHold(ctx, tx, hold); err != nil {
		return err
	}
	return tx.AppendLedger(ctx, &credits.LedgerEntry{
		ID: core.NewID(core.PrefixLedger), OwnerID: n.OwnerID, Mode: n.Mode, Kind: credits.LedgerCapture, HoldID: &hold.ID,
		Reason: captureReason, CreatedAt: now,
	})
}

// numberCostsTooMuch is the insufficient_credits answer of paying a
// number's month from a balance that does not cover it.
func numberCostsTooMuch(monthlyMicros int64, m core.Mode) *core.Error {
	return core.Errorf(core.KindPaymentRequired, credits.CodeInsufficientCredits, "this number costs %s USD a month; the %s balance does not cover it", core.FormatUSD(monthlyMicros), m).
		With("price", core.FormatUSD(monthlyMicros)).With("checkoutPath", "/api/v1/credits/checkout")
}

// payNumberWithCredits pays the first month of the just-reserved n from
// its owner's credits (a hold captured at once) and orders it, inside tx.
func (s *Service) payNumberWithCredits(ctx context.Context, tx Tx, n *Number) error {
	if err := s.chargeMonth(ctx, tx, n, "fax number "+n.E164+", first month", "first month of fax number "+n.E164); err != nil {
		return err
	}
	return s.orderPaid(ctx, tx, n)
}

// PlaceOrder orders a paid (pending) number at its provider; the
// order_number job runs it. Run again after a crash it orders under the
// same number id, the provider's idempotency key.
func (s *Service) PlaceOrder(ctx context.Context, numberID string) error {
	n, err := s.d.Store.GetNumberByID(ctx, numberID)
	if err != nil {
		return fmt.Errorf("load number %s: %w", numberID, err)
	}
	if n.Status != Pending || n.OrderRef != "" {
		return nil // ordered already; its outcome arrives separately
	}
	np, err := s.numberProvider(n.Mode)
	if err != nil {
		return err
	}
	res, err := np.OrderNumber(ctx, Order{NumberID: n.ID, E164: n.E164})
	if err != nil {
		return fmt.Errorf("order number %s: %w", n.ID, err)
	}
	if res.Status == Pending {
		if res.OrderRef == "" {
			return fmt.Errorf("order number %s: the provider accepted it without an order reference", n.ID)
		}
		n.OrderRef, n.UpdatedAt = res.OrderRef, s.now()
		if err := s.d.Store.UpdateNumber(ctx, n, Pending); err != nil && !errors.Is(err, core.ErrConflict) {
			return fmt.Errorf("record order of %s: %w", n.ID, err)
		}
		return nil
	}
	return s.applyNumberOrder(ctx, n.ID, res)
}

// GiveUpOrder ends the order of a pending number whose provider never
// accepted it (the order_number job's last attempt failed): the number
// fails and its month returns as credits, as for a failed order.
func (s *Service) GiveUpOrder(ctx context.Context, numberID string, cause error) error {
	s.d.Logger.ErrorContext(ctx, "number order given up", "number_id", numberID, "error", cause)
	return s.applyNumberOrder(ctx, numberID, OrderResult{Status: Failed, FailureReason: "the provider did not accept the order; try another number later"})
}

// RecordOrder records a provider's answer to a number order that
// arrived later (a webhook, the simulator's scheduled outcome). A
// duplicate or a late answer for a number no longer pending changes
// nothing. An order this server has not recorded yet (the answer raced
// the order's own commit) is an error, so the provider retries it.
func (s *Service) RecordOrder(ctx context.Context, provider, orderRef string, res OrderResult) error {
	n, err := s.d.Store.GetNumberByOrderRef(ctx, provider, orderRef)
	if err != nil {
		return fmt.Errorf("number order %s of %s: %w", orderRef, provider, err)
	}
	return s.applyNumberOrder(ctx, n.ID, res)
}

func (s *Service) applyNumberOrder(ctx context.Context, numberID string, res OrderResult) error {
	if res.Status != Active && res.Status != Failed {
		return nil // still provisioning
	}
	return s.inTx(ctx, func(tx Tx) error {
		n, err := tx.GetNumberByID(ctx, numberID)
		if err != nil {
			return fmt.Errorf("load number %s: %w", numberID, err)
		}
		if n.Status != Pending {
			return nil
		}
		now := s.now()
		n.UpdatedAt = now
		if res.OrderRef != "" && n.OrderRef == "" {
			n.OrderRef = res.OrderRef
		}
		if res.Status == Active {
			n.Status, n.ActivatedAt = Active, &now
			if res.ProviderRef != "" {
				n.ProviderRef = res.ProviderRef
			}
			s.d.Logger.InfoContext(ctx, "number active", "number_id", n.ID, "owner_id", n.OwnerID, "mode", n.Mode)
			return s.saveNumber(ctx, tx, n, events.NumberActive, Pending)
		}
		n.Status, n.PaidThrough = Failed, nil
		n.FailureCode, n.FailureReason = "provisioning_failed", core.CutUTF8(cmpOr(res.FailureReason, "the provider could not provision the number"), 500)
		if err := s.saveNumber(ctx, tx, n, events.NumberFailed, Pending); err != nil {
			return err
		}
		s.d.Logger.WarnContext(ctx, "number provisioning failed; the month returns as credits", "number_id", n.ID, "owner_id", n.OwnerID)
		return tx.AppendLedger(ctx, &credits.LedgerEntry{
			ID: core.NewID(core.PrefixLedger), OwnerID: n.OwnerID, Mode: n.Mode, Kind: credits.LedgerRefund, AmountMicros: n.MonthlyMicros,
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

// Release gives one of p's numbers back to its provider. An unpaid
// reservation is canceled instead. The rest of a paid month is not
// refunded. A number being provisioned cannot be released until it is
// active.
func (s *Service) Release(ctx context.Context, p core.Principal, id string) (*Number, error) {
	if err := core.Authorize(p, core.OpReleaseNumber); err != nil {
		return nil, err
	}
	n, err := ownNumber(ctx, s.d.Store, p, id)
	if err != nil {
		return nil, core.StoreErr(err, "number")
	}
	switch n.Status {
	case AwaitingPayment:
		return s.Cancel(ctx, n, "canceled", "canceled before it was paid")
	case Active, PastDue:
		return s.releaseNumber(ctx, n, "", "")
	case Pending:
		return nil, core.Errorf(core.KindConflict, CodeNumberState, "this number is still being provisioned; release it once it is active")
	}
	return nil, core.Errorf(core.KindConflict, CodeNumberState, "this number is %s already", n.Status)
}

func (s *Service) Cancel(ctx context.Context, n *Number, code, reason string) (*Number, error) {
	n.Status, n.ReservedUntil, n.UpdatedAt = Canceled, nil, s.now()
	n.FailureCode, n.FailureReason = code, reason
	if err := s.d.Store.UpdateNumber(ctx, n, AwaitingPayment); err != nil {
		if errors.Is(err, core.ErrConflict) {
			return nil, core.Errorf(core.KindConflict, CodeNumberState, "this number was paid meanwhile; release it once it is active")
		}
		return nil, err
	}
	return s.Present(n), nil
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
	n.Status, n.ReleasedAt, n.UpdatedAt = Released, &now, now
	n.FailureCode, n.FailureReason = code, reason
	if err := s.inTx(ctx, func(tx Tx) error { return s.saveNumber(ctx, tx, n, events.NumberReleased, from) }); err != nil {
		if errors.Is(err, core.ErrConflict) {
			return nil, core.Errorf(core.KindConflict, CodeNumberState, "this number changed meanwhile; read it again")
		}
		return nil, err
	}
	s.d.Logger.InfoContext(ctx, "number released", "number_id", n.ID, "owner_id", n.OwnerID, "code", code)
	return s.Present(n), nil
}

// numberSweepPage is how many due numbers one query of the sweep reads.
const numberSweepPage = 100

// stalePendingAfter: a pending number whose order's answer has not come
// for this long is asked about again (a webhook lost while faxhub was
// down longer than the provider's retries).
const stalePendingAfter = 15 * time.Minute

// Sweep acts on every number due at now: a lapsed reservation is
// canceled; a month that ended is paid from the owner's credits (active),
// or the number goes past_due; a past_due number whose grace ended is
// released. It runs on one replica at a time (a River periodic job) and is
// safe to run concurrently all the same: each change is a compare-and-set.
func (s *Service) Sweep(ctx context.Context) error {
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
	case AwaitingPayment:
		_, err := s.Cancel(ctx, n, "reservation_lapsed", "the first month was not paid before the reservation lapsed")
		var e *core.Error
		if errors.As(err, &e) && e.Code == CodeNumberState {
			return nil
		}
		return err
	case Pending:
		return s.recheckOrder(ctx, n)
	case Active, PastDue:
		renewed, err := s.renewNumber(ctx, n)
		if err != nil || renewed {
			return err
		}
		if n.Status == PastDue && n.PaidThrough != nil && !now.Before(n.PaidThrough.Add(s.nc.Grace)) {
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
	res, err := np.OrderNumber(ctx, Order{NumberID: n.ID, E164: n.E164})
	if err != nil {
		return fmt.Errorf("recheck the order of %s: %w", n.ID, err)
	}
	if res.Status == Active || res.Status == Failed {
		return s.applyNumberOrder(ctx, n.ID, res)
	}
	n.UpdatedAt = s.now()
	if err := s.d.Store.UpdateNumber(ctx, n, Pending); err != nil && !errors.Is(err, core.ErrConflict) {
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
	err := s.inTx(ctx, func(tx Tx) error {
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
		if errors.Is(err, core.ErrInsufficientFunds) {
			if n.Status == PastDue {
				return nil
			}
			n.Status, n.UpdatedAt = PastDue, now
			n.FailureCode = CodeRenewalInsufficientCredits
			n.FailureReason = fmt.Sprintf("the month from %s (%s) could not be paid: the %s balance is too low; add credits before %s or the number is released",
				n.PaidThrough.Format(time.DateOnly), core.FormatUSD(n.MonthlyMicros), n.Mode, n.PaidThrough.Add(s.nc.Grace).Format(time.DateOnly))
			s.d.Logger.WarnContext(ctx, "number renewal failed: insufficient credits", "number_id", n.ID, "owner_id", n.OwnerID)
			return s.saveNumber(ctx, tx, n, events.NumberRenewalFailed, Active)
		}
		if err != nil {
			return err
		}
		from := n.Status
		n.Status, n.PaidThrough, n.UpdatedAt, n.FailureCode, n.FailureReason = Active, &through, now, "", ""
		paid = true
		// A past_due number paid at last is active again: number.active
		// says so. A renewal of an active number changes no status.
		t := events.Type("")
		if from == PastDue {
			t = events.NumberActive
		}
		return s.saveNumber(ctx, tx, n, t, from)
	})
	return paid, err
}

// Own reads one of p's numbers in its mode, as stored (core.ErrNoRows
// when p has no such number), for features that act on it.
func (s *Service) Own(ctx context.Context, p core.Principal, id string) (*Number, error) {
	return ownNumber(ctx, s.d.Store, p, id)
}

// OwnByID reads a number whoever holds it, as stored (core.ErrNoRows when
// there is none), for workers and simulations.
func (s *Service) OwnByID(ctx context.Context, id string) (*Number, error) {
	return s.d.Store.GetNumberByID(ctx, id)
}

// Holding is the number that holds e164 in mode, whoever's it is, as
// stored (core.ErrNoRows when nobody holds it).
func (s *Service) Holding(ctx context.Context, mode core.Mode, e164 string) (*Number, error) {
	return s.d.Store.GetHeldNumber(ctx, mode, e164)
}
