package rest

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core/machine"
	"github.com/faxhub/faxhub/rest/mpp"
)

// The wire side of machine payments: core's typed answers as HTTP, and the
// payment headers as core's typed request. Core's decisions are tested in
// core/machine, the whole over HTTP in internal/app.

var wireSecret = []byte("rest machine test secret")

// boundChallenge is a challenge as core offers it, bound by rest/mpp.
func boundChallenge(t *testing.T, method string) machine.Challenge {
	t.Helper()
	c := machine.Challenge{
		Realm: "api.faxhub.example", Method: method, Intent: "charge",
		Request: json.RawMessage(`{"amount":"50","currency":"usd","externalId":"r-1"}`),
		Expires: time.Date(2026, 11, 23, 8, 30, 0, 0, time.UTC), Digest: mpp.ContentDigest([]byte(`{"to":"+12125550100"}`)),
		Opaque: map[string]string{"request_id": "r-1"},
	}
	id, err := mpp.Binder{}.Bind(wireSecret, c)
	if err != nil {
		t.Fatal(err)
	}
	c.ID = id
	return c
}

func render(t *testing.T, c machine.Challenge) string {
	t.Helper()
	w := mpp.FromMachine(c)
	h, err := w.Header()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func writeResult(t *testing.T, res *machine.FaxResult, accept ...string) (*httptest.ResponseRecorder, error) {
	t.Helper()
	r := httptest.NewRequest("POST", "/api/v1/machine/faxes", nil)
	for _, a := range accept {
		r.Header.Add(mpp.AcceptHeader, a)
	}
	w := httptest.NewRecorder()
	err := writeMachineResult(w, r, res)
	return w, err
}

// TestRefusalProblems: every refusal core can decide has its problem type
// (one each) and its status: 402 with the challenges, but 400 for an
// unsupported method.
func TestRefusalProblems(t *testing.T) {
	seen := map[mpp.ProblemType]bool{}
	for _, k := range machine.RefusalKinds() {
		pt, ok := refusalProblems[k]
		if !ok {
			t.Fatalf("no problem type for %s", k)
		}
		if seen[pt] {
			t.Errorf("%s shares its problem type %s", k, pt)
		}
		seen[pt] = true
		if back, ok := refusalKind(pt); !ok || back != k {
			t.Errorf("%s → %s → %v", k, pt, back)
		}
		want := http.StatusPaymentRequired
		if k == machine.MethodUnsupported {
			want = http.StatusBadRequest
		}
		w, err := writeResult(t, &machine.FaxResult{Refusal: &machine.Refusal{Kind: k, Detail: "why"}, Challenges: []machine.Challenge{boundChallenge(t, "stripe")}})
		if err != nil {
			t.Fatal(err)
		}
		var p map[string]any
		if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil {
			t.Fatal(err)
		}
		if w.Code != want || p["type"] != string(pt) || p["status"] != float64(want) || p["code"] != strings.TrimPrefix(string(pt), mpp.ProblemBase) || p["title"] != pt.Title() {
			t.Errorf("%s: %d %v", k, w.Code, p)
		}
	}
	if len(refusalProblems) != len(machine.RefusalKinds()) {
		t.Errorf("%d problem types for %d refusal kinds", len(refusalProblems), len(machine.RefusalKinds()))
	}
	want := map[machine.RefusalKind]mpp.ProblemType{
		machine.PaymentRequired: mpp.ProblemPaymentRequired, machine.MalformedCredential: mpp.ProblemMalformedCredential,
		machine.InvalidChallenge: mpp.ProblemInvalidChallenge, machine.MethodUnsupported: mpp.ProblemMethodUnsupported,
		machine.PaymentExpired: mpp.ProblemPaymentExpired, machine.VerificationFailed: mpp.ProblemVerificationFailed,
		machine.PaymentActionRequired: mpp.ProblemPaymentActionRequired,
	}
	if !reflect.DeepEqual(refusalProblems, want) {
		t.Errorf("mapping %v", refusalProblems)
	}
	if _, err := writeResult(t, &machine.FaxResult{Refusal: &machine.Refusal{Detail: "no kind"}}); err == nil {
		t.Error("a refusal without a kind was answered")
	}
}

// TestMachineRefusalAnswer: the 402 as the protocol has it, with the
// challenges filtered and ordered by Accept-Payment and the problem about
// the first of them.
func TestMachineRefusalAnswer(t *testing.T) {
	stripe, tempo := boundChallenge(t, "stripe"), boundChallenge(t, "tempo")
	res := &machine.FaxResult{Refusal: &machine.Refusal{Kind: machine.VerificationFailed, Detail: "not mined yet"},
		Challenges: []machine.Challenge{stripe, tempo}, RetryAfter: 2}
	for _, tc := range []struct {
		name   string
		accept []string
		want   []machine.Challenge
	}{
		{"no Accept-Payment: the server's order", nil, []machine.Challenge{stripe, tempo}},
		{"ordered", []string{"tempo/charge, stripe/*;q=0.5"}, []machine.Challenge{tempo, stripe}},
		{"two lines", []string{"stripe/charge;q=0.1", "tempo/charge"}, []machine.Challenge{tempo, stripe}},
		{"filtered", []string{"stripe/charge"}, []machine.Challenge{stripe}},
		{"none accepted: all", []string{"card/charge"}, []machine.Challenge{stripe, tempo}},
		{"all excluded: all", []string{"*/*;q=0"}, []machine.Challenge{stripe, tempo}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := writeResult(t, res, tc.accept...)
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, c := range tc.want {
				want = append(want, render(t, c))
			}
			if got := w.Header().Values("WWW-Authenticate"); !reflect.DeepEqual(got, want) {
				t.Fatalf("WWW-Authenticate\n got %q\nwant %q", got, want)
			}
			chs, err := mpp.ParseChallenges(w.Header().Values("WWW-Authenticate"))
			if err != nil || len(chs) != len(tc.want) || !chs[0].Verify(wireSecret) || chs[0].Machine().ID != tc.want[0].ID {
				t.Fatalf("parsed back: %+v %v", chs, err)
			}
			var p map[string]any
			if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil {
				t.Fatal(err)
			}
			if w.Code != 402 || p["challengeId"] != tc.want[0].ID || p["detail"] != "not mined yet" || p["code"] != "verification-failed" ||
				p["instance"] != "/api/v1/machine/faxes" || len(p) != 7 {
				t.Fatalf("%d %v", w.Code, p)
			}
			h := w.Header()
			if h.Get("Content-Type") != "application/problem+json" || h.Get("Cache-Control") != "no-store" || h.Get("Retry-After") != "2" {
				t.Fatalf("headers %v", h)
			}
		})
	}
	// A challenge the wire cannot carry is a server error, not a broken
	// header.
	broken := stripe
	broken.Request = json.RawMessage(`[1]`)
	if _, err := writeResult(t, &machine.FaxResult{Refusal: &machine.Refusal{Kind: machine.PaymentRequired}, Challenges: []machine.Challenge{broken}}); err == nil {
		t.Fatal("an unrenderable challenge was answered")
	}
}

