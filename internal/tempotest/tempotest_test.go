package tempotest_test

import (
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/faxhub/faxhub/internal/tempotest"
)

type answer struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func post(t *testing.T, h http.Handler, body string) (int, answer) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body)))
	var a answer
	if rec.Code == http.StatusOK {
		if err := json.Unmarshal(rec.Body.Bytes(), &a); err != nil {
			t.Fatalf("%s: %v", rec.Body, err)
		}
	}
	return rec.Code, a
}

func TestServer(t *testing.T) {
	s := tempotest.New(42431)
	h := "0x" + strings.Repeat("ab", 32)
	to := "0x" + strings.Repeat("CD", 20)
	tok := "0x20c0000000000000000000000000000000000000"
	s.AddTransfer(h, "0x"+strings.Repeat("01", 20), to, tok, big.NewInt(1_000_000), true)
	s.AddPending("0x" + strings.Repeat("cc", 32))
	s.AddTransfer("0x"+strings.Repeat("dd", 32), "0x"+strings.Repeat("01", 20), to, tok, big.NewInt(1), false)

	tests := []struct {
		name   string
		body   string
		result string // substring of the result
		code   int    // JSON-RPC error code, 0 for none
	}{
		{"chain id", `{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}`, `"0xa5bf"`, 0},
		{"bad params", `{"jsonrpc":"2.0","id":1,"method":"eth_getTransactionReceipt","params":["` + strings.ToUpper(h[2:4]) + `"]}`, "", -32602},
		{"mined", `{"jsonrpc":"2.0","id":1,"method":"eth_getTransactionReceipt","params":["` + h + `"]}`,
			`"topics":["0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef","0x000000000000000000000000` + strings.Repeat("01", 20) + `","0x000000000000000000000000` + strings.Repeat("cd", 20) + `"]`, 0},
		{"amount word", `{"jsonrpc":"2.0","id":1,"method":"eth_getTransactionReceipt","params":["` + h + `"]}`, `"data":"0x` + strings.Repeat("0", 59) + `f4240"`, 0},
		{"status ok", `{"jsonrpc":"2.0","id":1,"method":"eth_getTransactionReceipt","params":["` + h + `"]}`, `"status":"0x1"`, 0},
		{"failed has no logs", `{"jsonrpc":"2.0","id":1,"method":"eth_getTransactionReceipt","params":["0x` + strings.Repeat("dd", 32) + `"]}`, `"logs":[],`, 0},
		{"pending", `{"jsonrpc":"2.0","id":1,"method":"eth_getTransactionReceipt","params":["0x` + strings.Repeat("cc", 32) + `"]}`, `null`, 0},
		{"unknown", `{"jsonrpc":"2.0","id":1,"method":"eth_getTransactionReceipt","params":["0x` + strings.Repeat("ee", 32) + `"]}`, `null`, 0},
		{"unknown method", `{"jsonrpc":"2.0","id":1,"method":"eth_sendRawTransaction","params":["0x00"]}`, "", -32601},
		{"not json", `{"jsonrpc":`, "", -32700},
		{"not 2.0", `{"jsonrpc":"1.0","id":1,"method":"eth_chainId"}`, "", -32600},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}]`, "", -32700},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, a := post(t, s, tc.body)
			if code != http.StatusOK || a.JSONRPC != "2.0" {
				t.Fatalf("HTTP %d, %+v", code, a)
			}
			if tc.code != 0 {
				if a.Error == nil || a.Error.Code != tc.code {
					t.Fatalf("error = %+v, want code %d", a.Error, tc.code)
				}
				return
			}
			if a.Error != nil || !strings.Contains(string(a.Result), tc.result) {
				t.Fatalf("result = %s (error %+v), want it to contain %s", a.Result, a.Error, tc.result)
			}
		})
	}
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("GET: %d", rec.Code)
	}
	if n := s.Calls("eth_chainId"); n != 1 {
		t.Errorf("Calls(eth_chainId) = %d", n)
	}
}

func TestLogRefusesWhatIsNotAUint256(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("no panic for 2^256")
		}
	}()
	tempotest.Log("0x"+strings.Repeat("00", 20), "0x"+strings.Repeat("00", 20), "0x"+strings.Repeat("00", 20), new(big.Int).Lsh(big.NewInt(1), 256))
}
