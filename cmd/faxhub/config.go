package main

import (
	"cmp"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/faxhub/faxhub/core"
)

// config is every setting of the process, from flags with environment
// fallbacks (DESIGN.md section 5).
type config struct {
	Addr            string
	BaseURL         string
	APIURL          string
	DataDir         string
	Database        string
	BlobURL         string
	PriceTable      string
	MachinePayments bool
	MCPOAuth        bool
	Dev             bool
	LogFormat       string
	LogLevel        string
	SimTimeScale    float64
	Soffice         string
	MaxUploadMB     int64
	MaxPages        int
	Workers         int
	SMTPURL         string
	AgentMode       string
	TrustedProxies  string
}

func env(name, def string) string { return cmp.Or(os.Getenv(name), def) }

func envBool(name string, def bool) bool {
	v := strings.ToLower(os.Getenv(name))
	switch v {
	case "1", "true", "on", "yes":
		return true
	case "0", "false", "off", "no":
		return false
	}
	return def
}

// onOff is a flag.Value for on|off switches.
type onOff struct{ v *bool }

func (o onOff) String() string {
	if o.v != nil && *o.v {
		return "on"
	}
	return "off"
}

func (o onOff) Set(s string) error {
	switch strings.ToLower(s) {
	case "on", "true", "1":
		*o.v = true
	case "off", "false", "0":
		*o.v = false
	default:
		return fmt.Errorf("want on or off, got %q", s)
	}
	return nil
}

// commonFlags registers the flags every database-using command shares.
func commonFlags(fs *flag.FlagSet, c *config) {
	fs.StringVar(&c.DataDir, "data", env("FAXHUB_DATA", "./faxhub-data"), "data directory [FAXHUB_DATA]")
	fs.StringVar(&c.Database, "database", os.Getenv("FAXHUB_DATABASE_URL"), "postgres://… URL or SQLite file path [FAXHUB_DATABASE_URL] (default: SQLite in the data dir)")
	fs.StringVar(&c.BaseURL, "base-url", env("FAXHUB_BASE_URL", "http://localhost:8080"), "public main origin [FAXHUB_BASE_URL]")
	fs.StringVar(&c.APIURL, "api-url", os.Getenv("FAXHUB_API_URL"), "public API origin [FAXHUB_API_URL] (default: the base URL)")
	fs.StringVar(&c.LogFormat, "log-format", env("FAXHUB_LOG_FORMAT", "text"), "text or json [FAXHUB_LOG_FORMAT]")
	fs.StringVar(&c.LogLevel, "log-level", env("FAXHUB_LOG_LEVEL", "info"), "debug, info, warn or error [FAXHUB_LOG_LEVEL]")
}

func serveFlags(c *config, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	commonFlags(fs, c)
	fs.StringVar(&c.Addr, "addr", env("FAXHUB_ADDR", "127.0.0.1:8080"), "listen address [FAXHUB_ADDR]")
	fs.StringVar(&c.BlobURL, "blobs", os.Getenv("FAXHUB_BLOB_URL"), "blob store URL: file:///dir or s3://bucket?region=… [FAXHUB_BLOB_URL] (default: files in the data dir)")
	fs.StringVar(&c.PriceTable, "price-table", os.Getenv("FAXHUB_PRICE_TABLE"), "JSON price table replacing the embedded one [FAXHUB_PRICE_TABLE]")
	c.MachinePayments = envBool("FAXHUB_MACHINE_PAYMENTS", true)
	fs.Var(onOff{&c.MachinePayments}, "machine-payments", "on|off: machine payment endpoints [FAXHUB_MACHINE_PAYMENTS] (default on)")
	c.MCPOAuth = envBool("FAXHUB_MCP_OAUTH", true)
	fs.Var(onOff{&c.MCPOAuth}, "mcp-oauth", "on|off: OAuth for MCP chat apps [FAXHUB_MCP_OAUTH] (default on)")
	fs.BoolVar(&c.Dev, "dev", envBool("FAXHUB_DEV", false), "developer mode: offers a demo owner on first start [FAXHUB_DEV]")
	scale, _ := strconv.ParseFloat(env("FAXHUB_SIM_TIMESCALE", "1"), 64)
	fs.Float64Var(&c.SimTimeScale, "sim-timescale", scale, "simulated provider timing multiplier; 0 delivers instantly [FAXHUB_SIM_TIMESCALE]")
	fs.StringVar(&c.Soffice, "soffice", os.Getenv("FAXHUB_SOFFICE"), "path of LibreOffice's soffice [FAXHUB_SOFFICE] (default: looked up on PATH)")
	maxMB, _ := strconv.ParseInt(env("FAXHUB_MAX_UPLOAD_MB", "50"), 10, 64)
	fs.Int64Var(&c.MaxUploadMB, "max-upload-mb", maxMB, "largest accepted upload in MB [FAXHUB_MAX_UPLOAD_MB]")
	maxPages, _ := strconv.Atoi(env("FAXHUB_MAX_PAGES", "350"))
	fs.IntVar(&c.MaxPages, "max-pages", maxPages, "most pages per fax [FAXHUB_MAX_PAGES]")
	workers, _ := strconv.Atoi(env("FAXHUB_WORKERS", "0"))
	fs.IntVar(&c.Workers, "workers", workers, "delivery workers per process [FAXHUB_WORKERS] (0: the queue's default)")
	fs.StringVar(&c.AgentMode, "agent-mode", cmp.Or(os.Getenv("FAXHUB_AGENT_MODE"), os.Getenv("FAXHUB_MCP_MODE")),
		"test|live: the mode every agent acts in: chat apps (MCP, A2A), registered and delegated agents [FAXHUB_AGENT_MODE] (default: test with --dev, else live)")
	fs.StringVar(&c.AgentMode, "mcp-mode", c.AgentMode, "the former name of --agent-mode [FAXHUB_MCP_MODE]")
	fs.StringVar(&c.TrustedProxies, "trusted-proxies", os.Getenv("FAXHUB_TRUSTED_PROXIES"), "comma-separated CIDRs of reverse proxies whose X-Forwarded-For names the client (rate limits and logs key on that address) [FAXHUB_TRUSTED_PROXIES] (default: none, the direct peer is the client)")
	fs.StringVar(&c.SMTPURL, "smtp", os.Getenv("FAXHUB_SMTP_URL"), "owner mail over SMTP: smtp://user:pass@host:587?from=… [FAXHUB_SMTP_URL] (default: dev mailbox and log)")
	return fs
}

// finish derives defaults that depend on other settings.
func (c *config) finish() error {
	c.BaseURL = strings.TrimRight(c.BaseURL, "/")
	c.APIURL = strings.TrimRight(cmp.Or(c.APIURL, c.BaseURL), "/")
	abs, err := filepath.Abs(c.DataDir)
	if err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	c.DataDir = abs
	if c.Database == "" {
		c.Database = filepath.Join(c.DataDir, "faxhub.db")
	}
	if c.AgentMode != "" {
		if _, err := core.ParseMode(c.AgentMode); err != nil {
			return usageError{"--agent-mode must be test or live"}
		}
	}
	if c.BlobURL == "" {
		c.BlobURL = "file://" + filepath.ToSlash(filepath.Join(c.DataDir, "blobs"))
	}
	return nil
}

// shutdownGrace bounds how long serve waits for requests and jobs to finish.
const shutdownGrace = 15 * time.Second
