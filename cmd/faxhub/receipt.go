package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/oauth/receipts"
)

// Bounds of what `faxhub receipt verify` reads and fetches.
const (
	maxJWKSBytes    = 1 << 20
	maxMetaBytes    = 1 << 20
	receiptFetchTTL = 15 * time.Second
)

// receiptCmd runs `faxhub receipt verify`. It needs no database: a receipt
// is verified with the issuer's JWKS alone.
func receiptCmd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "verify" {
		return usageError{"usage: faxhub receipt verify FILE|- [--jwks FILE_OR_URL] [--issuer URL] [--json]"}
	}
	fs := flag.NewFlagSet("receipt verify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	jwksFrom := fs.String("jwks", "", "the issuer's JWKS: a file (offline) or an http(s) URL (default: found from the receipt's issuer by RFC 8414 discovery)")
	issuer := fs.String("issuer", "", "the issuer the receipt must name, e.g. https://faxhub.example/api/auth (default: whichever it names)")
	asJSON := fs.Bool("json", false, "print the verified claims as JSON")
	// FILE may come before or after the flags.
	var files []string
	rest := args[1:]
	for {
		if err := fs.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil
			}
			return usageError{err.Error()}
		}
		if fs.NArg() == 0 {
			break
		}
		files = append(files, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	if len(files) != 1 {
		return usageError{"faxhub receipt verify takes one FILE (or - for stdin)"}
	}

	token, err := readReceipt(files[0], stdin)
	if err != nil {
		return err
	}
	hd, err := receipts.Parse(token)
	if err != nil {
		return fmt.Errorf("receipt verify: %w", err)
	}
	if *issuer != "" && hd.Issuer != *issuer {
		return fmt.Errorf("receipt verify: the receipt names issuer %q, not %q", hd.Issuer, *issuer)
	}
	client := &http.Client{Timeout: receiptFetchTTL}
	var set jose.JSONWebKeySet
	switch {
	case *jwksFrom != "" && isHTTPURL(*jwksFrom):
		set, err = fetchJWKS(ctx, client, *jwksFrom)
	case *jwksFrom != "":
		set, err = readJWKS(*jwksFrom)
	default:
		var jwksURL string
		if jwksURL, err = discoverJWKS(ctx, client, hd.Issuer); err == nil {
			set, err = fetchJWKS(ctx, client, jwksURL)
		}
	}
	if err != nil {
		return fmt.Errorf("receipt verify: %w", err)
	}
	r, err := receipts.Verify(token, set)
	if err != nil {
		return fmt.Errorf("receipt verify: %w", err)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	printReceipt(stdout, r, hd.KeyID, *issuer != "")
	return nil
}

// readReceipt reads the compact JWS from name ("-": stdin), bounded.
func readReceipt(name string, stdin io.Reader) (string, error) {
	var src io.Reader = stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return "", fmt.Errorf("receipt verify: %w", err)
		}
		defer f.Close()
		src = f
	}
	b, err := io.ReadAll(io.LimitReader(src, receipts.MaxTokenBytes+1024))
	if err != nil {
		return "", fmt.Errorf("receipt verify: read %s: %w", name, err)
	}
	return strings.TrimSpace(string(b)), nil
}

func isHTTPURL(s string) bool {
	return strings.HasPrefix(s, "https://") || strings.HasPrefix(s, "http://")
}

