package a2a_test

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	jose "github.com/go-jose/go-jose/v4"

	"github.com/faxhub/faxhub/core/approvals"
	"github.com/faxhub/faxhub/core/tasks"
	"github.com/faxhub/faxhub/oauth"
	a2aserver "github.com/faxhub/faxhub/protocols/a2a"
)

// cart is what the test reads from a buy_credits task's CartMandate.
type cart struct {
	id, currency, value string
	jws                 string
	contents            json.RawMessage
}

func cartOf(t *testing.T, task *a2a.Task) cart {
	t.Helper()
	d := artifactData(task, "ap2.mandates.CartMandate")
	cm, ok := d["ap2.mandates.CartMandate"].(map[string]any)
	if !ok {
		t.Fatalf("no CartMandate artifact: %+v", task.Artifacts)
	}
	contents, _ := json.Marshal(cm["contents"])
	var c struct {
		ID             string `json:"id"`
		PaymentRequest struct {
			Details struct {
				ID    string `json:"id"`
				Total struct {
					Amount struct {
						Currency string      `json:"currency"`
						Value    json.Number `json:"value"`
					} `json:"amount"`
				} `json:"total"`
			} `json:"details"`
		} `json:"payment_request"`
	}
	if err := json.Unmarshal(contents, &c); err != nil || c.ID == "" || c.PaymentRequest.Details.ID != c.ID {
		t.Fatalf("cart contents %s: %v", contents, err)
	}
	jws, _ := cm["merchant_authorization"].(string)
	return cart{id: c.ID, currency: c.PaymentRequest.Details.Total.Amount.Currency, value: c.PaymentRequest.Details.Total.Amount.Value.String(), jws: jws, contents: contents}
}

// mandate is an AP2 v0.1 PaymentMandate for c paid with token.
func mandate(c cart, id, token string) map[string]any {
	var value any = json.Number(c.value)
	return map[string]any{"payment_mandate_contents": map[string]any{
		"payment_mandate_id": id, "payment_details_id": c.id,
		"payment_details_total": map[string]any{"label": "Total", "amount": map[string]any{"currency": c.currency, "value": value}},
		"payment_response":      map[string]any{"request_id": c.id, "method_name": "CARD", "details": map[string]any{"token": token}},
		"merchant_agent":        "faxhub", "timestamp": "2026-11-23T03:00:00Z",
	}, "user_authorization": "eyJhbGciOiJFUzI1NiJ9.e30.sig"}
}

// mandateMsg answers task with a PaymentMandate data part.
func mandateMsg(task a2a.TaskID, m map[string]any) *a2a.SendMessageRequest {
	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewDataPart(map[string]any{"ap2.mandates.PaymentMandate": m}))
	msg.TaskID = task
	return &a2a.SendMessageRequest{Message: msg}
}

func buy(t *testing.T, c *a2aclient.Client, pack string) *a2a.Task {
	t.Helper()
	res, err := c.SendMessage(t.Context(), skillMsg("buy_credits", map[string]any{"packId": pack}))
	task := asTask(t, res, err)
	if task.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("buy_credits task %+v", task.Status)
	}
	return task
}

// verifyCart checks the cart's merchant_authorization against the
// issuer's published keys and that it covers exactly these contents.
func verifyCart(t *testing.T, e *env, c cart) {
	t.Helper()
	resp, err := http.Get(e.api + oauth.PathJWKS)
	if err != nil {
		t.Fatal(err)
	}
	var set jose.JSONWebKeySet
	err = json.NewDecoder(resp.Body).Decode(&set)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	sig, err := jose.ParseSignedCompact(c.jws, []jose.SignatureAlgorithm{jose.EdDSA})
	if err != nil || len(sig.Signatures) != 1 {
		t.Fatalf("merchant_authorization %q: %v", c.jws, err)
	}
	h := sig.Signatures[0].Header
	if h.Algorithm != string(jose.EdDSA) {
		t.Fatalf("alg %s", h.Algorithm)
	}
	keys := set.Key(h.KeyID)
	if len(keys) != 1 {
		t.Fatalf("kid %q not in the JWKS", h.KeyID)
	}
	payload, err := sig.Verify(keys[0])
	if err != nil {
		t.Fatalf("the cart's signature does not verify: %v", err)
	}
	var claims struct {
		Sub      string `json:"sub"`
		CartHash string `json:"cart_hash"`
	}
	_ = json.Unmarshal(payload, &claims)
	sum := sha256.Sum256(c.contents)
	if claims.Sub != c.id || claims.CartHash != base64.RawURLEncoding.EncodeToString(sum[:]) {
		t.Fatalf("claims %s do not cover cart %s %s", payload, c.id, c.contents)
	}
}

