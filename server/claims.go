package server

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/protocol"
)

// Kubernetes claims. The DRA driver (salus dra-driver) reserves a claim when the
// kubelet prepares it: a share of one GPU's memory, granted by the Kubernetes
// scheduler from the device's consumable capacity. The pod's job then opens a
// session naming the claim; it goes to the claim's GPU only (core.Job.Pinned) and
// must fit in the claim's memory. Releasing the claim ends its session.
//
// A claim is used only by the pod it was prepared for: each has a secret (the
// driver's, or one the daemon makes at reserve), which the driver puts in that
// pod's container beside SALUS_CLAIM (SALUS_CLAIM_SECRET), and which an open
// naming the claim must present; without it, or with another, the open is
// refused with code claim_denied and the claim's own session is untouched. The
// daemon keeps only the secret's SHA-256.
//
// A claim also carries the pod's intent, which binds the session that runs
// under it whatever its client sends (ClaimIntent): its declared GPU time, its
// priority and its share of the GPU's time (under wfair and floor). The daemon
// logs where each came from (declared_from=claim).
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
	secret    string  // the SHA-256 (hex) of its secret
	intent    ClaimIntent
	share     float64 // the share its session is scheduled with (ClaimIntent.Share, or its memory's)
}

// ClaimIntent is what a claim declares of the job that runs under it. It binds
// that job's session: the daemon uses the claim's values, not the client's.
type ClaimIntent struct {
	// DeclaredS is the job's declared GPU time, seconds (srtf's); 0: the claim
	// declares none, and the client's declared_s is used.
	DeclaredS float64
	// Priority, when not nil, is the job's priority (smaller runs first); nil:
	// the client's.
	Priority *int
	// Share is the job's share of the GPU's time under wfair and floor, from
	// core.MinShare to core.MaxShare (relative); 0: the claim's share of the
	// GPU's memory (its memory / the GPU's capacity), so that a GPU's claims'
	// shares sum to at most 1.
	Share float64
}

// ClaimSpec is a claim to reserve (Server.Reserve).
type ClaimSpec struct {
	UID, Name string  // the claim's UID; namespace/name, for messages
	GPU       int     // the GPU's physical index
	MemoryMiB float64 // 0: the whole GPU
	// Secret is what the claim's opens must present; "": the daemon makes one.
	Secret string
	Intent ClaimIntent
}

// ClaimInfo is one reserved claim, as ListClaims shows it.
type ClaimInfo struct {
	UID, Name string
	GPU       int // physical index
	MemoryMiB float64
	Intent    ClaimIntent
	Share     float64 // as scheduled
	Session   string  // the session open under it; "" none
}

// ClaimReply is what Reserve answers.
type ClaimReply struct {
	Existed    bool    // already reserved as asked: the kubelet retried
	MemoryMiB  float64 // memory reserved
	GPUFreeMiB float64 // the GPU's memory that no claim holds, after this one
	// Secret is the secret the daemon made for a new claim reserved without one;
	// "" otherwise.
	Secret string
	// Share is the share the claim's session is scheduled with.
	Share float64
}

// ReserveClaim reserves memoryMiB (0: the whole GPU) of the GPU with physical
// index gpu for the claim uid (name is namespace/name, for messages), with
// secret, which the claim's opens must present; "" makes one, returned in the
// reply. Reserving the same claim again as before (with the same secret, or
// none) is a no-op; reserving it differently, with another secret, past the
// GPU's memory or past what its other claims leave is refused with code
// rejected, in words a pod's events can show. The claim declares no intent
// (ClaimIntent's zero): Reserve is the call with one.
func (s *Server) ReserveClaim(uid, name string, gpu int, memoryMiB float64, secret string) (ClaimReply, error) {
	return s.Reserve(ClaimSpec{UID: uid, Name: name, GPU: gpu, MemoryMiB: memoryMiB, Secret: secret})
}

