// Package tempo is the "tempo" payment method of machine payments (MPP) in
// push mode: the payer transfers a TIP-20 token (e.g. pathUSD on the Moderato
// testnet) to our recipient itself and presents the transaction hash as the
// credential, {"type":"hash","hash":"0x…"}; this package verifies over
// JSON-RPC (eth_getTransactionReceipt) that the transaction succeeded and
// carried a Transfer of at least the amount of the configured token to the
// recipient, and that the hash never paid for anything before.
//
// It speaks JSON-RPC with the standard library and computes keccak256 with
// golang.org/x/crypto/sha3 (no go-ethereum). It never imports core: core
// decides the amount (in token base units) and what the payment buys; the
// single use of a hash across replicas is core's: its charges are unique by
// (method, reference) in the transaction that records what the hash paid
// for (Options.Used is then nil), or, for a caller without such a record,
// through UsedHashes.
//
// Pull mode (a signed 0x76 transaction the server broadcasts) is not
// implemented; offers must advertise supportedModes ["push"] only, and
// carry Recipient, Token (as the currency) and ChainID.
//
// Known limit of push mode as verified here: a transfer is not bound to a
// challenge (no memo, no block-time check), so whoever first presents the
// hash of an unused transfer to the recipient is served by it, including
// someone who read it on chain before its payer retried. Binding (a
// TIP-20 transferWithMemo carrying the challenge id) is future work.
package tempo

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/sha3"

	"github.com/faxhub/faxhub/core/payments"
)

// Name is the method's name in payment offers and charge records.
const Name = "tempo"

// Defaults of Options.
const (
	// DefaultChainID is Tempo's Moderato testnet, the default of the MPP
	// tempo method's methodDetails.chainId.
	DefaultChainID uint64 = 42431
	// DefaultDecimals: TIP-20 tokens have 6 decimals.
	DefaultDecimals = 6
	DefaultTimeout  = 15 * time.Second
)

// Bounds: a credential is a few dozen bytes; a receipt with many logs can be
// large, but never megabytes for a transfer.
const (
	maxCredential = 1 << 10
	maxResponse   = 4 << 20
	maxMessage    = 300
)

// transferTopic is keccak256("Transfer(address,address,uint256)"), topic0
// of an ERC-20/TIP-20 Transfer log, computed once from the signature and
// never changed (see TransferTopic).
var transferTopic = "0x" + hex.EncodeToString(keccak256([]byte("Transfer(address,address,uint256)")))

// TransferTopic is topic0 of a Transfer log (0xddf252ad…), lowercase.
func TransferTopic() string { return transferTopic }

// ErrNotMined is wrapped by Charge's error when the node has no receipt for
// the hash: not mined yet, or unknown. It is no verdict: core keeps the
// challenge open and tells the payer to retry the same credential shortly
// (e.g. a 402 with Retry-After), rather than to pay again.
// It wraps payments.ErrPending, which is what core looks for.
var ErrNotMined = fmt.Errorf("tempo: the transaction is not mined yet (or unknown to the node): %w", payments.ErrPending)

func keccak256(b []byte) []byte {
	h := sha3.NewLegacyKeccak256()
	h.Write(b)
	return h.Sum(nil)
}

// UsedHashes records which transaction hashes have paid for something.
// Core implements it over the database (a unique key), so a hash is used
// once across all replicas.
type UsedHashes interface {
	// Claim marks hash (0x + 64 lowercase hex) used. It reports true when
	// this call claimed it, false when it was claimed before (by anyone,
	// including an earlier Charge with the same idempotency key). An error
	// means nothing is known.
	Claim(ctx context.Context, hash string) (bool, error)
}

// MemoryUsed is an in-memory UsedHashes FOR TESTS ONLY: it forgets
// everything on restart and is not shared between replicas, so in a server
// a hash could pay twice. The zero value is ready.
type MemoryUsed struct {
	mu   sync.Mutex
	seen map[string]bool
}

// Claim implements UsedHashes.
func (m *MemoryUsed) Claim(ctx context.Context, hash string) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.seen == nil {
		m.seen = map[string]bool{}
	}
	if m.seen[hash] {
		return false, nil
	}
	m.seen[hash] = true
	return true, nil
}

