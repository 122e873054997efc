package device

// 6.0, estimated: H100 x 1.1. The H200 has the H100 SXM's compute (same TFLOPS)
// and 1.43x its memory bandwidth (4.8 vs 3.35 TB/s); no published CNN training
// comparison was found, and +10% is an estimate for the bandwidth-bound part of
// CNN training (the rule in registry.go would give sqrt(1.43) = 1.2x). 141 GB
// (nvidia-smi: 143771 MiB). The H200 NVL (lower power and clocks) and the GH200
// (another model) are not matched.
func init() {
	Register(Spec{Key: "h200", Order: 62, Model: "h200", Forms: []string{"", "sxm", "sxm5"},
		Source: "H100 x 1.1, estimated: same compute, 1.43x the memory bandwidth",
		Device: Device{Name: "H200", TotalMiB: 141 << 10, CapacityMiB: 123 << 10, PCIeGBps: 48, Speed: 6.0}})
}
