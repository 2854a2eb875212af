package a2a

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/inbox"
	"github.com/faxhub/faxhub/core/numbers"
	"github.com/faxhub/faxhub/core/tasks"
)

// requestHandler implements a2asrv.RequestHandler directly over core:
// no executor, no task store; every answer is read from core.
type requestHandler struct{ h *Handler }

var _ a2asrv.RequestHandler = (*requestHandler)(nil)

func principal(ctx context.Context) (core.Principal, error) {
	p, ok := core.PrincipalFrom(ctx)
	if !ok {
		return core.Principal{}, a2a.NewError(a2a.ErrUnauthenticated, "authentication required")
	}
	return p, nil
}

// fail maps a core error and logs what is faxhub's fault.
func (rh *requestHandler) fail(ctx context.Context, what string, err error, target errorTarget) error {
	e := toA2AError(err, target)
	if errors.Is(e, a2a.ErrInternalError) {
		rh.h.opts.Logger.ErrorContext(ctx, "a2a: "+what, "err", err)
	}
	return e
}

// result is what a message produced: an immediate answer, or a task as
// core derived it.
type result struct {
	msg  *a2a.Message
	task *tasks.View
}

// SendMessage runs a skill, starts an AP2 purchase from an IntentMandate
// or continues one with a PaymentMandate.
func (rh *requestHandler) SendMessage(ctx context.Context, req *a2a.SendMessageRequest) (a2a.SendMessageResult, error) {
	r, err := rh.send(ctx, req)
	switch {
	case err != nil:
		return nil, err
	case r.task != nil:
		return renderTask(r.task), nil
	}
	return r.msg, nil
}

// send is SendMessage with the task as core derived it. A push
// notification config in the request's configuration is set on the task
// the message starts or continues; it is checked (as
// CreateTaskPushNotificationConfig checks it) before the message is
// acted on, so a bad one changes nothing.
func (rh *requestHandler) send(ctx context.Context, req *a2a.SendMessageRequest) (result, error) {
	p, err := principal(ctx)
	if err != nil {
		return result{}, err
	}
	var push *a2a.PushConfig
	if req != nil && req.Config != nil && req.Config.PushConfig != nil {
		push = req.Config.PushConfig
		if !rh.startsTask(req) {
			return result{}, invalidParams("configuration.taskPushNotificationConfig needs a message that starts or continues a task (create_fax, buy_number, buy_credits)", map[string]any{"field": "configuration.taskPushNotificationConfig"})
		}
		if err := rh.h.svc.Tasks.CheckPushConfig(ctx, p, pushRequest("", push)); err != nil {
			return result{}, rh.fail(ctx, "check push config", err, targetSkill)
		}
	}
	r, err := rh.sendMessage(ctx, p, req)
	if err != nil || push == nil || r.task == nil {
		return r, err
	}
	if _, err := rh.h.svc.Tasks.SetPushConfig(ctx, p, pushRequest(a2a.TaskID(r.task.ID), push)); err != nil {
		return result{}, rh.pushFail(ctx, "set push config", err)
	}
	return r, nil
}

func (rh *requestHandler) sendMessage(ctx context.Context, p core.Principal, req *a2a.SendMessageRequest) (result, error) {
	msg := req.Message
	expected := `send exactly one data part {"skill": <skill id>, "arguments": {…}} (skills: ` + strings.Join(rh.h.skillIDs(), ", ") +
		`); free text and files are not interpreted. Upload files with create_upload`
	if msg == nil || len(msg.Parts) != 1 {
		n := 0
		if msg != nil {
			n = len(msg.Parts)
		}
		return result{}, invalidParams(fmt.Sprintf("the message has %d parts: %s", n, expected), map[string]any{"skills": rh.h.skillIDs(), "parts": n})
	}
	if msg.Parts[0] == nil {
		return result{}, invalidParams("the message's part is null: "+expected, map[string]any{"skills": rh.h.skillIDs()})
	}
	data, ok := msg.Parts[0].Content.(a2a.Data)
	if !ok {
		return result{}, invalidParams(fmt.Sprintf("the message's part is %s, not data: %s", partKind(msg.Parts[0]), expected), map[string]any{"skills": rh.h.skillIDs(), "part": partKind(msg.Parts[0])})
	}
	obj, ok := data.Value.(map[string]any)
	if !ok {
		return result{}, invalidParams("the data part must hold a JSON object: "+expected, map[string]any{"skills": rh.h.skillIDs()})
	}
	switch {
	case has(obj, keyIntentMandate):
		return rh.intentMandate(ctx, p, msg, obj)
	case has(obj, keyPaymentMandate):
		if err := onlyKeys(obj, keyPaymentMandate); err != nil {
			return result{}, err
		}
		return rh.paymentMandate(ctx, p, msg, obj[keyPaymentMandate])
	case has(obj, "skill"):
		return rh.runSkill(ctx, p, msg, obj)
	}
	return result{}, invalidParams(`the data part has no "skill": `+expected, map[string]any{"skills": rh.h.skillIDs()})
}