// Options configures the method.
type Options struct {
	// RPCURL is the Tempo JSON-RPC endpoint (FAXHUB_TEMPO_RPC_URL, e.g.
	// https://rpc.moderato.tempo.xyz). Required.
	RPCURL string
	// Recipient is our address (0x + 40 hex) that transfers must pay.
	// Required.
	Recipient string
	// Token is the TIP-20 token address transfers must be of (the MPP
	// request's currency), e.g. testnet pathUSD. Required.
	Token string
	// ChainID the RPC must serve; checked once with eth_chainId. Default
	// DefaultChainID.
	ChainID uint64
	// Decimals of Token, for messages only (amounts are base units).
	// Default DefaultDecimals.
	Decimals int
	// HTTPClient defaults to a client of its own (never
	// http.DefaultClient, whose settings are process-wide).
	HTTPClient *http.Client
	// Timeout bounds each RPC call. Default DefaultTimeout.
	Timeout time.Duration
	// Used records spent hashes. Optional: nil leaves the single use of a
	// hash to the caller, which must record each paying hash uniquely (core
	// does: a charge's (method, reference) is unique in the transaction
	// that records what it paid for). With Used nil, Charge is idempotent
	// per hash: a second call with the same hash reports success again.
	Used UsedHashes
}

// Method is the tempo payment method.
type Method struct {
	rpc       string
	recipient string // lowercase 0x…
	token     string // lowercase 0x…
	chainID   uint64
	decimals  int
	client    *http.Client
	timeout   time.Duration
	used      UsedHashes

	// chainOK caches a successful eth_chainId check; a failed check is
	// not cached (the RPC may come back), a wrong chain is an error every
	// time (misconfiguration, never the payer's fault).
	mu      sync.Mutex
	chainOK bool
}

var _ payments.PaymentMethod = (*Method)(nil)

// New returns the method, or an error when the options cannot work.
func New(o Options) (*Method, error) {
	u, err := url.Parse(o.RPCURL)
	if o.RPCURL == "" || err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("tempo payment method: RPC URL %q must be an absolute http(s) URL", o.RPCURL)
	}
	if !validAddress(o.Recipient) {
		return nil, fmt.Errorf("tempo payment method: recipient %q is not an address (0x + 40 hex)", o.Recipient)
	}
	if !validAddress(o.Token) {
		return nil, fmt.Errorf("tempo payment method: token %q is not an address (0x + 40 hex)", o.Token)
	}
	m := &Method{
		rpc: o.RPCURL, recipient: strings.ToLower(o.Recipient), token: strings.ToLower(o.Token),
		chainID: o.ChainID, decimals: o.Decimals, client: o.HTTPClient, timeout: o.Timeout, used: o.Used,
	}
	if m.chainID == 0 {
		m.chainID = DefaultChainID
	}
	if m.decimals == 0 {
		m.decimals = DefaultDecimals
	}
	if m.decimals < 0 || m.decimals > 36 {
		return nil, fmt.Errorf("tempo payment method: %d decimals is out of range", o.Decimals)
	}
	if m.client == nil {
		m.client = &http.Client{}
	}
	if m.timeout <= 0 {
		m.timeout = DefaultTimeout
	}
	return m, nil
}

// Name implements payments.PaymentMethod.
func (*Method) Name() string { return Name }

// Recipient is the configured recipient (lowercase) for offers.
func (m *Method) Recipient() string { return m.recipient }

// Token is the configured token address (lowercase), the offers' currency.
func (m *Method) Token() string { return m.token }

// ChainID is the configured chain for offers' methodDetails.chainId.
func (m *Method) ChainID() uint64 { return m.chainID }

// parseCredential is strict: exactly {"type":"hash","hash":"0x" + 64 hex},
// each member once, spelled exactly so (encoding/json would match "Hash"
// and take the last of duplicate keys), nothing else. It returns the
// lowercase hash, or "" when malformed.
func parseCredential(raw json.RawMessage) string {
	if len(raw) == 0 || len(raw) > maxCredential {
		return ""
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return ""
	}
	members := map[string]string{}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return ""
		}
		key, _ := k.(string)
		if _, dup := members[key]; dup || (key != "type" && key != "hash") {
			return ""
		}
		v, err := dec.Token()
		if err != nil {
			return ""
		}
		val, ok := v.(string)
		if !ok {
			return ""
		}
		members[key] = val
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('}') {
		return ""
	}
	if _, err := dec.Token(); err != io.EOF {
		return ""
	}
	if members["type"] != "hash" || !isHex(members["hash"], 64) {
		return ""
	}
	return strings.ToLower(members["hash"])
}

