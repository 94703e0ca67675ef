package client

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"paymentlog/wire"
)

// Special offsets for Seek and ListOffsets.
const (
	SeekBeginning = wire.Earliest // the log start offset
	SeekEnd       = wire.Latest   // the high watermark: the next offset to be committed
)

// listOffsets asks each partition's leader for an offset (ts is Earliest,
// Latest or a timestamp in unix ms). With retry it refreshes metadata and
// retries retriable failures until ctx ends; without, partitions that fail
// once (after one refresh) are left out of the result and their error is
// returned in errs.
func (c *Client) listOffsets(ctx context.Context, topic string, parts []int32, ts int64, retry bool) (map[int32]int64, map[int32]error, error) {
	out := make(map[int32]int64, len(parts))
	errs := map[int32]error{}
	todo := append([]int32(nil), parts...)
	backoff := 25 * time.Millisecond
	for attempt := 0; len(todo) > 0; attempt++ {
		failed, err := askLeaders(ctx, c, topic, todo, out, errs, func(cctx context.Context, addr string, ps []int32) (map[int32]int64, map[int32]error, error) {
			req := &wire.ListOffsetsRequest{Topic: topic}
			for _, p := range ps {
				req.Parts = append(req.Parts, wire.ListOffsetsPartition{Partition: p, Timestamp: ts})
			}
			var resp wire.ListOffsetsResponse
			if err := c.call(cctx, addr, wire.TypeListOffsets, req, &resp); err != nil {
				return nil, nil, err
			}
			vals, perrs := map[int32]int64{}, map[int32]error{}
			for _, pr := range resp.Parts {
				if pr.Err != wire.None {
					perrs[pr.Partition] = pr.Err.Err(fmt.Sprintf("%s/%d at %s", topic, pr.Partition, addr))
					continue
				}
				vals[pr.Partition] = pr.Offset
			}
			return vals, perrs, nil
		})
		if err != nil {
			return out, errs, err
		}
		if len(failed) == 0 {
			break
		}
		if !retry && attempt >= 1 {
			break
		}
		for _, p := range failed {
			if e := errs[p]; e != nil {
				if code := ErrorCode(e); code != wire.Unknown && !code.Retriable() {
					return out, errs, e
				}
			}
		}
		sort.Slice(failed, func(i, j int) bool { return failed[i] < failed[j] })
		todo = failed
		// OffsetNotAvailable comes from the right leader, whose HW has not
		// caught up yet (KIP-207): only a wait helps. Anything else may
		// mean the metadata is stale.
		stale := slices.ContainsFunc(failed, func(p int32) bool { return ErrorCode(errs[p]) != wire.OffsetNotAvailable })
		if stale {
			if err := c.meta.refresh(ctx); err != nil && ctx.Err() != nil {
				return out, errs, firstErr(errs, failed, ctx.Err())
			}
		}
		if attempt > 0 || !stale {
			if err := sleepCtx(ctx, backoff); err != nil {
				return out, errs, firstErr(errs, failed, err)
			}
			backoff = min(2*backoff, time.Second)
		}
	}
	return out, errs, nil
}

func firstErr(errs map[int32]error, parts []int32, fallback error) error {
	for _, p := range parts {
		if e := errs[p]; e != nil {
			return fmt.Errorf("%w (last error: %v)", fallback, e)
		}
	}
	return fallback
}
