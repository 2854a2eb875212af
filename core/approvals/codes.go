package approvals

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"time"

	"github.com/faxhub/faxhub/core"
)

// A code-confirmed approval is an owner approval that needs a user code
// the requester shows (an agent claim's six digits, a delegated agent's
// device code): the owner, signed in, opens the requester's link, types
// the code and approves what was asked or less. Agent claims and device
// approvals are two doors onto this one mechanism; each keeps its own
// table (the request's state lives with what it approves, so the
// compare-and-set that grants access is one row update) and reaches the
// mechanism through a CodeState it reads and a CodeStore it implements.

// maxTypedCode bounds a typed user code: longer input is a wrong code
// without being hashed.
const maxTypedCode = 64

// CodeFormat is how one kind's user codes look and are stored.
type CodeFormat struct {
	// Alphabet is what a code is drawn from.
	Alphabet string
	// Length is how many characters a code has.
	Length int
	// Group shows a dash every Group characters (0: none).
	Group int
	// Salt keeps one kind's code hashes apart from another's. The claim's
	// is empty: its stored hashes predate the mechanism.
	Salt string
}

// SixDigitCodes are agent claim codes (the spec's "six-digit user_code").
func SixDigitCodes() CodeFormat { return CodeFormat{Alphabet: "0123456789", Length: 6} }

// DeviceCodes are device approval codes, shown XXXX-XXXX: no vowels (no
// words) and no look-alikes (RFC 8628 section 6.1); eight letters are
// about 34 bits, and a few wrong codes end a code.
func DeviceCodes() CodeFormat {
	return CodeFormat{Alphabet: "BCDFGHJKLMNPQRSTVWXZ", Length: 8, Group: 4, Salt: "device:"}
}

// New returns a fresh code as shown and the hash the feature stores.
func (f CodeFormat) New() (code, hash string) {
	var b strings.Builder
	for i := range f.Length {
		if f.Group > 0 && i > 0 && i%f.Group == 0 {
			b.WriteByte('-')
		}
		n, err := rand.Int(rand.Reader, big.NewInt(int64(len(f.Alphabet))))
		if err != nil {
			panic(fmt.Errorf("user code: %w", err)) // crypto/rand does not fail on supported platforms
		}
		b.WriteByte(f.Alphabet[n.Int64()])
	}
	code = b.String()
	return code, f.Hash(code)
}

// Hash is how a code, shown or typed, is stored and compared: case,
// dashes and blanks do not matter, so an owner may type it loosely.
func (f CodeFormat) Hash(code string) string {
	code = strings.Map(func(r rune) rune {
		if r == '-' || r == ' ' || r == '\t' {
			return -1
		}
		return r
	}, strings.ToUpper(code))
	return core.HashSecret(f.Salt + code)
}

// matches compares a typed code with the stored hash in constant time.
func (f CodeFormat) matches(typed, hash string) bool {
	return len(typed) <= maxTypedCode && subtle.ConstantTimeCompare([]byte(f.Hash(typed)), []byte(hash)) == 1
}

// CodeWords are one door's refusals. Each door keeps the wire codes its
// clients and pages know (claim_* for claims, device_* for devices) and its
// own advice on what to do next; the rules behind them are the same.
type CodeWords struct {
	// Expired: the request is past its expiry.
	Expired, ExpiredMsg string
	// Decided: no longer pending; DecidedMsg takes the request's status.
	Decided, DecidedMsg string
	// WrongCode: the typed code does not match (the message says how many
	// tries are left).
	WrongCode string
	// TooManyTries: MaxTries wrong codes ended the code.
	TooManyTries, TooManyMsg string
	// NotRequested: the owner granted something not asked for;
	// NotRequestedMsg takes the item.
	NotRequested, NotRequestedMsg string
	// InboxApproveMsg refuses approving the inbox copy alone.
	InboxApproveMsg string
}

// CodeRules are one kind of code-confirmed approval.
type CodeRules[T ~string] struct {
	Kind     Kind
	Format   CodeFormat
	MaxTries int
	Words    CodeWords
	// GrantKey names the granted set in the inbox copy's decision.
	GrantKey string
	// CheckGrant, when set, checks the set the owner asked to grant before
	// it is narrowed (e.g. not empty).
	CheckGrant func(asked []T) error
}

