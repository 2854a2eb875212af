package machine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/credits"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/payments"
)

const (
	// machineSweepBatch bounds the items one sweep takes of each kind.
	machineSweepBatch = 50
	// refundLease is how long a replica owns a refund it performs.
	refundLease = 2 * time.Minute
	// machineGiveUp: a claim no settlement could reach a verdict on for a
	// day is failed (and logged for operators) instead of retried forever.
	machineGiveUp = 24 * time.Hour
)

// Payers records what machine-paid faxes owe their payers back
// (faxes.PayerRefunds), in the transaction that ends a fax: a failed or
// canceled fax its whole charge, a partial one the unsent pages' share (in
// the method's units, rounded down). Where the method cannot refund (a
// pushed transfer) it records not_refundable. SweepMachinePayments performs
// the refunds later.
type Payers struct{ methods []Method }

// NewPayers records refunds for charges of methods: every configured
// machine method, offered or not (a refund is owed even while the
// method's mode has no provider).
func NewPayers(methods []Method) *Payers { return &Payers{methods: methods} }

// OwePayer records that refundMicros of the fax's price (all of it, or
// the unsent pages' share) goes back to the payer.
func (p *Payers) OwePayer(ctx context.Context, tx faxes.Tx, o *faxes.Fax, refundMicros int64) error {
	if refundMicros <= 0 || o.PriceMicros <= 0 {
		return nil
	}
	c, err := tx.GetChargeByFax(ctx, o.ID)
	if err != nil {
		return fmt.Errorf("charge of machine fax %s: %w", o.ID, err)
	}
	due := c.AmountUnits
	if refundMicros < o.PriceMicros {
		due = c.AmountUnits * refundMicros / o.PriceMicros // rounded down
	}
	if due <= 0 {
		return nil
	}
	state := RefundDue
	if m, ok := methodNamed(p.methods, c.Method); !ok || !m.Refunds {
		state, due = RefundNotRefundable, 0
	}
	if err := tx.SetChargeRefund(ctx, c.ID, state, due); err != nil && !errors.Is(err, core.ErrConflict) {
		return fmt.Errorf("record refund of machine fax %s: %w", o.ID, err)
	}
	return nil
}

// machineMethodAny finds a configured method by name, offered or not (a
// refund is owed even while the method's mode has no provider).
func (s *Service) machineMethodAny(name string) (Method, bool) {
	return methodNamed(s.d.Machine, name)
}

func methodNamed(ms []Method, name string) (Method, bool) {
	for _, m := range ms {
		if m.Method != nil && m.Method.Name() == name {
			return m, true
		}
	}
	return Method{}, false
}

// Sweep finishes what interrupted machine payments left:
// claimed challenges whose settlement stopped (it settles them again with
// the same idempotency key and creates their fax, or records the refusal)
// and refunds that are due. The job queue runs it periodically on one
// replica at a time; each item is still taken by a compare-and-set on its
// lease, so a run that overlaps another (or a payer's retry) is harmless.
func (s *Service) Sweep(ctx context.Context) error {
	if len(s.d.Machine) == 0 {
		return nil
	}
	return errors.Join(s.sweepClaims(ctx), s.sweepRefunds(ctx))
}

// sweepClaims settles claims whose lease lapsed SettleLease ago or more:
// a retry of the payer would have taken them over by then if it came.
func (s *Service) sweepClaims(ctx context.Context) error {
	now := s.now()
	stale, err := s.d.Store.StaleMachineClaims(ctx, now.Add(-s.cfg.SettleLease), machineSweepBatch)
	if err != nil {
		return fmt.Errorf("sweep machine claims: %w", err)
	}
	var errs []error
	for i := range stale {
		if err := s.sweepClaim(ctx, &stale[i]); err != nil {
			errs = append(errs, fmt.Errorf("sweep claim %s: %w", stale[i].ChallengeID, err))
		}
	}
	return errors.Join(errs...)
}

