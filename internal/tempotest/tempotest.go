// Package tempotest is a faithful local stand-in for the two JSON-RPC calls
// the tempo payment method makes, for tests (and a local test mode):
//
//	eth_chainId                  the configured chain id as a hex quantity
//	eth_getTransactionReceipt    the receipt of a transaction a test added, or null
//
// It answers as an Ethereum-style node does where the method can tell:
// JSON-RPC 2.0 over POST with a JSON body, a receipt whose status is 0x1 or
// 0x0 and whose logs carry a TIP-20/ERC-20 Transfer event (topic0 =
// keccak256("Transfer(address,address,uint256)"), from and to as indexed
// 32-byte topics, the amount as a 32-byte data word), null for a pending or
// unknown hash, error -32601 for an unknown method, -32602 for bad params,
// -32700 for a body that is not JSON and -32600 for one that is not a
// request. Batches are not supported (the method never sends one).
//
// State lives in memory behind one mutex; nothing survives a restart.
package tempotest

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/crypto/sha3"

	"github.com/faxhub/faxhub/internal/inproc"
)

const maxBody = 64 << 10

// transferTopic is computed here as well (not imported from the method),
// so the stand-in does not trust the code it tests.
var transferTopic = func() string {
	h := sha3.NewLegacyKeccak256()
	h.Write([]byte("Transfer(address,address,uint256)"))
	return "0x" + hex.EncodeToString(h.Sum(nil))
}()

// Server is the stand-in; an http.Handler.
type Server struct {
	chainID uint64

	mu       sync.Mutex
	receipts map[string]json.RawMessage // lowercase hash → receipt; nil value = pending
	calls    map[string]int
}

// New returns a server for chainID (e.g. 42431, Moderato).
func New(chainID uint64) *Server {
	return &Server{chainID: chainID, receipts: map[string]json.RawMessage{}, calls: map[string]int{}}
}

// AddTransfer records a mined transaction hash that emitted one Transfer
// of amount base units of token from → to, successful or failed (a failed
// transaction has status 0x0 and, as on chain, no logs). Addresses are
// 0x + 40 hex, any case; the amount must fit in a uint256.
func (s *Server) AddTransfer(hash, from, to, token string, amount *big.Int, success bool) {
	logs := []map[string]any{}
	if success {
		logs = append(logs, Log(token, from, to, amount))
	}
	s.AddReceipt(hash, success, logs)
}

// Log builds a Transfer log as a node reports it, for AddReceipt.
func Log(token, from, to string, amount *big.Int) map[string]any {
	if amount.Sign() < 0 || amount.BitLen() > 256 {
		panic(fmt.Sprintf("tempotest: amount %s does not fit in a uint256", amount))
	}
	return map[string]any{
		"address":  strings.ToLower(token),
		"topics":   []string{transferTopic, word(addr(from)), word(addr(to))},
		"data":     "0x" + fmt.Sprintf("%064x", amount),
		"removed":  false,
		"logIndex": "0x0",
	}
}

// AddReceipt records a mined transaction with the given logs (e.g. several
// transfers, or logs of other events).
func (s *Server) AddReceipt(hash string, success bool, logs []map[string]any) {
	status := "0x0"
	if success {
		status = "0x1"
	}
	h := strings.ToLower(hash)
	for i, l := range logs {
		l["transactionHash"] = h
		l["logIndex"] = "0x" + strconv.FormatInt(int64(i), 16)
	}
	rc := map[string]any{
		"transactionHash":   h,
		"transactionIndex":  "0x0",
		"blockHash":         "0x" + strings.Repeat("ab", 32),
		"blockNumber":       "0x10",
		"from":              "0x" + strings.Repeat("11", 20),
		"to":                nil,
		"cumulativeGasUsed": "0x5208",
		"gasUsed":           "0x5208",
		"contractAddress":   nil,
		"logs":              logs,
		"logsBloom":         "0x" + strings.Repeat("00", 256),
		"type":              "0x76",
		"status":            status,
	}
	b, err := json.Marshal(rc)
	if err != nil {
		panic(err)
	}
	s.mu.Lock()
	s.receipts[h] = b
	s.mu.Unlock()
}

// AddPending records a transaction broadcast but not mined: its receipt is
// null, as a node answers for a pending (or unknown) hash.
func (s *Server) AddPending(hash string) {
	s.mu.Lock()
	s.receipts[strings.ToLower(hash)] = nil
	s.mu.Unlock()
}

// Calls is how many times method was called.
func (s *Server) Calls(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[method]
}

func addr(a string) string {
	if len(a) != 42 || !strings.HasPrefix(a, "0x") {
		panic(fmt.Sprintf("tempotest: %q is not an address", a))
	}
	if _, err := hex.DecodeString(a[2:]); err != nil {
		panic(fmt.Sprintf("tempotest: %q is not an address", a))
	}
	return strings.ToLower(a[2:])
}

func word(a40 string) string { return "0x" + strings.Repeat("0", 24) + a40 }

type request struct {
	JSONRPC string            `json:"jsonrpc"`
	ID      json.RawMessage   `json:"id"`
	Method  string            `json:"method"`
	Params  []json.RawMessage `json:"params"`
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "JSON-RPC needs POST", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil || len(body) > maxBody {
		http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
		return
	}
	var req request
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, json.RawMessage("null"), -32700, "parse error")
		return
	}
	id := req.ID
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	if req.JSONRPC != "2.0" || req.Method == "" {
		writeError(w, id, -32600, "invalid request")
		return
	}
	s.mu.Lock()
	s.calls[req.Method]++
	s.mu.Unlock()
	switch req.Method {
	case "eth_chainId":
		writeResult(w, id, json.RawMessage(strconv.Quote("0x"+strconv.FormatUint(s.chainID, 16))))
	case "eth_getTransactionReceipt":
		var h string
		if len(req.Params) != 1 || json.Unmarshal(req.Params[0], &h) != nil || len(h) != 66 || !strings.HasPrefix(h, "0x") {
			writeError(w, id, -32602, "invalid params: want [transaction hash]")
			return
		}
		if _, err := hex.DecodeString(h[2:]); err != nil {
			writeError(w, id, -32602, "invalid params: want [transaction hash]")
			return
		}
		s.mu.Lock()
		rc := s.receipts[strings.ToLower(h)]
		s.mu.Unlock()
		if rc == nil {
			rc = json.RawMessage("null")
		}
		writeResult(w, id, rc)
	default:
		writeError(w, id, -32601, "the method "+req.Method+" does not exist/is not available")
	}
}

func writeResult(w http.ResponseWriter, id, result json.RawMessage) {
	write(w, map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
}

func writeError(w http.ResponseWriter, id json.RawMessage, code int, msg string) {
	write(w, map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": msg}})
}

func write(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// Transport serves the stand-in in process, for an http.Client that needs
// no listener (a test mode, or tests): any URL reaches the server.
func (s *Server) Transport() http.RoundTripper { return inproc.Transport(s) }
