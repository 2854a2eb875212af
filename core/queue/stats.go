package queue

import (
	"context"
	"fmt"
	"time"

	"github.com/faxhub/faxhub/core/faxes"
)

var _ faxes.QueueStats = (*Queue)(nil)

// unfinishedStates are River's states of a job that has not ended. The
// filter on state is the leading column of River's fetch index
// (river_job_prioritized_fetching_index), so counting them never reads the
// completed jobs kept for CompletedJobRetentionPeriod.
const unfinishedStates = `('available', 'pending', 'retryable', 'running', 'scheduled')`

// The age of a state's oldest job: since it became due (available; River
// inserts some available jobs with a scheduled_at just ahead, those count
// as not yet waiting) or since it started (running); NULL, read as zero,
// for other states.
const (
	jobStatsPostgres = `SELECT state, kind, count(*),
		coalesce(extract(epoch FROM now() - min(CASE
			WHEN state = 'available' AND scheduled_at <= now() THEN scheduled_at
			WHEN state = 'running' THEN attempted_at END))::float8, 0)
		FROM river_job WHERE state IN ` + unfinishedStates + ` GROUP BY state, kind`
	jobStatsSQLite = `SELECT state, kind, count(*),
		coalesce((julianday('now') - min(CASE
			WHEN state = 'available' AND julianday(scheduled_at) <= julianday('now') THEN julianday(scheduled_at)
			WHEN state = 'running' THEN julianday(attempted_at) END)) * 86400.0, 0)
		FROM river_job WHERE state IN ` + unfinishedStates + ` GROUP BY state, kind`
)

// JobStats counts the unfinished jobs per state and kind, with the age of
// the oldest waiting (available) and running job.
func (q *Queue) JobStats(ctx context.Context) ([]faxes.JobCount, error) {
	query := jobStatsPostgres
	if q.dialect == DialectSQLite {
		query = jobStatsSQLite
	}
	rows, err := q.statsDB.QueryContext(ctx, query)
	if err != nil {
		return nil, fmt.Errorf("count jobs: %w", err)
	}
	defer rows.Close()
	var out []faxes.JobCount
	for rows.Next() {
		var (
			c   faxes.JobCount
			age float64
		)
		if err := rows.Scan(&c.State, &c.Kind, &c.Count, &age); err != nil {
			return nil, fmt.Errorf("count jobs: %w", err)
		}
		c.OldestAge = time.Duration(max(age, 0) * float64(time.Second))
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("count jobs: %w", err)
	}
	return out, nil
}
