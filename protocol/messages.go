package protocol

// Ops, the requests' "op".
const (
	OpOpen      = "open"
	OpBegin     = "begin"
	OpEnd       = "end"
	OpClose     = "close"
	OpHeartbeat = "heartbeat"
	// OpMeasured reports what the client measured (iter_s, peak_mib,
	// persistent_mib over iterations): the daemon checks and logs it, and
	// schedules by its own clock all the same. Send it only to a daemon whose open
	// reply says accepts_measured; an older daemon answers bad_request.
	OpMeasured = "measured"
)

// Request is every request's fields (docs/protocol.md, Requests); each op reads
// those it needs. The daemon decodes it with DecodeRequest; a client leaves out
// what it does not send (every field is omitempty, so the zero Request of an op
// is its smallest frame).
type Request struct {
	Op      string `json:"op"`
	ID      int64  `json:"id,omitempty"`
	Version int    `json:"version,omitempty"`
	// open
	Job           string  `json:"job,omitempty"`
	Model         string  `json:"model,omitempty"`
	Kind          string  `json:"kind,omitempty"`
	PersistentMiB float64 `json:"persistent_mib,omitempty"`
	EphemeralMiB  float64 `json:"ephemeral_mib,omitempty"`
	DeclaredS     float64 `json:"declared_s,omitempty"`
	StartupS      float64 `json:"startup_s,omitempty"`
	Priority      int     `json:"priority,omitempty"`
	Iterations    int     `json:"iterations,omitempty"`
	IterS         float64 `json:"iter_s,omitempty"`
	Demand        float64 `json:"demand,omitempty"`
	Token         string  `json:"token,omitempty"`
	Resume        bool    `json:"resume,omitempty"`
	// BatchSize is the job's batch size (open; optional): logged, so that salus
	// profile can tell a model's batch sizes apart.
	BatchSize int `json:"batch_size,omitempty"`
	// GPUs is how many GPUs the job needs at once (a gang); 0 or 1 is one.
	GPUs int `json:"gpus,omitempty"`
	// Claim is the Kubernetes claim (its UID) the job runs under (open; optional):
	// the DRA driver's SALUS_CLAIM.
	Claim string `json:"claim,omitempty"`
	// ResumeToken is, with Resume, the session's resume token, from its first
	// open reply (open; required with resume).
	ResumeToken string `json:"resume_token,omitempty"`
	// ClaimSecret is, with Claim, the claim's secret: the DRA driver's
	// SALUS_CLAIM_SECRET (open; required with claim).
	ClaimSecret string `json:"claim_secret,omitempty"`
	// Share is the job's scheduling weight under wfair and floor (open;
	// optional): its share of the GPU's time beside the others, relative; 0 is
	// 1. Not its compute demand. Under a claim the claim's share binds.
	Share float64 `json:"share,omitempty"`
	// end
	DurationS float64 `json:"duration_s,omitempty"`
	PeakMiB   float64 `json:"peak_mib,omitempty"`
	Next      bool    `json:"next,omitempty"`
	// Release (end, without next) gives the lane back at once instead of keeping
	// it for the grace window: the job pauses before its next begin (an inference
	// job between requests), as a yield does in the simulator.
	Release bool `json:"release,omitempty"`
	// close; nil is true
	Finished *bool `json:"finished,omitempty"`
}

// OpenReply is the reply to a successful open.
type OpenReply struct {
	ID           int64   `json:"id"`
	OK           bool    `json:"ok"`
	Session      string  `json:"session"`
	Lane         int     `json:"lane"`
	LaneMiB      float64 `json:"lane_mib"`
	StartupOnGPU bool    `json:"startup_on_gpu"`
	LeaseMS      int64   `json:"lease_ms"`
	Policy       string  `json:"policy"`
	Emulated     bool    `json:"emulated,omitempty"`
	Resumed      bool    `json:"resumed,omitempty"`
	RecoverMS    int64   `json:"recover_ms,omitempty"`
	// AcceptsMeasured says the daemon takes the measured op.
	AcceptsMeasured bool `json:"accepts_measured,omitempty"`
	// GPUs are the physical indices of the GPUs the job was given (one, or a
	// gang's); absent from daemons before multi-GPU support.
	GPUs []int `json:"gpus,omitempty"`
	// ResumeToken is what an open with resume of this session must present
	// after a daemon restart; only the first open's reply has it (a resumed
	// session keeps the token it had). Keep it secret.
	ResumeToken string `json:"resume_token,omitempty"`
}

// BeginReply is the reply to a begin, or to an end with next, once the
// iteration may run.
type BeginReply struct {
	ID           int64 `json:"id"`
	OK           bool  `json:"ok"`
	Lane         int   `json:"lane"`
	WaitUS       int64 `json:"wait_us"`
	ReleaseCache bool  `json:"release_cache,omitempty"`
	IdleYielded  bool  `json:"idle_yielded,omitempty"`
}

// ErrorReply is a failed request's reply, and the daemon's unsolicited frames
// (ID 0). OK is always false.
type ErrorReply struct {
	ID    int64  `json:"id"`
	OK    bool   `json:"ok"`
	Code  string `json:"code"`
	Error string `json:"error"`
}