// TestMachineOrderAnswer: the 200 carries the receipt core derived, as the
// exact Payment-Receipt bytes of the protocol.
func TestMachineOrderAnswer(t *testing.T) {
	at := time.Date(2026, 11, 23, 8, 20, 1, 234567000, time.UTC)
	res := &machine.FaxResult{Order: &machine.Order{ID: "fax_1", RequestID: "r-1"},
		Receipt: &machine.Receipt{Status: "success", Method: "tempo", Timestamp: at, Reference: "0xabc", ChallengeID: "cid", ExternalID: "r-1"}}
	w, err := writeResult(t, res)
	if err != nil {
		t.Fatal(err)
	}
	want := base64.RawURLEncoding.EncodeToString([]byte(`{"status":"success","method":"tempo","timestamp":"2026-11-23T08:20:01.234567Z","reference":"0xabc","challengeId":"cid","externalId":"r-1"}`))
	if w.Code != 200 || w.Header().Get(mpp.ReceiptHeader) != want || w.Header().Get("Cache-Control") != "private" {
		t.Fatalf("%d %v", w.Code, w.Header())
	}
	var o machine.Order
	if err := json.Unmarshal(w.Body.Bytes(), &o); err != nil || o.ID != "fax_1" {
		t.Fatalf("order %s %v", w.Body, err)
	}
	res.Receipt.Reference = ""
	if _, err := writeResult(t, res); err == nil {
		t.Fatal("a receipt without a reference was sent")
	}
	if _, err := writeResult(t, &machine.FaxResult{}); err == nil {
		t.Fatal("an empty result was answered")
	}
}

