package postgres

import (
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// TakeToken takes one token from key's bucket, which fills at perSecond up
// to burst tokens, and returns 0; or, when the bucket is empty, takes
// nothing and returns how long until it holds a token. The buckets are
// rows, so every node of a cluster draws on the same ones, at the cost of
// a statement per request. The table is unlogged: after a crash of
// PostgreSQL the buckets start full again, which errs on the generous side.
func (s *Store) TakeToken(key string, perSecond float64, burst int) (time.Duration, error) {
	ctx, cancel := opContext()
	defer cancel()
	var wait time.Duration
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// The bucket as of now: what it held plus what flowed in since,
		// up to burst. A new key starts full.
		var tokens float64
		err := tx.QueryRow(ctx, `INSERT INTO rate_buckets AS b (key, tokens, at) VALUES ($1, $2, clock_timestamp())
			ON CONFLICT (key) DO UPDATE SET
				tokens = least($2, b.tokens + extract(epoch FROM clock_timestamp() - b.at) * $3),
				at = clock_timestamp()
			RETURNING tokens`, key, float64(burst), perSecond).Scan(&tokens)
		if err != nil {
			return err
		}
		if tokens < 1 {
			wait = time.Duration((1 - tokens) / perSecond * float64(time.Second))
			return nil
		}
		_, err = tx.Exec(ctx, "UPDATE rate_buckets SET tokens = tokens - 1 WHERE key = $1", key)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("postgres: rate limit: %w", err)
	}
	return wait, nil
}

// SweepRateBuckets removes the buckets unused for longer than idle: they
// would be full again by now, as a new bucket is.
func (s *Store) SweepRateBuckets(idle time.Duration) (int, error) {
	ctx, cancel := opContext()
	defer cancel()
	tag, err := s.pool.Exec(ctx, "DELETE FROM rate_buckets WHERE at < clock_timestamp() - make_interval(secs => $1)", idle.Seconds())
	if err != nil {
		return 0, fmt.Errorf("postgres: sweep rate limits: %w", err)
	}
	return int(tag.RowsAffected()), nil
}
