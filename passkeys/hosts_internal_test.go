package passkeys

import (
	"encoding/json"
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/faxhub/faxhub/core"
)

func TestShellQuote(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain", "'plain'"},
		{"it's", `'it'\''s'`},
		{`{"a":"$HOME"}`, `'{"a":"$HOME"}'`},
		{"", "''"},
	} {
		if got := shellQuote(tc.in); got != tc.want {
			t.Errorf("shellQuote(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
	// The shell reads back exactly what was quoted, whatever the name.
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	for _, s := range []string{"Bob's `rm -rf` $(id) \"box\"", "a\\b\nc"} {
		out, err := exec.Command(sh, "-c", "printf %s "+shellQuote(s)).Output()
		if err != nil || string(out) != s {
			t.Errorf("round trip of %q: %q %v", s, out, err)
		}
	}
}

func TestEnrollCommand(t *testing.T) {
	cmd := enrollCommand("https://api.faxhub.test", "fxh_tok", "Bob's host")
	if !strings.HasPrefix(cmd, "curl -sS -X POST 'https://api.faxhub.test/api/auth/host/enroll'") {
		t.Fatalf("command %s", cmd)
	}
	i := strings.Index(cmd, "-d ")
	body := strings.ReplaceAll(strings.Trim(cmd[i+3:], "'"), `'\''`, "'")
	var m struct {
		Token     string            `json:"token"`
		Name      string            `json:"name"`
		PublicKey map[string]string `json:"public_key"`
	}
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatalf("body %s: %v", body, err)
	}
	if m.Token != "fxh_tok" || m.Name != "Bob's host" || m.PublicKey["kty"] != "OKP" || m.PublicKey["crv"] != "Ed25519" {
		t.Fatalf("body %+v", m)
	}
	if _, ok := m.PublicKey["d"]; ok {
		t.Fatal("the template asks for a private key")
	}
}

func TestFaxSendFacts(t *testing.T) {
	raw := json.RawMessage(`{"zeta":"z","price":"0.42","currency":"usd","mode":"live","pages":2,"to":"+14155550123","agent_name":"Sender","host_name":"Box","document_id":"doc_1","document_sha256":"ab12","cover":false}`)
	v, fs := faxSendFacts(raw)
	if v.Mode != "live" || v.BuyCredits != "/console?mode=live#credits-h" {
		t.Fatalf("view %+v", v)
	}
	var labels []string
	for _, f := range fs {
		labels = append(labels, f.Label+"="+f.Value)
	}
	want := []string{"Destination=+14155550123", "Pages=2", "Price=0.42 USD from your live credits", "Agent=Sender", "On host=Box", "Document=doc_1", "Document SHA-256=ab12", "Cover page=no", "Zeta=z"}
	if strings.Join(labels, "|") != strings.Join(want, "|") {
		t.Fatalf("facts\n got %v\nwant %v", labels, want)
	}
	if v, fs := faxSendFacts(json.RawMessage(`not json`)); v.BuyCredits == "" || len(fs) != 1 {
		t.Fatalf("bad details: %+v %+v", v, fs)
	}
}

func TestInsufficientCreditsLinks(t *testing.T) {
	apr := &core.Approval{Kind: core.ApprovalFaxSend, Details: json.RawMessage(`{"mode":"test"}`)}
	base := core.Errorf(core.KindPaymentRequired, core.CodeInsufficientCredits, "this fax costs 0.42 USD but only 0.00 USD of test credits are available").With("price", "0.42")
	e := core.AsError(insufficientCredits(apr, base))
	if e.Code != core.CodeInsufficientCredits || e.Kind != core.KindPaymentRequired || e.Fields["buy_credits_url"] != "/console?mode=test#credits-h" || e.Fields["price"] != "0.42" || !strings.Contains(e.Message, "Add credits") {
		t.Fatalf("error %+v", e)
	}
	other := errors.New("boom")
	if got := insufficientCredits(apr, other); got != other {
		t.Fatal("another error was rewritten")
	}
	if got := insufficientCredits(&core.Approval{Kind: core.ApprovalVerifiedAction}, base); core.AsError(got).Fields["buy_credits_url"] != nil {
		t.Fatal("another kind got the link")
	}
}

func TestDeviceAgentID(t *testing.T) {
	for _, tc := range []struct{ details, want string }{
		{`{"agent_id":"dag_1"}`, "dag_1"},
		{`{"agentId":"dag_2"}`, "dag_2"},
		{`{"agent_id":"agr_1"}`, ""},
		{`{"agent_id":5}`, ""},
		{`nope`, ""},
	} {
		if got := deviceAgentID(&core.Approval{Details: json.RawMessage(tc.details)}); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.details, got, tc.want)
		}
	}
	if p := devicePath("dag_a b"); p != "/console/device?agent_id=dag_a+b" {
		t.Errorf("devicePath %s", p)
	}
}