// TestReadCredential: what core is told about the Authorization values.
func TestReadCredential(t *testing.T) {
	ch := boundChallenge(t, "stripe")
	w := mpp.FromMachine(ch)
	reqB64, err := w.RequestB64()
	if err != nil {
		t.Fatal(err)
	}
	opaque, err := w.OpaqueB64()
	if err != nil {
		t.Fatal(err)
	}
	echo := mpp.ChallengeEcho{ID: ch.ID, Realm: ch.Realm, Method: ch.Method, Intent: ch.Intent, Request: reqB64,
		Expires: w.ExpiresParam(), Digest: ch.Digest, Opaque: &opaque}
	encode := func(e mpp.ChallengeEcho) string {
		t.Helper()
		v, err := (&mpp.Credential{Echo: e, Source: "did:pkh:eip155:42431:0x1", Payload: json.RawMessage(`{"spt":"spt_1"}`)}).Encode()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	good := encode(echo)
	badEcho := echo
	badEcho.Request = "!!!"

	var none machine.FaxRequest
	readCredential([]string{"Bearer abc"}, &none)
	if none.Credential != nil || none.MultipleCredentials || none.Unreadable != nil {
		t.Fatalf("no credential: %+v", none)
	}

	var two machine.FaxRequest
	readCredential([]string{good, good}, &two)
	if !two.MultipleCredentials || two.Credential != nil || two.Unreadable != nil {
		t.Fatalf("two credentials: %+v", two)
	}

	for _, tc := range []struct {
		name   string
		values []string
		want   machine.RefusalKind
		detail string
	}{
		{"not base64url", []string{"Payment !!!not-base64!!!"}, machine.MalformedCredential, "credential is not base64url"},
		{"no payload", []string{"Payment " + base64.RawURLEncoding.EncodeToString([]byte(`{"challenge":{}}`))}, machine.MalformedCredential, "credential has no payload object"},
		{"empty", []string{"Payment "}, machine.MalformedCredential, "empty Payment credential"},
		{"echo is no challenge", []string{encode(badEcho)}, machine.InvalidChallenge, "request is not base64url"},
		// Issue 26, defect 7: two tokens after one scheme paid with the first.
		{"token list", []string{good + ", " + strings.TrimPrefix(good, "Payment ")}, machine.MalformedCredential,
			"the Payment credential is followed by a comma and another token: send one credential (base64url, which has no commas)"},
	} {
		var r machine.FaxRequest
		readCredential(tc.values, &r)
		if r.Credential != nil || r.MultipleCredentials || r.Unreadable == nil || r.Unreadable.Kind != tc.want || r.Unreadable.Detail != tc.detail {
			t.Errorf("%s: %+v %+v", tc.name, r, r.Unreadable)
		}
	}

	var one machine.FaxRequest
	readCredential([]string{"Bearer abc, " + good}, &one)
	if one.Credential == nil || one.Unreadable != nil || one.MultipleCredentials {
		t.Fatalf("one credential: %+v", one)
	}
	got := one.Credential
	if got.Source != "did:pkh:eip155:42431:0x1" || string(got.Payload) != `{"spt":"spt_1"}` {
		t.Fatalf("credential %+v", got)
	}
	// The echo decodes to the challenge core offered: it binds again to
	// its id.
	c := got.Challenge
	if c.ID != ch.ID || c.Realm != ch.Realm || c.Method != ch.Method || c.Intent != ch.Intent || !c.Expires.Equal(ch.Expires) ||
		c.Digest != ch.Digest || !reflect.DeepEqual(c.Opaque, ch.Opaque) {
		t.Fatalf("echo %+v, offered %+v", c, ch)
	}
	if id, err := (mpp.Binder{}).Bind(wireSecret, c); err != nil || id != ch.ID {
		t.Fatalf("the echo binds to %s (%v), offered %s", id, err, ch.ID)
	}
}
