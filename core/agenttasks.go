package core

import (
	"context"
	"encoding/json"
	"time"
)

// Agent tasks are the long-running things an agent asked for over A2A: a
// fax it drafted and the owner pays at a hosted checkout, credits it buys
// under an AP2 mandate, a fax number the owner pays at a checkout. A task
// row stores only what it follows (its subject: a draft, a credit
// purchase, a number); its state is derived from that subject every time it is read,
// so a payment on the checkout page, a delivery outcome or an owner's
// approval moves the task without anyone writing to it, and any replica
// answers. Adapters map TaskView to their protocol; they decide nothing.

// TaskKind says what a task follows.
type TaskKind string

const (
	// TaskFax follows a draft, then the fax it became when paid.
	TaskFax TaskKind = "fax"
	// TaskCreditPurchase follows an AP2 credit purchase: cart offered,
	// payment mandate received, owner approval, charge.
	TaskCreditPurchase TaskKind = "credit_purchase"
	// TaskNumber follows a number: its checkout, then its provisioning.
	TaskNumber TaskKind = "number"
)

// TaskState is a task's protocol-neutral state (A2A's TASK_STATE_*).
type TaskState string

const (
	TaskSubmitted     TaskState = "submitted"
	TaskWorking       TaskState = "working"
	TaskInputRequired TaskState = "input_required"
	TaskCompleted     TaskState = "completed"
	TaskFailed        TaskState = "failed"
	TaskCanceled      TaskState = "canceled"
	TaskRejected      TaskState = "rejected"
)

// Terminal reports whether the state can no longer change.
func (s TaskState) Terminal() bool {
	switch s {
	case TaskCompleted, TaskFailed, TaskCanceled, TaskRejected:
		return true
	}
	return false
}

// PrefixTask names an agent task; PrefixCart a credit purchase (its id is
// the AP2 cart id).
const (
	PrefixTask = "tsk_"
	PrefixCart = "cart_"
)

// AgentTask is the stored part of a task.
type AgentTask struct {
	ID        string   `db:"id"`
	OwnerID   string   `db:"owner_id"`
	Mode      Mode     `db:"mode"`
	Kind      TaskKind `db:"kind"`
	Skill     string   `db:"skill"`
	ContextID string   `db:"context_id"`
	// SubjectID is what the task follows: a draft id (TaskFax), a cart id
	// (TaskCreditPurchase).
	SubjectID string    `db:"subject_id"`
	CreatedAt time.Time `db:"created_at"`
}

// TaskView is a task as of now, for an adapter to render.
type TaskView struct {
	AgentTask
	State TaskState
	// Message is one line for the agent saying where the task stands and
	// what happens next (who must act, where).
	Message string
	// FailureCode is set for failed and canceled tasks (draft_expired,
	// payment_declined, approval_declined, the fax's failure code…).
	FailureCode string
	UpdatedAt   time.Time

	// TaskFax: the draft (always) and its hosted checkout page; the fax
	// once paid, with its latest attempt.
	Draft       *DraftView
	CheckoutURL string
	Fax         *Fax

	// TaskCreditPurchase: the purchase, its signed cart mandate, the page
	// where the owner approves, and the receipt once charged.
	Purchase    *CreditPurchase
	CartMandate *CartMandate
	ApprovalURL string
	Receipt     *PurchaseReceipt

	// TaskNumber: the number (CheckoutURL while it awaits payment).
	Number *Number
}

// TaskStore persists tasks and credit purchases; part of core.Store.
type TaskStore interface {
	CreateAgentTask(ctx context.Context, t *AgentTask) error
	// GetAgentTask reads one of the owner's tasks; ErrNoRows for another
	// owner's task exactly as for an unknown id.
	GetAgentTask(ctx context.Context, ownerID, id string) (*AgentTask, error)

	CreateCreditPurchase(ctx context.Context, c *CreditPurchase) error
	GetCreditPurchase(ctx context.Context, ownerID, id string) (*CreditPurchase, error)
	GetCreditPurchaseByApproval(ctx context.Context, approvalID string) (*CreditPurchase, error)
	// UpdateCreditPurchase writes c's mutable fields if the stored status
	// is from; ErrConflict otherwise, ErrExists when c.PaymentMandateID is
	// already recorded on another purchase (a replayed mandate).
	UpdateCreditPurchase(ctx context.Context, c *CreditPurchase, from PurchaseStatus) error

	// CancelDraft moves an open draft to canceled; ErrConflict otherwise.
	CancelDraft(ctx context.Context, ownerID string, mode Mode, id string) error
}