// Charge implements payments.PaymentMethod for push mode.
//
// Verdicts (StatusInvalid, nothing more to wait for): a malformed
// credential (no network call); a transaction that failed on chain; a
// successful transaction without a Transfer log of Token to Recipient of at
// least Amount; a hash that already paid for something. Success: Reference
// is the transaction hash, lowercase.
//
// No verdict (an error; the payer may retry the same challenge): a hash
// the node has no receipt for. Unknown and not-yet-mined look the same over
// JSON-RPC (a null receipt), and a transfer broadcast a second ago is the
// normal case in push mode, so refusing it would make the payer pay again;
// the error wraps ErrNotMined, core keeps the challenge open and the payer
// retries shortly. Also errors:
// RPC failures (transport, timeout, non-200, a JSON-RPC error, an answer
// that is not JSON-RPC), an RPC on another chain, a UsedHashes failure.
//
// Order: the hash is claimed only after every on-chain check passed, so a
// refused or pending transaction never burns its hash.
//
// Idempotency: the port's "same key → first outcome" cannot be kept by
// this method alone (UsedHashes knows hashes, not keys): a second Charge
// with the same key and hash after a success answers "already used". Core
// records the charge with the challenge's consumption in one transaction,
// so it never needs to call Charge twice for one paid challenge.
func (m *Method) Charge(ctx context.Context, r payments.ChargeRequest) (payments.Result, error) {
	if r.Amount <= 0 {
		return payments.Result{}, fmt.Errorf("tempo charge: amount must be positive, got %d", r.Amount)
	}
	if r.Currency != "" && !strings.EqualFold(r.Currency, m.token) {
		return payments.Result{}, fmt.Errorf("tempo charge: currency %q is not the configured token %s", clip(r.Currency), m.token)
	}
	hash := parseCredential(r.Credential)
	if hash == "" {
		return payments.Result{Status: payments.StatusInvalid, Message: `the tempo credential payload must be {"type":"hash","hash":"0x" + 64 hex digits} (push mode)`}, nil
	}
	if err := m.checkChain(ctx); err != nil {
		return payments.Result{}, fmt.Errorf("tempo charge: %w", err)
	}
	var rc *receipt
	if err := m.call(ctx, "eth_getTransactionReceipt", []any{hash}, &rc); err != nil {
		return payments.Result{}, fmt.Errorf("tempo charge: %w", err)
	}
	if rc == nil {
		return payments.Result{}, fmt.Errorf("tempo charge: transaction %s: %w; retry shortly", hash, ErrNotMined)
	}
	if rc.TransactionHash != "" && !strings.EqualFold(rc.TransactionHash, hash) {
		return payments.Result{}, fmt.Errorf("tempo charge: the node answered the receipt of %s for %s", clip(rc.TransactionHash), hash)
	}
	switch strings.ToLower(rc.Status) {
	case "0x1":
	case "0x0":
		return payments.Result{Status: payments.StatusInvalid, Reference: hash, Message: "the transfer failed on chain"}, nil
	default:
		return payments.Result{}, fmt.Errorf("tempo charge: the receipt of %s has status %q", hash, clip(rc.Status))
	}
	want := new(big.Int).SetInt64(r.Amount)
	if !m.paid(rc.Logs, want) {
		return payments.Result{Status: payments.StatusInvalid, Reference: hash, Message: fmt.Sprintf(
			"no transfer of at least %s (%d base units) of token %s to the recipient %s in this transaction",
			m.units(want), r.Amount, m.token, m.recipient)}, nil
	}
	if m.used == nil {
		return payments.Result{Status: payments.StatusSucceeded, Reference: hash}, nil
	}
	first, err := m.used.Claim(ctx, hash)
	if err != nil {
		return payments.Result{}, fmt.Errorf("tempo charge: recording transaction %s as used: %w", hash, err)
	}
	if !first {
		return payments.Result{Status: payments.StatusInvalid, Reference: hash, Message: "this transaction paid for something already"}, nil
	}
	return payments.Result{Status: payments.StatusSucceeded, Reference: hash}, nil
}

// Refund implements payments.PaymentMethod: a pushed transfer cannot be
// pulled back by us.
func (*Method) Refund(context.Context, payments.RefundRequest) (payments.Result, error) {
	return payments.Result{}, payments.ErrRefundUnsupported
}

type receipt struct {
	TransactionHash string  `json:"transactionHash"`
	Status          string  `json:"status"`
	Logs            []txLog `json:"logs"`
}

type txLog struct {
	Address string   `json:"address"`
	Topics  []string `json:"topics"`
	Data    string   `json:"data"`
	Removed bool     `json:"removed"`
}

