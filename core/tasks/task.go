// Package tasks is the long-running work agents ask for over A2A: a fax
// they drafted and the owner pays at a hosted checkout, credits they buy
// under an AP2 mandate (ap2.go), a fax number the owner pays at a checkout.
// A task row stores only what it follows; its state is derived from that
// subject every time it is read, so any replica answers. Adapters map View
// to their protocol; they decide nothing.
package tasks

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/approvals"
	"github.com/faxhub/faxhub/core/credits"
	"github.com/faxhub/faxhub/core/events"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/numbers"
	"github.com/faxhub/faxhub/core/payments"
	"github.com/faxhub/faxhub/core/webhooks"
)

// Kind says what a task follows.
type Kind string

const (
	// KindFax follows a draft, then the fax it became when paid.
	KindFax Kind = "fax"
	// KindCreditPurchase follows an AP2 credit purchase: cart offered,
	// payment mandate received, owner approval, charge.
	KindCreditPurchase Kind = "credit_purchase"
	// KindNumber follows a number: its checkout, then its provisioning.
	KindNumber Kind = "number"
)

// State is a task's protocol-neutral state (A2A's TASK_STATE_*).
type State string

const (
	Submitted     State = "submitted"
	Working       State = "working"
	InputRequired State = "input_required"
	Completed     State = "completed"
	Failed        State = "failed"
	Canceled      State = "canceled"
	Rejected      State = "rejected"
)

// Terminal reports whether the state can no longer change.
func (s State) Terminal() bool {
	switch s {
	case Completed, Failed, Canceled, Rejected:
		return true
	}
	return false
}

// Task is the stored part of a task.
type Task struct {
	ID        string    `db:"id"`
	OwnerID   string    `db:"owner_id"`
	Mode      core.Mode `db:"mode"`
	Kind      Kind      `db:"kind"`
	Skill     string    `db:"skill"`
	ContextID string    `db:"context_id"`
	// SubjectID is what the task follows: a draft id (TaskFax), a cart id
	// (TaskCreditPurchase).
	SubjectID string    `db:"subject_id"`
	CreatedAt time.Time `db:"created_at"`
}

// View is a task as of now, for an adapter to render.
type View struct {
	Task
	State State
	// Message is one line for the agent saying where the task stands and
	// what happens next (who must act, where).
	Message string
	// FailureCode is set for failed and canceled tasks (draft_expired,
	// payment_declined, approval_declined, the fax's failure code…).
	FailureCode string
	UpdatedAt   time.Time

	// KindFax: the draft (always) and its hosted checkout page; the fax
	// once paid, with its latest attempt.
	Draft       *faxes.DraftView
	CheckoutURL string
	Fax         *faxes.Fax

	// KindCreditPurchase: the purchase, its signed cart mandate, the page
	// where the owner approves, and the receipt once charged.
	Purchase    *CreditPurchase
	CartMandate *CartMandate
	ApprovalURL string
	Receipt     *PurchaseReceipt

	// KindNumber: the number (CheckoutURL while it awaits payment).
	Number *numbers.Number
}

// Queries persists tasks and credit purchases; part of services.Store.
type Queries interface {
	CreateAgentTask(ctx context.Context, t *Task) error
	// GetAgentTask reads one of the owner's tasks; ErrNoRows for another
	// owner's task exactly as for an unknown id.
	GetAgentTask(ctx context.Context, ownerID, id string) (*Task, error)
	// GetAgentTaskDraft reads a task as GetAgentTask does and, for a fax
	// task, its draft as GetDraft reads it with the task's owner and mode
	// (nil when the task is of another kind or its draft is gone), in one
	// read: GetTask needs both on every call.
	GetAgentTaskDraft(ctx context.Context, ownerID, id string) (*Task, *faxes.Draft, error)

	CreateCreditPurchase(ctx context.Context, c *CreditPurchase) error
	GetCreditPurchase(ctx context.Context, ownerID, id string) (*CreditPurchase, error)
	GetCreditPurchaseByApproval(ctx context.Context, approvalID string) (*CreditPurchase, error)
	// UpdateCreditPurchase writes c's mutable fields if the stored status
	// is from; ErrConflict otherwise, ErrExists when c.PaymentMandateID is
	// already recorded on another purchase (a replayed mandate).
	UpdateCreditPurchase(ctx context.Context, c *CreditPurchase, from PurchaseStatus) error

	// CancelDraft moves an open draft to canceled; ErrConflict otherwise.
	CancelDraft(ctx context.Context, ownerID string, mode core.Mode, id string) error

	PushQueries
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
	Mode         core.Mode      `db:"mode" json:"mode"`
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

// Store keeps tasks and credit purchases, and the shared secret that seals
// payment credentials while a purchase waits for its approval.
type Store interface {
	Tx
	core.Transactor
	core.Secrets
}

// Tx is a transaction of tasks.
type Tx interface {
	faxes.Tx
	approvals.Tx
	Queries
}

// Deps are the ports tasks drive.
type Deps struct {
	Store Store
	// Signer signs the AP2 cart mandates faxhub offers with the issuer's
	// key; without it AP2 purchases answer payment_method_not_configured.
	Signer core.Signer
	// PaymentMethods charge AP2 payment credentials, per mode.
	PaymentMethods map[core.Mode]payments.PaymentMethod
	Prices         *core.PriceTable
	Logger         *slog.Logger
	// Core drafts, prices and cancels faxes and numbers.
	Kernel *core.Kernel
	// Approvals asks the owner and reads their decisions.
	Approvals *approvals.Service
	// Credits reads balances and packs.
	Credits *credits.Service
	// Numbers reads and pays the numbers it acts on.
	Numbers *numbers.Service
	// Faxes creates, prices and reads faxes and drafts.
	Faxes *faxes.Service
	// Events is the owners' event log, which task streams follow.
	Events *events.Service
	// Webhooks checks push notification URLs and delivers them; with
	// PushBody (the protocol's rendering of a task) and Signer, tasks take
	// push notification configs.
	Webhooks *webhooks.Service
	PushBody PushRenderer
}

// Service runs agent tasks.
type Service struct {
	cfg       core.Config
	conf      Config
	d         Deps
	kernel    *core.Kernel
	approvals *approvals.Service
	credits   *credits.Service
	numbers   *numbers.Service
	faxes     *faxes.Service
	streams   *streams
}

// New returns the task service; cfg is the kernel's configuration
// (origins, clock) with its defaults applied, conf the feature's own.
func New(cfg core.Config, conf Config, d Deps) *Service {
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.Prices == nil {
		d.Prices = core.DefaultPriceTable()
	}
	conf.SetDefaults()
	return &Service{cfg: cfg, conf: conf, d: d, kernel: d.Kernel, faxes: d.Faxes, numbers: d.Numbers, credits: d.Credits,
		approvals: d.Approvals, streams: newStreams()}
}

func (s *Service) now() time.Time { return core.Clock(s.cfg.Now).Now() }

// inTx runs fn in one transaction of the store, typed as tasks'.
func (s *Service) inTx(ctx context.Context, fn func(tx Tx) error) error {
	return s.d.Store.InTx(ctx, func(tx core.Tx) error { return fn(tx.(Tx)) })
}
