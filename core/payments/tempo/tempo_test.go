package tempo_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/faxhub/faxhub/core/payments"
	"github.com/faxhub/faxhub/core/payments/tempo"
	"github.com/faxhub/faxhub/internal/tempotest"
)

const (
	recipient = "0xAbCdEf0123456789aBcDeF0123456789AbCdEf01"
	token     = "0x20c0000000000000000000000000000000000000" // testnet pathUSD
	other     = "0x1111111111111111111111111111111111111111"
	payer     = "0x2222222222222222222222222222222222222222"
)

func hash(c byte) string { return "0x" + strings.Repeat(string(c), 64) }

func cred(h string) json.RawMessage { return json.RawMessage(`{"type":"hash","hash":"` + h + `"}`) }

func charge(amount int64, c json.RawMessage) payments.ChargeRequest {
	return payments.ChargeRequest{IdempotencyKey: "k1", Amount: amount, Currency: token, Credential: c}
}

func newMethod(t *testing.T, rpc string, mod ...func(*tempo.Options)) *tempo.Method {
	t.Helper()
	o := tempo.Options{RPCURL: rpc, Recipient: recipient, Token: token, Used: &tempo.MemoryUsed{}}
	for _, f := range mod {
		f(&o)
	}
	m, err := tempo.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestTransferTopic(t *testing.T) {
	const want = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef"
	if got := tempo.TransferTopic(); got != want {
		t.Fatalf("TransferTopic = %s, want %s", got, want)
	}
}

func TestCharge(t *testing.T) {
	st := tempotest.New(tempo.DefaultChainID)
	srv := httptest.NewServer(st)
	t.Cleanup(srv.Close)

	uint256max := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 256), big.NewInt(1))
	st.AddTransfer(hash('a'), payer, recipient, token, big.NewInt(1_500_000), true)
	st.AddTransfer(hash('b'), payer, recipient, token, big.NewInt(1_499_999), true)
	st.AddTransfer(hash('c'), payer, other, token, big.NewInt(9_000_000), true)
	st.AddTransfer(hash('d'), payer, recipient, other, big.NewInt(9_000_000), true)
	st.AddTransfer(hash('e'), payer, recipient, token, big.NewInt(9_000_000), false)
	st.AddPending(hash('f'))
	st.AddTransfer(hash('1'), payer, "0x"+strings.ToUpper(recipient[2:]), "0x"+strings.ToUpper(token[2:]), big.NewInt(2_000_000), true)
	st.AddTransfer(hash('2'), payer, recipient, token, uint256max, true)
	// A node that answers in upper case (addresses, topics, data) is read the same.
	up := tempotest.Log(token, payer, recipient, big.NewInt(2_000_000))
	up["address"] = "0x" + strings.ToUpper(token[2:])
	topics := up["topics"].([]string)
	for i := range topics {
		topics[i] = "0x" + strings.ToUpper(topics[i][2:])
	}
	up["data"] = "0x" + strings.ToUpper(up["data"].(string)[2:])
	st.AddReceipt(hash('5'), true, []map[string]any{up})
	// Two transfers of 1.0 do not make one of 1.5; one of 2.0 among other logs does.
	st.AddReceipt(hash('3'), true, []map[string]any{
		tempotest.Log(token, payer, recipient, big.NewInt(1_000_000)),
		tempotest.Log(token, payer, recipient, big.NewInt(1_000_000)),
	})
	st.AddReceipt(hash('4'), true, []map[string]any{
		tempotest.Log(other, payer, recipient, big.NewInt(5_000_000)),
		tempotest.Log(token, payer, other, big.NewInt(5_000_000)),
		tempotest.Log(token, payer, recipient, big.NewInt(2_000_000)),
	})

	m := newMethod(t, srv.URL)
	tests := []struct {
		name    string
		cred    json.RawMessage
		amount  int64
		status  payments.Status
		wantErr string
		msg     string
	}{
		{name: "good transfer", cred: cred(hash('a')), amount: 1_500_000, status: payments.StatusSucceeded},
		{name: "more than asked", cred: cred(hash('4')), amount: 1_500_000, status: payments.StatusSucceeded},
		{name: "too small", cred: cred(hash('b')), amount: 1_500_000, status: payments.StatusInvalid, msg: "no transfer of at least 1.500000 (1500000 base units)"},
		{name: "split transfers do not add up", cred: cred(hash('3')), amount: 1_500_000, status: payments.StatusInvalid, msg: "no transfer of at least"},
		{name: "wrong recipient", cred: cred(hash('c')), amount: 1_500_000, status: payments.StatusInvalid, msg: "to the recipient"},
		{name: "wrong token", cred: cred(hash('d')), amount: 1_500_000, status: payments.StatusInvalid, msg: "no transfer"},
		{name: "failed tx", cred: cred(hash('e')), amount: 1_500_000, status: payments.StatusInvalid, msg: "the transfer failed on chain"},
		{name: "pending hash", cred: cred(hash('f')), amount: 1_500_000, wantErr: "not mined yet"},
		{name: "unknown hash", cred: cred(hash('9')), amount: 1_500_000, wantErr: "not mined yet"},
		{name: "case-insensitive addresses and hash", cred: cred("0x" + strings.Repeat("1", 64)), amount: 2_000_000, status: payments.StatusSucceeded},
		{name: "upper-case receipt", cred: cred(hash('5')), amount: 2_000_000, status: payments.StatusSucceeded},
		{name: "uint256 max parses", cred: cred(hash('2')), amount: 1 << 62, status: payments.StatusSucceeded},
		{name: "uppercase hash", cred: cred("0x" + strings.Repeat("A", 64)), amount: 1, status: payments.StatusInvalid, msg: "paid for something already"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := m.Charge(context.Background(), charge(tc.amount, tc.cred))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q (result %+v)", err, tc.wantErr, res)
				}
				if !errors.Is(err, tempo.ErrNotMined) {
					t.Errorf("err = %v, want it to wrap ErrNotMined", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != tc.status {
				t.Fatalf("status = %s (%s), want %s", res.Status, res.Message, tc.status)
			}
			if !strings.Contains(res.Message, tc.msg) {
				t.Errorf("message = %q, want it to contain %q", res.Message, tc.msg)
			}
			if res.Status == payments.StatusSucceeded {
				var c struct{ Hash string }
				_ = json.Unmarshal(tc.cred, &c)
				if res.Reference != strings.ToLower(c.Hash) {
					t.Errorf("reference = %q, want the lowercase hash", res.Reference)
				}
			}
		})
	}
	if n := st.Calls("eth_chainId"); n != 1 {
		t.Errorf("eth_chainId called %d times, want once (cached)", n)
	}
}