// paid reports whether one log is a Transfer of the token to the recipient
// of at least want. Several smaller transfers do not add up: one transfer
// pays one charge, as the MPP tempo method defines it.
func (m *Method) paid(logs []txLog, want *big.Int) bool {
	for _, l := range logs {
		if l.Removed || !strings.EqualFold(l.Address, m.token) || len(l.Topics) != 3 {
			continue
		}
		if !strings.EqualFold(l.Topics[0], transferTopic) {
			continue
		}
		to, ok := topicAddress(l.Topics[2])
		if !ok || to != m.recipient {
			continue
		}
		if !isHex(l.Data, 64) {
			continue
		}
		v, ok := new(big.Int).SetString(l.Data[2:], 16)
		if ok && v.Cmp(want) >= 0 {
			return true
		}
	}
	return false
}

// topicAddress reads an indexed address: 32 bytes, the first 12 zero.
func topicAddress(t string) (string, bool) {
	if !isHex(t, 64) || strings.Trim(t[2:26], "0") != "" {
		return "", false
	}
	return "0x" + strings.ToLower(t[26:]), true
}

// units formats base units with the token's decimals ("1.500000").
func (m *Method) units(v *big.Int) string {
	s := v.String()
	if m.decimals == 0 {
		return s
	}
	if len(s) <= m.decimals {
		s = strings.Repeat("0", m.decimals-len(s)+1) + s
	}
	return s[:len(s)-m.decimals] + "." + s[len(s)-m.decimals:]
}

// checkChain asks eth_chainId once per Method and caches success.
func (m *Method) checkChain(ctx context.Context) error {
	m.mu.Lock()
	ok := m.chainOK
	m.mu.Unlock()
	if ok {
		return nil
	}
	var got string
	if err := m.call(ctx, "eth_chainId", []any{}, &got); err != nil {
		return err
	}
	if !strings.HasPrefix(got, "0x") {
		return fmt.Errorf("eth_chainId answered %q, not a hex quantity", clip(got))
	}
	id, err := strconv.ParseUint(got[2:], 16, 64)
	if err != nil {
		return fmt.Errorf("eth_chainId answered %q, not a hex quantity", clip(got))
	}
	if id != m.chainID {
		return fmt.Errorf("the RPC serves chain %d, configured for chain %d", id, m.chainID)
	}
	m.mu.Lock()
	m.chainOK = true
	m.mu.Unlock()
	return nil
}

type rpcRequest struct {
	JSONRPC string `json:"jsonrpc"`
	ID      int    `json:"id"`
	Method  string `json:"method"`
	Params  []any  `json:"params"`
}

type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// call makes one JSON-RPC 2.0 call and decodes its result into out.
func (m *Method) call(ctx context.Context, method string, params []any, out any) error {
	ctx, cancel := context.WithTimeout(ctx, m.timeout)
	defer cancel()
	body, err := json.Marshal(rpcRequest{JSONRPC: "2.0", ID: 1, Method: method, Params: params})
	if err != nil {
		return fmt.Errorf("encoding %s: %w", method, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.rpc, strings.NewReader(string(body)))
	if err != nil {
		return fmt.Errorf("building %s: %w", method, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	res, err := m.client.Do(req)
	if err != nil {
		return fmt.Errorf("calling %s: %w", method, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, maxResponse+1))
	if err != nil {
		return fmt.Errorf("reading the answer to %s: %w", method, err)
	}
	if len(b) > maxResponse {
		return fmt.Errorf("the answer to %s is larger than %d bytes", method, maxResponse)
	}
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("the RPC answered %s with HTTP %d", method, res.StatusCode)
	}
	var r rpcResponse
	if err := json.Unmarshal(b, &r); err != nil || r.JSONRPC != "2.0" || string(r.ID) != "1" {
		return fmt.Errorf("the answer to %s is not a JSON-RPC 2.0 response to it", method)
	}
	if r.Error != nil {
		return fmt.Errorf("the RPC answered %s with error %d: %s", method, r.Error.Code, clip(r.Error.Message))
	}
	if len(r.Result) == 0 {
		return fmt.Errorf("the answer to %s has neither result nor error", method)
	}
	if err := json.Unmarshal(r.Result, out); err != nil {
		return fmt.Errorf("the result of %s is malformed: %w", method, err)
	}
	return nil
}

// validAddress: 0x + 40 hex digits, any case (no EIP-55 checksum check:
// addresses are compared case-insensitively).
func validAddress(s string) bool { return isHex(s, 40) }

// isHex: "0x" (or "0X") followed by exactly n hex digits.
func isHex(s string, n int) bool {
	if len(s) != n+2 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X') {
		return false
	}
	for i := 2; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

func clip(s string) string {
	if len(s) > maxMessage {
		return s[:maxMessage] + "…"
	}
	return s
}
