package passkeys

import (
	"encoding/json"
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/approvals"
	"github.com/faxhub/faxhub/core/credits"
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
	cmd := enrollCommand("https://api.faxhub.test/api/auth/host/enroll", "fxh_tok", "Bob's host")
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
	for _, tc := range []struct {
		name, raw string
		mode      core.Mode
		want      []string
		buy       string
	}{
		{"core's details", `{"sendId":"dsn_1","hostId":"hst_1","hostName":"Box","agentId":"dag_1","agentName":"Sender","to":"+14155550123","country":"US","pages":2,"cover":false,"price":"0.42","currency":"usd","document":{"id":"doc_1","sha256":"ab12","sourceType":"application/pdf","bytes":2048}}`,
			core.ModeTest,
			[]string{"Destination=+14155550123", "Country=US", "Pages=2", "Price=0.42 USD from your test credits", "Agent=Sender", "Agent id=dag_1", "On host=Box", "Host id=hst_1",
				"Document=doc_1", "Document type=application/pdf", "Document size=2.0 KB", "Document SHA-256=ab12", "Cover page=no", "Request id=dsn_1"},
			"/console?mode=test#credits-h"},
		{"mode in details, unknown keys last", `{"zeta":"z","price":"0.42","currency":"usd","mode":"live","to":"+1","document":{"id":"doc_2","extra":"x"}}`,
			core.ModeTest,
			[]string{"Destination=+1", "Price=0.42 USD from your live credits", "Document=doc_2", "Document extra=x", "Zeta=z"},
			"/console?mode=live#credits-h"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, fs := faxSendFacts(json.RawMessage(tc.raw), tc.mode)
			if v.BuyCredits != tc.buy {
				t.Errorf("buy link %s, want %s", v.BuyCredits, tc.buy)
			}
			var got []string
			for _, f := range fs {
				got = append(got, f.Label+"="+f.Value)
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Fatalf("facts\n got %v\nwant %v", got, tc.want)
			}
		})
	}
	if v, fs := faxSendFacts(json.RawMessage(`not json`), core.ModeLive); v.BuyCredits != "/console?mode=live#credits-h" || len(fs) != 1 {
		t.Fatalf("bad details: %+v %+v", v, fs)
	}
}

func TestInsufficientCreditsLinks(t *testing.T) {
	apr := &approvals.Approval{Kind: approvals.KindFaxSend, Details: json.RawMessage(`{"to":"+1"}`)}
	base := core.Errorf(core.KindPaymentRequired, credits.CodeInsufficientCredits, "this fax costs 0.42 USD but only 0.00 USD of test credits are available").With("price", "0.42")
	e := core.AsError(insufficientCredits(apr, core.ModeTest, base))
	if e.Code != credits.CodeInsufficientCredits || e.Kind != core.KindPaymentRequired || e.Fields["buy_credits_url"] != "/console?mode=test#credits-h" || e.Fields["price"] != "0.42" || !strings.Contains(e.Message, "Add credits") {
		t.Fatalf("error %+v", e)
	}
	other := errors.New("boom")
	if got := insufficientCredits(apr, core.ModeTest, other); got != other {
		t.Fatal("another error was rewritten")
	}
	if got := insufficientCredits(&approvals.Approval{Kind: approvals.KindVerifiedAction}, core.ModeTest, base); core.AsError(got).Fields["buy_credits_url"] != nil {
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
		if got := deviceAgentID(&approvals.Approval{Details: json.RawMessage(tc.details)}); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.details, got, tc.want)
		}
	}
	if p := devicePath("dag_a b"); p != "/console/device?agent_id=dag_a+b" {
		t.Errorf("devicePath %s", p)
	}
}
