// Package services builds faxhub's feature services from one configuration
// and one set of ports, in the order they depend on each other, and hands
// them to the adapters as one Set. It decides nothing itself: it is the
// domain's composition root (cmd/faxhub, through internal/app, is the
// process's).
package services

import (
	"errors"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/retention"
)

// Store is the database: the kernel's queries and every feature's (one
// implementation, core/store, on SQLite and PostgreSQL).
type Store interface {
	core.Store
	retention.Store
}

// Deps are the ports the features drive.
type Deps struct {
	core.Deps
	Store Store
	// AuthState, when the authorization server keeps its state in the same
	// database, is purged by the garbage collector too.
	AuthState retention.AuthStatePurger
}

// Config is the configuration of every feature: the kernel's (origins,
// agent mode, clock) and each feature's own section. Zero values take the
// features' defaults.
type Config struct {
	core.Config
}

// Set is every feature service of one process.
type Set struct {
	Core      *core.Service
	Retention *retention.Service

	cfg Config
}

// Config returns the effective configuration (defaults applied).
func (s *Set) Config() Config { return s.cfg }

// New builds the feature services.
func New(cfg Config, deps Deps) (*Set, error) {
	if deps.Store == nil {
		return nil, errors.New("services: Store is required")
	}
	deps.Deps.Store = deps.Store
	c, err := core.New(cfg.Config, deps.Deps)
	if err != nil {
		return nil, err
	}
	cfg.Config = c.Config()
	return &Set{
		cfg:  cfg,
		Core: c,
		Retention: retention.New(cfg.Storage, core.Clock(cfg.Now), retention.Deps{
			Store: deps.Store, Blobs: deps.Blobs, Documents: c, AuthState: deps.AuthState, Logger: deps.Logger,
		}),
	}, nil
}