func TestMalformedCredential(t *testing.T) {
	st := tempotest.New(tempo.DefaultChainID)
	srv := httptest.NewServer(st)
	t.Cleanup(srv.Close)
	m := newMethod(t, srv.URL)
	h := hash('a')
	for _, c := range []string{
		``,
		`null`,
		`"` + h + `"`,
		`{"hash":"` + h + `"}`,
		`{"type":"transaction","hash":"` + h + `"}`,
		`{"type":"proof","hash":"` + h + `"}`,
		`{"type":"hash","hash":"` + h[:65] + `"}`,
		`{"type":"hash","hash":"` + h + `0"}`,
		`{"type":"hash","hash":"` + strings.Repeat("a", 66) + `"}`,
		`{"type":"hash","hash":"0x` + strings.Repeat("g", 64) + `"}`,
		`{"type":"hash","hash":"` + h + `","extra":1}`,
		`{"type":"hash","hash":"` + h + `"} {}`,
		`{"type":"hash","hash":"` + h + `"` + strings.Repeat(" ", 2000) + `}`,
		`{"type":"hash","Hash":"` + h + `","hash":"` + h + `"}`,
		`{"type":"hash","hash":"` + h + `","hash":"` + h + `"}`,
		`{"type":"hash","hash":["` + h + `"]}`,
		`{"type":"hash","hash":"` + h + `",}`,
		`{"type":"hash"}`,
		`[{"type":"hash","hash":"` + h + `"}]`,
	} {
		res, err := m.Charge(context.Background(), charge(1, json.RawMessage(c)))
		if err != nil || res.Status != payments.StatusInvalid {
			t.Errorf("credential %.80q: %+v, %v; want StatusInvalid", c, res, err)
		}
	}
	if n := st.Calls("eth_getTransactionReceipt") + st.Calls("eth_chainId"); n != 0 {
		t.Errorf("%d RPC calls for malformed credentials, want none", n)
	}
}

