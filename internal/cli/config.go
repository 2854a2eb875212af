package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/faxhub/faxhub/rest/client"
)

// Profile is one stored credential: the API it is for and either an API
// key or an OAuth token (faxhub login).
type Profile struct {
	APIURL string      `json:"apiUrl"`
	APIKey string      `json:"apiKey,omitempty"`
	OAuth  *OAuthToken `json:"oauth,omitempty"`
}

// configFile is $XDG_CONFIG_HOME/faxhub/config.json (os.UserConfigDir),
// mode 0600 in a 0700 directory: it holds secrets.
type configFile struct {
	Profiles map[string]Profile `json:"profiles"`
}

// maxConfigBytes bounds the file read (a few profiles are a few hundred
// bytes).
const maxConfigBytes = 1 << 20

func (s *state) configPath() (string, error) {
	dir, err := s.env.ConfigDir()
	if err != nil {
		return "", fmt.Errorf("find the configuration directory: %w", err)
	}
	return filepath.Join(dir, "faxhub", "config.json"), nil
}

func (s *state) loadConfig() (*configFile, error) {
	path, err := s.configPath()
	if err != nil {
		return nil, err
	}
	cf := &configFile{Profiles: map[string]Profile{}}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return cf, nil
	}
	if err != nil {
		return nil, err
	}
	if len(b) > maxConfigBytes {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, maxConfigBytes)
	}
	if err := json.Unmarshal(b, cf); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if cf.Profiles == nil {
		cf.Profiles = map[string]Profile{}
	}
	return cf, nil
}

// saveConfig writes the file atomically (a temporary file renamed over it)
// with mode 0600.
func (s *state) saveConfig(cf *configFile) error {
	path, err := s.configPath()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	b, err := json.MarshalIndent(cf, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".config-*.json")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

func (s *state) profileName() string {
	return cmp.Or(s.profile, s.env.Getenv("FAXHUB_PROFILE"), "default")
}

// resolve decides the API URL and the key of this invocation:
// --api-url, then FAXHUB_API_URL, then the profile's, then the default;
// FAXHUB_API_KEY, then the profile's key.
func (s *state) resolve() (apiURL, key string, err error) {
	cf, err := s.loadConfig()
	if err != nil {
		return "", "", err
	}
	p := cf.Profiles[s.profileName()]
	apiURL = cmp.Or(s.apiURL, s.env.Getenv("FAXHUB_API_URL"), p.APIURL, client.DefaultURL)
	key = s.env.Getenv("FAXHUB_API_KEY")
	if key == "" && (p.APIURL == "" || p.APIURL == apiURL) {
		key = p.APIKey
	}
	return apiURL, key, nil
}

// client is the SDK client of this invocation, authenticated.
func (s *state) client() (*client.Client, error) {
	if s.sdk != nil {
		return s.sdk, nil
	}
	apiURL, key, err := s.resolve()
	if err != nil {
		return nil, err
	}
	tok := client.StaticToken(key)
	if key == "" {
		cf, err := s.loadConfig()
		if err != nil {
			return nil, err
		}
		name := s.profileName()
		if p := cf.Profiles[name]; p.OAuth == nil || p.APIURL != apiURL {
			return nil, authErr{fmt.Sprintf("no credential for %s: run \"faxhub login\" (or \"faxhub login --api-key KEY\") or set FAXHUB_API_KEY", apiURL)}
		}
		tok = s.oauthTokenSource(name)
	}
	c, err := s.newClient(apiURL, tok)
	if err != nil {
		return nil, err
	}
	s.sdk = c
	return c, nil
}

func (s *state) newClient(apiURL string, tok client.TokenSource) (*client.Client, error) {
	c, err := client.New(apiURL, tok, client.WithHTTPClient(s.env.HTTP))
	if err != nil {
		return nil, usageErr{err}
	}
	return c, nil
}

// ctxOf is a command's context (cobra's, set by ExecuteContext).
func ctxOf(ctx context.Context) context.Context {
	if ctx == nil {
		return context.Background()
	}
	return ctx
}
