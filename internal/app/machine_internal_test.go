package app

import (
	"strings"
	"testing"

	"github.com/faxhub/faxhub/core"
)

const (
	recipient = "0x1111111111111111111111111111111111111111"
	token     = "0x20c0000000000000000000000000000000000000"
)

// TestMachineMethods: what each configuration offers, in which mode, and
// which configurations are refused at startup with a message naming the
// setting.
func TestMachineMethods(t *testing.T) {
	tempoAll := MachineOptions{TempoRPCURL: "https://rpc.example", TempoRecipient: recipient, TempoToken: token}
	for _, c := range []struct {
		name    string
		o       MachineOptions
		methods []string
		modes   []core.Mode
		builtin bool
		err     string
	}{
		{name: "default: the built-in test backend", methods: []string{"stripe"}, modes: []core.Mode{core.ModeTest}, builtin: true},
		{name: "test key", o: MachineOptions{StripeSecretKey: "sk_test_x", StripeNetworkID: "profile_1"}, methods: []string{"stripe"}, modes: []core.Mode{core.ModeTest}},
		{name: "restricted test key", o: MachineOptions{StripeSecretKey: "rk_test_x", StripeNetworkID: "profile_1"}, methods: []string{"stripe"}, modes: []core.Mode{core.ModeTest}},
		{name: "live key", o: MachineOptions{StripeSecretKey: "sk_live_x", StripeNetworkID: "profile_1"}, methods: []string{"stripe"}, modes: []core.Mode{core.ModeLive}},
		{name: "key without profile", o: MachineOptions{StripeSecretKey: "sk_live_x"}, err: "FAXHUB_STRIPE_NETWORK_ID"},
		{name: "profile without key", o: MachineOptions{StripeNetworkID: "profile_1"}, err: "need FAXHUB_STRIPE_SECRET_KEY"},
		{name: "bad Stripe URL", o: MachineOptions{StripeSecretKey: "sk_test_x", StripeNetworkID: "profile_1", StripeAPIURL: "ftp://x"}, err: "base URL"},
		{name: "tempo testnet", o: tempoAll, methods: []string{"stripe", "tempo"}, modes: []core.Mode{core.ModeTest, core.ModeTest}, builtin: true},
		{name: "tempo mainnet", o: func() MachineOptions { o := tempoAll; o.TempoChainID = 4217; return o }(), methods: []string{"stripe", "tempo"}, modes: []core.Mode{core.ModeTest, core.ModeLive}, builtin: true},
		{name: "tempo without token", o: MachineOptions{TempoRPCURL: "https://rpc.example", TempoRecipient: recipient}, err: "set FAXHUB_TEMPO_TOKEN too"},
		{name: "tempo RPC only", o: MachineOptions{TempoRPCURL: "https://rpc.example"}, err: "FAXHUB_TEMPO_RECIPIENT and FAXHUB_TEMPO_TOKEN"},
		{name: "chain id alone", o: MachineOptions{TempoChainID: 4217}, err: "FAXHUB_TEMPO_CHAIN_ID is set"},
		{name: "bad recipient", o: func() MachineOptions { o := tempoAll; o.TempoRecipient = "0x12"; return o }(), err: "recipient"},
	} {
		t.Run(c.name, func(t *testing.T) {
			methods, builtin, err := machineMethods(c.o)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want one saying %q", err, c.err)
				}
				if strings.Contains(err.Error(), "sk_live_x") || strings.Contains(err.Error(), "sk_test_x") {
					t.Errorf("the error repeats the secret key: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (builtin != nil) != c.builtin {
				t.Errorf("built-in backend = %v, want %v", builtin != nil, c.builtin)
			}
			var names []string
			for i, m := range methods {
				names = append(names, m.Method.Name())
				if m.Mode != c.modes[i] {
					t.Errorf("%s: mode %s, want %s", m.Method.Name(), m.Mode, c.modes[i])
				}
				if m.Intent != "charge" || m.UnitsPerUSD <= 0 || m.Currency == "" || m.MethodDetails == nil {
					t.Errorf("%s: incomplete offer %+v", m.Method.Name(), m)
				}
				switch m.Method.Name() {
				case "stripe":
					if m.Currency != "usd" || m.UnitsPerUSD != 100 || m.MinAmount != 50 || !m.Refunds || m.MethodDetails["networkId"] == "" {
						t.Errorf("stripe offer %+v", m)
					}
				case "tempo":
					if m.Currency != token || m.Recipient != recipient || m.UnitsPerUSD != 1_000_000 || m.Refunds || m.MinAmount != 0 {
						t.Errorf("tempo offer %+v", m)
					}
					if modes, _ := m.MethodDetails["supportedModes"].([]string); len(modes) != 1 || modes[0] != "push" {
						t.Errorf("tempo supportedModes %v", m.MethodDetails["supportedModes"])
					}
				}
			}
			if strings.Join(names, ",") != strings.Join(c.methods, ",") {
				t.Errorf("methods %v, want %v", names, c.methods)
			}
		})
	}
}