func has(m map[string]any, k string) bool { _, ok := m[k]; return ok }

// onlyKeys refuses a data object with other members than keys.
func onlyKeys(m map[string]any, keys ...string) error {
	var extra []string
	for k := range m {
		if !slices.Contains(keys, k) {
			extra = append(extra, k)
		}
	}
	if len(extra) == 0 {
		return nil
	}
	sort.Strings(extra)
	return invalidParams(fmt.Sprintf("the data part may hold only %s; it also has %s", strings.Join(keys, " and "), strings.Join(extra, ", ")),
		map[string]any{"field": extra[0]})
}

func partKind(p *a2a.Part) string {
	switch p.Content.(type) {
	case a2a.Text:
		return "text"
	case a2a.Raw, a2a.URL:
		return "a file"
	}
	return "not data"
}

func contextID(msg *a2a.Message) string {
	if msg.ContextID != "" {
		return msg.ContextID
	}
	return a2a.NewContextID()
}

// reply is an immediate skill's answer: a message with the result.
func reply(msg *a2a.Message, result any) *a2a.Message {
	return &a2a.Message{ID: a2a.NewMessageID(), Role: a2a.MessageRoleAgent, ContextID: contextID(msg), Parts: a2a.ContentParts{dataPart(result)}}
}

// requireAP2 is the one protocol check the adapter makes itself: AP2
// messages need the extension activated in A2A-Extensions.
func requireAP2(ctx context.Context, what string) error {
	if ap2Active(ctx) {
		return nil
	}
	return a2a.NewError(a2a.ErrExtensionSupportRequired,
		fmt.Sprintf("%s needs the AP2 extension: send the header %s: %s", what, HeaderExtensions, ExtensionAP2)).
		WithDetails(map[string]any{"extension": ExtensionAP2})
}