// CodeState is a pending request as its feature stores it.
type CodeState[T ~string] struct {
	OwnerID string
	// Status is the feature's word for where it stands, for messages.
	Status string
	// Pending: still undecided. Expired: stored as expired (a pending
	// request past ExpiresAt reads as expired too).
	Pending, Expired bool
	ExpiresAt        time.Time
	// Tries counts wrong codes; CodeHash is the current code's hash.
	Tries    int
	CodeHash string
	// Requested is what was asked, in the order grants are stored.
	Requested []T
	// ApprovalID is the inbox copy ("" when there is none).
	ApprovalID string
}

// CodeStore is the port a feature implements over its own row of one
// request.
type CodeStore[T ~string] interface {
	// AddTry counts one wrong code and returns the tries so far.
	AddTry(ctx context.Context) (int, error)
	// Record moves the request once, approved with granted or declined;
	// a request decided or re-issued meanwhile is the door's own error.
	Record(ctx context.Context, approve bool, granted []T) error
}

// CodeDecision is the owner's answer on the request's page.
type CodeDecision[T ~string] struct {
	Approve bool
	// Code is what the owner typed; declining needs none.
	Code string
	// Grant is what the owner grants: nil means everything asked.
	Grant []T
}

// CodeApproval is one kind of code-confirmed approval, bound to the inbox
// that keeps its copies.
type CodeApproval[T ~string] struct {
	inbox *Service
	rules CodeRules[T]
}

// NewCodeApproval returns the mechanism for one kind.
func NewCodeApproval[T ~string](inbox *Service, rules CodeRules[T]) *CodeApproval[T] {
	return &CodeApproval[T]{inbox: inbox, rules: rules}
}

// Start issues a fresh code and the request's inbox copy (r.Kind is set),
// written in tx: the feature's transaction that stores the code's hash with
// the copy's id, or, when nil, a transaction of its own.
func (m *CodeApproval[T]) Start(ctx context.Context, tx Tx, r Request) (code, hash string, a *Approval, err error) {
	r.Kind = m.rules.Kind
	code, hash = m.rules.Format.New()
	if a, err = m.inbox.RequestIn(ctx, tx, r); err != nil {
		return "", "", nil, err
	}
	return code, hash, a, nil
}

// Retire takes a superseded or withdrawn request's inbox copy out of the
// inbox (expired), in tx (nil: a transaction of its own); one decided or
// lapsed already stays as it is.
func (m *CodeApproval[T]) Retire(ctx context.Context, tx Tx, ownerID, approvalID string) error {
	if approvalID == "" {
		return nil
	}
	err := m.inbox.RecordIn(ctx, tx, ownerID, approvalID, Expired, nil)
	if err != nil && !errors.Is(err, core.ErrConflict) && !errors.Is(err, core.ErrNoRows) {
		return fmt.Errorf("retire approval: %w", err)
	}
	return nil
}

// Open refuses a request that can no longer be decided: expired (checked
// first), or decided already.
func (m *CodeApproval[T]) Open(st CodeState[T]) error {
	w := m.rules.Words
	if st.Expired || (st.Pending && !m.inbox.now().Before(st.ExpiresAt)) {
		return core.Errorf(core.KindConflict, w.Expired, "%s", w.ExpiredMsg)
	}
	if !st.Pending {
		return core.Errorf(core.KindConflict, w.Decided, w.DecidedMsg, st.Status)
	}
	return nil
}

// TriesLeft is how many wrong codes the request still takes.
func (m *CodeApproval[T]) TriesLeft(st CodeState[T]) int { return max(m.rules.MaxTries-st.Tries, 0) }

// Decide records the owner's decision on an open request. Approving needs
// the code (MaxTries wrong codes end it, each counted through the port) and
// grants d.Grant narrowed to what was asked; declining needs no code. The
// request moves through the port, then its inbox copy follows. It returns
// what was granted (nil when declined).
func (m *CodeApproval[T]) Decide(ctx context.Context, st CodeState[T], port CodeStore[T], d CodeDecision[T]) ([]T, error) {
	if err := m.Open(st); err != nil {
		return nil, err
	}
	var granted []T
	if d.Approve {
		var err error
		if err = m.confirm(ctx, st, port, d.Code); err != nil {
			return nil, err
		}
		if granted, err = m.grant(st.Requested, d.Grant); err != nil {
			return nil, err
		}
	}
	if err := port.Record(ctx, d.Approve, granted); err != nil {
		return nil, fmt.Errorf("record the owner's decision: %w", err)
	}
	m.recordCopy(ctx, st.OwnerID, st.ApprovalID, d.Approve, granted)
	return granted, nil
}

