package core

import "context"

// StartCreditPurchase offers the pack packID to an agent under AP2 (needs
// credits:checkout): it records a purchase whose id is the cart id, signs
// the CartMandate with the issuer's key (Deps.Signer) and returns the task,
// input_required until a PaymentMandate arrives.
func (s *Service) StartCreditPurchase(ctx context.Context, p Principal, skill, contextID, packID string) (*TaskView, error) {
	return nil, errNotBuilt
}

// SubmitPaymentMandate takes the agent's PaymentMandate for the cart of
// task taskID. A mandate for another cart, another amount or currency, a
// replayed mandate id, an expired cart or a purchase past cart_offered is
// refused and charges nothing. Otherwise it asks the owner for an approval
// bound to the exact charge (cart, amount, pack, mandate id) that needs a
// passkey with user verification, and the task stays input_required until
// the owner decides; the charge happens when they approve (DecideApproval).
func (s *Service) SubmitPaymentMandate(ctx context.Context, p Principal, taskID string, m PaymentMandate) (*TaskView, error) {
	return nil, errNotBuilt
}