func (rh *requestHandler) runSkill(ctx context.Context, p core.Principal, msg *a2a.Message, obj map[string]any) (result, error) {
	if err := onlyKeys(obj, "skill", "arguments"); err != nil {
		return result{}, err
	}
	id, _ := obj["skill"].(string)
	s, ok := rh.h.skill(id)
	if !ok {
		return result{}, invalidParams(fmt.Sprintf("unknown skill %q; the skills are: %s", id, strings.Join(rh.h.skillIDs(), ", ")),
			map[string]any{"field": "skill", "skills": rh.h.skillIDs()})
	}
	if msg.TaskID != "" && s.ID != "buy_credits" {
		return result{}, invalidParams(fmt.Sprintf("%s does not continue a task (message.taskId is set): send it without taskId; a fax or number task waits for the owner at its checkoutUrl, poll it with GetTask", s.ID),
			map[string]any{"field": "taskId", "skill": s.ID})
	}
	if s.AP2 {
		if err := requireAP2(ctx, "the skill "+s.ID); err != nil {
			return result{}, err
		}
	}
	args, err := decodeArgs(s, obj["arguments"])
	if err != nil {
		return result{}, err
	}
	if v, ok, err := rh.proofSkill(ctx, p, s, args); ok {
		if err != nil {
			return result{}, err
		}
		return result{msg: reply(msg, v)}, nil
	}
	svc := rh.h.svc
	switch a := args.(type) {
	case *validateFaxArgs:
		q, err := svc.Faxes.Quote(ctx, p, faxes.QuoteRequest{To: a.To, Pages: a.Pages, Cover: a.Cover})
		if err != nil {
			return result{}, rh.fail(ctx, s.ID, err, targetSkill)
		}
		return result{msg: reply(msg, q)}, nil
	case *createUploadArgs:
		if len(a.FileName) > MaxFileNameBytes {
			return result{}, invalidParams(fmt.Sprintf("the argument \"fileName\" of %s may be at most %d bytes (it has %d)", s.ID, MaxFileNameBytes, len(a.FileName)),
				map[string]any{"skill": s.ID, "field": "fileName", "limit": MaxFileNameBytes})
		}
		c, err := svc.Documents.CreateUpload(ctx, p, a.ContentType, 0)
		if err != nil {
			return result{}, rh.fail(ctx, s.ID, err, targetSkill)
		}
		// The page where a person picks a file for an agent (protocols/mcp
		// serves it; the token goes in the fragment).
		page, err := rh.h.url("mcp.uploadPage")
		if err != nil {
			return result{}, rh.fail(ctx, s.ID, err, targetSkill)
		}
		return result{msg: reply(msg, map[string]any{"uploadUrl": c.UploadURL, "uploadToken": c.UploadToken,
			"uploadPageUrl": page + "#" + c.UploadToken, "method": c.Method,
			"expiresAt": core.RFC3339(c.ExpiresAt), "maxBytes": c.MaxBytes})}, nil
	case *createFaxArgs:
		opts, err := a.options(s.ID)
		if err != nil {
			return result{}, err
		}
		tv, err := svc.Tasks.StartFaxTask(ctx, p, s.ID, msg.ContextID, faxes.CreateDraftRequest{To: a.To, UploadToken: a.UploadToken, Cover: a.Cover, CoverText: a.CoverText, From: a.From, Options: opts})
		if err != nil {
			return result{}, rh.fail(ctx, s.ID, err, targetSkill)
		}
		return result{task: tv}, nil
	case *getFaxArgs:
		f, err := svc.Faxes.Get(ctx, p, a.FaxID)
		if err != nil {
			return result{}, rh.fail(ctx, s.ID, err, targetSkill)
		}
		return result{msg: reply(msg, faxes.PresentFax(f))}, nil
	case *listFaxesArgs:
		page, err := svc.Faxes.List(ctx, p, faxes.ListRequest{Status: a.Status, CreatedFrom: a.CreatedFrom, CreatedTo: a.CreatedTo,
			StartingAfter: a.StartingAfter, Limit: a.Limit})
		if err != nil {
			return result{}, rh.fail(ctx, s.ID, err, targetSkill)
		}
		views := make([]faxes.FaxView, 0, len(page.Data))
		for i := range page.Data {
			views = append(views, faxes.PresentFax(&page.Data[i]))
		}
		out := map[string]any{"faxes": views, "hasMore": page.HasMore}
		if page.Next != "" {
			out["nextCursor"] = page.Next
		}
		return result{msg: reply(msg, out)}, nil
	case *noArgs: // get_credits
		c, err := svc.Credits.Get(ctx, p, "", 1)
		if err != nil {
			return result{}, rh.fail(ctx, s.ID, err, targetSkill)
		}
		packs := make([]map[string]string, 0, len(svc.Credits.Packs()))
		for _, pk := range svc.Credits.Packs() {
			packs = append(packs, map[string]string{"id": pk.ID, "name": pk.Name, "price": pk.Price, "credit": pk.Credit})
		}
		return result{msg: reply(msg, map[string]any{"mode": string(p.Mode), "balance": c.Available, "held": c.Held, "currency": c.Currency, "packs": packs})}, nil
	case *packArgs: // create_credit_checkout
		cs, err := svc.Checkout.StartCreditPack(ctx, p, a.PackID)
		if err != nil {
			return result{}, rh.fail(ctx, s.ID, err, targetSkill)
		}
		return result{msg: reply(msg, map[string]any{"checkoutUrl": cs.CheckoutURL, "packId": cs.PackID, "amount": cs.Amount,
			"credit": cs.Credit, "currency": cs.Currency, "expiresAt": core.RFC3339(cs.ExpiresAt)})}, nil
	case *buyCreditsArgs:
		switch {
		case a.PackID != "" && len(a.PaymentMandate) > 0:
			return result{}, invalidParams("buy_credits takes packId (to start a purchase) or paymentMandate (to pay for its cart), not both",
				map[string]any{"skill": s.ID, "field": "paymentMandate"})
		case len(a.PaymentMandate) > 0:
			var v any
			_ = json.Unmarshal(a.PaymentMandate, &v)
			return rh.paymentMandate(ctx, p, msg, v)
		case a.PackID == "":
			return result{}, invalidParams("buy_credits needs packId (or, on its task, paymentMandate)", map[string]any{"skill": s.ID, "field": "packId"})
		case msg.TaskID != "":
			return result{}, invalidParams("a new purchase starts without message.taskId; answer an existing one with paymentMandate", map[string]any{"skill": s.ID, "field": "taskId"})
		}
		return rh.startPurchase(ctx, p, msg, a.PackID)
	case *searchNumbersArgs:
		found, err := svc.Numbers.Search(ctx, p, numbers.Search{Country: a.Country, AreaCode: a.AreaCode, Locality: a.Locality, Limit: a.Limit})
		if err != nil {
			return result{}, rh.fail(ctx, s.ID, err, targetSkill)
		}
		if found == nil {
			found = []numbers.AvailableNumber{} // an empty list, never null
		}
		return result{msg: reply(msg, map[string]any{"numbers": found})}, nil
	case *buyNumberArgs:
		tv, err := svc.Tasks.StartNumberTask(ctx, p, s.ID, msg.ContextID, numbers.BuyRequest{Number: a.Number})
		if err != nil {
			return result{}, rh.fail(ctx, s.ID, err, targetSkill)
		}
		return result{task: tv}, nil
	case *listNumbersArgs:
		ns, err := svc.Numbers.List(ctx, p, a.All)
		if err != nil {
			return result{}, rh.fail(ctx, s.ID, err, targetSkill)
		}
		out := make([]numbers.View, 0, len(ns))
		for i := range ns {
			out = append(out, numbers.Present(&ns[i]))
		}
		return result{msg: reply(msg, map[string]any{"numbers": out})}, nil
	case *listInboxArgs:
		page, err := svc.Inbox.List(ctx, p, inbox.Query{NumberID: a.NumberID, StartingAfter: a.StartingAfter, Limit: a.Limit})
		if err != nil {
			return result{}, rh.fail(ctx, s.ID, err, targetSkill)
		}
		faxes := make([]inbox.ItemView, 0, len(page.Data))
		for i := range page.Data {
			faxes = append(faxes, inbox.PresentItem(&page.Data[i]))
		}
		out := map[string]any{"faxes": faxes, "hasMore": page.HasMore}
		if page.Next != "" {
			out["nextCursor"] = page.Next
		}
		return result{msg: reply(msg, out)}, nil
	case *readInboxArgs:
		f, err := svc.Inbox.Get(ctx, p, a.ID)
		if err != nil {
			return result{}, rh.fail(ctx, s.ID, err, targetSkill)
		}
		var link *inbox.Link
		if f.Status == inbox.Received {
			if link, err = svc.Inbox.Download(ctx, p, f.ID); err != nil {
				return result{}, rh.fail(ctx, s.ID, err, targetSkill)
			}
		}
		return result{msg: reply(msg, inbox.PresentFax(f, link))}, nil
	}
	return result{}, a2a.NewError(a2a.ErrInternalError, internalErrorMessage)
}