// Decline declines a request that is still pending, even past its expiry
// (an owner may always turn a request down; the inbox's Decline does), and
// its inbox copy follows; a request decided already is left as it is.
func (m *CodeApproval[T]) Decline(ctx context.Context, st CodeState[T], port CodeStore[T]) error {
	if !st.Pending {
		return nil
	}
	if err := port.Record(ctx, false, nil); err != nil {
		return fmt.Errorf("record the owner's decline: %w", err)
	}
	m.recordCopy(ctx, st.OwnerID, st.ApprovalID, false, nil)
	return nil
}

// confirm checks the typed code, counting a wrong one.
func (m *CodeApproval[T]) confirm(ctx context.Context, st CodeState[T], port CodeStore[T], typed string) error {
	w := m.rules.Words
	tooMany := core.Errorf(core.KindForbidden, w.TooManyTries, "%s", w.TooManyMsg)
	if st.Tries >= m.rules.MaxTries {
		return tooMany
	}
	if m.rules.Format.matches(typed, st.CodeHash) {
		return nil
	}
	tries, err := port.AddTry(ctx)
	if err != nil {
		return fmt.Errorf("count a wrong code: %w", err)
	}
	if tries >= m.rules.MaxTries {
		return tooMany
	}
	left := m.rules.MaxTries - tries
	return core.Errorf(core.KindInvalid, w.WrongCode, "the code does not match; %d tries left", left).With("tries_left", left)
}

// grant narrows asked to what was requested with core.NarrowScopes, the
// one narrow-never-widen rule: nil asks for everything; an item not
// requested is refused. The grant keeps the request's order and no
// duplicates.
func (m *CodeApproval[T]) grant(requested, asked []T) ([]T, error) {
	if asked == nil {
		asked = requested
	}
	if m.rules.CheckGrant != nil {
		if err := m.rules.CheckGrant(asked); err != nil {
			return nil, err
		}
	}
	w := m.rules.Words
	granted, err := core.NarrowScopes(requested, asked, func(it T) *core.Error {
		return core.Errorf(core.KindForbidden, w.NotRequested, w.NotRequestedMsg, core.CutUTF8(string(it), 64))
	})
	if err != nil {
		return nil, err
	}
	if granted == nil {
		granted = []T{} // granted nothing, as opposed to declined
	}
	return granted, nil
}

// recordCopy moves the inbox copy with the request. The request's
// decision stands whatever happens here: a copy decided or lapsed already
// is left, any other failure is logged.
func (m *CodeApproval[T]) recordCopy(ctx context.Context, ownerID, approvalID string, approve bool, granted []T) {
	if approvalID == "" {
		return
	}
	status := Declined
	if approve {
		status = Approved
	}
	if granted == nil {
		granted = []T{}
	}
	data, err := json.Marshal(map[string][]T{m.rules.GrantKey: granted})
	if err == nil {
		err = m.inbox.RecordIn(ctx, nil, ownerID, approvalID, status, data)
	}
	if err != nil && !errors.Is(err, core.ErrConflict) && !errors.Is(err, core.ErrNoRows) {
		m.inbox.d.Logger.WarnContext(ctx, "code-confirmed approval: decide the inbox copy", "kind", m.rules.Kind, "approval_id", approvalID, "err", err)
	}
}

// Handler is the inbox's Handler for this kind: the inbox copy alone cannot
// be approved (the code is typed on the request's page, and Decide records
// the copy itself); declining the copy declines the request through
// decline.
func (m *CodeApproval[T]) Handler(decline func(ctx context.Context, a *Approval) error) Handler {
	return Handler{
		Check: func(context.Context, *Approval) error {
			return core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "%s", m.rules.Words.InboxApproveMsg)
		},
		Decided: func(ctx context.Context, a *Approval, approved bool) error {
			if approved {
				return nil
			}
			return decline(ctx, a)
		},
	}
}