func (s *Service) sweepClaim(ctx context.Context, c *Claim) error {
	now := s.now()
	until := now.Add(s.cfg.SettleLease)
	if err := s.d.Store.RenewMachineClaim(ctx, c.ChallengeID, c.LeaseUntil, until); err != nil {
		if errors.Is(err, core.ErrConflict) {
			return nil // another replica or a retry took it
		}
		return err
	}
	c.LeaseUntil = until
	payload, err := s.openMachineCredential(ctx, c.ChallengeID, c.Credential)
	if err != nil {
		return s.giveUpClaim(ctx, c, err)
	}
	_, err = s.settleClaim(ctx, c, payload)
	if err == nil || core.ErrorKind(err) != core.KindUnavailable {
		return err
	}
	return s.giveUpClaim(ctx, c, err)
}

// giveUpClaim leaves a claim that got no verdict for the next sweep, or
// fails it once it is a day old (an operator must look: the method may
// have taken money without faxhub knowing).
func (s *Service) giveUpClaim(ctx context.Context, c *Claim, cause error) error {
	if s.now().Sub(c.CreatedAt) < machineGiveUp {
		if err := s.d.Store.ReleaseMachineClaim(ctx, c.ChallengeID, s.now()); err != nil {
			return err
		}
		return nil
	}
	s.d.Logger.ErrorContext(ctx, "machine payment abandoned after a day without a verdict; check the method's records",
		"challenge_id", c.ChallengeID, "request_id", c.RequestID, "method", c.Method, "idempotency_key", c.IdempotencyKey, "err", cause)
	err := s.d.Store.FinishMachineClaim(ctx, c.ChallengeID, ClaimFailed, nil, "no verdict from the payment method within a day", s.now())
	if errors.Is(err, core.ErrConflict) {
		return nil
	}
	return err
}

// sweepRefunds performs due refunds through their methods.
func (s *Service) sweepRefunds(ctx context.Context) error {
	due, err := s.d.Store.DueRefunds(ctx, s.now(), machineSweepBatch)
	if err != nil {
		return fmt.Errorf("sweep refunds: %w", err)
	}
	var errs []error
	for i := range due {
		if err := s.refund(ctx, &due[i]); err != nil {
			errs = append(errs, fmt.Errorf("refund charge %s: %w", due[i].ID, err))
		}
	}
	return errors.Join(errs...)
}

func (s *Service) refund(ctx context.Context, c *credits.Charge) error {
	now := s.now()
	if err := s.d.Store.LeaseRefund(ctx, c.ID, now, now.Add(refundLease)); err != nil {
		if errors.Is(err, core.ErrConflict) {
			return nil
		}
		return err
	}
	m, ok := s.machineMethodAny(c.Method)
	if !ok {
		return fmt.Errorf("method %q is not configured; the refund waits", c.Method)
	}
	res, err := m.Method.Refund(ctx, payments.RefundRequest{
		IdempotencyKey: "refund_" + c.ID, Reference: c.Reference, Amount: c.RefundDueUnits,
		Reason: "the fax paid for was not (fully) delivered",
	})
	if errors.Is(err, payments.ErrRefundUnsupported) {
		return s.d.Store.FinishRefund(ctx, c.ID, RefundNotRefundable, "", s.now())
	}
	if err != nil {
		return err // the lease lapses; the next sweep retries with the same key
	}
	if res.Status != payments.StatusSucceeded {
		s.d.Logger.ErrorContext(ctx, "machine refund refused; check the method's records", "charge_id", c.ID, "status", res.Status, "message", res.Message)
		return fmt.Errorf("refund refused (%s)", res.Status)
	}
	s.d.Logger.InfoContext(ctx, "machine charge refunded", "charge_id", c.ID, "amount", c.RefundDueUnits, "currency", c.Currency)
	err = s.d.Store.FinishRefund(ctx, c.ID, RefundDone, res.Reference, s.now())
	if errors.Is(err, core.ErrConflict) {
		return nil
	}
	return err
}
