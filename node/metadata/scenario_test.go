package metadata

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"paymentlog/node/metadata/scripttest"
	"paymentlog/wire"
)

// TestScenarios runs testdata/scenarios/*.txt: each command runs one
// controller decision against the current image and applies its records as
// the next entry. Commands:
//
//	register id=N [inc=N] [addr=A] [ctrl]   DecideRegister (inc defaults to 1)
//	heartbeat id=N [inc=N] [offset=N] [shutdown] [favored=N,M|none]
//	                                        DecideHeartbeat (inc: current, offset: image offset;
//	                                        favored: HeartbeatEvent.Favored, as for fence)
//	fence id=N [inc=N] [favored=N,M|none]   DecideFence (session expired); with favored, DecideFenceFavoring
//	fence id=N [inc=N]                      DecideFence (session expired)
//	create name=T partitions=N rf=N [min-isr=N] [seed=N] [id=ID] [unclean]
//	                                        (id defaults to id-T)
//	delete name=T
//	alter id=N topic=T p=N isr=1,2 [inc=N] [epoch=N] [pepoch=N] [tid=ID] [member-inc=2:5,3:0]
//	                                        DecideAlterPartition (epochs and topic id default to current;
//	                                        members' incarnations to the registered ones)
//	preferred                               DecidePreferredLeaders
//	add-partitions name=T count=N [seed=N]  DecideCreatePartitions
//	reapply                                 apply the last decision's records again (a stale or
//	                                        duplicated entry): prints the rejection
//	pids id=N [n=N]                         DecideProducerIDs
//	configs topic=T [set=k=v,k=v] [del=k,k] DecideAlterConfigs
//	topic name=T                            the topic's min ISR and configs
//	show                                    the image
func TestScenarios(t *testing.T) {
	for _, f := range scripttest.Files(t, "testdata/scenarios") {
		t.Run(f, func(t *testing.T) {
			s := &scenario{t: t, img: EmptyImage()}
			scripttest.Run(t, f, s.exec)
		})
	}
}

type scenario struct {
	t   *testing.T
	img *Image
	// last is the records of the last decision applied.
	last []Record
}

// favored reads favored=N,M (the brokers the controller favors: those
// keeping up with the metadata log) or favored=none (none).
func (s *scenario) favored(c scripttest.Cmd) func(int32) bool {
	var favored []int32
	if c.Args["favored"] != "none" {
		favored = c.IDs(s.t, "favored")
	}
	return func(x int32) bool { return slices.Contains(favored, x) }
}

func (s *scenario) apply(recs []Record, err error) string {
	t := s.t
	t.Helper()
	if err != nil {
		var we *wire.Error
		if errors.As(err, &we) {
			return fmt.Sprintf("error: %v", we)
		}
		t.Fatalf("decision returned a non-wire error: %v", err)
	}
	if len(recs) == 0 {
		return "no records"
	}
	// Round-trip through the codec, as the log would.
	data, err := EncodeEntry(recs...)
	if err != nil {
		t.Fatal(err)
	}
	dec, err := DecodeEntry(data)
	if err != nil {
		t.Fatal(err)
	}
	next, _, err := s.img.ApplyEntry(s.img.Offset()+1, dec)
	if err != nil {
		t.Fatalf("decision produced rejected records: %v", err)
	}
	checkInvariants(t, next)
	s.img = next
	s.last = dec
	var out []string
	for _, r := range recs {
		out = append(out, FormatRecord(r))
	}
	return strings.Join(out, "\n")
}

func (s *scenario) curInc(id int32) int64 {
	b, _ := s.img.Broker(id)
	return b.Incarnation
}

