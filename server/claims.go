package server

import (
	"fmt"
	"math"
	"slices"
	"unicode/utf8"

	"github.com/salusgo/salus/protocol"
)

// Kubernetes claims. The DRA driver (salus dra-driver) reserves a claim when the
// kubelet prepares it: a share of one GPU's memory, granted by the Kubernetes
// scheduler from the device's consumable capacity. The pod's job then opens a
// session naming the claim; it goes to the claim's GPU only (core.Job.Pinned) and
// must fit in the claim's memory. Releasing the claim ends its session.
//
// Reservations are bookkeeping, not lanes: the core admits and places the job as
// any other, on the claim's GPU. They are kept in memory only: after a restart the
// driver asserts its prepared claims again (it does so every --resync).

// MaxClaims bounds the claims one daemon holds: one per pod sharing its GPUs.
const MaxClaims = 4096

// claim is one reserved Kubernetes claim.
type claim struct {
	uid, name string
	gpu       int     // the core's index of its GPU
	mib       float64 // memory granted
	session   string  // the job open under it; "" none
}

// ClaimReply is what Reserve answers.
type ClaimReply struct {
	Existed    bool    // already reserved as asked: the kubelet retried
	MemoryMiB  float64 // memory reserved
	GPUFreeMiB float64 // the GPU's memory that no claim holds, after this one
}

// ReserveClaim reserves memoryMiB (0: the whole GPU) of the GPU with physical
// index gpu for the claim uid (name is namespace/name, for messages). Reserving
// the same claim again as before is a no-op; reserving it differently, past the
// GPU's memory or past what its other claims leave is refused with code rejected,
// in words a pod's events can show.
func (s *Server) ReserveClaim(uid, name string, gpu int, memoryMiB float64) (ClaimReply, error) {
	if err := checkClaimID(uid, name); err != nil {
		return ClaimReply{}, err
	}
	label := claimLabel(uid, name)
	g := slices.IndexFunc(s.gpus, func(x GPU) bool { return x.Index == gpu })
	if g < 0 {
		return ClaimReply{}, errorf(protocol.CodeRejected, "claim %s: GPU %d is not one this daemon drives (%s): the node's ResourceSlice is stale; the driver publishes it again", label, gpu, describeGPUs(s.gpus))
	}
	capacity := s.gpus[g].CapacityMiB
	if math.IsNaN(memoryMiB) || math.IsInf(memoryMiB, 0) || memoryMiB < 0 {
		return ClaimReply{}, errorf(protocol.CodeBadRequest, "claim %s: memory %v MiB: give a finite number of MiB, at least 0 (0: the whole GPU)", label, memoryMiB)
	}
	if memoryMiB == 0 {
		memoryMiB = capacity
	}
	if memoryMiB > capacity {
		return ClaimReply{}, errorf(protocol.CodeRejected, "claim %s asks for %g MiB of GPU %d, which has %g MiB usable: ask for at most that (the device's capacity %s/memory)", label, memoryMiB, gpu, capacity, "gpu.salus.dev")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return ClaimReply{}, errorf(protocol.CodeShutdown, "claim %s: the daemon is shutting down", label)
	}
	held := s.claimedMiB(g, uid)
	if c, ok := s.claims[uid]; ok {
		if c.gpu != g || c.mib != memoryMiB {
			return ClaimReply{}, errorf(protocol.CodeRejected, "claim %s is already reserved with %g MiB of GPU %d, not %g MiB of GPU %d: release it first", label, c.mib, s.gpus[c.gpu].Index, memoryMiB, gpu)
		}
		return ClaimReply{Existed: true, MemoryMiB: c.mib, GPUFreeMiB: capacity - held - c.mib}, nil
	}
	if held+memoryMiB > capacity {
		return ClaimReply{}, errorf(protocol.CodeRejected, "claim %s asks for %g MiB of GPU %d, but its other claims hold %g of its %g MiB: the allocation is stale; delete the pod so that the scheduler places it again", label, memoryMiB, gpu, held, capacity)
	}
	if len(s.claims) >= MaxClaims {
		return ClaimReply{}, errorf(protocol.CodeRejected, "claim %s: the daemon holds %d claims, its most: release some", label, MaxClaims)
	}
	c := &claim{uid: uid, name: name, gpu: g, mib: memoryMiB}
	s.claims[uid] = c
	for _, ss := range s.sessions { // one resumed after a restart, before its claim came back
		if ss.claim == uid {
			c.session = ss.id
		}
	}
	s.logger.Info("claim reserved", "claim", uid, "name", name, "gpu", gpu, "memory_mib", memoryMiB)
	return ClaimReply{MemoryMiB: memoryMiB, GPUFreeMiB: capacity - held - memoryMiB}, nil
}