func TestReusedHash(t *testing.T) {
	st := tempotest.New(tempo.DefaultChainID)
	srv := httptest.NewServer(st)
	t.Cleanup(srv.Close)
	st.AddTransfer(hash('a'), payer, recipient, token, big.NewInt(100), true)
	st.AddTransfer(hash('b'), payer, recipient, token, big.NewInt(1), true)
	used := &tempo.MemoryUsed{}
	m := newMethod(t, srv.URL, func(o *tempo.Options) { o.Used = used })

	// A refused charge does not burn the hash.
	if res, err := m.Charge(context.Background(), charge(2, cred(hash('b')))); err != nil || res.Status != payments.StatusInvalid {
		t.Fatalf("too small: %+v %v", res, err)
	}
	if first, _ := used.Claim(context.Background(), hash('b')); !first {
		t.Error("a refused charge claimed its hash")
	}

	// Concurrent charges with one hash: exactly one succeeds, even across
	// two Methods sharing the store (two replicas).
	m2 := newMethod(t, srv.URL, func(o *tempo.Options) { o.Used = used })
	var mu sync.Mutex
	ok, invalid := 0, 0
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			mm := m
			if i%2 == 1 {
				mm = m2
			}
			res, err := mm.Charge(context.Background(), charge(100, cred(hash('a'))))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				t.Error(err)
			case res.Status == payments.StatusSucceeded:
				ok++
			case res.Status == payments.StatusInvalid && res.Message == "this transaction paid for something already":
				invalid++
			default:
				t.Errorf("unexpected %+v", res)
			}
		})
	}
	wg.Wait()
	if ok != 1 || invalid != 19 {
		t.Fatalf("%d succeeded, %d already used; want 1 and 19", ok, invalid)
	}
}

type failingUsed struct{}

func (failingUsed) Claim(context.Context, string) (bool, error) { return false, errors.New("db down") }

func TestUsedStoreFailureIsAnError(t *testing.T) {
	st := tempotest.New(tempo.DefaultChainID)
	srv := httptest.NewServer(st)
	t.Cleanup(srv.Close)
	st.AddTransfer(hash('a'), payer, recipient, token, big.NewInt(100), true)
	m := newMethod(t, srv.URL, func(o *tempo.Options) { o.Used = failingUsed{} })
	if _, err := m.Charge(context.Background(), charge(100, cred(hash('a')))); err == nil || !strings.Contains(err.Error(), "db down") {
		t.Fatalf("err = %v, want the store's error", err)
	}
}