// PurchaseStatus is where an AP2 credit purchase stands.
//
//	cart_offered → awaiting_approval → completed | declined | failed
//	cart_offered | awaiting_approval → canceled | expired
type PurchaseStatus string

const (
	PurchaseCartOffered      PurchaseStatus = "cart_offered"
	PurchaseAwaitingApproval PurchaseStatus = "awaiting_approval"
	PurchaseCompleted        PurchaseStatus = "completed"
	PurchaseDeclined         PurchaseStatus = "declined"
	PurchaseFailed           PurchaseStatus = "failed"
	PurchaseCanceled         PurchaseStatus = "canceled"
	PurchaseExpired          PurchaseStatus = "expired"
)

// CreditPurchase is a credit pack an agent buys under AP2: we offer a cart
// (signed CartMandate), the agent answers with a PaymentMandate for it, the
// owner approves that exact charge with a passkey, and we charge and grant
// the credits in one transaction.
type CreditPurchase struct {
	ID           string         `db:"id" json:"cartId"`
	OwnerID      string         `db:"owner_id" json:"-"`
	Mode         Mode           `db:"mode" json:"mode"`
	TaskID       string         `db:"task_id" json:"taskId"`
	PackID       string         `db:"pack_id" json:"packId"`
	AmountMicros int64          `db:"amount_micros" json:"-"`
	CreditMicros int64          `db:"credit_micros" json:"-"`
	Currency     string         `db:"currency" json:"currency"`
	Status       PurchaseStatus `db:"status" json:"status"`
	// CartJWS is the merchant_authorization of the cart we offered.
	CartJWS   string    `db:"cart_jws" json:"-"`
	ExpiresAt time.Time `db:"expires_at" json:"expiresAt"`
	// PaymentMandateID is unique across all purchases: a mandate is
	// honoured once.
	PaymentMandateID *string `db:"payment_mandate_id" json:"paymentMandateId,omitempty"`
	PaymentMethod    string  `db:"payment_method" json:"paymentMethod,omitempty"`
	// Credential is the payment credential of the mandate, sealed with a
	// server secret, kept only until the purchase ends.
	Credential    []byte    `db:"credential" json:"-"`
	ApprovalID    *string   `db:"approval_id" json:"approvalId,omitempty"`
	ChargeID      *string   `db:"charge_id" json:"chargeId,omitempty"`
	FailureCode   string    `db:"failure_code" json:"failureCode,omitempty"`
	FailureReason string    `db:"failure_reason" json:"failureReason,omitempty"`
	CreatedAt     time.Time `db:"created_at" json:"createdAt"`
	UpdatedAt     time.Time `db:"updated_at" json:"updatedAt"`
}

// CartMandate is AP2 v0.1's ap2.mandates.CartMandate: the contents we offer
// and our signature over them (a compact JWS, EdDSA, verifiable at the
// issuer's JWKS), exactly as sent to the agent.
type CartMandate struct {
	Contents              json.RawMessage `json:"contents"`
	MerchantAuthorization string          `json:"merchant_authorization"`
}

// PaymentMandate is the part of AP2 v0.1's ap2.mandates.PaymentMandate core
// checks: which cart it pays, how much, and with what.
type PaymentMandate struct {
	ID string // payment_mandate_contents.payment_mandate_id
	// CartID is payment_mandate_contents.payment_details_id.
	CartID   string
	Currency string // payment_details_total.amount.currency
	// Value is payment_details_total.amount.value as sent (decimal).
	Value string
	// MethodName and Details are payment_response.method_name and
	// .details (the credential, e.g. {"token":"tok_visa"} in test mode).
	MethodName string
	Details    json.RawMessage
	// UserAuthorization is the mandate's user_authorization, recorded
	// with the approval when present.
	UserAuthorization string
}

// PurchaseReceipt is what a completed purchase gives the agent.
type PurchaseReceipt struct {
	CartID    string    `json:"cartId"`
	ChargeID  string    `json:"chargeId"`
	PackID    string    `json:"packId"`
	Amount    string    `json:"amount"`
	Currency  string    `json:"currency"`
	Credit    string    `json:"credit"`
	Method    string    `json:"method"`
	Reference string    `json:"reference"`
	PaidAt    time.Time `json:"paidAt"`
}

// ApprovalCreditPurchase asks the owner to approve one AP2 charge; it
// always requires user verification.
const ApprovalCreditPurchase ApprovalKind = "credit_purchase"

// Operations of tasks (scopes in principal.go).
const (
	OpGetTask    Operation = "get_task"
	OpCancelTask Operation = "cancel_task"
	OpBuyCredits Operation = "buy_credits"
)