func (rh *requestHandler) startPurchase(ctx context.Context, p core.Principal, msg *a2a.Message, packID string) (result, error) {
	tv, err := rh.h.svc.Tasks.StartCreditPurchase(ctx, p, "buy_credits", msg.ContextID, packID)
	if err != nil {
		return result{}, rh.fail(ctx, "buy_credits", err, targetSkill)
	}
	return result{task: tv}, nil
}

// intentMandate starts buy_credits from an AP2 IntentMandate: its first
// SKU is the pack.
func (rh *requestHandler) intentMandate(ctx context.Context, p core.Principal, msg *a2a.Message, obj map[string]any) (result, error) {
	if err := onlyKeys(obj, keyIntentMandate); err != nil {
		return result{}, err
	}
	if err := requireAP2(ctx, "an "+keyIntentMandate); err != nil {
		return result{}, err
	}
	if msg.TaskID != "" {
		return result{}, invalidParams("an IntentMandate starts a new purchase: send it without message.taskId", map[string]any{"field": "taskId"})
	}
	im, _ := obj[keyIntentMandate].(map[string]any)
	skus, _ := im["skus"].([]any)
	var pack string
	if len(skus) > 0 {
		pack, _ = skus[0].(string)
	}
	if pack == "" {
		return result{}, invalidParams(keyIntentMandate+".skus[0] must name the credit pack to buy", map[string]any{"field": "skus"})
	}
	return rh.startPurchase(ctx, p, msg, pack)
}

