package tasks

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/approvals"
	"github.com/faxhub/faxhub/core/credits"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/jcs"
	"github.com/faxhub/faxhub/core/payments"
	"github.com/faxhub/faxhub/core/seal"
)

const (
	// CartTTL is how long an offered cart can be paid.
	CartTTL = 15 * time.Minute
	// PurchaseApprovalTTL is how long the owner has to approve a charge.
	PurchaseApprovalTTL = 15 * time.Minute
	// CartMandateType is the JWT typ of a cart's merchant_authorization.
	CartMandateType = "JWT"
	// MerchantName is the merchant_name of our carts.
	MerchantName = "faxhub"

	// credentialSecret names the server secret that seals payment
	// credentials while a purchase waits for its approval.
	credentialSecret = "ap2-credential"
	// credentialPurpose separates the sealing key from other uses of it.
	credentialPurpose = "faxhub ap2 payment credentials v1"
	// maxCredentialBytes bounds a mandate's payment_response.details.
	maxCredentialBytes = 4 << 10
	maxMandateIDLen    = 128
)

// Failure codes of purchases (View.FailureCode, CreditPurchase
// FailureCode).
const (
	FailureCartExpired      = "cart_expired"
	FailureApprovalDeclined = "approval_declined"
	FailureApprovalExpired  = "approval_expired"
	FailurePaymentDeclined  = "payment_declined"
	FailurePaymentInvalid   = "payment_invalid"
	FailurePurchaseGone     = "purchase_not_found"
)

// AP2 v0.1 CartContents and the W3C PaymentRequest parts we use, with the
// JSON names of src/ap2/types/mandate.py and payment_request.py.
type (
	cartContents struct {
		ID                           string         `json:"id"`
		UserCartConfirmationRequired bool           `json:"user_cart_confirmation_required"`
		PaymentRequest               paymentRequest `json:"payment_request"`
		CartExpiry                   string         `json:"cart_expiry"`
		MerchantName                 string         `json:"merchant_name"`
	}
	paymentRequest struct {
		MethodData []paymentMethodData `json:"method_data"`
		Details    paymentDetailsInit  `json:"details"`
	}
	paymentMethodData struct {
		SupportedMethods string         `json:"supported_methods"`
		Data             map[string]any `json:"data"`
	}
	paymentDetailsInit struct {
		ID           string        `json:"id"`
		DisplayItems []paymentItem `json:"display_items"`
		Total        paymentItem   `json:"total"`
	}
	paymentItem struct {
		Label  string                `json:"label"`
		Amount paymentCurrencyAmount `json:"amount"`
	}
	paymentCurrencyAmount struct {
		Currency string      `json:"currency"`
		Value    json.Number `json:"value"`
	}
)

// cartClaims are the claims of a cart's merchant_authorization.
type cartClaims struct {
	Iss      string `json:"iss"`
	Sub      string `json:"sub"`
	IAT      int64  `json:"iat"`
	Exp      int64  `json:"exp"`
	JTI      string `json:"jti"`
	CartHash string `json:"cart_hash"`
}