// claimedMiB is the memory of GPU g (core index) that claims other than uid hold.
func (s *Server) claimedMiB(g int, uid string) float64 {
	var sum float64
	for _, c := range s.claims {
		if c.gpu == g && c.uid != uid {
			sum += c.mib
		}
	}
	return sum
}

// ReleaseClaim drops the claim's reservation and ends the session open under it,
// if any (code evicted, reason "claim released"). An unknown claim is no error:
// the kubelet may unprepare twice. It returns whether the claim was reserved and
// the session it ended.
func (s *Server) ReleaseClaim(uid string) (existed bool, session string, err error) {
	if err := checkClaimID(uid, ""); err != nil {
		return false, "", err
	}
	s.mu.Lock()
	c, ok := s.claims[uid]
	if !ok {
		s.mu.Unlock()
		return false, "", nil
	}
	delete(s.claims, uid)
	session = c.session
	s.mu.Unlock()
	s.logger.Info("claim released", "claim", uid, "name", c.name, "session", session)
	if session != "" {
		if _, err := s.Evict(session, "the DRA driver", "claim "+claimLabel(uid, c.name)+" released: its pod is gone"); err != nil && CodeOf(err) != protocol.CodeUnknown {
			return true, "", err
		}
	}
	return true, session, nil
}

// linkClaim records that ss, resumed after a restart, runs under claim uid: the
// claim's release ends it, whether the driver asserted the claim before the
// resume or does so after. Under s.mu.
func (s *Server) linkClaim(ss *Session, uid string) {
	if uid == "" {
		return
	}
	ss.claim = uid
	if c := s.claims[uid]; c != nil && c.session == "" {
		c.session = ss.id
	}
}

// claimFor checks an open that names a claim, under s.mu: the claim must be
// reserved, have no other session open, and hold the job's memory. It returns
// the GPUs the job is pinned to and the most its own lane may take, the claim's
// memory (none and 0 without a claim).
func (s *Server) claimFor(req OpenRequest) ([]int, float64, error) {
	if req.Claim == "" {
		return nil, 0, nil
	}
	if err := checkClaimID(req.Claim, ""); err != nil {
		return nil, 0, err
	}
	c, ok := s.claims[req.Claim]
	if !ok {
		return nil, 0, errorf(protocol.CodeRejected, "open %q: claim %s is not reserved on this daemon: the pod runs on another node, or its claim was released; open without a claim outside Kubernetes", req.Job, req.Claim)
	}
	if c.session != "" {
		return nil, 0, errorf(protocol.CodeRejected, "open %q: claim %s already has session %q open: one session at a time per claim; close it first", req.Job, claimLabel(c.uid, c.name), c.session)
	}
	if req.GPUs > 1 {
		return nil, 0, errorf(protocol.CodeRejected, "open %q: claim %s is one GPU, and the job asks for %d at once: a gang under Kubernetes is not supported yet", req.Job, claimLabel(c.uid, c.name), req.GPUs)
	}
	if need := req.PersistentMiB + req.EphemeralMiB; need > c.mib {
		return nil, 0, errorf(protocol.CodeRejected, "open %q: the job needs %g MiB (persistent %g + ephemeral %g), more than the %g MiB of claim %s: ask for more memory in the claim, or declare less", req.Job, need, req.PersistentMiB, req.EphemeralMiB, c.mib, claimLabel(c.uid, c.name))
	}
	return []int{c.gpu}, c.mib, nil
}

// checkClaimID refuses what cannot be a claim's UID or name: Kubernetes UIDs are
// 36 characters, names (namespace/name) at most 63+1+253.
func checkClaimID(uid, name string) error {
	switch {
	case uid == "":
		return errorf(protocol.CodeBadRequest, "claim: field claim (the claim's UID) is empty")
	case len(uid) > 128 || !utf8.ValidString(uid):
		return errorf(protocol.CodeBadRequest, "claim: field claim is not a Kubernetes UID (%d bytes): give the claim's metadata.uid", len(uid))
	case len(name) > 320 || !utf8.ValidString(name):
		return errorf(protocol.CodeBadRequest, "claim %s: field name is not namespace/name (%d bytes)", uid, len(name))
	}
	return nil
}

// claimLabel names a claim in messages: "ns/name (uid)", or its UID alone.
func claimLabel(uid, name string) string {
	if name == "" {
		return uid
	}
	return fmt.Sprintf("%s (%s)", name, uid)
}
