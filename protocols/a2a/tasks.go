package a2a

import (
	"encoding/json"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/numbers"
	"github.com/faxhub/faxhub/core/tasks"
)

// Data part keys of AP2 v0.1 (docs/a2a-extension.md).
const (
	keyIntentMandate  = "ap2.mandates.IntentMandate"
	keyCartMandate    = "ap2.mandates.CartMandate"
	keyPaymentMandate = "ap2.mandates.PaymentMandate"
)

// Artifact names (and ids: a task has at most one of each).
const (
	artifactFaxDraft = "fax-draft"
	artifactFax      = "fax"
	artifactCart     = keyCartMandate
	artifactReceipt  = "receipt"
	artifactNumber   = "number"
)

var taskStates = map[tasks.State]a2a.TaskState{
	tasks.Submitted:     a2a.TaskStateSubmitted,
	tasks.Working:       a2a.TaskStateWorking,
	tasks.InputRequired: a2a.TaskStateInputRequired,
	tasks.Completed:     a2a.TaskStateCompleted,
	tasks.Failed:        a2a.TaskStateFailed,
	tasks.Canceled:      a2a.TaskStateCanceled,
	tasks.Rejected:      a2a.TaskStateRejected,
}

// Results of the skills and of tasks, in the JSON the docs show.
type (
	approvalOut struct {
		CartID      string `json:"cartId"`
		PackID      string `json:"packId"`
		ApprovalURL string `json:"approvalUrl"`
		ExpiresAt   string `json:"expiresAt"`
	}
	failureOut struct {
		FailureCode   string `json:"failureCode"`
		FailureReason string `json:"failureReason,omitempty"`
	}
)

// renderTask maps a core task onto an A2A task: the status message says
// in words and data where the task stands (the draft and its checkout, the
// fax, the cart, the approval, the receipt, the failure); artifacts hold
// what the task produced so far.
func renderTask(tv *tasks.View) *a2a.Task {
	state, ok := taskStates[tv.State]
	if !ok {
		state = a2a.TaskStateUnspecified
	}
	t := &a2a.Task{ID: a2a.TaskID(tv.ID), ContextID: tv.ContextID, Metadata: map[string]any{"skill": tv.Skill}}

	// current is what the status message's data part shows; when it is
	// what an artifact shows too, currentPart is that artifact's part,
	// rendered once (rendering is a JSON round trip).
	var (
		current     any
		currentPart *a2a.Part
	)
	// show adds an artifact of data and makes data the current value.
	show := func(name, desc string, data any) {
		a := artifact(name, desc, data)
		t.Artifacts = append(t.Artifacts, a)
		current, currentPart = data, a.Parts[0]
	}
	switch tv.Kind {
	case tasks.KindFax:
		if d := tv.Draft; d != nil {
			show(artifactFaxDraft, "the drafted fax, its price and the page where the owner pays for it", faxes.PresentDraftOptions(d, tv.CheckoutURL))
		}
		if tv.Fax != nil {
			fax := faxes.PresentFax(tv.Fax)
			if tv.State == tasks.Completed {
				desc := "the fax as delivered"
				if tv.Fax.Status == faxes.Partial {
					desc = "the fax, partly delivered: see pagesSent"
				}
				show(artifactFax, desc, fax)
			} else {
				current, currentPart = fax, nil
			}
		}
	case tasks.KindNumber:
		if tv.Number != nil {
			num := numbers.Present(tv.Number)
			if tv.State == tasks.Completed {
				show(artifactNumber, "the fax number, now the owner's: faxes to it arrive in the inbox", num)
			} else {
				current, currentPart = num, nil
			}
		}
	case tasks.KindCreditPurchase:
		if tv.CartMandate != nil {
			show(artifactCart, "the cart faxhub offers, signed by faxhub (verify merchant_authorization at the issuer's JWKS)",
				map[string]any{keyCartMandate: tv.CartMandate})
		}
		// Waiting for the owner's approval, or approved and being charged.
		if tv.ApprovalURL != "" && tv.Purchase != nil && tv.Purchase.Status == tasks.PurchaseAwaitingApproval {
			current, currentPart = approvalOut{CartID: tv.Purchase.ID, PackID: tv.Purchase.PackID, ApprovalURL: tv.ApprovalURL, ExpiresAt: core.RFC3339(tv.Purchase.ExpiresAt)}, nil
		}
		if tv.Receipt != nil {
			show(artifactReceipt, "the receipt of the charge; the credits are in the balance", tv.Receipt)
		}
	}
	if tv.FailureCode != "" && (tv.State == tasks.Failed || tv.State == tasks.Canceled || tv.State == tasks.Rejected) {
		f := failureOut{FailureCode: tv.FailureCode}
		switch {
		case tv.Purchase != nil:
			f.FailureReason = tv.Purchase.FailureReason
		case tv.Fax != nil:
			f.FailureReason = tv.Fax.FailureReason
		case tv.Number != nil:
			f.FailureReason = tv.Number.FailureReason
		}
		current, currentPart = f, nil
	}

	msg := &a2a.Message{ID: tv.ID + "-" + string(tv.State), Role: a2a.MessageRoleAgent, TaskID: t.ID, ContextID: tv.ContextID}
	if tv.Message != "" {
		msg.Parts = append(msg.Parts, a2a.NewTextPart(tv.Message))
	}
	if currentPart == nil && current != nil {
		currentPart = dataPart(current)
	}
	if currentPart != nil {
		msg.Parts = append(msg.Parts, currentPart)
	}
	ts := tv.UpdatedAt
	if ts.IsZero() {
		ts = tv.CreatedAt
	}
	ts = ts.UTC()
	t.Status = a2a.TaskStatus{State: state, Timestamp: &ts}
	if len(msg.Parts) > 0 {
		t.Status.Message = msg
	}
	return t
}

func artifact(name, desc string, data any) *a2a.Artifact {
	return &a2a.Artifact{ID: a2a.ArtifactID(name), Name: name, Description: desc, Parts: a2a.ContentParts{dataPart(data)}}
}

// dataPart renders v as a data part holding a JSON object (0.3 clients
// get a plain DataPart only for objects).
func dataPart(v any) *a2a.Part {
	b, err := json.Marshal(v)
	var m map[string]any
	if err != nil || json.Unmarshal(b, &m) != nil {
		m = map[string]any{}
	}
	return a2a.NewDataPart(m)
}