// Reserve reserves a claim as ReserveClaim does, with its intent, which binds
// the session that runs under it. Reserving it again with another intent is
// refused, as with another GPU or memory.
func (s *Server) Reserve(spec ClaimSpec) (ClaimReply, error) {
	uid, name, gpu, memoryMiB, secret, in := spec.UID, spec.Name, spec.GPU, spec.MemoryMiB, spec.Secret, spec.Intent
	if err := checkClaimID(uid, name); err != nil {
		return ClaimReply{}, err
	}
	label := claimLabel(uid, name)
	if err := checkClaimSecret(label, secret); err != nil {
		return ClaimReply{}, err
	}
	if err := checkIntent(label, in); err != nil {
		return ClaimReply{}, err
	}
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
	share := in.Share
	if share == 0 && capacity > 0 {
		share = max(memoryMiB/capacity, core.MinShare)
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
		if !sameIntent(c.intent, in) {
			return ClaimReply{}, errorf(protocol.CodeRejected, "claim %s is already reserved with intent %s, not %s: release it first", label, describeIntent(c.intent), describeIntent(in))
		}
		if secret != "" && !matches(secret, c.secret) {
			return ClaimReply{}, errorf(protocol.CodeRejected, "claim %s is already reserved with another secret: reserve it again with the secret it was reserved with (the driver keeps it in its record of the claim), or release it first", label)
		}
		return ClaimReply{Existed: true, MemoryMiB: c.mib, GPUFreeMiB: capacity - held - c.mib, Share: c.share}, nil
	}
	if held+memoryMiB > capacity {
		return ClaimReply{}, errorf(protocol.CodeRejected, "claim %s asks for %g MiB of GPU %d, but its other claims hold %g of its %g MiB: the allocation is stale; delete the pod so that the scheduler places it again", label, memoryMiB, gpu, held, capacity)
	}
	if len(s.claims) >= MaxClaims {
		return ClaimReply{}, errorf(protocol.CodeRejected, "claim %s: the daemon holds %d claims, its most: release some", label, MaxClaims)
	}
	made := ""
	if secret == "" {
		secret = NewToken()
		made = secret
	}
	c := &claim{uid: uid, name: name, gpu: g, mib: memoryMiB, secret: hashSecret(secret), intent: in, share: share}
	s.claims[uid] = c
	for _, ss := range s.sessions { // one resumed after a restart, before its claim came back
		if ss.claim != uid {
			continue
		}
		if c.session == "" && same(ss.claimHash, c.secret) {
			c.session, ss.claimHash = ss.id, ""
			continue
		}
		s.logger.Warn("claim reserved: a session resumed naming it without its secret does not run under it", "claim", uid, "name", name, "job", ss.id)
		ss.claim, ss.claimHash = "", ""
	}
	s.logger.Info("claim reserved", "claim", uid, "name", name, "gpu", gpu, "memory_mib", memoryMiB, "secret_made", made != "",
		"intent", describeIntent(in), "share", share)
	return ClaimReply{MemoryMiB: memoryMiB, GPUFreeMiB: capacity - held - memoryMiB, Secret: made, Share: share}, nil
}

// checkIntent refuses an intent the core could not schedule by.
func checkIntent(label string, in ClaimIntent) error {
	if _, err := core.Seconds(in.DeclaredS); err != nil {
		return errorf(protocol.CodeBadRequest, "claim %s: field declared_s: %v", label, err)
	}
	if p := in.Priority; p != nil && (*p < math.MinInt32 || *p > math.MaxInt32) {
		return errorf(protocol.CodeBadRequest, "claim %s: field priority is %d: give a whole number within 32 bits, or leave it out", label, *p)
	}
	if err := core.CheckShare("claim "+label+": field share", in.Share); err != nil {
		return errorf(protocol.CodeBadRequest, "%v", err)
	}
	return nil
}

