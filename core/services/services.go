// Package services builds faxhub's feature services from one configuration
// and one set of ports, in the order they depend on each other, and hands
// them to the adapters as one Set. It decides nothing itself: it is the
// domain's composition root (cmd/faxhub, through internal/app, is the
// process's).
package services

import "github.com/faxhub/faxhub/core"

// Set is every feature service of one process.
type Set struct {
	Core *core.Service
}

// New builds the feature services.
func New(cfg core.Config, deps core.Deps) (*Set, error) {
	c, err := core.New(cfg, deps)
	if err != nil {
		return nil, err
	}
	return &Set{Core: c}, nil
}