// ap2PaymentMandate is the part of AP2 v0.1's PaymentMandate faxhub reads;
// other members (payer, shipping, refund period…) are ignored.
type ap2PaymentMandate struct {
	Contents struct {
		ID        string `json:"payment_mandate_id"`
		DetailsID string `json:"payment_details_id"`
		Total     struct {
			Amount struct {
				Currency string      `json:"currency"`
				Value    json.Number `json:"value"`
			} `json:"amount"`
		} `json:"payment_details_total"`
		Response struct {
			MethodName string          `json:"method_name"`
			Details    json.RawMessage `json:"details"`
		} `json:"payment_response"`
	} `json:"payment_mandate_contents"`
	UserAuthorization string `json:"user_authorization"`
}

// paymentMandate continues the buy_credits task message.taskId with the
// agent's PaymentMandate.
func (rh *requestHandler) paymentMandate(ctx context.Context, p core.Principal, msg *a2a.Message, raw any) (result, error) {
	if err := requireAP2(ctx, "a "+keyPaymentMandate); err != nil {
		return result{}, err
	}
	if msg.TaskID == "" {
		return result{}, invalidParams("a PaymentMandate pays for the cart of a buy_credits task: set message.taskId to that task's id", map[string]any{"field": "taskId"})
	}
	b, err := json.Marshal(raw)
	if _, isObj := raw.(map[string]any); err != nil || !isObj {
		return result{}, invalidParams("the PaymentMandate must be a JSON object (AP2 v0.1 ap2.mandates.PaymentMandate)", map[string]any{"field": "paymentMandate"})
	}
	var pm ap2PaymentMandate
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&pm); err != nil {
		return result{}, invalidParams("the PaymentMandate is not an AP2 v0.1 PaymentMandate: "+err.Error(), map[string]any{"field": "paymentMandate"})
	}
	c := pm.Contents
	for _, f := range []struct{ name, value string }{
		{"payment_mandate_contents.payment_mandate_id", c.ID},
		{"payment_mandate_contents.payment_details_id", c.DetailsID},
		{"payment_mandate_contents.payment_details_total.amount.currency", c.Total.Amount.Currency},
		{"payment_mandate_contents.payment_details_total.amount.value", c.Total.Amount.Value.String()},
		{"payment_mandate_contents.payment_response.details", string(c.Response.Details)},
	} {
		if f.value == "" || f.value == "null" {
			return result{}, invalidParams("the PaymentMandate lacks "+f.name, map[string]any{"field": f.name})
		}
	}
	tv, err := rh.h.svc.Tasks.SubmitPaymentMandate(ctx, p, string(msg.TaskID), tasks.PaymentMandate{
		ID: c.ID, CartID: c.DetailsID, Currency: c.Total.Amount.Currency, Value: c.Total.Amount.Value.String(),
		MethodName: c.Response.MethodName, Details: c.Response.Details, UserAuthorization: pm.UserAuthorization,
	})
	if err != nil {
		return result{}, rh.fail(ctx, "payment mandate", err, targetTask)
	}
	return result{task: tv}, nil
}

// GetTask reads a task from core (history is not kept: historyLength is
// ignored).
func (rh *requestHandler) GetTask(ctx context.Context, req *a2a.GetTaskRequest) (*a2a.Task, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	tv, err := rh.h.svc.Tasks.Get(ctx, p, string(req.ID))
	if err != nil {
		return nil, rh.fail(ctx, "get task", err, targetTask)
	}
	return renderTask(tv), nil
}

// CancelTask asks core to cancel.
func (rh *requestHandler) CancelTask(ctx context.Context, req *a2a.CancelTaskRequest) (*a2a.Task, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	tv, err := rh.h.svc.Tasks.Cancel(ctx, p, string(req.ID))
	if err != nil {
		return nil, rh.fail(ctx, "cancel task", err, targetTask)
	}
	return renderTask(tv), nil
}

// ListTasks is not offered.
func (rh *requestHandler) ListTasks(context.Context, *a2a.ListTasksRequest) (*a2a.ListTasksResponse, error) {
	return nil, a2a.NewError(a2a.ErrUnsupportedOperation, "ListTasks is not offered; keep the ids of the tasks you start and read them with GetTask")
}

// GetExtendedAgentCard is not offered: the public card is the whole card.
func (rh *requestHandler) GetExtendedAgentCard(context.Context, *a2a.GetExtendedAgentCardRequest) (*a2a.AgentCard, error) {
	return nil, a2a.NewError(a2a.ErrExtendedCardNotConfigured, "there is no extended card; the public card at "+CardPath+" is complete")
}