func sameIntent(a, b ClaimIntent) bool {
	return a.DeclaredS == b.DeclaredS && a.Share == b.Share && (a.Priority == nil) == (b.Priority == nil) &&
		(a.Priority == nil || *a.Priority == *b.Priority)
}

// describeIntent is an intent in words, for messages and the log.
func describeIntent(in ClaimIntent) string {
	var parts []string
	if in.DeclaredS > 0 {
		parts = append(parts, fmt.Sprintf("declared %g s", in.DeclaredS))
	}
	if in.Priority != nil {
		parts = append(parts, fmt.Sprintf("priority %d", *in.Priority))
	}
	if in.Share > 0 {
		parts = append(parts, fmt.Sprintf("share %g", in.Share))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// ListClaims lists the reserved claims, by GPU then UID.
func (s *Server) ListClaims() []ClaimInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]ClaimInfo, 0, len(s.claims))
	for _, c := range s.claims {
		out = append(out, ClaimInfo{UID: c.uid, Name: c.name, GPU: s.gpus[c.gpu].Index, MemoryMiB: c.mib, Intent: c.intent, Share: c.share, Session: c.session})
	}
	slices.SortFunc(out, func(a, b ClaimInfo) int {
		if a.GPU != b.GPU {
			return a.GPU - b.GPU
		}
		return strings.Compare(a.UID, b.UID)
	})
	return out
}