func (s *scenario) exec(t *testing.T, c scripttest.Cmd) string {
	switch c.Name {
	case "register":
		id := int32(c.Int(t, "id", 0))
		addr := c.Args["addr"]
		if addr == "" {
			addr = fmt.Sprintf("127.0.0.1:71%02d", id)
		}
		var empty []wire.PartitionRef
		for _, tp := range strings.Split(c.Args["empty"], ",") {
			if tp == "" {
				continue
			}
			topic, part, _ := strings.Cut(tp, ":")
			tt, _ := s.img.Topic(topic)
			n, _ := strconv.Atoi(part)
			empty = append(empty, wire.PartitionRef{TopicID: tt.ID, Partition: int32(n)})
		}
		return s.apply(DecideRegister(s.img, RegisterEvent{ID: id, Addr: addr,
			Incarnation: c.Int(t, "inc", 1), ControllerEligible: c.Flags["ctrl"], NewStorage: c.Flags["new"], UnsyncedLogs: c.Flags["unsynced"],
			EmptyReplicas: empty, MetadataVersion: int32(c.Int(t, "mv", 0))}))
	case "heartbeat":
		id := int32(c.Int(t, "id", 0))
		ev := HeartbeatEvent{ID: id, Incarnation: c.Int(t, "inc", s.curInc(id)),
			MetadataOffset: c.Int(t, "offset", int64(s.img.Offset())), WantShutdown: c.Flags["shutdown"]}
		if c.Has("favored") {
			ev.Favored = s.favored(c)
		}
		out := s.apply(DecideHeartbeat(s.img, ev))
		r := HeartbeatResponse(s.img, ev)
		return out + fmt.Sprintf("\nreply: err=%v fenced=%t shutdown_ready=%t", r.Err, r.Fenced, r.ShutdownReady)
	case "up":
		var out []string
		for _, id := range c.IDs(t, "ids") {
			out = append(out, s.apply(DecideRegister(s.img, RegisterEvent{ID: id,
				Addr: fmt.Sprintf("127.0.0.1:71%02d", id), Incarnation: 1, MetadataVersion: int32(c.Int(t, "mv", 0))})))
			out = append(out, s.apply(DecideHeartbeat(s.img, HeartbeatEvent{ID: id, Incarnation: 1,
				MetadataOffset: int64(s.img.Offset())})))
		}
		return strings.Join(out, "\n")
	case "fence":
		id := int32(c.Int(t, "id", 0))
		inc := c.Int(t, "inc", s.curInc(id))
		if !c.Has("favored") {
			return s.apply(DecideFence(s.img, id, inc), nil)
		}
		return s.apply(DecideFenceFavoring(s.img, id, inc, s.favored(c)), nil)
	case "create":
		var cfg map[string]string
		if c.Flags["unclean"] {
			cfg = map[string]string{ConfigUncleanLeaderElection: "true"}
		}
		tid := c.Args["id"]
		if tid == "" {
			tid = "id-" + c.Args["name"]
		}
		return s.apply(DecideCreateTopic(s.img, CreateTopicEvent{Name: c.Args["name"], ID: tid,
			Partitions: int32(c.Int(t, "partitions", 1)), RF: int32(c.Int(t, "rf", 1)),
			MinISR: int32(c.Int(t, "min-isr", 0)), Configs: cfg, Seed: uint64(c.Int(t, "seed", 0))}))
	case "delete":
		return s.apply(DecideDeleteTopic(s.img, c.Args["name"]))
	case "alter":
		id := int32(c.Int(t, "id", 0))
		topic, p := c.Args["topic"], int32(c.Int(t, "p", 0))
		cur, _ := s.img.Partition(topic, p)
		tid := cur.TopicID
		if c.Has("tid") {
			tid = c.Args["tid"]
		}
		req := wire.AlterPartitionRequest{BrokerID: id, Incarnation: c.Int(t, "inc", s.curInc(id)),
			Topic: topic, TopicID: tid, Partition: p, LeaderEpoch: int32(c.Int(t, "epoch", int64(cur.LeaderEpoch))),
			PartitionEpoch: int32(c.Int(t, "pepoch", int64(cur.PartitionEpoch))), NewISR: c.IDs(t, "isr")}
		req.Members = members(t, s.img, req.NewISR, c.Args["member-inc"])
		out := s.apply(DecideAlterPartition(s.img, req))
		if strings.HasPrefix(out, "error") {
			return out
		}
		r := AlterPartitionResponse(s.img, req)
		return out + fmt.Sprintf("\nreply: isr=%s epoch=%d pepoch=%d", ids(r.ISR), r.LeaderEpoch, r.PartitionEpoch)
	case "preferred":
		return s.apply(DecidePreferredLeaders(s.img), nil)
	case "add-partitions", "reapply":
		return s.execPartitions(t, c)
	case "pids":
		return s.apply(DecideProducerIDs(s.img, int32(c.Int(t, "id", 0)), c.Int(t, "n", DefaultProducerIDBlock)))
	case "configs":
		return s.apply(DecideAlterConfigs(s.img, alterConfigsEvent(c)))
	case "rf":
		return s.apply(DecideReplicationFactor(s.img, ReplicationFactorEvent{Topic: c.Args["name"], RF: int32(c.Int(t, "rf", 0))}))
	case "cluster-configs":
		ev := AlterClusterConfigsEvent{}
		if kv := c.Args["set"]; kv != "" {
			k, v, _ := strings.Cut(kv, "=")
			ev.Set = map[string]string{k: v}
		}
		if k := c.Args["del"]; k != "" {
			ev.Delete = []string{k}
		}
		return s.apply(DecideAlterClusterConfigs(s.img, ev))
	case "unregister":
		return s.apply(DecideUnregisterBroker(s.img, UnregisterBrokerEvent{ID: int32(c.Int(t, "id", 0))}))
	case "brokers":
		var out []string
		for _, b := range s.img.Brokers() {
			out = append(out, fmt.Sprintf("%d inc=%d fenced=%t mv=%d", b.ID, b.Incarnation, b.Fenced, b.MetadataVersion))
		}
		return strings.Join(out, "\n") + fmt.Sprintf("\nversion %d", s.img.Version())
	case "topic":
		return formatTopic(s.img, c.Args["name"])
	case "show":
		return s.img.String()
	}
	t.Fatalf("line %d: unknown command %q", c.Line, c.Name)
	return ""
}