// StartCreditPurchase offers the pack packID to an agent under AP2 (needs
// credits:checkout): it records a purchase whose id is the cart id, signs
// the CartMandate with the issuer's key (Deps.Signer) and returns the task,
// input_required until a PaymentMandate arrives.
func (s *Service) StartCreditPurchase(ctx context.Context, p core.Principal, skill, contextID, packID string) (*View, error) {
	if err := core.Authorize(p, core.OpBuyCredits); err != nil {
		return nil, err
	}
	contextID, err := taskLabels(skill, contextID)
	if err != nil {
		return nil, err
	}
	pack, ok := s.d.Prices.Pack(packID)
	if !ok {
		return nil, s.credits.UnknownPack(packID)
	}
	if _, err := s.paymentMethod(p.Mode); err != nil {
		return nil, err
	}
	now := s.now()
	c := &CreditPurchase{
		ID: core.NewID(core.PrefixCart), OwnerID: p.OwnerID, Mode: p.Mode, TaskID: core.NewID(core.PrefixTask), PackID: pack.ID,
		AmountMicros: pack.PriceMicros, CreditMicros: pack.CreditMicros, Currency: core.Currency,
		Status: PurchaseCartOffered, ExpiresAt: now.Add(CartTTL).Truncate(time.Second), CreatedAt: now, UpdatedAt: now,
	}
	contents, err := s.cartContents(c)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(contents)
	jws, err := s.d.Signer.SignJWT(ctx, CartMandateType, cartClaims{
		Iss: s.merchantIssuer(), Sub: c.ID, IAT: now.Unix(), Exp: c.ExpiresAt.Unix(), JTI: core.NewID(core.PrefixJWTID),
		CartHash: base64.RawURLEncoding.EncodeToString(sum[:]),
	})
	if err != nil {
		return nil, fmt.Errorf("sign cart mandate: %w", err)
	}
	c.CartJWS = jws
	t := &Task{
		ID: c.TaskID, OwnerID: p.OwnerID, Mode: p.Mode, Kind: KindCreditPurchase, Skill: skill,
		ContextID: contextID, SubjectID: c.ID, CreatedAt: now,
	}
	err = s.inTx(ctx, func(tx Tx) error {
		if err := tx.CreateCreditPurchase(ctx, c); err != nil {
			return fmt.Errorf("create credit purchase: %w", err)
		}
		if err := tx.CreateAgentTask(ctx, t); err != nil {
			return fmt.Errorf("create purchase task: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return s.purchaseView(ctx, t, c, contents)
}

// paymentMethod is the method charging AP2 credentials in mode; AP2 needs
// a signer too.
func (s *Service) paymentMethod(mode core.Mode) (payments.PaymentMethod, error) {
	m := s.d.PaymentMethods[mode]
	if m == nil || s.d.Signer == nil {
		return nil, core.Errorf(core.KindUnavailable, CodePaymentUnavailable, "%s-mode AP2 payments are not configured on this server", mode)
	}
	return m, nil
}

// merchantIssuer is the iss of our cart mandates: the OAuth issuer, whose
// keys verify them at {issuer}/jwks.
func (s *Service) merchantIssuer() string {
	if s.d.Signer == nil {
		return s.cfg.APIURL + "/api/auth"
	}
	return strings.TrimSuffix(s.d.Signer.JWKSURL(), "/jwks")
}

// cartContents renders the CartContents of c in canonical JSON (RFC 8785
// JCS for what we put in it: ASCII keys sorted, no insignificant space,
// numbers in their shortest form, no HTML escaping). It is derived from the
// purchase row alone, so the contents shown later are byte for byte those
// whose hash was signed.
func (s *Service) cartContents(c *CreditPurchase) ([]byte, error) {
	label := c.PackID
	if pack, ok := s.d.Prices.Pack(c.PackID); ok {
		label = pack.Name
	}
	amount := paymentCurrencyAmount{Currency: strings.ToUpper(c.Currency), Value: json.Number(decimalValue(c.AmountMicros))}
	cc := cartContents{
		ID: c.ID, UserCartConfirmationRequired: true,
		PaymentRequest: paymentRequest{
			MethodData: []paymentMethodData{{SupportedMethods: "CARD", Data: map[string]any{
				"network": []string{"mastercard", "visa"}, "mode": string(c.Mode),
			}}},
			Details: paymentDetailsInit{
				ID:           c.ID,
				DisplayItems: []paymentItem{{Label: label, Amount: amount}},
				Total:        paymentItem{Label: "Total", Amount: amount},
			},
		},
		CartExpiry:   c.ExpiresAt.UTC().Format(time.RFC3339),
		MerchantName: MerchantName,
	}
	return canonicalJSON(cc)
}

// canonicalJSON renders the cart in JCS (RFC 8785), the byte form the
// mandate signatures cover.
func canonicalJSON(v any) ([]byte, error) {
	out, err := jcs.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("canonicalize cart: %w", err)
	}
	return out, nil
}

// decimalValue renders micro-USD as the shortest decimal ("10", "4.5",
// "0.07"), the JCS form of a JSON number.
func decimalValue(m int64) string {
	s := core.FormatUSD(m)
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

// SubmitPaymentMandate takes the agent's PaymentMandate for the cart of
// task taskID. A mandate for another cart, another amount or currency, a
// replayed mandate id, an expired cart or a purchase past cart_offered is
// refused and charges nothing. Otherwise it asks the owner for an approval
// bound to the exact charge (cart, amount, pack, mandate id) that needs a
// passkey with user verification, and the task stays input_required until
// the owner decides; the charge happens when they approve (DecideApproval).
func (s *Service) SubmitPaymentMandate(ctx context.Context, p core.Principal, taskID string, m PaymentMandate) (*View, error) {
	if err := core.Authorize(p, core.OpBuyCredits); err != nil {
		return nil, err
	}
	t, err := s.agentTask(ctx, p, taskID)
	if err != nil {
		return nil, err
	}
	if t.Kind != KindCreditPurchase {
		return nil, core.NotFound("task")
	}
	c, err := s.d.Store.GetCreditPurchase(ctx, p.OwnerID, t.SubjectID)
	if err != nil {
		return nil, core.StoreErr(err, "credit purchase")
	}
	if c.Status != PurchaseCartOffered && c.PaymentMandateID != nil && *c.PaymentMandateID == m.ID {
		// The same mandate again (a retried message): where it stands.
		return s.purchaseTaskView(ctx, p, t)
	}
	if c.Status != PurchaseCartOffered {
		return nil, core.Errorf(core.KindConflict, CodePurchaseState, "cart %s already has a payment mandate or has ended (%s); start a new purchase", c.ID, c.Status).With("status", string(c.Status))
	}
	if !s.now().Before(c.ExpiresAt) {
		return nil, core.Errorf(core.KindGone, CodeCartExpired, "cart %s expired at %s; start a new purchase", c.ID, c.ExpiresAt.Format(time.RFC3339))
	}
	if err := checkMandate(c, m); err != nil {
		return nil, err
	}
	method, err := s.paymentMethod(c.Mode)
	if err != nil {
		return nil, err
	}
	sealed, err := s.sealCredential(ctx, c.ID, m.Details)
	if err != nil {
		return nil, err
	}
	pack, _ := s.d.Prices.Pack(c.PackID)
	requester := cmp.Or(p.ClientName, p.ClientID, "an agent")
	details := map[string]string{
		"pack": cmp.Or(pack.Name, c.PackID), "amount": core.FormatUSD(c.AmountMicros) + " USD", "credit": core.FormatUSD(c.CreditMicros) + " USD",
		"cartId": c.ID, "paymentMandateId": m.ID, "method": method.Name(),
	}
	if m.UserAuthorization != "" {
		sum := sha256.Sum256([]byte(m.UserAuthorization))
		details["userAuthorizationSha256"] = base64.RawURLEncoding.EncodeToString(sum[:])
	}
	detailsJSON, err := json.Marshal(details)
	if err != nil {
		return nil, fmt.Errorf("encode approval details: %w", err)
	}
	now := s.now()
	a := &approvals.Approval{
		ID: core.NewID(core.PrefixApproval), OwnerID: c.OwnerID, Mode: c.Mode, Kind: approvals.KindCreditPurchase, Requester: core.CutUTF8(requester, 200),
		Summary: core.CutUTF8(fmt.Sprintf("Buy %s for $%s", cmp.Or(pack.Name, c.PackID+" credits"), core.FormatUSD(c.AmountMicros)), 500),
		Details: detailsJSON, BindingHash: approvals.BindingHash(purchaseBinding(c, m.ID)), RequiresUV: true,
		Status: approvals.Pending, CreatedAt: now, ExpiresAt: now.Add(PurchaseApprovalTTL),
	}
	next := *c
	next.Status, next.PaymentMandateID, next.PaymentMethod = PurchaseAwaitingApproval, &m.ID, method.Name()
	next.Credential, next.ApprovalID, next.UpdatedAt = sealed, &a.ID, now
	err = s.inTx(ctx, func(tx Tx) error {
		if err := approvals.Create(ctx, tx, a); err != nil {
			return fmt.Errorf("create purchase approval: %w", err)
		}
		return tx.UpdateCreditPurchase(ctx, &next, PurchaseCartOffered)
	})
	switch {
	case errors.Is(err, core.ErrExists):
		return nil, core.Errorf(core.KindConflict, CodeMandateReplayed, "payment mandate %q was used already; every purchase needs a new mandate", m.ID)
	case errors.Is(err, core.ErrConflict):
		return nil, core.Errorf(core.KindConflict, CodePurchaseState, "cart %s already has a payment mandate or has ended; start a new purchase", c.ID)
	case err != nil:
		return nil, fmt.Errorf("record payment mandate: %w", err)
	}
	return s.purchaseTaskView(ctx, p, t)
}

// purchaseBinding is what the owner approves: this cart, this amount, this
// pack, under this mandate.
func purchaseBinding(c *CreditPurchase, mandateID string) map[string]any {
	return map[string]any{"cartId": c.ID, "amountMicros": c.AmountMicros, "packId": c.PackID, "paymentMandateId": mandateID}
}

// checkMandate refuses a mandate that does not pay exactly cart c.
func checkMandate(c *CreditPurchase, m PaymentMandate) error {
	mismatch := func(field, format string, args ...any) error {
		return core.Errorf(core.KindInvalid, CodeCartMismatch, format, args...).With("field", field)
	}
	if m.ID == "" || len(m.ID) > maxMandateIDLen || !utf8.ValidString(m.ID) || strings.ContainsFunc(m.ID, isControl) {
		return core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "payment_mandate_id must be 1 to %d printable characters", maxMandateIDLen).With("field", "payment_mandate_contents.payment_mandate_id")
	}
	if m.CartID != c.ID {
		return mismatch("payment_mandate_contents.payment_details_id", "the payment mandate pays cart %q, not this task's cart %s", core.CutUTF8(m.CartID, 100), c.ID)
	}
	if !strings.EqualFold(m.Currency, c.Currency) {
		return mismatch("payment_mandate_contents.payment_details_total.amount.currency", "the payment mandate is in %q; cart %s is in USD", core.CutUTF8(m.Currency, 10), c.ID)
	}
	if v, err := core.ParseUSD(m.Value); err != nil || v != c.AmountMicros {
		return mismatch("payment_mandate_contents.payment_details_total.amount.value", "the payment mandate pays %q; cart %s costs %s USD", core.CutUTF8(m.Value, 40), c.ID, decimalValue(c.AmountMicros))
	}
	if m.MethodName != "" && !strings.EqualFold(m.MethodName, "CARD") {
		return mismatch("payment_mandate_contents.payment_response.method_name", "the payment mandate uses method %q; cart %s accepts CARD", core.CutUTF8(m.MethodName, 40), c.ID)
	}
	d := bytes.TrimSpace(m.Details)
	if len(d) == 0 || string(d) == "null" {
		return core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "payment_response.details must carry the card credential").With("field", "payment_mandate_contents.payment_response.details")
	}
	if len(d) > maxCredentialBytes {
		return core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "payment_response.details is larger than %d bytes", maxCredentialBytes).With("field", "payment_mandate_contents.payment_response.details")
	}
	return nil
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

// sealCredential encrypts a payment credential under the shared server
// secret (core/seal), bound to its cart, so a database reader sees no card
// token and a sealed credential cannot be moved to another purchase.
func (s *Service) sealCredential(ctx context.Context, cartID string, plain []byte) ([]byte, error) {
	key, err := s.d.Store.Secret(ctx, credentialSecret)
	if err != nil {
		return nil, fmt.Errorf("credential key: %w", err)
	}
	return seal.Seal(key, credentialPurpose, []byte(cartID), plain)
}

func (s *Service) openCredential(ctx context.Context, cartID string, sealed []byte) ([]byte, error) {
	key, err := s.d.Store.Secret(ctx, credentialSecret)
	if err != nil {
		return nil, fmt.Errorf("credential key: %w", err)
	}
	plain, err := seal.Open(key, credentialPurpose, []byte(cartID), sealed)
	if err != nil {
		return nil, fmt.Errorf("open credential: %w", err)
	}
	return plain, nil
}

// purchaseTaskView derives a credit-purchase task's state from its
// purchase (and the purchase's approval). An approval the owner approved
// whose charge has not happened yet (the process died, the charge failed
// to reach a verdict) is charged now: reading the task finishes it.
func (s *Service) purchaseTaskView(ctx context.Context, p core.Principal, t *Task) (*View, error) {
	c, err := s.d.Store.GetCreditPurchase(ctx, t.OwnerID, t.SubjectID)
	if errors.Is(err, core.ErrNoRows) {
		// Purged (it ended, or its cart expired, days ago); the task goes
		// in the same garbage-collection run.
		return &View{Task: *t, State: Failed, FailureCode: FailurePurchaseGone, UpdatedAt: t.CreatedAt,
			Message: "This purchase is no longer on record; read the account's credits to see whether it was paid."}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("credit purchase of task %s: %w", t.ID, err)
	}
	if c.Status == PurchaseAwaitingApproval && c.ApprovalID != nil {
		a, err := s.approvals.Get(ctx, c.OwnerID, *c.ApprovalID)
		if err != nil {
			return nil, err
		}
		if a.Status != approvals.Pending {
			if err := s.FinishPurchase(ctx, a.ID); err != nil {
				s.d.Logger.Error("finish credit purchase", "cart", c.ID, "approval", a.ID, "err", err)
			} else if c, err = s.d.Store.GetCreditPurchase(ctx, t.OwnerID, t.SubjectID); err != nil {
				return nil, core.StoreErr(err, "credit purchase")
			}
		}
	}
	var contents []byte
	if c.Status == PurchaseCartOffered {
		if contents, err = s.cartContents(c); err != nil {
			return nil, err
		}
	}
	return s.purchaseView(ctx, t, c, contents)
}

// purchaseView renders a task from its purchase as stored; contents are
// the cart's canonical contents while it is offered.
func (s *Service) purchaseView(ctx context.Context, t *Task, c *CreditPurchase, contents []byte) (*View, error) {
	v := &View{Task: *t, Purchase: c, UpdatedAt: c.UpdatedAt}
	amount := decimalValue(c.AmountMicros) + " USD"
	switch c.Status {
	case PurchaseCartOffered:
		if !s.now().Before(c.ExpiresAt) {
			v.State, v.FailureCode, v.UpdatedAt = Failed, FailureCartExpired, latest(c.UpdatedAt, c.ExpiresAt)
			v.Message = fmt.Sprintf("Cart %s expired at %s without a payment mandate; nothing was charged. Start a new purchase.", c.ID, c.ExpiresAt.Format(time.RFC3339))
			break
		}
		v.State = InputRequired
		v.CartMandate = &CartMandate{Contents: contents, MerchantAuthorization: c.CartJWS}
		v.Message = fmt.Sprintf("Send an AP2 PaymentMandate for cart %s (%s) in a message on this task before %s; the owner then approves the charge.", c.ID, amount, c.ExpiresAt.Format(time.RFC3339))
	case PurchaseAwaitingApproval:
		v.ApprovalURL = s.approvalURL(c)
		v.State = InputRequired
		v.Message = fmt.Sprintf("The owner must approve this %s charge with their passkey in their faxhub approval inbox (%s); nothing is charged before. Poll GetTask to follow it.", amount, v.ApprovalURL)
		if c.ApprovalID != nil {
			if a, err := s.approvals.Get(ctx, c.OwnerID, *c.ApprovalID); err == nil && a.Status == approvals.Approved {
				v.State = Working
				v.Message = fmt.Sprintf("The owner approved the %s charge; it is being completed. Poll GetTask to follow it.", amount)
			}
		}
	case PurchaseCompleted:
		v.State = Completed
		r, err := s.receipt(ctx, c)
		if err != nil {
			return nil, err
		}
		v.Receipt = r
		v.Message = fmt.Sprintf("Paid %s; %s USD of credits were added to the account.", amount, r.Credit)
	case PurchaseDeclined:
		v.State, v.FailureCode = Failed, cmp.Or(c.FailureCode, FailureApprovalDeclined)
		v.Message = "The owner declined this purchase; nothing was charged."
	case PurchaseExpired:
		v.State, v.FailureCode = Failed, cmp.Or(c.FailureCode, FailureApprovalExpired)
		v.Message = "The owner did not approve this purchase in time; nothing was charged."
	case PurchaseFailed:
		v.State, v.FailureCode = Failed, c.FailureCode
		v.Message = "The charge failed; nothing was charged."
		if c.FailureReason != "" {
			v.Message = "The charge failed (" + c.FailureReason + "); nothing was charged."
		}
	case PurchaseCanceled:
		v.State, v.FailureCode = Canceled, cmp.Or(c.FailureCode, faxes.FailureCanceled)
		v.Message = "This purchase was canceled; nothing was charged."
	default:
		return nil, fmt.Errorf("credit purchase %s has unknown status %q", c.ID, c.Status)
	}
	return v, nil
}

func (s *Service) approvalURL(c *CreditPurchase) string {
	if c.ApprovalID == nil {
		return ""
	}
	return s.kernel.URL(core.LinkApprovalPage, nil, "id", *c.ApprovalID)
}

func (s *Service) receipt(ctx context.Context, c *CreditPurchase) (*PurchaseReceipt, error) {
	if c.ChargeID == nil {
		return nil, fmt.Errorf("completed credit purchase %s has no charge", c.ID)
	}
	ch, err := s.d.Store.GetCharge(ctx, *c.ChargeID)
	if err != nil {
		return nil, fmt.Errorf("read charge of %s: %w", c.ID, err)
	}
	return &PurchaseReceipt{
		CartID: c.ID, ChargeID: ch.ID, PackID: c.PackID, Amount: core.FormatUSD(c.AmountMicros), Currency: core.Currency,
		Credit: core.FormatUSD(c.CreditMicros), Method: ch.Method, Reference: ch.Reference, PaidAt: ch.CreatedAt,
	}, nil
}

// FinishPurchase carries out the owner's decision on a purchase approval:
// approved → charge and grant the credits; declined or expired → the
// purchase ends and its credential is wiped. It is idempotent and safe to
// run concurrently (the owner's request and an agent reading the task):
// the charge's idempotency key and the purchase's compare-and-set make one
// charge and one ledger entry.
func (s *Service) FinishPurchase(ctx context.Context, approvalID string) error {
	c, err := s.d.Store.GetCreditPurchaseByApproval(ctx, approvalID)
	if err != nil {
		return fmt.Errorf("read purchase of approval %s: %w", approvalID, err)
	}
	if c.Status != PurchaseAwaitingApproval {
		return nil // completed, failed or canceled already
	}
	a, err := s.approvals.Get(ctx, c.OwnerID, approvalID)
	if err != nil {
		return err
	}
	switch a.Status {
	case approvals.Pending:
		return nil
	case approvals.Declined:
		return s.endPurchase(ctx, c, PurchaseDeclined, FailureApprovalDeclined, "")
	case approvals.Expired:
		return s.endPurchase(ctx, c, PurchaseExpired, FailureApprovalExpired, "")
	}
	// Approved: charge the exact cart the approval is bound to.
	if a.BindingHash != approvals.BindingHash(purchaseBinding(c, deref(c.PaymentMandateID))) {
		return fmt.Errorf("approval %s is not bound to purchase %s as stored", a.ID, c.ID)
	}
	method, err := s.paymentMethod(c.Mode)
	if err != nil {
		return err
	}
	cred, err := s.openCredential(ctx, c.ID, c.Credential)
	if err != nil {
		return err
	}
	key := "ap2:" + c.ID
	res, err := method.Charge(ctx, payments.ChargeRequest{
		IdempotencyKey: key, Amount: core.CentsUp(c.AmountMicros), Currency: core.Currency, Credential: cred,
		Description: "faxhub credit pack " + c.PackID,
		Metadata:    map[string]string{"cart_id": c.ID, "approval_id": a.ID, "payment_mandate_id": deref(c.PaymentMandateID)},
	})
	if err != nil {
		return fmt.Errorf("charge cart %s: %w", c.ID, err)
	}
	switch res.Status {
	case payments.StatusSucceeded:
	case payments.StatusDeclined:
		return s.endPurchase(ctx, c, PurchaseFailed, FailurePaymentDeclined, res.Message)
	default:
		return s.endPurchase(ctx, c, PurchaseFailed, FailurePaymentInvalid, cmp.Or(res.Message, string(res.Status)))
	}
	now := s.now()
	ch := &credits.Charge{
		ID: core.NewID(core.PrefixCharge), OwnerID: c.OwnerID, Mode: c.Mode, Method: method.Name(), Purpose: credits.ChargeCreditPack,
		IdempotencyKey: key, AmountMicros: c.AmountMicros, Currency: core.Currency, Reference: res.Reference,
		Status: credits.ChargeSucceeded, PackID: c.PackID, Subject: a.ID, CreatedAt: now,
	}
	done := *c
	done.Status, done.ChargeID, done.Credential, done.UpdatedAt = PurchaseCompleted, &ch.ID, nil, now
	// errSettled: another request recorded this charge (same idempotency
	// key, same processor charge). errEnded: the purchase ended without a
	// charge meanwhile (the agent canceled it): the money goes back.
	errSettled, errEnded := errors.New("settled by another request"), errors.New("purchase ended meanwhile")
	err = s.inTx(ctx, func(tx Tx) error {
		if err := tx.CreateCharge(ctx, ch); errors.Is(err, core.ErrExists) {
			return errSettled
		} else if err != nil {
			return fmt.Errorf("record charge: %w", err)
		}
		if err := credits.GrantPurchase(ctx, tx, &credits.LedgerEntry{
			ID: core.NewID(core.PrefixLedger), OwnerID: c.OwnerID, Mode: c.Mode, Kind: credits.LedgerPurchase, AmountMicros: c.CreditMicros,
			Reason: "credit pack " + c.PackID + " (AP2 cart " + c.ID + ", charge " + ch.ID + ")", CreatedAt: now,
		}, credits.Purchase{PackID: c.PackID, PriceMicros: c.AmountMicros, CartID: c.ID}); err != nil {
			return err
		}
		if err := tx.UpdateCreditPurchase(ctx, &done, PurchaseAwaitingApproval); errors.Is(err, core.ErrConflict) {
			return errEnded
		} else if err != nil {
			return fmt.Errorf("complete purchase: %w", err)
		}
		return nil
	})
	switch {
	case errors.Is(err, errSettled):
		return nil
	case errors.Is(err, errEnded):
		r, err := method.Refund(ctx, payments.RefundRequest{
			IdempotencyKey: "ap2-refund:" + c.ID, Reference: res.Reference, Amount: core.CentsUp(c.AmountMicros),
			Reason: "the purchase was canceled before the charge was recorded",
		})
		if err != nil || r.Status != payments.StatusSucceeded {
			return fmt.Errorf("refund charge %s of canceled cart %s (status %q): %w", res.Reference, c.ID, r.Status, err)
		}
		s.d.Logger.Warn("refunded the charge of a credit purchase canceled while it was charged", "cart", c.ID, "refund", r.Reference)
		return nil
	}
	return err
}

// endPurchase moves an awaiting purchase to a final status without a
// charge and wipes its credential; a purchase someone else ended is left
// as it is.
func (s *Service) endPurchase(ctx context.Context, c *CreditPurchase, status PurchaseStatus, code, reason string) error {
	end := *c
	end.Status, end.FailureCode, end.FailureReason = status, code, core.CutUTF8(reason, 500)
	end.Credential, end.UpdatedAt = nil, s.now()
	err := s.d.Store.UpdateCreditPurchase(ctx, &end, c.Status)
	if err != nil && !errors.Is(err, core.ErrConflict) {
		return fmt.Errorf("end purchase %s: %w", c.ID, err)
	}
	return nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// cancelPurchaseTask cancels a purchase not yet charged: an offered cart or
// one waiting for the owner's approval (an approval decided later finds the
// purchase canceled and charges nothing).
func (s *Service) cancelPurchaseTask(ctx context.Context, p core.Principal, t *Task) (*View, error) {
	v, err := s.purchaseTaskView(ctx, p, t)
	if err != nil {
		return nil, err
	}
	c := v.Purchase
	notCancelable := core.Errorf(core.KindConflict, CodeNotCancelable, "this purchase is %s and can no longer be canceled", v.State).With("state", string(v.State))
	if v.State.Terminal() || (c.Status != PurchaseCartOffered && c.Status != PurchaseAwaitingApproval) {
		return nil, notCancelable
	}
	if v.State == Working {
		// Approved and being charged: the charge may already be under way.
		return nil, notCancelable
	}
	if err := s.endPurchase(ctx, c, PurchaseCanceled, faxes.FailureCanceled, ""); err != nil {
		return nil, err
	}
	if c.ApprovalID != nil {
		// Take the request out of the owner's inbox; approving it later
		// would charge nothing anyway.
		err := s.approvals.RecordIn(ctx, nil, c.OwnerID, *c.ApprovalID, approvals.Declined, []byte(`{"canceledBy":"agent"}`))
		if err != nil && !errors.Is(err, core.ErrConflict) {
			s.d.Logger.Error("close the approval of a canceled purchase", "cart", c.ID, "err", err)
		}
	}
	v, err = s.purchaseTaskView(ctx, p, t)
	if err != nil {
		return nil, err
	}
	if v.State != Canceled {
		return nil, core.Errorf(core.KindConflict, CodeNotCancelable, "this purchase moved on to %s and can no longer be canceled", v.State).With("state", string(v.State))
	}
	return v, nil
}