func TestRPCFailuresAreErrors(t *testing.T) {
	st := tempotest.New(tempo.DefaultChainID)
	st.AddTransfer(hash('a'), payer, recipient, token, big.NewInt(100), true)
	tests := []struct {
		name    string
		handler http.HandlerFunc
		wantErr string
	}{
		{"5xx", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "bad gateway", http.StatusBadGateway) }, "HTTP 502"},
		{"429", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "slow down", http.StatusTooManyRequests) }, "HTTP 429"},
		{"garbage", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("<html>oops</html>")) }, "not a JSON-RPC 2.0 response"},
		{"wrong id", func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":7,"result":"0xa5bf"}`))
		}, "not a JSON-RPC 2.0 response"},
		{"json-rpc error", func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"header not found"}}`))
		}, "error -32000: header not found"},
		{"neither result nor error", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1}`)) }, "neither result nor error"},
		{"huge answer", func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":"` + strings.Repeat("0", 5<<20) + `"}`))
		}, "larger than"},
		{"malformed receipt", func(w http.ResponseWriter, r *http.Request) {
			if strings.Contains(readBody(r), "eth_chainId") {
				st.ServeHTTP(w, r)
				return
			}
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{"status":1,"logs":"x"}}`))
		}, "malformed"},
		{"odd status", func(w http.ResponseWriter, r *http.Request) {
			if strings.Contains(readBody(r), "eth_chainId") {
				st.ServeHTTP(w, r)
				return
			}
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{"status":"0x2","logs":[]}}`))
		}, "status"},
		{"receipt of another hash", func(w http.ResponseWriter, r *http.Request) {
			if strings.Contains(readBody(r), "eth_chainId") {
				st.ServeHTTP(w, r)
				return
			}
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{"transactionHash":"` + hash('b') + `","status":"0x1","logs":[]}}`))
		}, "answered the receipt"},
		{"wrong chain", tempotest.New(4217).ServeHTTP, "serves chain 4217"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(tc.handler)
			t.Cleanup(srv.Close)
			m := newMethod(t, srv.URL)
			res, err := m.Charge(context.Background(), charge(100, cred(hash('a'))))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want %q (result %+v)", err, tc.wantErr, res)
			}
		})
	}
}

// readBody reads a request body and puts it back for the next handler.
func readBody(r *http.Request) string {
	b, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(b))
	return string(b)
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestTimeoutIsAnError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// An RPC that never answers: the method gives up after Timeout.
		hang := roundTrip(func(r *http.Request) (*http.Response, error) {
			<-r.Context().Done()
			return nil, r.Context().Err()
		})
		m := newMethod(t, "http://rpc.invalid", func(o *tempo.Options) {
			o.HTTPClient = &http.Client{Transport: hang}
			o.Timeout = 5 * time.Second
		})
		start := time.Now()
		_, err := m.Charge(context.Background(), charge(100, cred(hash('a'))))
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want a deadline", err)
		}
		if d := time.Since(start); d != 5*time.Second {
			t.Errorf("gave up after %v, want 5s", d)
		}
	})
}

func TestConnectionRefusedIsAnError(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	m := newMethod(t, url)
	if _, err := m.Charge(context.Background(), charge(100, cred(hash('a')))); err == nil {
		t.Fatal("no error for a closed RPC")
	}
}

func TestRefundUnsupported(t *testing.T) {
	m := newMethod(t, "http://127.0.0.1:1")
	_, err := m.Refund(context.Background(), payments.RefundRequest{IdempotencyKey: "r1", Reference: hash('a'), Amount: 1})
	if !errors.Is(err, payments.ErrRefundUnsupported) {
		t.Fatalf("err = %v, want ErrRefundUnsupported", err)
	}
}

func TestChargeRequestChecks(t *testing.T) {
	m := newMethod(t, "http://127.0.0.1:1")
	for _, r := range []payments.ChargeRequest{
		{Amount: 0, Currency: token, Credential: cred(hash('a'))},
		{Amount: -1, Currency: token, Credential: cred(hash('a'))},
		{Amount: 1, Currency: "usd", Credential: cred(hash('a'))},
		{Amount: 1, Currency: other, Credential: cred(hash('a'))},
	} {
		if _, err := m.Charge(context.Background(), r); err == nil {
			t.Errorf("%+v: no error", r)
		}
	}
	// The currency compares case-insensitively.
	r := payments.ChargeRequest{Amount: 1, Currency: strings.ToUpper(token), Credential: json.RawMessage(`{}`)}
	if res, err := m.Charge(context.Background(), r); err != nil || res.Status != payments.StatusInvalid {
		t.Errorf("uppercase token: %+v %v", res, err)
	}
}

func TestNew(t *testing.T) {
	good := tempo.Options{RPCURL: "https://rpc.moderato.tempo.xyz", Recipient: recipient, Token: token, Used: &tempo.MemoryUsed{}}
	m, err := tempo.New(good)
	if err != nil {
		t.Fatal(err)
	}
	if m.Name() != "tempo" || m.ChainID() != 42431 || m.Recipient() != strings.ToLower(recipient) || m.Token() != token {
		t.Errorf("defaults: %s %d %s %s", m.Name(), m.ChainID(), m.Recipient(), m.Token())
	}
	for name, f := range map[string]func(*tempo.Options){
		"no rpc":            func(o *tempo.Options) { o.RPCURL = "" },
		"relative rpc":      func(o *tempo.Options) { o.RPCURL = "/rpc" },
		"ftp rpc":           func(o *tempo.Options) { o.RPCURL = "ftp://x" },
		"short recipient":   func(o *tempo.Options) { o.Recipient = recipient[:41] },
		"recipient no 0x":   func(o *tempo.Options) { o.Recipient = "00" + recipient[2:] },
		"recipient not hex": func(o *tempo.Options) { o.Recipient = "0x" + strings.Repeat("z", 40) },
		"token missing":     func(o *tempo.Options) { o.Token = "" },
		"negative decimals": func(o *tempo.Options) { o.Decimals = -1 },
	} {
		o := good
		f(&o)
		if _, err := tempo.New(o); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// Without a UsedHashes store the single use of a hash is the caller's (core
// records charges unique by method and reference): Charge is idempotent per
// hash and reports success for it every time.
func TestWithoutUsedStore(t *testing.T) {
	st := tempotest.New(tempo.DefaultChainID)
	st.AddTransfer(hash('b'), payer, recipient, token, big.NewInt(500_000), true)
	m := newMethod(t, "http://tempo.test/rpc", func(o *tempo.Options) {
		o.HTTPClient, o.Used = &http.Client{Transport: st.Transport()}, nil
	})
	for range 2 {
		res, err := m.Charge(context.Background(), charge(500_000, cred(hash('b'))))
		if err != nil || res.Status != payments.StatusSucceeded || res.Reference != hash('b') {
			t.Fatalf("%+v %v", res, err)
		}
	}
	if _, err := m.Charge(context.Background(), charge(500_001, cred(hash('b')))); err != nil {
		t.Fatal(err)
	}
}

func TestThroughInProcessTransport(t *testing.T) {
	st := tempotest.New(tempo.DefaultChainID)
	st.AddTransfer(hash('a'), payer, recipient, token, big.NewInt(500_000), true)
	m := newMethod(t, "http://tempo.test/rpc", func(o *tempo.Options) { o.HTTPClient = &http.Client{Transport: st.Transport()} })
	res, err := m.Charge(context.Background(), charge(500_000, cred(hash('a'))))
	if err != nil || res.Status != payments.StatusSucceeded || res.Reference != hash('a') {
		t.Fatalf("%+v %v", res, err)
	}
}
