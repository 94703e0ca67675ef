package client

import (
	"context"
	"fmt"
	"sync"

	"paymentlog/wire"
)

// askLeaders is one round of per-partition requests to leaders (ListOffsets,
// DeleteRecords, DescribeProducers): it groups todo, partitions of topic,
// by their leader in c's metadata and calls ask once per leader,
// concurrently, with a RequestTimeout. ask returns, for each partition
// answered, its value or its error. Values go to out and clear the
// partition's error; errors, and a failed call's, go to errs. It returns
// the partitions to try again (no leader, a failed call, an error answer),
// in todo's order of leaders.
func askLeaders[V any](ctx context.Context, c *Client, topic string, todo []int32, out map[int32]V, errs map[int32]error,
	ask func(ctx context.Context, addr string, ps []int32) (vals map[int32]V, perrs map[int32]error, err error)) ([]int32, error) {
	snap, err := c.meta.get(ctx)
	if err != nil {
		return nil, err
	}
	groups := map[string][]int32{}
	var failed []int32
	for _, p := range todo {
		ld, ok := snap.leaderOf(topic, p)
		if !ok {
			errs[p] = wire.LeaderNotAvailable.Err(fmt.Sprintf("%s/%d has no leader", topic, p))
			failed = append(failed, p)
			continue
		}
		groups[ld.addr] = append(groups[ld.addr], p)
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for addr, ps := range groups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, c.cfg.RequestTimeout)
			vals, perrs, err := ask(cctx, addr, ps)
			cancel()
			mu.Lock()
			defer mu.Unlock()
			for _, p := range ps {
				v, got := vals[p]
				switch e, bad := perrs[p]; {
				case got:
					out[p] = v
					delete(errs, p)
				case bad:
					errs[p] = e
					failed = append(failed, p)
				default:
					if err != nil {
						errs[p] = fmt.Errorf("%s: %w", addr, err)
					}
					failed = append(failed, p)
				}
			}
		}()
	}
	wg.Wait()
	return failed, nil
}