// discoverJWKS finds the JWKS of issuer by RFC 8414: the metadata at
// {origin}/.well-known/oauth-authorization-server{path}, whose issuer must
// be issuer, names it in jwks_uri. The issuer must be https, or http on a
// loopback host (a local faxhub).
func discoverJWKS(ctx context.Context, client *http.Client, issuer string) (string, error) {
	u, err := url.Parse(issuer)
	if err != nil || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("the receipt's issuer %q is not a URL; pass --jwks", issuer)
	}
	if u.Scheme != "https" && (u.Scheme != "http" || !loopback(u.Hostname())) {
		return "", fmt.Errorf("the receipt's issuer %q is not https; pass --jwks", issuer)
	}
	meta := u.Scheme + "://" + u.Host + "/.well-known/oauth-authorization-server" + strings.TrimSuffix(u.EscapedPath(), "/")
	var md struct {
		Issuer  string `json:"issuer"`
		JWKSURI string `json:"jwks_uri"`
	}
	if err := getJSON(ctx, client, meta, maxMetaBytes, &md); err != nil {
		return "", fmt.Errorf("discover the JWKS of %s: %w", issuer, err)
	}
	if md.Issuer != issuer || !isHTTPURL(md.JWKSURI) {
		return "", fmt.Errorf("discover the JWKS of %s: %s names issuer %q and jwks_uri %q", issuer, meta, md.Issuer, md.JWKSURI)
	}
	return md.JWKSURI, nil
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func fetchJWKS(ctx context.Context, client *http.Client, u string) (jose.JSONWebKeySet, error) {
	var set jose.JSONWebKeySet
	if err := getJSON(ctx, client, u, maxJWKSBytes, &set); err != nil {
		return set, fmt.Errorf("fetch the JWKS: %w", err)
	}
	return set, nil
}

func readJWKS(name string) (jose.JSONWebKeySet, error) {
	var set jose.JSONWebKeySet
	f, err := os.Open(name)
	if err != nil {
		return set, fmt.Errorf("read the JWKS: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxJWKSBytes+1))
	if err != nil {
		return set, fmt.Errorf("read the JWKS %s: %w", name, err)
	}
	if len(b) > maxJWKSBytes {
		return set, fmt.Errorf("read the JWKS %s: larger than %d bytes", name, maxJWKSBytes)
	}
	if err := json.Unmarshal(b, &set); err != nil {
		return set, fmt.Errorf("read the JWKS %s: %w", name, err)
	}
	return set, nil
}

// getJSON GETs u and decodes at most limit bytes of a 200 answer into v.
func getJSON(ctx context.Context, client *http.Client, u string, limit int64, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return fmt.Errorf("GET %s: %w", u, err)
	}
	if int64(len(b)) > limit {
		return fmt.Errorf("GET %s: larger than %d bytes", u, limit)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("GET %s: %w", u, err)
	}
	return nil
}

// printReceipt writes the verified claims for a person to read.
func printReceipt(w io.Writer, r faxes.Receipt, kid string, issuerPinned bool) {
	at := func(sec int64) string {
		if sec == 0 {
			return "-"
		}
		return time.Unix(sec, 0).UTC().Format(time.RFC3339)
	}
	or := func(s string) string {
		if s == "" {
			return "-"
		}
		return s
	}
	signer := "signed by the key " + kid + " of " + r.Issuer
	if !issuerPinned {
		signer += " (the issuer the receipt names: pass --issuer to require one)"
	}
	fmt.Fprintf(w, "receipt verified: %s\n\n", signer)
	outcome := r.Outcome
	if r.Reason != "" {
		outcome += " (" + r.Reason + ")"
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, row := range [][2]string{
		{"fax", r.Subject},
		{"outcome", outcome},
		{"to", r.To},
		{"from", or(r.From)},
		{"pages", fmt.Sprintf("%d, %d confirmed by the receiver", r.Pages, r.PagesSent)},
		{"document sha256", or(r.DocumentSHA256)},
		{"resolution", or(r.Resolution)},
		{"queued", at(r.QueuedAt)},
		{"completed", at(r.CompletedAt)},
		{"attempts", fmt.Sprint(r.Attempts)},
		{"provider", or(r.Provider)},
		{"provider ref", or(r.ProviderRef)},
		{"remote station", or(r.RemoteStationID)},
		{"mode", r.Mode},
		{"receipt id", r.ID},
		{"issued", at(r.IssuedAt)},
	} {
		fmt.Fprintf(tw, "%s\t%s\n", row[0], row[1])
	}
	tw.Flush()
}