// The AP2 purchase: extension and scope checks, cart mandate, payment
// mandate, passkey approval with user verification, receipt; a declined
// charge, a declined approval, replayed and mismatched mandates.
func TestAP2Purchase(t *testing.T) {
	e := newEnv(t)
	w := e.owner("ap2@example.com")
	w.AddPasskey(t)
	tok := w.Token(t, []string{"fax:read", "fax:draft", "credits:read", "credits:checkout"}, e.base+"/a2a")
	pack := e.a.Svc.Credits.Packs()[0]

	// Without the extension: -32008 naming it; no task.
	_, err := e.client(tok).SendMessage(t.Context(), skillMsg("buy_credits", map[string]any{"packId": pack.ID}))
	if d := a2aErr(t, "no extension", err, a2a.ErrExtensionSupportRequired, a2aserver.ExtensionAP2); d["extension"] != a2aserver.ExtensionAP2 {
		t.Fatalf("details %v", d)
	}
	// Without the scope: core refuses, naming it.
	noScope := e.client(w.Token(t, []string{"fax:read", "credits:read"}, e.base+"/a2a"), a2aserver.ExtensionAP2)
	_, err = noScope.SendMessage(t.Context(), skillMsg("buy_credits", map[string]any{"packId": pack.ID}))
	a2aErr(t, "no scope", err, a2a.ErrUnauthorized, "credits:checkout")
	if n := countTasks(t, e); n != 0 {
		t.Fatalf("%d tasks after refusals", n)
	}

	c := e.client(tok, a2aserver.ExtensionAP2)
	task := buy(t, c, pack.ID)
	ct := cartOf(t, task)
	verifyCart(t, e, ct)
	if text, data := statusData(t, task); !strings.Contains(text, "PaymentMandate") || data["ap2.mandates.CartMandate"] == nil {
		t.Fatalf("status %q %v", text, data)
	}

	// Mandates that do not fit are refused and change nothing.
	for _, c2 := range []struct {
		name string
		req  *a2a.SendMessageRequest
		err  error
		want string
	}{
		{"no task id", mandateMsg("", mandate(ct, "pm_1", "tok_visa")), a2a.ErrInvalidParams, "taskId"},
		{"another amount", mandateMsg(task.ID, mandate(cart{id: ct.id, currency: ct.currency, value: "0.01"}, "pm_1", "tok_visa")), a2a.ErrInvalidParams, tasks.CodeCartMismatch},
		{"another cart", mandateMsg(task.ID, mandate(cart{id: "cart_other", currency: ct.currency, value: ct.value}, "pm_1", "tok_visa")), a2a.ErrInvalidParams, tasks.CodeCartMismatch},
		{"no credential", mandateMsg(task.ID, func() map[string]any {
			m := mandate(ct, "pm_1", "tok_visa")
			delete(m["payment_mandate_contents"].(map[string]any)["payment_response"].(map[string]any), "details")
			return m
		}()), a2a.ErrInvalidParams, "payment_response.details"},
		{"an unknown task", mandateMsg("tsk_nope", mandate(ct, "pm_1", "tok_visa")), a2a.ErrTaskNotFound, "not found"},
	} {
		_, err := c.SendMessage(t.Context(), c2.req)
		a2aErr(t, c2.name, err, c2.err, c2.want)
	}
	if got := getTask(t, c, task.ID); got.Status.State != a2a.TaskStateInputRequired || artifactData(got, "ap2.mandates.CartMandate") == nil {
		t.Fatalf("after refusals %+v", got.Status)
	}

	// The mandate, as buy_credits' paymentMandate argument: the owner must
	// approve.
	req := skillMsg("buy_credits", map[string]any{"paymentMandate": mandate(ct, "pm_visa_1", "tok_visa")})
	req.Message.TaskID = task.ID
	res, err := c.SendMessage(t.Context(), req)
	waiting := asTask(t, res, err)
	text, data := statusData(t, waiting)
	approvalURL, _ := data["approvalUrl"].(string)
	if waiting.Status.State != a2a.TaskStateInputRequired || !strings.HasPrefix(approvalURL, e.base+"/console/approvals/") || !strings.Contains(text, approvalURL) || data["cartId"] != ct.id {
		t.Fatalf("awaiting approval %+v %q %v", waiting.Status, text, data)
	}
	before := call(t, c, skillMsg("get_credits", nil))["balance"]

	// Without user verification the approval is refused and nothing moves.
	if r := w.Approve(t, approvalURL, false); r.Status != http.StatusForbidden || !strings.Contains(r.Body, approvals.CodeUserVerification) {
		t.Fatalf("approval without UV: %d %s", r.Status, r.Body)
	}
	if got := getTask(t, c, task.ID); got.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("after a refused approval %+v", got.Status)
	}
	if r := w.Approve(t, approvalURL, true); r.Status != 200 {
		t.Fatalf("approval: %d %s", r.Status, r.Body)
	}
	done := getTask(t, c, task.ID)
	receipt := artifactData(done, "receipt")
	if done.Status.State != a2a.TaskStateCompleted || receipt == nil || receipt["cartId"] != ct.id || receipt["packId"] != pack.ID ||
		receipt["chargeId"] == "" || receipt["reference"] == "" || receipt["credit"] != pack.Credit {
		t.Fatalf("completed %+v %v", done.Status, receipt)
	}
	if after := call(t, c, skillMsg("get_credits", nil))["balance"]; after == before {
		t.Fatalf("the balance did not grow: %v → %v", before, after)
	}
	_, err = c.CancelTask(t.Context(), &a2a.CancelTaskRequest{ID: task.ID})
	a2aErr(t, "cancel a completed purchase", err, a2a.ErrTaskNotCancelable, "task_not_cancelable")

	// The same mandate id on another purchase: replayed.
	t2 := buy(t, c, pack.ID)
	_, err = c.SendMessage(t.Context(), mandateMsg(t2.ID, mandate(cartOf(t, t2), "pm_visa_1", "tok_visa")))
	a2aErr(t, "replayed mandate", err, a2a.ErrInvalidParams, tasks.CodeMandateReplayed)

	// A declined card: the owner approves, the charge fails.
	res, err = c.SendMessage(t.Context(), mandateMsg(t2.ID, mandate(cartOf(t, t2), "pm_declined", "tok_chargeDeclined")))
	_, data = statusData(t, asTask(t, res, err))
	if r := w.Approve(t, data["approvalUrl"].(string), true); r.Status != 200 {
		t.Fatalf("approval: %d %s", r.Status, r.Body)
	}
	failed := getTask(t, c, t2.ID)
	if _, data := statusData(t, failed); failed.Status.State != a2a.TaskStateFailed || data["failureCode"] != "payment_declined" {
		t.Fatalf("declined card %+v %v", failed.Status, data)
	}

	// The owner declines: FAILED approval_declined, nothing charged.
	t3 := buy(t, c, pack.ID)
	res, err = c.SendMessage(t.Context(), mandateMsg(t3.ID, mandate(cartOf(t, t3), "pm_3", "tok_visa")))
	_, data = statusData(t, asTask(t, res, err))
	id := data["approvalUrl"].(string)[strings.LastIndex(data["approvalUrl"].(string), "/")+1:]
	apr, err := e.a.Svc.Approvals.Get(t.Context(), w.Account.ID, id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.a.Svc.Approvals.Decide(t.Context(), w.Account.ID, id, approvals.Decision{Approve: false, BindingHash: apr.BindingHash}); err != nil {
		t.Fatal(err)
	}
	declined := getTask(t, c, t3.ID)
	if _, data := statusData(t, declined); declined.Status.State != a2a.TaskStateFailed || data["failureCode"] != "approval_declined" {
		t.Fatalf("declined approval %+v %v", declined.Status, data)
	}

	// An IntentMandate starts a purchase too; canceling the offered cart
	// ends it.
	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewDataPart(map[string]any{"ap2.mandates.IntentMandate": map[string]any{
		"natural_language_description": "fax credits", "skus": []any{pack.ID}, "user_cart_confirmation_required": true}}))
	res, err = c.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: msg})
	t4 := asTask(t, res, err)
	if cartOf(t, t4).id == "" {
		t.Fatal("no cart")
	}
	canceled, err := c.CancelTask(t.Context(), &a2a.CancelTaskRequest{ID: t4.ID})
	if err != nil || canceled.Status.State != a2a.TaskStateCanceled {
		t.Fatalf("cancel offered cart %+v %v", canceled, err)
	}
	// A PaymentMandate needs the extension as well.
	_, err = e.client(tok).SendMessage(t.Context(), mandateMsg(t4.ID, mandate(cartOf(t, t4), "pm_4", "tok_visa")))
	a2aErr(t, "mandate without the extension", err, a2a.ErrExtensionSupportRequired, a2aserver.ExtensionAP2)

	// The sample URI activates AP2 as well; 0.3 carries the same flow.
	auth := "Bearer " + tok
	_, h, body := e.rpc(auth, http.Header{"A2A-Extensions": {a2aserver.ExtensionAP2Sample}},
		`{"jsonrpc":"2.0","id":9,"method":"message/send","params":{"message":{"kind":"message","messageId":"m9","role":"user","parts":[{"kind":"data","data":{"skill":"buy_credits","arguments":{"packId":"`+pack.ID+`"}}}]}}}`)
	r, _ := body["result"].(map[string]any)
	if h.Get("A2A-Extensions") != a2aserver.ExtensionAP2Sample || r["kind"] != "task" || r["status"].(map[string]any)["state"] != "input-required" {
		t.Fatalf("0.3 buy_credits %v %v", h, body)
	}
}
