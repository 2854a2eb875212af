package a2a

import (
	"context"
	"encoding/json"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/tasks"
)

// Push notification configs (1.0 CreateTaskPushNotificationConfig, Get…,
// List…, Delete…; 0.3 tasks/pushNotificationConfig/{set,get,list,delete};
// configuration.taskPushNotificationConfig on SendMessage): core keeps
// them (core/tasks, push.go) and the webhook engine delivers them.
// docs/a2a.md#push-notifications.

// PushBody renders a task as the body of a push notification: an A2A 1.0
// StreamResponse holding the whole task once it is final (with its
// artifacts), else a statusUpdate with its new status. It is
// services.Deps.A2APush.
func PushBody(v *tasks.View) ([]byte, error) {
	t := renderTask(v)
	if v.State.Terminal() {
		return json.Marshal(a2a.StreamResponse{Event: t})
	}
	return json.Marshal(a2a.StreamResponse{Event: &a2a.TaskStatusUpdateEvent{TaskID: t.ID, ContextID: t.ContextID, Status: t.Status}})
}

// pushRequest reads an A2A config for core.
func pushRequest(taskID a2a.TaskID, c *a2a.PushConfig) tasks.PushConfigRequest {
	r := tasks.PushConfigRequest{TaskID: string(taskID), ID: c.ID, URL: c.URL, Token: c.Token}
	if c.Auth != nil {
		r.AuthScheme, r.Credentials = c.Auth.Scheme, c.Auth.Credentials
	}
	return r
}

// renderPushConfig shows a config back without its secrets: the token and
// the credentials are never returned (the client has them); a set token
// reads "********", so a client can tell that one is set.
func renderPushConfig(v *tasks.PushConfigView) *a2a.PushConfig {
	c := &a2a.PushConfig{TaskID: a2a.TaskID(v.TaskID), ID: v.ID, URL: v.URL}
	if v.HasToken {
		c.Token = redacted
	}
	if v.AuthScheme != "" {
		c.Auth = &a2a.PushAuthInfo{Scheme: v.AuthScheme}
		if v.HasCredentials {
			c.Auth.Credentials = redacted
		}
	}
	return c
}

// redacted stands for a secret that is set but never shown.
const redacted = "********"

// pushFail maps a core error of a push config call: a missing task is
// TaskNotFound, a missing config of an existing task bad params.
func (rh *requestHandler) pushFail(ctx context.Context, what string, err error) error {
	if e := core.AsError(err); e.Code == tasks.CodePushConfigNotFound {
		return rh.fail(ctx, what, err, targetSkill)
	}
	return rh.fail(ctx, what, err, targetTask)
}

// CreateTaskPushConfig sets a config on one of the caller's tasks (0.3
// tasks/pushNotificationConfig/set).
func (rh *requestHandler) CreateTaskPushConfig(ctx context.Context, req *a2a.PushConfig) (*a2a.PushConfig, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if req == nil {
		return nil, invalidParams("the request needs a push notification config", map[string]any{"field": "config"})
	}
	v, err := rh.h.svc.Tasks.SetPushConfig(ctx, p, pushRequest(req.TaskID, req))
	if err != nil {
		return nil, rh.pushFail(ctx, "set push config", err)
	}
	return renderPushConfig(v), nil
}

// GetTaskPushConfig reads one config (id empty: the task's unnamed one).
func (rh *requestHandler) GetTaskPushConfig(ctx context.Context, req *a2a.GetTaskPushConfigRequest) (*a2a.PushConfig, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	v, err := rh.h.svc.Tasks.GetPushConfig(ctx, p, string(req.TaskID), req.ID)
	if err != nil {
		return nil, rh.pushFail(ctx, "get push config", err)
	}
	return renderPushConfig(v), nil
}

// ListTaskPushConfigs lists a task's configs (a few at most: one page).
func (rh *requestHandler) ListTaskPushConfigs(ctx context.Context, req *a2a.ListTaskPushConfigRequest) (*a2a.ListTaskPushConfigResponse, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	list, err := rh.h.svc.Tasks.ListPushConfigs(ctx, p, string(req.TaskID))
	if err != nil {
		return nil, rh.pushFail(ctx, "list push configs", err)
	}
	out := &a2a.ListTaskPushConfigResponse{Configs: make([]*a2a.PushConfig, 0, len(list))}
	for i := range list {
		out.Configs = append(out.Configs, renderPushConfig(&list[i]))
	}
	return out, nil
}

// DeleteTaskPushConfig deletes one config.
func (rh *requestHandler) DeleteTaskPushConfig(ctx context.Context, req *a2a.DeleteTaskPushConfigRequest) error {
	p, err := principal(ctx)
	if err != nil {
		return err
	}
	if err := rh.h.svc.Tasks.DeletePushConfig(ctx, p, string(req.TaskID), req.ID); err != nil {
		return rh.pushFail(ctx, "delete push config", err)
	}
	return nil
}