// claimedOn is the memory claims hold on each GPU (core index). Under s.mu.
func (s *Server) claimedOn() []float64 {
	out := make([]float64, len(s.gpus))
	for _, c := range s.claims {
		out[c.gpu] += c.mib
	}
	return out
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

// linkClaim records that ss, resumed after a restart, runs under claim uid
// (its secret checked by claimForResume): the claim's release ends it, whether
// the driver asserted the claim before the resume or does so after (ReserveClaim
// then checks the secret). Under s.mu.
func (s *Server) linkClaim(ss *Session, uid, secret string) {
	if uid == "" {
		return
	}
	ss.claim = uid
	if c := s.claims[uid]; c != nil {
		if c.session == "" {
			c.session = ss.id
		}
		return
	}
	ss.claimHash = hashSecret(secret)
}

// claimForResume checks the claim a resume names, under s.mu: a claim reserved
// must be given its secret and have no other session; one not reserved yet
// (the driver asserts its claims again after a restart) must be given a secret,
// which ReserveClaim checks when it comes.
func (s *Server) claimForResume(req OpenRequest) error {
	if req.Claim == "" {
		return nil
	}
	if err := checkClaimID(req.Claim, ""); err != nil {
		return err
	}
	c, ok := s.claims[req.Claim]
	if !ok {
		if req.ClaimSecret == "" {
			return claimDenied(req, claimLabel(req.Claim, ""), false)
		}
		return nil
	}
	if !matches(req.ClaimSecret, c.secret) {
		return claimDenied(req, claimLabel(c.uid, c.name), req.ClaimSecret != "")
	}
	if c.session != "" && c.session != req.Job {
		return errorf(protocol.CodeRejected, "open %q with resume: claim %s already has session %q open: one session at a time per claim", req.Job, claimLabel(c.uid, c.name), c.session)
	}
	return nil
}

// claimDenied is the refusal of an open naming a claim without its secret
// (given false) or with another.
func claimDenied(req OpenRequest, label string, given bool) error {
	if !given {
		return errorf(protocol.CodeClaimDenied, "open %q: claim %s needs its secret: send it in the field claim_secret (the DRA driver puts it in $SALUS_CLAIM_SECRET beside $SALUS_CLAIM; the Go and Python clients and salus worker send it from there): only the pod the claim was prepared for may use it", req.Job, label)
	}
	return errorf(protocol.CodeClaimDenied, "open %q: the claim secret presented is not claim %s's: only the pod the claim was prepared for may use it (its $SALUS_CLAIM_SECRET)", req.Job, label)
}

// claimFor checks an open that names a claim, under s.mu: the claim must be
// reserved, its secret presented, have no other session open, and hold the
// job's memory. It returns the claim (nil without one), whose GPU the job is
// pinned to, whose memory is the most its own lane may take, and whose intent
// binds it.
func (s *Server) claimFor(req OpenRequest) (*claim, error) {
	if req.Claim == "" {
		return nil, nil
	}
	if err := checkClaimID(req.Claim, ""); err != nil {
		return nil, err
	}
	c, ok := s.claims[req.Claim]
	if !ok {
		return nil, errorf(protocol.CodeRejected, "open %q: claim %s is not reserved on this daemon: the pod runs on another node, or its claim was released; open without a claim outside Kubernetes", req.Job, req.Claim)
	}
	if !matches(req.ClaimSecret, c.secret) { // before anything else: a caller without it learns nothing of the claim
		return nil, claimDenied(req, claimLabel(c.uid, c.name), req.ClaimSecret != "")
	}
	if c.session != "" {
		return nil, errorf(protocol.CodeRejected, "open %q: claim %s already has session %q open: one session at a time per claim; close it first", req.Job, claimLabel(c.uid, c.name), c.session)
	}
	if req.GPUs > 1 {
		return nil, errorf(protocol.CodeRejected, "open %q: claim %s is one GPU, and the job asks for %d at once: a gang under Kubernetes is not supported yet", req.Job, claimLabel(c.uid, c.name), req.GPUs)
	}
	if need := req.PersistentMiB + req.EphemeralMiB; need > c.mib {
		return nil, errorf(protocol.CodeRejected, "open %q: the job needs %g MiB (persistent %g + ephemeral %g), more than the %g MiB of claim %s: ask for more memory in the claim, or declare less", req.Job, need, req.PersistentMiB, req.EphemeralMiB, c.mib, claimLabel(c.uid, c.name))
	}
	return c, nil
}

// checkClaimID refuses what cannot be a claim's UID or name: Kubernetes UIDs are
// 36 characters of hex digits and dashes (the UID is also the claim's CDI device
// name: letters, digits, '_', '.', '-', starting with a letter or digit), names
// (namespace/name) at most 63+1+253 characters, none a control character.
func checkClaimID(uid, name string) error {
	switch {
	case uid == "":
		return errorf(protocol.CodeBadRequest, "claim: field claim (the claim's UID) is empty")
	case len(uid) > 128 || !claimUID(uid):
		return errorf(protocol.CodeBadRequest, "claim: field claim %q is not a Kubernetes UID (%d bytes; letters, digits, '_', '.' and '-', starting with a letter or digit): give the claim's metadata.uid", truncate(uid, 40), len(uid))
	case len(name) > 320 || !utf8.ValidString(name) || strings.IndexFunc(name, unicode.IsControl) >= 0:
		return errorf(protocol.CodeBadRequest, "claim %s: field name is not namespace/name (%d bytes, UTF-8 without control characters)", uid, len(name))
	}
	return nil
}

func claimUID(uid string) bool {
	for i := 0; i < len(uid); i++ {
		c := uid[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case i > 0 && (c == '_' || c == '.' || c == '-'):
		default:
			return false
		}
	}
	return true
}

// truncate shortens s (as valid UTF-8, control characters quoted by the caller's
// %q) for a message.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "..."
}

// checkClaimSecret refuses a secret that is short, long, or not printable ASCII
// (access.go's checkSecret); "" (the daemon makes one) passes.
func checkClaimSecret(label, secret string) error {
	return checkSecret("claim "+label+": field secret", secret)
}

// claimLabel names a claim in messages: "ns/name (uid)", or its UID alone.
func claimLabel(uid, name string) string {
	if name == "" {
		return uid
	}
	return fmt.Sprintf("%s (%s)", name, uid)
}