// checkInvariants verifies what every image produced by decisions must hold.
func checkInvariants(t *testing.T, img *Image) {
	t.Helper()
	img.EachPartition(func(p PartitionState) bool {
		if why := validatePartition(p); why != "" {
			t.Fatalf("invariant: %s: %s", p, why)
		}
		for _, r := range p.Replicas {
			if _, ok := img.Broker(r); !ok {
				t.Fatalf("invariant: %s has a replica on unregistered broker %d", p, r)
			}
		}
		if p.Leader != NoLeader {
			b, ok := img.Broker(p.Leader)
			if !ok || b.Fenced {
				t.Fatalf("invariant: %s led by fenced or unknown broker", p)
			}
		}
		if len(p.ISR) > 1 {
			for _, r := range p.ISR {
				if b, ok := img.Broker(r); !ok || b.Fenced {
					t.Fatalf("invariant: %s has fenced broker %d in a multi-member ISR", p, r)
				}
			}
		}
		return true
	})
	for _, g := range img.Groups() {
		for k, o := range g.Offsets {
			rec := GroupOffsetRecord{Topic: k.Topic, TopicID: o.TopicID, Partition: k.Partition, Offset: o.Offset,
				LeaderEpoch: o.LeaderEpoch, Metadata: o.Metadata}
			if why := checkGroupOffsetIn(img.topics, rec); why != "" {
				t.Fatalf("invariant: group %s: %s", g.Name, why)
			}
		}
	}
	if acls := img.ACLs(); acls != nil {
		if acls.Len() == 0 || acls.Len() > wire.MaxACLs || img.Version() < 5 {
			t.Fatalf("invariant: %d ACL bindings (nil when none) at metadata version %d", acls.Len(), img.Version())
		}
		for _, b := range acls.Bindings() {
			if why := wire.CheckACLBinding(b); why != "" {
				t.Fatalf("invariant: ACL binding %s: %s", b, why)
			}
		}
	}
	checkQuotaInvariants(t, img)
}

// checkQuotaInvariants verifies the image's client quotas: nil when none,
// at most wire.MaxQuotaEntities entities, only at metadata version 6, each
// entity valid with at least one valid value, and ClientQuotas listing
// them, the default first.
func checkQuotaInvariants(t *testing.T, img *Image) {
	t.Helper()
	if img.quotas == nil {
		if img.ClientQuotas() != nil {
			t.Fatal("invariant: no quotas, but ClientQuotas lists some")
		}
		return
	}
	if n := len(img.quotas); n == 0 || n > wire.MaxQuotaEntities || img.Version() < 6 {
		t.Fatalf("invariant: %d quota entities (nil when none) at metadata version %d", n, img.Version())
	}
	for p, vals := range img.quotas {
		if len(vals) == 0 {
			t.Fatalf("invariant: quota entity %q without a value", p)
		}
		if why := wire.CheckQuotaEntry(wire.QuotaEntry{Principal: p, Set: vals}); why != "" {
			t.Fatalf("invariant: quota of %q: %s", p, why)
		}
	}
	qs := img.ClientQuotas()
	for i, q := range qs {
		if i > 0 && q.Principal <= qs[i-1].Principal {
			t.Fatalf("invariant: ClientQuotas not sorted at %q", q.Principal)
		}
	}
	if len(qs) != len(img.quotas) {
		t.Fatalf("invariant: ClientQuotas lists %d of %d entities", len(qs), len(img.quotas))
	}
}

// members names every id of isr with its registered incarnation, except
// where override ("2:5,3:0") says otherwise.
func members(t *testing.T, img *Image, isr []int32, override string) []wire.ISRMember {
	t.Helper()
	set := map[int32]int64{}
	for _, id := range isr {
		b, _ := img.Broker(id)
		set[id] = b.Incarnation
	}
	if override != "" {
		for _, kv := range strings.Split(override, ",") {
			var id int32
			var inc int64
			if _, err := fmt.Sscanf(kv, "%d:%d", &id, &inc); err != nil {
				t.Fatalf("member-inc %q: %v", kv, err)
			}
			set[id] = inc
		}
	}
	var out []wire.ISRMember
	for _, id := range isr {
		out = append(out, wire.ISRMember{BrokerID: id, Incarnation: set[id]})
	}
	return out
}
